"""The error of the schema modules."""

from cdc_connectors.errors import CdcError


class SchemaError(CdcError, ValueError):
    """A schema does not parse or compile; the message says what and where."""
