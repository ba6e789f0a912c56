"""Pipeline files: what is accepted, and every error naming its line and key."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from cdc_connectors.pipeline import ConfigError, parse

GOOD = """\
version: "2.2"
schema-registry:
  url: sqlite:///.cdc/registry.db
spark:
  master: local[2]
  conf: {spark.sql.shuffle.partitions: 8}
pipelines:
  - id: orders
    connectors:
      - id: in
        type: source
        plugin: builtin:file
        settings:
          path: in/
          format: debezium-json
      - id: out
        type: destination
        plugin: kafka
        settings: {servers: "127.0.0.1:9092", topic: orders-opencdc, format: opencdc-proto}
    dead-letter-queue:
      plugin: files
      settings: {path: ./dlq}
      fail-fast: false
      max-error-ratio: 0.25
"""


def _error(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse(textwrap.dedent(text), "pipeline.yaml")
    message = str(caught.value)
    assert "\n" not in message
    return message


def _with(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new, 1)


def test_a_good_file_gives_connectors_with_the_registry_and_spark_names() -> None:
    config = parse(GOOD, "pipeline.yaml")
    assert config.master == "local[2]"
    assert config.spark_conf == {"spark.sql.shuffle.partitions": "8"}
    (pipeline,) = config.pipelines
    assert pipeline.source.plugin.spark_name == "cdc-files"
    assert pipeline.destination.plugin.spark_name == "cdc-kafka"
    assert pipeline.source.settings["registry"] == "sqlite:///.cdc/registry.db"
    assert pipeline.dead_letters.settings == {
        "path": "./dlq",
        "registry": "sqlite:///.cdc/registry.db",
        "format": "opencdc-json",
    }
    assert pipeline.dead_letters.max_error_ratio == 0.25
    assert pipeline.checkpoint.endswith("checkpoints/orders")
    assert not pipeline.batch  # the files source streams; no endingOffsets, no mode


def test_a_connector_registry_setting_wins_over_the_file_one() -> None:
    config = parse(_with("path: in/", "path: in/\n          registry: sqlite:///own.db"))
    assert config.pipelines[0].source.settings["registry"] == "sqlite:///own.db"


def test_ending_offsets_or_mode_batch_make_a_batch_job() -> None:
    kafka_source = _with(
        "plugin: builtin:file\n        settings:\n          path: in/\n",
        "plugin: kafka\n        settings:\n          servers: 127.0.0.1:9092\n"
        "          topics: orders\n          endingOffsets: latest\n",
    )
    assert parse(kafka_source).pipelines[0].batch
    assert (
        not parse(kafka_source.replace("endingOffsets: latest", "startingOffsets: earliest"))
        .pipelines[0]
        .batch
    )
    assert parse(_with("  - id: orders\n", "  - id: orders\n    mode: batch\n")).pipelines[0].batch


def test_a_stopped_pipeline_is_not_run() -> None:
    stopped = _with("  - id: orders\n", "  - id: orders\n    status: stopped\n")
    assert "no pipeline to run" in _error(stopped)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (_with('version: "2.2"', 'version: "1.0"'), 'pipeline.yaml:1: version: must be "2.2"'),
        (
            _with("    connectors:", "    colour: blue\n    connectors:"),
            "pipeline.yaml:9: pipelines[0].colour: unknown key",
        ),
        (
            _with("  master: local[2]", "  master: local[2]\n  mastr: x"),
            "pipeline.yaml:6: spark.mastr: unknown key",
        ),
        (
            _with("  master: local[2]", "  master: nowhere://x"),
            "pipeline.yaml:5: spark.master: 'nowhere://x' is no Spark master URL",
        ),
        (
            _with("  master: local[2]", "  master: local[two]"),
            "pipeline.yaml:5: spark.master: 'local[two]' is no Spark master URL",
        ),
        (
            _with('servers: "127.0.0.1:9092", ', ""),
            "pipeline.yaml:19: pipelines[0].connectors[1].settings.servers: cdc-kafka setting "
            "'servers' is required",
        ),
        (
            _with("path: in/", "path: in/\n          nope: 1"),
            "pipeline.yaml:15: pipelines[0].connectors[0].settings.nope: cdc-files has no "
            "setting 'nope'",
        ),
        (
            _with("format: debezium-json", "format: no-such-format"),
            "pipeline.yaml:15: pipelines[0].connectors[0].settings.format: cdc-files setting "
            "'format': unknown format 'no-such-format'",
        ),
        (
            _with("format: debezium-json", "format: debezium-json\n          format.colour: red"),
            "pipeline.yaml:16: pipelines[0].connectors[0].settings.format.colour",
        ),
        (
            _with("plugin: kafka", "plugin: postgres"),
            "pipeline.yaml:18: pipelines[0].connectors[1].plugin: unknown connector plugin "
            "'postgres'",
        ),
        (
            _with("type: destination", "type: sink"),
            "pipeline.yaml:17: pipelines[0].connectors[1].type: must be source or destination",
        ),
        (
            _with("max-error-ratio: 0.25", "max-error-ratio: 1.5"),
            "pipeline.yaml:24: pipelines[0].dead-letter-queue.max-error-ratio: must be between "
            "0 and 1",
        ),
        (
            _with("fail-fast: false", "fail-fast: maybe"),
            "pipeline.yaml:23: pipelines[0].dead-letter-queue.fail-fast: must be true or false",
        ),
        (
            _with("fail-fast: false", "window-size: 4"),
            "pipeline.yaml:23: pipelines[0].dead-letter-queue.window-size: not supported",
        ),
        (
            _with("  url: sqlite:///.cdc/registry.db", "  url: nope://x"),
            "pipeline.yaml:3: schema-registry.url: no registry serves the scheme 'nope'",
        ),
        (
            _with(
                "      - id: out\n        type: destination",
                "      - id: in\n        type: destination",
            ),
            "pipeline.yaml:16: pipelines[0].connectors[1]: connector id 'in' is used twice",
        ),
        (
            _with(
                "        type: destination\n        plugin: kafka",
                "        type: source\n        plugin: files",
            ).replace('{servers: "127.0.0.1:9092", topic: orders-opencdc, ', "{path: x, "),
            "pipeline.yaml:9: pipelines[0].connectors: a pipeline has one source and one "
            "destination connector (found 2 and 0)",
        ),
        (
            _with("  - id: orders", "  - id: ../orders"),
            "pipeline.yaml:8: pipelines[0].id: '../orders'",
        ),
        (
            _with("spark.sql.shuffle.partitions: 8", "shuffle: 8"),
            "pipeline.yaml:6: spark.conf.shuffle: a Spark setting",
        ),
        (
            _with("path: in/", "path: [in/]"),
            "pipeline.yaml:14: pipelines[0].connectors[0].settings.path: must be a string, "
            "number or boolean, not a list",
        ),
        (
            _with("    connectors:\n", "    connectors:\n      - id: x\n"),
            "pipeline.yaml:10: pipelines[0].connectors[0].type: required",
        ),
        (
            _with("  - id: orders\n", "  - id: orders\n    id: again\n"),
            "pipeline.yaml:9: pipelines[0].id: given twice",
        ),
        (
            _with("    connectors:", "    processors: [{id: p, plugin: x}]\n    connectors:"),
            "pipeline.yaml:9: pipelines[0].processors: processors are not supported",
        ),
        (
            _with("topic: orders-opencdc, ", 'topic: orders-opencdc, kafka.sasl.password: "", '),
            "pipeline.yaml:19: pipelines[0].connectors[1].settings.kafka.sasl.password: "
            "cdc-kafka setting 'kafka.sasl.password' is empty: give the secret",
        ),
        (
            _with("format: opencdc-proto}", "format: avro, format.topc: t}"),
            "pipeline.yaml:19: pipelines[0].connectors[1].settings.format.topc: cdc-kafka "
            "setting 'format.*': format 'avro' has no option 'topc'; did you mean 'topic'?",
        ),
        (
            _with("  url: sqlite:///.cdc/registry.db", "  url: memory://shared"),
            "pipeline.yaml:3: schema-registry.url: a memory:// store lives in one process",
        ),
        (
            _with("path: in/", "path: in/\n          registry: memory://"),
            "pipeline.yaml:15: pipelines[0].connectors[0].settings.registry: a memory:// store",
        ),
        ("pipelines: []\n", "pipeline.yaml:1: version: required"),
        ("", "pipeline.yaml:1: empty"),
        ("version: [\n", "pipeline.yaml:2: not valid YAML"),
        (
            'version: "2.2"\npipelines:\n  - id: a\n    connectors: {x: 1}\n',
            "pipeline.yaml:4: pipelines[0].connectors: must be a list, not a mapping",
        ),
        ("- just\n- a list\n", "pipeline.yaml:1: must be a mapping, not a list"),
    ],
    ids=lambda v: re.sub(r"\W+", "-", v)[:40] if isinstance(v, str) else str(v),
)
def test_each_error_names_line_and_key(text: str, expected: str) -> None:
    message = _error(text)
    assert message.startswith(expected), message


def test_unknown_plugin_lists_the_known_ones() -> None:
    message = _error(_with("plugin: kafka", "plugin: builtin:s3"))
    assert "unknown connector plugin 'builtin:s3'" in message
    assert "connectors:" in message


def test_outputs_overlapping_the_input_or_each_other_are_refused() -> None:
    inside = _error(_with("path: ./dlq}", "path: in/dead}"))
    assert "dead-letter-queue path overlaps the source path" in inside
    text = GOOD.replace(
        'plugin: kafka\n        settings: {servers: "127.0.0.1:9092", topic: orders-opencdc, '
        "format: opencdc-proto}",
        "plugin: files\n        settings: {path: ./dlq/records}",
    )
    assert "destination and dead-letter-queue paths overlap" in _error(text)


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ("{path: in/mirror}", "the destination path overlaps the source path"),
        ("{path: in/../in/mirror, format: iceberg}", "the destination path overlaps the source"),
        ("{path: mirror, deadLetters: in/dead}", "table's deadLetters path overlaps the source"),
        ("{path: ./dlq/mirror}", "the destination and dead-letter-queue paths overlap"),
        ("{path: mirror, deadLetters: mirror/dead}", "destination and table's deadLetters paths"),
    ],
)
def test_a_table_overlapping_the_input_or_the_dead_letters_is_refused(
    table: str, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    text = GOOD.replace(
        'plugin: kafka\n        settings: {servers: "127.0.0.1:9092", topic: orders-opencdc, '
        "format: opencdc-proto}",
        f"plugin: table\n        settings: {table}",
    )
    assert said in _error(text)
    elsewhere = text.replace("in/mirror", "mirror").replace("in/dead", "dead")
    elsewhere = elsewhere.replace("./dlq/mirror", "mirror").replace("mirror/dead", "dead")
    assert parse(elsewhere).pipelines[0].destination.plugin.name == "table"
    assert list(tmp_path.iterdir()) == []  # checked, nothing made: no folder, no catalog
    # one by design: the pipeline's dead-letter files, or the table's own folder for them
    for letters in ("./dlq", "mirror/_cdc_dead_letters"):
        shared = text.replace(table, f"{{path: mirror, deadLetters: {letters}}}")
        assert parse(shared).pipelines[0].destination.settings["deadLetters"] == letters


def test_a_setting_spelled_twice_in_other_case_is_refused() -> None:
    message = _error(_with("format: debezium-json", "format: debezium-json\n          FORMAT: x"))
    assert "the same setting as 'format'" in message
    assert re.match(r"pipeline\.yaml:\d+:", message)


def test_typed_sources_and_kafka_destinations_without_topic_are_refused() -> None:
    assert "'typed'" in _error(
        _with("format: debezium-json", "format: debezium-json\n          typed: true")
    )
    assert "'topic' is required" in _error(_with("topic: orders-opencdc, ", ""))


def test_yaml_that_nests_too_deeply_is_one_line() -> None:
    assert "nests too deeply" in _error("a: " + "[" * 5000 + "]" * 5000 + "\n")


@pytest.mark.parametrize(
    ("source", "output"),
    [
        ("in*", "in-out"),  # the glob matches the output's name
        ("data/*/changes", "data/out/changes/x"),
        ("d?ta/*.jsonl", "data"),  # the output holds what the glob reads
        ("*", "dlq2"),
        ("in[0-9]", "in7/records"),
    ],
)
def test_a_glob_source_that_matches_an_output_is_refused(
    source: str, output: str, tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, ``path: 'in*'`` and an output ``in-out`` passed; a second run read its own
    output."""
    monkeypatch.chdir(str(tmp_path))
    text = _with("path: in/", f"path: '{source}'").replace("path: ./dlq}", f"path: {output}}}")
    assert "dead-letter-queue path overlaps the source path" in _error(text)


