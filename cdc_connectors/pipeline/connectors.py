"""Connector plugins of a pipeline: a ``plugin`` name -> its Spark data source class.

Names resolve through the ``cdc_connectors.connectors`` entry points; Conduit's spellings
work too (``builtin:kafka``, ``builtin:file@v0.8.0`` -> ``files``). When the package's own
entry points are not installed, the built-in connectors are found by module. Settings are
checked on the driver, without touching any broker or file, by constructing the data source
(its constructor parses them) and, for Kafka, by its settings parser for the connector's role.
"""

from __future__ import annotations

import glob
import importlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cdc_connectors import plugins
from cdc_connectors.connectors.messages import SettingError, open_format
from cdc_connectors.errors import ConfigError
from cdc_connectors.opencdc import Record
from cdc_connectors.options import Options

__all__ = ["Plugin", "check_settings", "resolve"]

#: Plugin name -> the module and class of a connector of this package.
BUILTIN = {
    "files": "cdc_connectors.connectors.files:FilesDataSource",
    "kafka": "cdc_connectors.connectors.kafka:KafkaDataSource",
    "table": "cdc_connectors.connectors.table:TableDataSource",
}
#: Conduit's names for the same connectors.
ALIASES = {"file": "files"}
#: The message columns a destination takes as is (the files connector writes no headers).
MESSAGE_COLUMNS = {
    "files": ("key", "value"),
    "kafka": ("key", "value", "headers"),
    "table": ("key", "value"),
}
#: The format a connector uses when its settings name none.
DEFAULT_FORMATS = {"files": "opencdc-json", "kafka": "opencdc-proto"}
#: Connectors whose records reach them in one format whatever their settings say: a table
#: takes OpenCDC JSON records (exact numbers), its ``format`` is the table's (delta, iceberg).
FIXED_FORMATS = {"table": "opencdc-json"}
Route = Callable[[Record], str]
_SETTING = re.compile(r"settings? '([^']+)'")
_FORMAT_OPTION = re.compile(r"setting 'format\.\*'.* has no option '([^']+)'")
FORMAT_PREFIX = "format."


@dataclass(frozen=True)
class Plugin:
    """A connector plugin: its name in pipeline files and its data source class."""

    name: str
    source_class: Any  # a pyspark.sql.datasource.DataSource subclass

    @property
    def spark_name(self) -> str:
        """The name Spark knows it by: ``spark.read.format(spark_name)``."""
        return str(self.source_class.name())

    def streams(self) -> bool:
        """Whether the data source can be read as a stream."""
        from pyspark.sql.datasource import DataSource

        cls = self.source_class
        return bool(
            cls.streamReader is not DataSource.streamReader
            or cls.simpleStreamReader is not DataSource.simpleStreamReader
        )

    @property
    def message_columns(self) -> tuple[str, ...]:
        return MESSAGE_COLUMNS.get(self.name, ("key", "value"))

    def routing(self, settings: Mapping[str, str]) -> tuple[Route | None, Options]:
        """A destination's topic template, rendered per record by the pipeline (its rows
        reach the writer as messages, without metadata), and the writer's settings then."""
        rest = Options(settings)
        topic = rest.get("topic")
        if self.name != "kafka" or topic is None:
            return None, rest
        writing = importlib.import_module("cdc_connectors.connectors.kafka_write")
        template = writing.TopicTemplate(topic.strip())
        if template.fixed:
            return None, rest
        del rest["topic"]
        return TopicRoute(template), rest

    @property
    def default_format(self) -> str:
        return DEFAULT_FORMATS.get(self.name, "opencdc-json")

    def format_settings(self, settings: Mapping[str, str]) -> Options:
        """The settings that name the format a destination's records are encoded in: its
        own, or the fixed format of a connector that takes one (a table)."""
        given = Options(settings)
        fixed = FIXED_FORMATS.get(self.name)
        if fixed is None:
            return given
        registry = given.get("registry")
        return Options({"format": fixed, **({"registry": registry} if registry else {})})


class TopicRoute:
    """A record's topic from a Kafka topic template (picklable: it runs on the executors)."""

    def __init__(self, template: Any):
        self.template = template

    def __call__(self, record: Record) -> str:
        where = record.position.decode("utf-8", "backslashreplace")
        return str(self.template.render(record.metadata, where))


