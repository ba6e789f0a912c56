"""The driver JVM of pipelines that all run in one pass per task gets the first compiler
tier only (``LIGHT_JVM``): it plans, and moves no message. Any other pipeline file keeps
Spark's JVM as it is, and Java options the user gives win."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cdc_connectors.pipeline.config import parse
from cdc_connectors.pipeline.launch import spark_submit_command
from cdc_connectors.pipeline.runner import light_driver
from cdc_connectors.spark.session import LIGHT_JVM, java_options, log_config
from tests.jvm_archive import ARCHIVE_OPTIONS
from tests.pipeline.support import files_pipeline


@pytest.fixture(autouse=True)
def _no_compiler_options(monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite's own JVM options (tests/conftest.py) choose the compilers; these tests
    are of the product's choice, made in an environment that makes none."""
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", ARCHIVE_OPTIONS)


def _config(tmp_path: Path, *pipelines: dict, **spark: object):  # type: ignore[no-untyped-def]
    document = {"version": "2.2", "pipelines": list(pipelines)}
    if spark:
        document["spark"] = spark
    return parse(yaml.safe_dump(document, sort_keys=False), str(tmp_path / "p.yaml"))


def _files(tmp_path: Path, name: str = "p", **dlq: object) -> dict:  # type: ignore[type-arg]
    return files_pipeline(name, tmp_path / "in", tmp_path / name, tmp_path / f"{name}-dead", **dlq)


def _kafka_destination(pipeline: dict, topic: str) -> dict:  # type: ignore[type-arg]
    pipeline["connectors"][1] = {
        "id": "out",
        "type": "destination",
        "plugin": "kafka",
        "settings": {"servers": "127.0.0.1:9092", "topic": topic},
    }
    return pipeline


def test_java_options_add_the_light_jvm_unless_the_tiers_are_given() -> None:
    uri = Path(log_config()).as_uri()
    assert java_options(light=True) == f"-Dlog4j2.configurationFile={uri} {LIGHT_JVM}"
    assert java_options("-Xss4m", light=True) == (
        f"-Xss4m -Dlog4j2.configurationFile={uri} {LIGHT_JVM}"
    )
    own = "-XX:TieredStopAtLevel=4"
    assert java_options(own, light=True) == f"{own} -Dlog4j2.configurationFile={uri}"
    assert LIGHT_JVM not in java_options("-XX:-TieredCompilation", light=True)
    assert LIGHT_JVM not in java_options()


def test_a_file_of_one_pass_pipelines_gets_a_light_driver(tmp_path: Path) -> None:
    assert light_driver(_config(tmp_path, _files(tmp_path)))
    assert light_driver(_config(tmp_path, _files(tmp_path, "a"), _files(tmp_path, "b")))
    assert light_driver(_config(tmp_path, _kafka_destination(_files(tmp_path), "t")))


@pytest.mark.parametrize(
    "staged",
    [
        {"fail-fast": True},  # stops on dead letters: the staged way
        {"max-error-ratio": 0.5},
    ],
)
def test_one_staged_pipeline_keeps_the_jvm_as_it_is(tmp_path: Path, staged: dict) -> None:  # type: ignore[type-arg]
    one_pass = _files(tmp_path, "a")
    assert not light_driver(_config(tmp_path, _files(tmp_path, "b", **staged)))
    assert not light_driver(_config(tmp_path, one_pass, _files(tmp_path, "b", **staged)))


def test_spark_submit_gives_the_light_jvm_to_a_one_pass_driver_only(tmp_path: Path) -> None:
    def options(config, extra=()):  # type: ignore[no-untyped-def]
        command = spark_submit_command(config, "p.yaml", "driver.py", "pkg.zip", list(extra))
        return " ".join(command)

    one_pass = _config(tmp_path, _files(tmp_path))
    staged = _config(tmp_path, _files(tmp_path, **{"fail-fast": True}))
    assert LIGHT_JVM in options(one_pass)
    assert LIGHT_JVM not in options(staged)
    # the user's own driver options stand as given
    assert LIGHT_JVM not in options(one_pass, ["--driver-java-options", "-Xss4m"])
    with_conf = _config(
        tmp_path, _files(tmp_path), conf={"spark.driver.extraJavaOptions": "-Xss4m"}
    )
    assert "-Xss4m -Dlog4j2.configurationFile=" in options(with_conf)
    assert LIGHT_JVM in options(with_conf)


@pytest.mark.parametrize(
    "own",
    [
        "-XX:CompilationMode=high-only",  # with the first tier alone: no compiler at all
        "-XX:+UnlockExperimentalVMOptions -XX:+UseJVMCICompiler",
        "-Xint",
        "-XX:TieredStopAtLevel=4",
    ],
)
def test_a_compiler_the_user_chose_stands_wherever_it_is_given(
    tmp_path: Path, own: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert LIGHT_JVM not in java_options(own, light=True)
    conf = {"spark.driver.defaultJavaOptions": own}
    assert not light_driver(_config(tmp_path, _files(tmp_path), conf=conf))
    one_pass = _config(tmp_path, _files(tmp_path))
    command = " ".join(
        spark_submit_command(
            one_pass,
            "p.yaml",
            "d.py",
            "p.zip",
            ["--conf", f"spark.driver.defaultJavaOptions={own}"],
        )
    )
    assert LIGHT_JVM not in command
    for variable in ("SPARK_SUBMIT_OPTS", "JDK_JAVA_OPTIONS", "JAVA_TOOL_OPTIONS"):
        with monkeypatch.context() as patch:
            patch.setenv(variable, own)
            assert LIGHT_JVM not in java_options(light=True)
            assert not light_driver(one_pass)
