"""Standard metadata key names, read from the compiled .proto file options.

The names are declared once, as custom file options in
``proto/opencdc/v1/opencdc.proto`` (``metadata_*``) and
``proto/metadata/v1/constants.proto`` (``metadata_conduit_*``); this module
reads them from the descriptors so they are never typed a second time.
"""

from __future__ import annotations

from types import ModuleType

from cdc_connectors.opencdc.proto.metadata.v1 import constants_pb2
from cdc_connectors.opencdc.proto.opencdc.v1 import opencdc_pb2


def file_option_constants(module: ModuleType) -> dict[str, str]:
    """Every string file option a generated module declares, by extension name."""
    options = module.DESCRIPTOR.GetOptions()
    return {
        name: options.Extensions[ext]
        for name, ext in module.DESCRIPTOR.extensions_by_name.items()
        if options.HasExtension(ext)
    }


_OPENCDC = file_option_constants(opencdc_pb2)
_CONDUIT = file_option_constants(constants_pb2)

#: Value of ``opencdc.version`` for records of this format ("v1").
OPENCDC_VERSION = _OPENCDC["opencdc_version"]

VERSION = _OPENCDC["metadata_version"]
CREATED_AT = _OPENCDC["metadata_created_at"]
READ_AT = _OPENCDC["metadata_read_at"]
COLLECTION = _OPENCDC["metadata_collection"]
KEY_SCHEMA_SUBJECT = _OPENCDC["metadata_key_schema_subject"]
KEY_SCHEMA_VERSION = _OPENCDC["metadata_key_schema_version"]
PAYLOAD_SCHEMA_SUBJECT = _OPENCDC["metadata_payload_schema_subject"]
PAYLOAD_SCHEMA_VERSION = _OPENCDC["metadata_payload_schema_version"]
FILE_NAME = _OPENCDC["metadata_file_name"]
FILE_SIZE = _OPENCDC["metadata_file_size"]
FILE_HASH = _OPENCDC["metadata_file_hash"]
FILE_CHUNKED = _OPENCDC["metadata_file_chunked"]
FILE_CHUNK_INDEX = _OPENCDC["metadata_file_chunk_index"]
FILE_CHUNK_COUNT = _OPENCDC["metadata_file_chunk_count"]

CONDUIT_SOURCE_PLUGIN_NAME = _CONDUIT["metadata_conduit_source_plugin_name"]
CONDUIT_SOURCE_PLUGIN_VERSION = _CONDUIT["metadata_conduit_source_plugin_version"]
CONDUIT_DESTINATION_PLUGIN_NAME = _CONDUIT["metadata_conduit_destination_plugin_name"]
CONDUIT_DESTINATION_PLUGIN_VERSION = _CONDUIT["metadata_conduit_destination_plugin_version"]
CONDUIT_SOURCE_CONNECTOR_ID = _CONDUIT["metadata_conduit_source_connector_id"]
CONDUIT_DLQ_NACK_ERROR = _CONDUIT["metadata_conduit_dlq_nack_error"]
CONDUIT_DLQ_NACK_NODE_ID = _CONDUIT["metadata_conduit_dlq_nack_node_id"]

#: Every standard key: OpenCDC's and Conduit's.
STANDARD_KEYS: frozenset[str] = frozenset(
    v for k, v in (_OPENCDC | _CONDUIT).items() if k != "opencdc_version"
)