def plugin_name(text: str) -> str:
    """``builtin:file@v0.8.0`` -> ``files``."""
    name = text.strip()
    if name.startswith("builtin:"):
        name = name[len("builtin:") :]
    name = name.split("@", 1)[0]
    return ALIASES.get(name, name)


def resolve(text: str) -> Plugin | None:
    """The plugin ``text`` names, or ``None`` when no connector has that name."""
    from pyspark.sql.datasource import DataSource

    name = plugin_name(text)
    if name in plugins.available(plugins.CONNECTORS):
        try:
            return Plugin(name, plugins.load(plugins.CONNECTORS, name, DataSource))
        except plugins.PluginError:
            return None
    target = BUILTIN.get(name)
    if target is None:
        return None
    module_name, _, attribute = target.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError):
        return None
    return Plugin(name, cls)


Report = Callable[[str | None, str], ConfigError]


def setting_named(message: str) -> str | None:
    """The setting a connector's error message names (``setting 'servers'``), if any."""
    option = _FORMAT_OPTION.search(message)
    if option:
        return FORMAT_PREFIX + option.group(1)
    found = _SETTING.search(message)
    return found.group(1) if found else None


def check_settings(plugin: Plugin, role: str, settings: Mapping[str, str], report: Report) -> None:
    """Check ``settings`` for a connector of ``role`` (source/destination) on the driver;
    a complaint becomes ``report(setting, problem)``, raised."""
    settings = Options(settings)
    try:
        source = plugin.source_class(dict(settings))
        if plugin.name == "kafka":
            _check_kafka(role, settings)
        if plugin.name == "table" and role == "destination":
            _refuse_own_transactions(settings)
            source.settings.check_table()
        default = plugin.default_format if role == "destination" else "opencdc-json"
        if not (plugin.name == "kafka" and role == "source"):  # Kafka reads raw by default
            open_format(
                plugin.format_settings(settings) if role == "destination" else settings,
                default=default,
                registry=settings.get("registry"),
                connector=plugin.spark_name,
            )
        elif settings.get("format", "raw") != "raw":
            open_format(
                settings, default="raw", registry=settings.get("registry"), connector="cdc-kafka"
            )
    except SettingError as exc:
        raise report(setting_named(str(exc)), str(exc)) from None
    except (ValueError, TypeError, KeyError) as exc:
        raise report(None, f"{plugin.name}: {exc}") from None


def missing_input(plugin: Plugin, settings: Mapping[str, str], batch: bool) -> str | None:
    """Why a files source cannot be read at all, or None; checked before any pipeline of a
    file runs: its path does not exist, or (a ``batch`` read, as Spark's file sources
    refuse it) it is a glob that matches nothing. A stream's glob may match nothing yet."""
    if plugin.name != "files":
        return None
    path = Options(settings).get("path", "")
    if path and not glob.has_magic(path) and not os.path.exists(path):
        return f"cdc-files setting 'path': {path!r} does not exist"
    if path and batch and glob.has_magic(path) and not glob.glob(path):
        return f"cdc-files setting 'path': {path!r} matches no file"
    return None


def _refuse_own_transactions(settings: Mapping[str, str]) -> None:
    """A pipeline names each batch's table transaction itself (its query and batch, so that
    a replay changes nothing): one fixed in the file would make every later run a replay."""
    for name in ("txnAppId", "txnVersion"):
        if Options(settings).get(name) is not None:
            raise SettingError(
                f"cdc-table setting {name!r} is the pipeline's own: each batch is applied "
                "once under its query and batch id (set it when writing through Spark)"
            )


def _check_kafka(role: str, settings: Mapping[str, str]) -> None:
    try:
        checks = importlib.import_module("cdc_connectors.connectors.kafka_settings")
    except ImportError:
        return
    if role == "source":
        checks.source_settings(settings)
    else:
        checks.destination_settings(settings)
        if not settings.get("topic"):  # a pipeline writes records: each needs its topic
            raise SettingError(
                "cdc-kafka setting 'topic' is required (a topic, or a template such as "
                "cdc.{collection})"
            )
