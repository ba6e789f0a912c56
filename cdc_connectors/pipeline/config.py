"""Pipeline files: Conduit's pipeline shape (version 2.2) plus ``schema-registry`` and ``spark``.

```yaml
version: "2.2"
schema-registry: {url: sqlite:///.cdc/registry.db}   # given to every connector as `registry`
spark:
  master: local[*]                      # default local[*]
  conf: {spark.sql.shuffle.partitions: "8"}
  checkpoint: .cdc/checkpoints          # streaming state, one directory per pipeline id
  trigger: 10 seconds                   # streaming: time between micro-batches (default: none)
pipelines:
  - id: orders                          # letters, digits, . _ - (it names directories)
    status: running                     # or stopped: the pipeline is not run
    name: Orders                        # free text
    description: orders to OpenCDC      # free text
    mode: streaming                     # or batch (default: batch when the source has
                                        # endingOffsets or cannot stream, else streaming)
    connectors:                         # one source and one destination
      - {id: in, type: source, plugin: kafka, settings: {...}}
      - {id: out, type: destination, plugin: files, settings: {...}}
                                        # a batch files destination may set mode: error
                                        # (default), append, overwrite or ignore
    dead-letter-queue:                  # default: files in .cdc/dead-letters/<id>, opencdc-json
      plugin: files
      settings: {path: ./dlq, format: opencdc-json}
      fail-fast: false                  # the first dead letter stops the pipeline
      max-error-ratio: 0.1              # stop when more than 10% of the records are dead letters
```

Relative paths are taken from the current directory, as Spark does. Every problem is a
:class:`ConfigError` naming the file line and the key.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import yaml

from cdc_connectors import plugins
from cdc_connectors.errors import ConfigError
from cdc_connectors.options import Options
from cdc_connectors.pipeline.connectors import Plugin, check_settings, resolve, setting_named
from cdc_connectors.pipeline.nodes import Keys, Node, compose
from cdc_connectors.pipeline.outputs import MODES
from cdc_connectors.pipeline.table_schemas import Registries, table_registries

__all__ = [
    "Config",
    "ConfigError",
    "Connector",
    "DeadLetterQueue",
    "Pipeline",
    "load",
    "parse",
]

VERSION = "2.2"
DEFAULT_MASTER = "local[*]"
DEFAULT_CHECKPOINTS = os.path.join(".cdc", "checkpoints")
DEFAULT_DEAD_LETTERS = os.path.join(".cdc", "dead-letters")
DEFAULT_DLQ_FORMAT = "opencdc-json"
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_TRIGGER = re.compile(r"^\d+(\.\d+)?\s*(ms|millisecond|second|minute|hour)s?$", re.IGNORECASE)
#: The master URLs Spark knows (SparkContext's own forms and its cluster managers': YARN,
#: Kubernetes); anything else fails only once a JVM has started, in Java's words.
_MASTER = re.compile(
    r"local(\[(\d+|\*)(\s*,\s*\d+)?\])?|local-cluster\[\d+,\s*\d+,\s*\d+\]"
    r"|spark://\S+|yarn|k8s://\S+"
)


@dataclass(frozen=True)
class Connector:
    """One connector of a pipeline: its plugin resolved, its settings as Spark options."""

    id: str
    type: str  # "source" or "destination"
    plugin: Plugin
    settings: Options
    where: str  # "file:line: pipelines[0].connectors[1]" for errors found later
    locate: Callable[[str | None], str]  # a setting -> "file:line: ...settings.<setting>"
    save_mode: str | None = None  # a destination's ``mode`` setting, as given

    def place_of(self, message: str) -> str:
        """Where in the file the setting a connector's error message names is."""
        return self.locate(setting_named(message))


@dataclass(frozen=True)
class DeadLetterQueue:
    """Where dead letters go, and when they stop the pipeline."""

    plugin: Plugin
    settings: Options
    fail_fast: bool
    max_error_ratio: float | None
    where: str
    locate: Callable[[str | None], str]

    def place_of(self, message: str) -> str:
        """Where in the file the setting a connector's error message names is."""
        return self.locate(setting_named(message))