def test_a_glob_source_that_reaches_an_output_through_a_link_is_refused(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    monkeypatch.chdir(str(tmp_path))
    os.makedirs("feeds")
    os.makedirs("elsewhere/dead")
    os.symlink(os.path.abspath("elsewhere"), "feeds/linked")
    text = _with("path: in/", "path: 'feeds/*'").replace("path: ./dlq}", "path: elsewhere/dead}")
    assert "overlaps the source path" in _error(text)


def test_a_glob_source_apart_from_the_outputs_is_accepted(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(str(tmp_path))
    config = parse(_with("path: in/", "path: 'in/*.jsonl'").replace("./dlq}", "out/dead}"))
    assert config.pipelines[0].dead_letters.settings["path"] == "out/dead"


def _table_file(source: str, *, registry: str = "", table: str = "path: t", top: str = "") -> str:
    head = f"schema-registry: {{url: {top}}}\n" if top else ""
    own = f", registry: {registry}" if registry else ""
    return (
        f'version: "2.2"\n{head}pipelines:\n  - id: mirror\n    connectors:\n'
        f"      - {{id: in, type: source, plugin: files, settings: {{{source}}}}}\n"
        f"      - {{id: out, type: destination, plugin: table, settings: {{{table}{own}}}}}\n"
    )


def test_a_table_pipeline_naming_no_registry_keeps_its_sources_schemas_beside_the_table(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cdc_connectors.registry.embedded import store_place

    monkeypatch.chdir(tmp_path)
    for fmt in ("debezium-json", "cdl-json", "arcion-json", "lindorm-json"):
        (pipeline,) = parse(_table_file(f"path: in, format: {fmt}"), "p.yaml").pipelines
        store = pipeline.schemas
        assert store is not None, fmt
        assert store_place(store) == tmp_path / "t" / "_cdc_schemas" / "schemas.db"
        assert pipeline.source.settings["registry"] == store
        assert pipeline.destination.settings["registry"] == store
    iceberg = _table_file("path: in, format: debezium-json", table="path: w, format: iceberg")
    (pipeline,) = parse(iceberg, "p.yaml").pipelines
    assert store_place(pipeline.schemas) == tmp_path / "w" / "_cdc_schemas" / "cdc.w.db"
    odd = tmp_path / "job#1 %41?x=1"  # read back as the same place, not cut or decoded
    odd.mkdir()
    monkeypatch.chdir(odd)
    (pipeline,) = parse(_table_file("path: in, format: debezium-json"), "p.yaml").pipelines
    assert store_place(pipeline.schemas) == odd / "t" / "_cdc_schemas" / "schemas.db"


def test_a_registry_named_by_one_connector_of_a_table_pipeline_is_given_to_the_other(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    named = "sqlite:///r.db"
    for text in (
        _table_file("path: in, format: debezium-json", top=named),
        _table_file(f"path: in, format: debezium-json, registry: {named}"),
        _table_file("path: in, format: debezium-json", registry=named),
    ):
        (pipeline,) = parse(text, "p.yaml").pipelines
        assert pipeline.schemas is None
        assert pipeline.source.settings["registry"] == named  # it registers the schemas
        assert pipeline.destination.settings["registry"] == named  # it reads them


def test_a_table_pipeline_keeps_no_schemas_where_there_are_none_or_the_table_has_its_types(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for fmt in ("opencdc-json", "ydb-json"):  # records that name no schema of their own
        (pipeline,) = parse(_table_file(f"path: in, format: {fmt}"), "p.yaml").pipelines
        assert pipeline.schemas is None
        assert "registry" not in pipeline.destination.settings
        assert "registry" not in pipeline.source.settings
    empty = _table_file("path: in, format: debezium-json", registry='""')  # asked: values
    (pipeline,) = parse(empty, "p.yaml").pipelines
    assert pipeline.schemas is None and "registry" not in pipeline.source.settings
    remote = _table_file("path: in, format: debezium-json", table="path: s3://b/t")
    assert parse(remote, "p.yaml").pipelines[0].schemas is None
    from cdc_connectors.table.apply import apply_changes
    from cdc_connectors.table.delta import DeltaStore
    from cdc_connectors.table.store import TableSettings
    from tests.table.changes import batch

    made = DeltaStore(str(tmp_path / "t"))  # a table typed by its values, made before
    apply_changes(made, batch([("create", 1, {"id": 1})]), TableSettings(["id"]))
    assert made.settings().typed is None
    (pipeline,) = parse(_table_file("path: in, format: debezium-json"), "p.yaml").pipelines
    assert pipeline.schemas is None and "registry" not in pipeline.destination.settings
    named = "sqlite:///r.db"  # a registry of one connector alone is not given the other
    for text, alone in (
        (_table_file(f"path: in, format: debezium-json, registry: {named}"), "source"),
        (_table_file("path: in, format: debezium-json", registry=named), "destination"),
    ):
        (pipeline,) = parse(text, "p.yaml").pipelines
        assert pipeline.source.settings.get("registry") == (named if alone == "source" else None)
        assert pipeline.destination.settings.get("registry") == (
            named if alone == "destination" else None
        )
    source_empty = _table_file('path: in, format: debezium-json, registry: ""')
    assert parse(source_empty, "p.yaml").pipelines[0].schemas is None


def test_a_table_made_with_a_registry_is_typed_and_later_writers_are_given_one(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cdc_connectors.connectors.table_settings import Settings
    from cdc_connectors.table.apply import apply_changes
    from tests.table.changes import batch

    monkeypatch.chdir(tmp_path)
    settings = Settings.parse({"path": "t", "registry": "sqlite:///r.db", "keyColumns": "id"})
    made = settings.store()
    typed = settings.table_settings(None, typed=True)  # (as a batch of registered types)
    apply_changes(made, batch([("create", 1, {"id": 1})]), typed)
    assert made.settings().typed is True
    named = "sqlite:///r.db"
    text = _table_file(f"path: in, format: debezium-json, registry: {named}")
    (pipeline,) = parse(text, "p.yaml").pipelines
    assert pipeline.destination.settings["registry"] == named
    (pipeline,) = parse(_table_file("path: in, format: debezium-json"), "p.yaml").pipelines
    assert pipeline.schemas is not None  # (its own store, beside it)


def test_settings_are_read_in_any_case_as_spark_reads_them() -> None:
    kafka_source = _with(
        "plugin: builtin:file\n        settings:\n          path: in/\n",
        "plugin: kafka\n        settings:\n          servers: 127.0.0.1:9092\n"
        "          topics: orders\n          endingoffsets: latest\n",
    )
    assert parse(kafka_source).pipelines[0].batch  # as endingOffsets does
    assert "typed" in _error(_with("path: in/", "path: in/\n          Typed: 'true'"))
    own = parse(_with("path: in/", "path: in/\n          Registry: sqlite:///own.db"))
    assert dict(own.pipelines[0].source.settings)["Registry"] == "sqlite:///own.db"
    assert "registry" not in dict(own.pipelines[0].source.settings)  # one setting, not two


def test_a_dead_letter_format_in_any_case_is_the_one_written() -> None:
    config = parse(
        _with("settings: {path: ./dlq}", "settings: {path: ./dlq, Format: opencdc-proto}")
    )
    assert dict(config.pipelines[0].dead_letters.settings)["Format"] == "opencdc-proto"
    assert "format" not in dict(config.pipelines[0].dead_letters.settings)


def test_a_misspelt_files_setting_is_named_as_written_with_the_closest_one() -> None:
    said = _error(_with("path: in/", "path: in/\n          maxFilesPerTriger: '1'"))
    assert "has no setting 'maxFilesPerTriger'; did you mean 'maxFilesPerTrigger'?" in said


def test_a_checkpoint_of_another_source_is_refused_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cdc_connectors.pipeline.checkpoints import mark
    from cdc_connectors.pipeline.runner import refused

    monkeypatch.chdir(tmp_path)
    (pipeline,) = parse(_with("max-error-ratio: 0.25\n", "")).pipelines  # streams files
    assert refused(pipeline) is None  # a new checkpoint
    mark(pipeline.checkpoint, "files")
    assert refused(pipeline) is None
    mark(pipeline.checkpoint, "kafka")
    said = refused(pipeline)
    assert said is not None and "holds the offsets of a kafka source, not of this files" in said
    assert said.startswith("pipeline.yaml:")


def test_two_pipelines_writing_one_place_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two pipelines of a file into the same table (or one inside the other's folder) raced
    each other at run time (an Iceberg catalog made twice failed with SQLite's words); the
    file is refused naming the second pipeline's line and the first one. Iceberg tables of
    one warehouse are told apart by their names."""
    monkeypatch.chdir(tmp_path)

    def pipeline(name: str, source: str, settings: str) -> str:
        return f"""
          - id: {name}
            connectors:
              - {{id: in, type: source, plugin: files, settings: {{path: {source}}}}}
              - {{id: out, type: destination, plugin: table, settings: {settings}}}
        """

    def text(first: str, second: str) -> str:
        return (
            'version: "2.2"\npipelines:'
            + pipeline("a", "in1", first)
            + pipeline("b", "in2", second)
        )

    message = _error(text("{path: mirror}", "{path: ./mirror}"))
    assert message.startswith("pipeline.yaml:8: pipelines[1]:"), message
    assert "overlaps that of pipeline 'a'" in message
    assert "overlaps that of pipeline 'a'" in _error(text("{path: mirror}", "{path: mirror/in}"))
    parse(textwrap.dedent(text("{path: mirror}", "{path: mirror2}")), "pipeline.yaml")
    one, other = (
        "{path: wh, format: iceberg, table: cdc.a}",
        "{path: wh, format: iceberg, table: cdc.b}",
    )
    parse(textwrap.dedent(text(one, other)), "pipeline.yaml")
    assert "overlaps that of pipeline 'a'" in _error(text(one, one))


@pytest.mark.parametrize(
    "master",
    [
        "local",
        "local[2]",
        "local[*]",
        "local[2,3]",
        "local[*, 4]",
        "local-cluster[2,1,1024]",
        "spark://h:7077",
        "spark://a:7077,b:7077",
        "yarn",
        "k8s://https://h:6443",
    ],
)
def test_every_master_url_spark_knows_is_taken(master: str) -> None:
    assert parse(_with("  master: local[2]", f"  master: {master}"), "p.yaml").master == master


def test_a_table_transaction_fixed_in_a_pipeline_file_is_refused(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every later run would be a replay of that transaction: nothing applied, exit 0."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in").mkdir()
    text = _table_file(
        "path: in, format: debezium-json", table="path: t, txnAppId: a, txnVersion: 5"
    )
    with pytest.raises(ConfigError) as caught:
        parse(text, "p.yaml")
    assert str(caught.value).startswith(
        "p.yaml:6: pipelines[0].connectors[1].settings.txnAppId: cdc-table setting 'txnAppId' "
        "is the pipeline's own: each batch is applied once under its query and batch id"
    )
    assert not (tmp_path / "t").exists()
