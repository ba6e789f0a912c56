"""One error family: bad configuration is caught once, bad data once, a policy stop once."""

from __future__ import annotations

import pytest

from cdc_connectors import errors, plugins
from cdc_connectors.connectors.errors import ConnectorError
from cdc_connectors.connectors.messages import FailFastError as TaskFailFast
from cdc_connectors.connectors.messages import SettingError, open_format
from cdc_connectors.convert.engine import ConvertStats, FailFast
from cdc_connectors.convert.files import PlaceError
from cdc_connectors.formats import FormatOptionError, load_format
from cdc_connectors.opencdc import CodecError
from cdc_connectors.pipeline import ConfigError, parse
from cdc_connectors.pipeline.lock import CheckpointBusy
from cdc_connectors.pipeline.runner import PipelineStopped, SettingRefused
from cdc_connectors.registry import RegistryURLError, checked_registry, open_registry
from cdc_connectors.registry.serve import ServeError
from cdc_connectors.registry.store import UnknownSchema
from cdc_connectors.schema import SchemaError
from cdc_connectors.schema.framing import FramingError


@pytest.mark.parametrize(
    "kind",
    [
        FormatOptionError,
        SettingError,
        PlaceError,
        plugins.PluginError,
        RegistryURLError,
        ServeError,
        SettingRefused,
    ],
)
def test_every_kind_of_bad_setting_is_a_config_error(kind: type[Exception]):
    assert issubclass(kind, errors.ConfigError)
    assert issubclass(kind, ValueError)  # as each was before: callers of ValueError still catch


def test_the_pipeline_file_error_is_the_config_error():
    assert ConfigError is errors.ConfigError
    with pytest.raises(errors.ConfigError, match=r"^p\.yaml:1: "):
        parse("version: [", "p.yaml")


@pytest.mark.parametrize("kind", [UnknownSchema, FramingError])
def test_bad_data_is_a_codec_error(kind: type[Exception]):
    assert issubclass(kind, errors.CodecError)
    assert CodecError is errors.CodecError


def test_the_fail_fast_stops_are_one_type():
    error = CodecError("not JSON", where="line 3")
    stopped = FailFast(error, ConvertStats())
    assert isinstance(stopped, errors.FailFastError) and stopped.error is error
    assert str(stopped) == "line 3: not JSON"
    in_task = TaskFailFast("orders/0/7: not JSON\nat all")
    assert isinstance(in_task, errors.FailFastError) and isinstance(in_task, ConnectorError)
    assert str(in_task) == "orders/0/7: not JSON at all"  # one line, as every ConnectorError
    assert issubclass(PipelineStopped, errors.FailFastError)


@pytest.mark.parametrize(
    "kind", [ConnectorError, CheckpointBusy, SchemaError, errors.FailFastError]
)
def test_the_rest_are_in_the_family(kind: type[Exception]):
    assert issubclass(kind, errors.CdcError)


def test_bad_configuration_is_caught_once_wherever_it_is_found():
    found = []
    for attempt in (
        lambda: load_format("no-such-format"),
        lambda: open_format(
            {"format": "no-such-format"}, default="raw", registry=None, connector="cdc-files"
        ),
        lambda: load_format("avro")({"no.such.option": "1"}),
        lambda: open_registry("nowhere"),
        lambda: open_registry("sqlite://host/x.db"),
        lambda: checked_registry("ftp://example.com"),
    ):
        with pytest.raises(errors.ConfigError) as caught:
            attempt()
        found.append(str(caught.value))
    assert all(message and "\n" not in message for message in found)