@dataclass(frozen=True)
class Pipeline:
    id: str
    source: Connector
    destination: Connector
    dead_letters: DeadLetterQueue
    batch: bool
    checkpoint: str
    name: str = ""
    description: str = ""
    save_mode: str = "append"  # of the file outputs of a batch pipeline (pipeline.outputs)
    schemas: str | None = None  # the store beside a pipeline's table (table_schemas)


@dataclass(frozen=True)
class Config:
    """A pipeline file, checked."""

    file: str
    master: str
    spark_conf: dict[str, str]
    trigger: str | None
    registry: str | None
    pipelines: list[Pipeline] = field(default_factory=list)
    registry_at: str = ""  # "file:line: schema-registry.url" of ``registry``


def load(path: str) -> Config:
    """The checked config of the file at ``path``; a :class:`ConfigError` for any problem."""
    try:
        with open(path, "rb") as stream:
            data = stream.read()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}:{line}: not UTF-8 text") from None
    return parse(text, path)


def parse(text: str, file: str = "pipeline.yaml") -> Config:
    """The checked config of the YAML ``text`` (``file`` names it in errors)."""
    try:
        return _parse(text, file)
    except yaml.MarkedYAMLError as exc:  # found while reading values (a merge key, a tag)
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        problem = " ".join(str(exc.problem or exc.context or "invalid YAML").split())
        raise ConfigError(f"{file}:{line}: {problem}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{file}:1: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise ConfigError(f"{file}:1: nests too deeply to be a pipeline file") from None


def _parse(text: str, file: str) -> Config:
    root = compose(text, file)
    if root is None:
        raise ConfigError(f"{file}:1: empty: a pipeline file has version and pipelines")
    top = Keys(Node(root, "", file))
    version = top.need("version")
    if version.setting() != VERSION:
        raise version.error(f'must be "{VERSION}", not {version.setting()!r}')
    registry, registry_at = _registry(top.take("schema-registry"))
    master, conf, checkpoints, trigger = _spark(top.take("spark"))
    pipelines_node = top.need("pipelines")
    top.done(["version", "schema-registry", "spark", "pipelines"])
    pipelines: list[Pipeline] = []
    seen: set[str] = set()
    written: list[tuple[str, str]] = []  # (pipeline, destination path) of those before
    for item in pipelines_node.items():
        pipeline = _pipeline(item, registry, checkpoints, registry_at)
        if pipeline is None:
            continue
        if pipeline.id in seen:
            raise item.error(f"pipeline id {pipeline.id!r} is used twice")
        seen.add(pipeline.id)
        pipelines.append(pipeline)
        path = _destination_path(pipeline.destination)
        for other, other_path in written:
            if path is not None and _overlap(path, other_path):
                raise item.error(
                    f"its destination path overlaps that of pipeline {other!r}: two pipelines "
                    "writing one place race and mix their records; keep them apart"
                )
        if path is not None:
            written.append((pipeline.id, path))
    if not pipelines:
        raise pipelines_node.error("no pipeline to run (none, or all stopped)")
    return Config(file, master, conf, trigger, registry, pipelines, registry_at)


def _registry(node: Node | None) -> tuple[str | None, str]:
    """The registry URL and its place (``file:line: schema-registry.url``)."""
    if node is None:
        return None, ""
    keys = Keys(node)
    url_node = keys.need("url")
    keys.done(["url"])
    url = url_node.text().strip()
    from cdc_connectors.registry import url_scheme

    scheme = url_scheme(url)
    known = plugins.available(plugins.REGISTRIES)
    if scheme not in known:
        raise url_node.error(
            f"no registry serves the scheme {scheme!r} (schemes: {', '.join(known)})"
            if scheme
            else f"a URL with a scheme ({', '.join(known)}), not {url!r}"
        )
    _shared_registry(url, url_node)
    return url, f"{url_node.file}:{url_node.line}: {url_node.path}"


def _shared_registry(url: str, node: Node) -> None:
    """A ``memory://`` store is refused: it lives in one process, and a pipeline's Spark
    workers are processes of their own, each with a store of its own; schemas registered
    there would be lost with the worker, and the messages written with their ids unreadable."""
    from cdc_connectors.registry import url_scheme

    if url_scheme(url) == "memory":
        raise node.error(
            "a memory:// store lives in one process, and Spark's workers are processes of "
            "their own: use a store they share (sqlite:///path/to.db on one machine, or a "
            "registry at http://...)"
        )


def _spark(node: Node | None) -> tuple[str, dict[str, str], str, str | None]:
    if node is None:
        return DEFAULT_MASTER, {}, DEFAULT_CHECKPOINTS, None
    keys = Keys(node)
    master_node = keys.take("master")
    master = master_node.text().strip() if master_node else DEFAULT_MASTER
    if master_node is not None and not _MASTER.fullmatch(master):
        raise master_node.error(
            f"{master!r} is no Spark master URL (local, local[N], local[*], "
            "spark://HOST:PORT, yarn, k8s://HOST:PORT)"
        )
    conf: dict[str, str] = {}
    conf_node = keys.take("conf")
    if conf_node is not None:
        for key, value in conf_node.mapping().items():
            if not key.startswith("spark."):
                raise value.error("a Spark setting starts with 'spark.'")
            if key == "spark.master":
                raise value.error("set the master as spark: {master: ...}, not in spark.conf")
            conf[key] = value.setting()
    checkpoint_node = keys.take("checkpoint")
    checkpoints = checkpoint_node.text() if checkpoint_node else DEFAULT_CHECKPOINTS
    trigger_node = keys.take("trigger")
    trigger = None
    if trigger_node is not None:
        trigger = trigger_node.text().strip()
        if not _TRIGGER.match(trigger):
            raise trigger_node.error(
                f"must be an interval like '10 seconds' or '500 milliseconds', not {trigger!r}"
            )
    keys.done(["master", "conf", "checkpoint", "trigger"])
    return master, conf, checkpoints, trigger


def _pipeline(
    node: Node, registry: str | None, checkpoints: str, registry_at: str = ""
) -> Pipeline | None:
    keys = Keys(node)
    id_node = keys.need("id")
    pipeline_id = id_node.text().strip()
    if not _ID.match(pipeline_id):
        raise id_node.error(
            f"{pipeline_id!r}: use letters, digits, '.', '_' and '-' (it names directories)"
        )
    status_node = keys.take("status")
    status = status_node.text().strip() if status_node else "running"
    if status_node is not None and status not in ("running", "stopped"):
        raise status_node.error(f"must be running or stopped, not {status!r}")
    name_node, description_node = keys.take("name"), keys.take("description")
    name = name_node.text(empty=True) if name_node else ""
    description = description_node.text(empty=True) if description_node else ""
    mode_node = keys.take("mode")
    mode = mode_node.text().strip() if mode_node else None
    if mode_node is not None and mode not in ("batch", "streaming"):
        raise mode_node.error(f"must be batch or streaming, not {mode!r}")
    processors = keys.take("processors")
    if processors is not None and list(processors.items()):
        raise processors.error("processors are not supported; transform the DataFrame in Spark")
    connectors_node = keys.need("connectors")
    dlq_node = keys.take("dead-letter-queue")
    keys.done(
        [
            "id",
            "status",
            "name",
            "description",
            "mode",
            "connectors",
            "processors",
            "dead-letter-queue",
        ]
    )
    source, destination, given = _ends(connectors_node, registry, registry_at)
    streams = source.plugin.streams()
    if mode == "streaming" and not streams:
        assert mode_node is not None
        raise mode_node.error(f"the source plugin {source.plugin.name!r} cannot stream")
    batch = (
        mode == "batch" if mode is not None else ("endingOffsets" in source.settings or not streams)
    )
    if source.plugin.name == "kafka":
        for setting, wrong in (("maxOffsetsPerTrigger", batch), ("endingOffsets", not batch)):
            if setting in source.settings and wrong:
                kind = "streaming" if setting == "maxOffsetsPerTrigger" else "batch"
                raise ConfigError(
                    f"{source.locate(setting)}: is for {kind} reads; this pipeline runs "
                    f"{'as a batch' if batch else 'streaming'} (mode)"
                )
    if status == "stopped":
        return None
    dead_letters = _dead_letters(dlq_node, node, pipeline_id, registry, registry_at)
    _check_paths(connectors_node, source, destination, dead_letters)
    save_mode = _save_mode(destination, batch)
    return Pipeline(
        id=pipeline_id,
        source=source,
        destination=destination,
        dead_letters=dead_letters,
        batch=batch,
        checkpoint=os.path.join(checkpoints, pipeline_id),
        name=name,
        description=description,
        save_mode=save_mode,
        schemas=given.store,
    )


def _ends(
    connectors_node: Node, registry: str | None, registry_at: str
) -> tuple[Connector, Connector, Registries]:
    """A pipeline's source and destination connectors, with the registries its table
    connectors are given."""
    connectors = [_connector(item, registry, registry_at) for item in connectors_node.items()]
    ids: set[str] = set()
    for connector, item in zip(connectors, connectors_node.items(), strict=True):
        if connector.id in ids:
            raise item.error(f"connector id {connector.id!r} is used twice in this pipeline")
        ids.add(connector.id)
    sources = [c for c in connectors if c.type == "source"]
    destinations = [c for c in connectors if c.type == "destination"]
    if len(sources) != 1 or len(destinations) != 1:
        raise connectors_node.error(
            "a pipeline has one source and one destination connector "
            f"(found {len(sources)} and {len(destinations)})"
        )
    source, destination = sources[0], destinations[0]
    given = table_registries(
        source.plugin.name, source.settings, destination.plugin.name, destination.settings
    )
    for connector, url in ((source, given.source), (destination, given.destination)):
        if url is not None:
            connector.settings["registry"] = url
    if source.settings.get("typed", "false").strip().lower() not in ("false", "0", "no", "off"):
        raise connectors_node.error(
            "the source setting 'typed' is for reading DataFrames; a pipeline moves OpenCDC "
            "records (use typed_view on its output)"
        )
    return source, destination, given


def _save_mode(destination: Connector, batch: bool) -> str:
    """The save mode of a pipeline's file outputs: the destination's ``mode`` setting
    (Spark's names); by default ``error`` for a batch pipeline writing files, else
    ``append`` (a Kafka topic, a streaming query's micro-batches)."""
    given = destination.save_mode
    files = destination.plugin.name == "files"
    if given is None:
        return "error" if batch and files else "append"
    where = destination.locate("mode")
    if given not in MODES:
        raise ConfigError(f"{where}: must be one of {', '.join(MODES)}, not {given!r}")
    if given != "append" and not files:
        raise ConfigError(
            f"{where}: a {destination.plugin.name} destination appends; mode {given!r} is for "
            "files destinations"
        )
    if given != "append" and not batch:
        raise ConfigError(
            f"{where}: a streaming pipeline appends each micro-batch once; mode {given!r} is "
            "for batch pipelines"
        )
    return "error" if given == "errorifexists" else given


def _check_paths(
    node: Node, source: Connector, destination: Connector, dead_letters: DeadLetterQueue
) -> None:
    """Outputs that overlap the input or each other: a streaming pipeline would read its own
    output forever, a second batch run would read the first one's, and records and dead
    letters would mix. A glob source overlaps what it matches now or could match later."""

    def where(settings: Options, name: str = "path") -> str | None:
        path = settings.get(name)
        return _absolute(path) if path and "://" not in path else None  # a local path

    read = where(source.settings) if source.plugin.name == "files" else None
    matched = []  # what a glob source matches now, links resolved
    if read is not None and glob.has_magic(read):
        matched = [os.path.realpath(match) for match in glob.glob(read)]
    given = [
        (name, where(c.settings))
        for name, c in (("destination", destination), ("dead-letter-queue", dead_letters))
        if c.plugin.name in ("files", "table")
    ]
    if destination.plugin.name == "table":
        given.append(("table's deadLetters", where(destination.settings, "deadLetters")))
    outputs = [(name, path) for name, path in given if path is not None]
    for name, path in outputs:
        if read is None:
            continue
        if _overlap(read, path) or any(_overlap(match, path) for match in matched):
            raise node.error(f"the {name} path overlaps the source path: it would read its output")
    for at, (name, path) in enumerate(outputs):
        for other, other_path in outputs[at + 1 :]:
            if _overlap(path, other_path) and not _shared_on_purpose(name, path, other, other_path):
                raise node.error(f"the {name} and {other} paths overlap: keep them apart")


def _destination_path(destination: Connector) -> str | None:
    """The local path a ``files`` or ``table`` destination writes (absolute), if it has one;
    an Iceberg table's is its warehouse and its name (tables of one warehouse are apart)."""
    settings = destination.settings
    path = settings.get("path")
    if destination.plugin.name not in ("files", "table") or not path or "://" in path:
        return None
    if destination.plugin.name == "table" and settings.get("format", "").strip() == "iceberg":
        name = settings.get("table")
        return os.path.join(_absolute(path), name) if name else _absolute(path)
    return _absolute(path)


def _shared_on_purpose(name: str, path: str, other: str, other_path: str) -> bool:
    """Whether two outputs are one by design: a table's ``deadLetters`` that are the
    pipeline's dead-letter files (where the run puts them anyway), or its own folder for
    them inside the table (the connector's default)."""
    if other != "table's deadLetters":
        return False
    if name == "dead-letter-queue":
        return path == other_path
    return name == "destination" and other_path == os.path.join(path, "_cdc_dead_letters")


def _absolute(path: str) -> str:
    """``path`` absolute, symbolic links resolved in the part before any glob character."""
    parts = os.path.abspath(path).split(os.sep)
    plain = next((i for i, part in enumerate(parts) if glob.has_magic(part)), len(parts))
    head = os.path.realpath(os.sep.join(parts[:plain]) or os.sep)
    return os.path.join(head, *parts[plain:]) if plain < len(parts) else head


def _overlap(first: str, second: str) -> bool:
    """Whether one path (or glob) lies within the other or one matches a part of the other,
    component by component (a glob's ``*`` stays within one component)."""
    a, b = first.strip(os.sep).split(os.sep), second.strip(os.sep).split(os.sep)
    return all(_matches(x, y) or _matches(y, x) for x, y in zip(a, b, strict=False))


def _matches(pattern: str, name: str) -> bool:
    if not glob.has_magic(pattern):
        return pattern == name
    if glob.has_magic(name):  # two globs: overlap unless their fixed starts differ
        fixed = min(len(_fixed(pattern)), len(_fixed(name)))
        return _fixed(pattern)[:fixed] == _fixed(name)[:fixed]
    return fnmatch.fnmatchcase(name, pattern)


def _fixed(pattern: str) -> str:
    """The start of a glob component before its first special character."""
    for index, char in enumerate(pattern):
        if char in "*?[":
            return pattern[:index]
    return pattern


def _connector(node: Node, registry: str | None, registry_at: str = "") -> Connector:
    keys = Keys(node)
    id_node = keys.need("id")
    connector_id = id_node.text().strip()
    type_node = keys.need("type")
    kind = type_node.text().strip()
    if kind not in ("source", "destination"):
        raise type_node.error(f"must be source or destination, not {kind!r}")
    plugin_node = keys.need("plugin")
    keys.take("name")
    processors = keys.take("processors")
    if processors is not None and list(processors.items()):
        raise processors.error("processors are not supported; transform the DataFrame in Spark")
    settings_node = keys.take("settings")
    keys.done(["id", "type", "plugin", "name", "settings", "processors"])
    plugin = _plugin(plugin_node)
    settings = _settings(settings_node, registry)
    where = f"{node.file}:{node.line}: {node.path}"
    reporter = _Reporter(node, settings_node, registry_at)
    save_mode = None
    if "mode" in settings and plugin.name != "table":  # a table's mode is its own setting
        if kind != "destination":
            raise reporter("mode", "a save mode is a destination's setting")
        save_mode = settings.pop("mode").strip().lower()
    check_settings(plugin, kind, settings, reporter)
    return Connector(connector_id, kind, plugin, settings, where, reporter.locate, save_mode)


def _dead_letters(
    node: Node | None,
    pipeline: Node,
    pipeline_id: str,
    registry: str | None,
    registry_at: str = "",
) -> DeadLetterQueue:
    if node is None:
        plugin = resolve("files")
        assert plugin is not None
        settings = Options(
            {"path": os.path.join(DEFAULT_DEAD_LETTERS, pipeline_id), "format": DEFAULT_DLQ_FORMAT}
        )
        if registry:
            settings["registry"] = registry
        where = f"{pipeline.file}:{pipeline.line}: {pipeline.path}"
        return DeadLetterQueue(plugin, settings, False, None, where, lambda _: where)
    keys = Keys(node)
    plugin_node = keys.need("plugin")
    settings_node = keys.take("settings")
    fail_fast_node = keys.take("fail-fast")
    ratio_node = keys.take("max-error-ratio")
    for conduit_key in ("window-size", "window-nack-threshold"):
        found = keys.take(conduit_key)
        if found is not None:
            raise found.error("not supported here; use fail-fast or max-error-ratio")
    keys.done(["plugin", "settings", "fail-fast", "max-error-ratio"])
    plugin = _plugin(plugin_node)
    settings = _settings(settings_node, registry)
    settings.setdefault("format", DEFAULT_DLQ_FORMAT)
    reporter = _Reporter(node, settings_node, registry_at)
    check_settings(plugin, "destination", settings, reporter)
    ratio = None
    if ratio_node is not None:
        ratio = ratio_node.number()
        if not 0 <= ratio <= 1:
            raise ratio_node.error(f"must be between 0 and 1, not {ratio_node.setting()}")
    return DeadLetterQueue(
        plugin,
        settings,
        fail_fast_node.flag() if fail_fast_node else False,
        ratio,
        f"{node.file}:{node.line}: {node.path}",
        reporter.locate,
    )


def _plugin(node: Node) -> Plugin:
    name = node.text().strip()
    plugin = resolve(name)
    if plugin is None:
        known = ", ".join(plugins.available(plugins.CONNECTORS)) or "none installed"
        raise node.error(f"unknown connector plugin {name!r} (connectors: {known})")
    return plugin


def _settings(node: Node | None, registry: str | None) -> Options:
    settings = Options()
    if node is not None:
        for key, value in node.mapping().items():
            # Connectors read setting names in any case (as Spark options are): two
            # spellings of one name would silently override each other.
            twin = settings.spelling(key)
            if twin is not None:
                raise value.error(f"the same setting as {twin!r} (setting names ignore case)")
            settings[key] = value.setting()
            if key.lower() == "registry":
                _shared_registry(settings[key].strip(), value)
    if registry and "registry" not in settings:
        settings["registry"] = registry
    return settings


class _Reporter:
    """Turns a connector's complaint about a setting into a ConfigError at its line."""

    def __init__(self, owner: Node, settings_node: Node | None, registry_at: str = ""):
        """``registry_at``: where the file's ``schema-registry.url`` is, which a connector
        without a ``registry`` setting of its own takes."""
        self.owner = owner
        self.settings_node = settings_node
        self.registry_at = registry_at
        self.lines = {
            key.lower(): child
            for key, child in (settings_node.mapping().items() if settings_node else [])
        }

    def locate(self, setting: str | None) -> str:
        """``file:line: key`` of ``setting`` (of the connector for ``None``)."""
        if setting is None:
            return f"{self.owner.file}:{self.owner.line}: {self.owner.path}"
        child = self.lines.get(setting.lower())
        if child is not None:
            return f"{child.file}:{child.line}: {child.path}"
        if setting.lower() == "registry" and self.registry_at:
            return self.registry_at  # the file's, given to this connector
        base = self.settings_node or self.owner
        path = self.settings_node.path if self.settings_node else self.owner.child_path("settings")
        return f"{base.file}:{base.line}: {path}.{setting}"

    def __call__(self, setting: str | None, problem: str) -> ConfigError:
        if setting is None and self.settings_node is not None:
            return self.settings_node.error(problem)
        return ConfigError(f"{self.locate(setting)}: {problem}")
