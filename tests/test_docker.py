"""docker/: the job image, the compose cluster and its pipeline agree with each other.

No Docker engine is needed: the compose file, the pipeline and the seed data are read as
YAML / JSON, the Dockerfile and .dockerignore line by line, and the names, ports, paths and
settings one file uses are looked up in the file that defines them.
"""

from __future__ import annotations

import base64
import fnmatch
import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from cdc_connectors import plugins
from tests.conftest import ROOT

DOCKER = ROOT / "docker"
DOCKERFILE = DOCKER / "Dockerfile"
COMPOSE = DOCKER / "compose.yaml"
PIPELINE = DOCKER / "pipeline.yaml"
DOCKERIGNORE = ROOT / ".dockerignore"

REQUIRED_SERVICES = {"kafka", "schema-registry", "spark-master", "spark-worker", "job"}
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
SPARK_MASTER_PORT = 7077  # Spark's default when --port is not given

# The pipeline file's shape (ARCHITECTURE.md, "Pipeline config", and the keys the
# docstring of cdc_connectors/pipeline/config.py adds).
TOP_KEYS = {"version", "schema-registry", "spark", "pipelines"}
REGISTRY_KEYS = {"url"}
SPARK_KEYS = {"master", "conf", "checkpoint", "trigger"}
PIPELINE_KEYS = {"id", "status", "name", "description", "mode", "connectors", "dead-letter-queue"}
CONNECTOR_KEYS = {"id", "type", "plugin", "name", "settings"}
DLQ_KEYS = {"plugin", "settings", "fail-fast", "max-error-ratio"}
# Settings each connector knows; ``kafka.*`` goes to librdkafka, ``format.*`` to the format.
SETTINGS = {
    "kafka": {
        "servers",
        "topics",
        "topicPattern",
        "topic",
        "format",
        "startingOffsets",
        "endingOffsets",
        "maxRecordsPerPartition",
        "maxOffsetsPerTrigger",
        "pollTimeoutMs",
        "failFast",
        "deliveryTimeoutMs",
    },
    "files": {"path", "format"},
}
SETTING_PREFIXES = {"kafka": ("kafka.", "format."), "files": ("format.",)}


# -- reading the files --------------------------------------------------------------------


def load_yaml(path: Path) -> Any:
    with path.open(encoding="utf-8") as f:
        return yaml.safe_load(f)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    doc = load_yaml(COMPOSE)
    assert isinstance(doc, dict) and isinstance(doc.get("services"), dict), (
        f"{COMPOSE}: no services mapping"
    )
    return doc


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return compose["services"]


@pytest.fixture(scope="module")
def pipeline() -> dict[str, Any]:
    doc = load_yaml(PIPELINE)
    assert isinstance(doc, dict), f"{PIPELINE}: not a mapping"
    return doc


def environment(service: dict[str, Any]) -> dict[str, str]:
    """A service's environment as text, from either compose form (mapping or K=V list)."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.partition("=")[::2] for item in env)
    return {str(k): "" if v is None else str(v) for k, v in env.items()}


def argv(value: Any) -> list[str]:
    """A compose command or entrypoint as a list of words (exec form or shell string)."""
    if value is None:
        return []
    if isinstance(value, str):
        return shlex.split(value)
    return [str(v) for v in value]


def full_command(service: dict[str, Any]) -> list[str]:
    return argv(service.get("entrypoint")) + argv(service.get("command"))


def option(words: list[str], name: str) -> str | None:
    """The value of ``--name VALUE`` or ``--name=VALUE`` in ``words``; None when absent."""
    for i, word in enumerate(words):
        if word == name and i + 1 < len(words):
            return words[i + 1]
        if word.startswith(name + "="):
            return word.split("=", 1)[1]
    return None


def mounts(service: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(source, target) of every volume of a service, short or long syntax."""
    for volume in service.get("volumes") or []:
        if isinstance(volume, dict):
            yield str(volume.get("source", "")), str(volume["target"])
        else:
            source, _, rest = str(volume).partition(":")
            yield source, rest.split(":")[0]


def is_bind(source: str) -> bool:
    return source.startswith((".", "/", "~"))


def connectors(pipeline: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for each in pipeline.get("pipelines") or []:
        yield from each.get("connectors") or []


def dead_letter_queues(pipeline: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for each in pipeline.get("pipelines") or []:
        if "dead-letter-queue" in each:
            yield each["dead-letter-queue"]


def listeners(value: str) -> dict[str, tuple[str, int]]:
    """``NAME://host:port,...`` -> {NAME: (host, port)}."""
    found = {}
    for item in value.split(","):
        name, sep, address = item.strip().partition("://")
        assert sep, f"listener {item!r} is not NAME://host:port"
        host, _, port = address.rpartition(":")
        found[name] = (host, int(port))
    return found


def published_container_ports(service: dict[str, Any]) -> set[int]:
    ports = set()
    for entry in service.get("ports") or []:
        if isinstance(entry, dict):
            ports.add(int(entry["target"]))
        else:
            ports.add(int(str(entry).split("/")[0].rsplit(":", 1)[-1]))
    return ports


def published_host_ports(service: dict[str, Any]) -> dict[int, int]:
    """Host port -> container port of each published port (``[ip:]host:container``)."""
    found: dict[int, int] = {}
    for entry in service.get("ports") or []:
        if isinstance(entry, dict):
            found[int(entry.get("published", entry["target"]))] = int(entry["target"])
            continue
        parts = str(entry).split("/")[0].split(":")
        container = int(parts[-1])
        found[int(parts[-2]) if len(parts) >= 2 else container] = container
    return found


def job_image_services(services: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The services that run the job image: those that build, or name the job's image."""
    image = services["job"].get("image")
    return {
        name: s
        for name, s in services.items()
        if "build" in s or (image is not None and s.get("image") == image)
    }


# Dockerfile: instructions after joining continuation lines, comments dropped.
def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, args = (pending + line).partition(" ")
        instructions.append((keyword.upper(), args.strip()))
        pending = ""
    assert not pending, "the Dockerfile ends inside a continued line"
    return instructions


@pytest.fixture(scope="module")
def instructions() -> list[tuple[str, str]]:
    return dockerfile_instructions(DOCKERFILE.read_text(encoding="utf-8"))


def dockerfile_env(instructions: list[tuple[str, str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for keyword, args in instructions:
        if keyword != "ENV":
            continue
        words = shlex.split(args)
        if words and "=" not in words[0]:  # legacy form: ENV NAME value
            env[words[0]] = " ".join(words[1:])
        else:
            env.update(word.split("=", 1) for word in words)  # type: ignore[misc]
    return env


def runs(instructions: list[tuple[str, str]]) -> str:
    return "\n".join(args for keyword, args in instructions if keyword == "RUN")


def ignored(path: str, patterns: list[str]) -> bool:
    """Whether .dockerignore ``patterns`` keep ``path`` out of the build context: the last
    pattern matching the path or one of its parents decides; ``!`` re-includes."""
    parts = PurePosixPath(path).parts
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    verdict = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        pattern = pattern.lstrip("!").strip("/")
        regex = fnmatch.translate(pattern).replace(".*", "[^/]*")
        regex = regex.replace("[^/]*[^/]*/", "(?:.*/)?")  # ``**/`` spans directories
        if any(re.fullmatch(regex, c) for c in candidates):
            verdict = not negate
    return verdict


def dockerignore_patterns() -> list[str]:
    lines = DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.strip().startswith("#")]


# -- compose: services and how they reach each other ----------------------------------


def test_compose_defines_the_services(services):
    missing = REQUIRED_SERVICES - set(services)
    assert not missing, f"{COMPOSE}: missing services {sorted(missing)}"


def test_pulled_images_are_pinned(services):
    for name, service in services.items():
        if "build" in service:
            continue
        image = service.get("image")
        assert image, f"service {name}: neither image nor build"
        repository, _, tag = image.rpartition(":") if ":" in image else (image, "", "")
        assert tag and "/" not in tag and tag != "latest", (
            f"service {name}: image {image!r} is not pinned to a tag"
        )
        assert repository


def test_kafka_is_a_single_kraft_node(services):
    kafka = services["kafka"]
    assert str(kafka.get("image", "")).startswith("apache/kafka:"), kafka.get("image")
    env = environment(kafka)
    roles = {r.strip() for r in env.get("KAFKA_PROCESS_ROLES", "").split(",")}
    assert roles == {"broker", "controller"}, f"KAFKA_PROCESS_ROLES {roles}"
    assert "KAFKA_ZOOKEEPER_CONNECT" not in env

    node_id = int(env["KAFKA_NODE_ID"])
    bound = listeners(env["KAFKA_LISTENERS"])
    protocols = dict(
        item.split(":") for item in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(",")
    )
    assert set(bound) <= set(protocols), "a listener has no security protocol"

    controller = env["KAFKA_CONTROLLER_LISTENER_NAMES"]
    assert controller in bound, f"controller listener {controller!r} is not in KAFKA_LISTENERS"
    voters = env["KAFKA_CONTROLLER_QUORUM_VOTERS"].split(",")
    assert len(voters) == 1, f"one node, one voter: {voters}"
    voter_id, _, voter_address = voters[0].partition("@")
    voter_host, _, voter_port = voter_address.rpartition(":")
    assert int(voter_id) == node_id, f"the voter {voters[0]} is not node {node_id}"
    assert voter_host in {"kafka", kafka.get("hostname"), "localhost"}, voter_host
    assert int(voter_port) == bound[controller][1], (
        f"the voter's port {voter_port} is not the controller listener's {bound[controller][1]}"
    )

    inter = env["KAFKA_INTER_BROKER_LISTENER_NAME"]
    assert inter in bound and inter != controller, f"inter-broker listener {inter!r}"
    advertised = listeners(env["KAFKA_ADVERTISED_LISTENERS"])
    assert controller not in advertised
    for name in advertised:
        assert name in bound, f"advertised listener {name} is not bound"
    # Containers reach the broker on the port it binds; the host through the published port
    # (test_kafka_external_listener_is_published).
    port = advertised[inter][1]
    assert port == bound[inter][1], f"listener {inter} advertises {port}, binds {bound[inter]}"

    assert env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] == "1"
    assert env.get("KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR") == "1"
    cluster_id = env["CLUSTER_ID"]
    assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16, "CLUSTER_ID is a base64 UUID"


def kafka_listeners(services) -> tuple[str, dict[str, tuple[str, int]]]:
    env = environment(services["kafka"])
    return env["KAFKA_INTER_BROKER_LISTENER_NAME"], listeners(env["KAFKA_ADVERTISED_LISTENERS"])


def test_kafka_internal_listener_is_the_pipeline_servers(services, pipeline):
    internal, advertised = kafka_listeners(services)
    host, port = advertised[internal]
    assert host in services, f"the internal listener's host {host!r} is no service name"
    kafka = [c for c in connectors(pipeline) if c.get("plugin") == "kafka"]
    assert kafka, f"{PIPELINE}: no Kafka connector"
    for connector in kafka:
        servers = str(connector["settings"]["servers"]).split(",")
        assert servers == [f"{host}:{port}"], f"connector {connector['id']}: servers {servers}"


def test_kafka_external_listener_is_published(services):
    internal, advertised = kafka_listeners(services)
    external = {n: a for n, a in advertised.items() if n != internal}
    assert external, "no listener for clients on the host"
    published = published_host_ports(services["kafka"])
    bound = listeners(environment(services["kafka"])["KAFKA_LISTENERS"])
    for name, (host, port) in external.items():
        assert host in {"localhost", "127.0.0.1"}, f"listener {name} advertises {host}"
        assert port in published, f"listener {name} port {port} is not published on the host"
        assert published[port] == bound[name][1], f"host port {port} leads elsewhere than {name}"


def test_kafka_on_the_host_is_where_the_readme_quick_start_looks(services):
    internal, advertised = kafka_listeners(services)
    external = {a for n, a in advertised.items() if n != internal}
    readme = (ROOT / "README.md").read_text()
    assert ("127.0.0.1", 9092) in external
    assert re.search(r"up\s+kafka", readme) and 'servers: "127.0.0.1:9092"' in readme


def test_registry_url_is_the_registry_service(services, pipeline):
    url = urlsplit(pipeline["schema-registry"]["url"])
    assert url.scheme == "http", url.geturl()
    assert url.hostname in services, f"registry host {url.hostname!r} is no service name"
    service = services[url.hostname]
    words = full_command(service)
    if "serve" in words:  # ours: cdc-connectors registry serve
        assert words[:2] == ["registry", "serve"], words
        assert int(option(words, "--port") or 8081) == url.port
        assert option(words, "--host") == "0.0.0.0", "the registry must listen beyond loopback"
        store = option(words, "--store") or ""
        assert store.startswith("sqlite:////"), f"--store {store!r}: an absolute SQLite path"
        directory = str(PurePosixPath(store.removeprefix("sqlite:///")).parent)
        targets = {t for s, t in mounts(service) if not is_bind(s)}
        assert directory in targets, f"the store {store} is not on a volume ({targets})"
    else:  # Confluent's
        env = environment(service)
        assert service["image"].startswith("confluentinc/cp-schema-registry:")
        assert f":{url.port}" in env["SCHEMA_REGISTRY_LISTENERS"]
        internal, advertised = kafka_listeners(services)
        host, port = advertised[internal]
        assert env["SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS"].endswith(f"{host}:{port}")
    check = " ".join(argv(service.get("healthcheck", {}).get("test")))
    assert f":{url.port}/" in check, f"the registry's healthcheck does not ask port {url.port}"


def test_spark_master_url_is_the_master_service(services, pipeline):
    url = urlsplit(pipeline["spark"]["master"])
    assert url.scheme == "spark", url.geturl()
    host, port = url.hostname, url.port
    assert host in services, f"Spark master host {host!r} is no service name"
    master = full_command(services[host])
    assert master[:2] == ["spark-class", MASTER_CLASS], f"service {host} runs {master}"
    assert int(option(master, "--port") or SPARK_MASTER_PORT) == port
    assert option(master, "--host") in {None, host, "0.0.0.0"}

    workers = {n: full_command(s) for n, s in services.items() if WORKER_CLASS in full_command(s)}
    assert workers, "no Spark worker service"
    for name, words in workers.items():
        assert words[:2] == ["spark-class", WORKER_CLASS], f"service {name} runs {words}"
        assert f"spark://{host}:{port}" in words, f"worker {name} joins another master: {words}"
        assert host in services[name].get("depends_on", {}), f"worker {name} ignores the master"


def test_job_image_services_build_from_the_dockerfile(services):
    built = job_image_services(services)
    assert {"job", "spark-master", "spark-worker"} <= set(built), sorted(built)
    for name, service in built.items():
        build = service.get("build")
        assert isinstance(build, dict), f"service {name}: build must name context and Dockerfile"
        context = (DOCKER / build["context"]).resolve()
        assert context == ROOT, f"service {name}: context {context}, not the repository root"
        dockerfile = (context / build.get("dockerfile", "Dockerfile")).resolve()
        assert dockerfile == DOCKERFILE, f"service {name}: builds {dockerfile}"
    images = {s.get("image") for s in built.values()}
    assert len(images) == 1, f"the job image goes by several names: {images}"


def test_mounted_files_exist_in_the_repository(compose, services):
    declared = set(compose.get("volumes") or {})
    for name, service in services.items():
        for source, target in mounts(service):
            assert target.startswith("/"), f"service {name}: target {target!r}"
            if is_bind(source):
                path = (DOCKER / source).resolve()
                assert path.is_relative_to(ROOT), f"service {name} mounts {path} from outside"
                assert path.exists(), f"service {name} mounts {source}: {path} does not exist"
            else:
                assert source in declared, f"service {name}: volume {source!r} is not declared"


def test_job_runs_the_mounted_pipeline(services):
    job = services["job"]
    words = argv(job.get("command"))
    assert words[:1] in (["run"], ["submit"]), f"job command {words}"
    assert not job.get("entrypoint"), "the job runs the image's entry point, cdc-connectors"
    mounted = {t for s, t in mounts(job) if is_bind(s) and (DOCKER / s).resolve() == PIPELINE}
    assert words[1] in mounted, f"the job runs {words[1]}, the pipeline is mounted at {mounted}"


def test_job_waits_for_healthy_services(services):
    for name, service in services.items():
        for dependency, spec in (service.get("depends_on") or {}).items():
            assert dependency in services, f"service {name} depends on unknown {dependency}"
            if isinstance(spec, dict) and spec.get("condition") == "service_healthy":
                assert "healthcheck" in services[dependency], (
                    f"service {name} waits for {dependency} to be healthy: it has no healthcheck"
                )
    for name in ("kafka", "schema-registry"):
        assert "test" in services[name].get("healthcheck", {}), f"{name} has no healthcheck"
    depends = services["job"].get("depends_on") or {}
    for name in ("kafka", "schema-registry"):
        assert depends.get(name, {}).get("condition") == "service_healthy", (
            f"the job does not wait for {name} to be healthy"
        )
    assert any(n in depends for n in services if WORKER_CLASS in full_command(services[n]))


def test_dead_letters_go_to_a_volume_every_spark_process_shares(services, pipeline):
    queues = list(dead_letter_queues(pipeline))
    assert queues, f"{PIPELINE}: no dead-letter-queue"
    sharing = ["job"] + [n for n in services if WORKER_CLASS in full_command(services[n])]
    for queue in queues:
        path = PurePosixPath(queue["settings"]["path"])
        assert path.is_absolute(), f"dead-letter path {path} is relative"
        volumes = []
        for name in sharing:
            found = [
                s
                for s, t in mounts(services[name])
                if not is_bind(s) and path.is_relative_to(PurePosixPath(t))
            ]
            assert found, f"service {name}: {path} is on no volume"
            volumes.append(found[0])
        assert len(set(volumes)) == 1, f"the job and workers write {path} to {volumes}"


def seed_lines() -> list[tuple[Any, Any]]:
    lines = (DOCKER / "seed" / "orders-cdc.txt").read_text(encoding="utf-8").splitlines()
    pairs = []
    for n, line in enumerate(lines, 1):
        key, sep, value = line.partition("|")
        assert sep, f"seed line {n} is not KEY|VALUE"
        pairs.append((json.loads(key), json.loads(value)))
    return pairs


def test_seed_produces_the_source_topic(services, pipeline):
    if "seed" not in services:
        pytest.skip("no seed service")
    script = " ".join(full_command(services["seed"]))
    produced = re.findall(r"kafka-console-producer\.sh\s.*?--topic\s+(\S+)", script)
    sources = [c for c in connectors(pipeline) if c.get("type") == "source"]
    topics = {t for c in sources for t in str(c["settings"].get("topics", "")).split(",")}
    assert produced and set(produced) <= topics, f"seed produces {produced}, source reads {topics}"
    created = set(re.findall(r"--create\b.*?--topic\s+(\S+)", script))
    sinks = {c["settings"].get("topic") for c in connectors(pipeline) if c["type"] == "destination"}
    assert set(produced) | sinks <= created, f"seed creates {created}"
    assert "|" in (option(shlex.split(script), "--property") or "") or "separator='|'" in script


def test_seed_data_is_what_the_source_format_reads(pipeline):
    from cdc_connectors.formats import load_format
    from cdc_connectors.formats.base import Message

    (source,) = [c for c in connectors(pipeline) if c.get("type") == "source"]
    fmt = load_format(source["settings"]["format"])(registry=None)
    pairs = seed_lines()
    assert pairs, "no seed data"
    operations = set()
    for key, value in pairs:
        message = Message(
            key=json.dumps(key).encode(), value=json.dumps(value).encode(), where="seed"
        )
        operations.update(str(r.operation) for r in fmt.decode(message))
    assert len(operations) >= 3, f"the seed should show creates, updates, deletes: {operations}"


# -- the pipeline file ----------------------------------------------------------------------


def test_pipeline_has_the_documented_shape(pipeline):
    assert set(pipeline) <= TOP_KEYS, f"unknown keys {set(pipeline) - TOP_KEYS}"
    assert str(pipeline["version"]) == "2.2"
    assert set(pipeline["schema-registry"]) <= REGISTRY_KEYS
    assert set(pipeline["spark"]) <= SPARK_KEYS
    for name, value in (pipeline["spark"].get("conf") or {}).items():
        assert str(name).startswith("spark."), f"spark.conf {name!r}"
        assert isinstance(value, str), f"spark.conf {name}: give values as text, not {value!r}"
    assert pipeline["pipelines"], "no pipelines"
    for each in pipeline["pipelines"]:
        assert set(each) <= PIPELINE_KEYS, f"pipeline {each.get('id')}: {set(each)}"
        types = []
        for connector in each["connectors"]:
            assert set(connector) <= CONNECTOR_KEYS, f"connector keys {set(connector)}"
            types.append(connector["type"])
        assert sorted(types) == ["destination", "source"], f"pipeline {each['id']}: {types}"
        ids = [c["id"] for c in each["connectors"]]
        assert len(ids) == len(set(ids)), f"connector ids repeat: {ids}"
    for queue in dead_letter_queues(pipeline):
        assert set(queue) <= DLQ_KEYS, f"dead-letter-queue keys {set(queue)}"


def all_plugin_settings(pipeline) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for connector in connectors(pipeline):
        yield connector["id"], connector["plugin"], connector["settings"]
    for queue in dead_letter_queues(pipeline):
        yield "dead-letter-queue", queue["plugin"], queue["settings"]


def test_pipeline_settings_are_known(pipeline):
    for where, plugin, settings in all_plugin_settings(pipeline):
        assert plugin in SETTINGS, f"{where}: plugin {plugin!r}"
        for key, value in settings.items():
            assert key in SETTINGS[plugin] or key.startswith(SETTING_PREFIXES[plugin]), (
                f"{where}: unknown {plugin} setting {key!r}"
            )
            assert isinstance(value, str | int | float | bool), f"{where}: {key} is {value!r}"
    for connector in connectors(pipeline):
        if connector["plugin"] == "kafka":
            wanted = "topics" if connector["type"] == "source" else "topic"
            assert wanted in connector["settings"], f"{connector['id']}: no {wanted!r}"


def test_pipeline_plugins_and_formats_are_installed(pipeline):
    formats = plugins.available(plugins.FORMATS)
    registered = plugins.available(plugins.CONNECTORS)
    for where, plugin, settings in all_plugin_settings(pipeline):
        if registered:  # once connectors are registered, the pipeline's must be among them
            assert plugin in registered, f"{where}: no connector {plugin!r} ({sorted(registered)})"
        assert settings.get("format") in formats, f"{where}: format {settings.get('format')!r}"
    scheme = urlsplit(pipeline["schema-registry"]["url"]).scheme
    assert scheme in plugins.available(plugins.REGISTRIES)


def test_pipeline_format_settings_open_their_formats(pipeline):
    messages = pytest.importorskip("cdc_connectors.connectors.messages")
    for where, _, settings in all_plugin_settings(pipeline):
        text = {k: str(v) for k, v in settings.items() if k == "format" or k.startswith("format.")}
        messages.open_format(text, default="opencdc-json", registry=None, connector=where)


def test_pipeline_loads_with_the_project_loader(services, pipeline):
    config = pytest.importorskip("cdc_connectors.pipeline.config")
    loaded = config.load(str(PIPELINE))  # checks every key, plugin and setting
    assert loaded.master == pipeline["spark"]["master"]
    assert loaded.registry == pipeline["schema-registry"]["url"]
    for each in loaded.pipelines:
        # the job runs once after the seed: a batch that ends, not a stream that waits
        assert each.batch, f"pipeline {each.id} would stream; compose runs the job once"


# -- the Dockerfile and the build context ----------------------------------------------------


def test_dockerfile_base_image_is_a_pinned_python_bookworm(instructions):
    bases = [args.split()[0] for keyword, args in instructions if keyword == "FROM"]
    assert bases, "no FROM"
    image = bases[-1]
    name, _, tag = image.partition(":")
    assert name in {"python", "docker.io/library/python"}, f"base image {image}"
    assert tag and "latest" not in tag, f"base image {image} is not pinned"
    assert re.match(r"3\.11\.\d+-slim-bookworm", tag), (
        f"base image {image}: a 3.11.x slim bookworm tag (Debian 13 has no Java 17)"
    )


def test_dockerfile_installs_java_17(instructions):
    script = runs(instructions)
    assert re.search(r"apt-get install\b[^\n]*\bopenjdk-17-jre-headless\b", script), (
        "no apt-get install of openjdk-17-jre-headless"
    )
    java_home = dockerfile_env(instructions).get("JAVA_HOME", "")
    assert "17" in java_home, f"JAVA_HOME {java_home!r}"


def test_dockerfile_installs_the_package_without_dev_extras(instructions):
    script = runs(instructions)
    installs = re.findall(r"pip install\b([^&\n]*)", script)
    tree = [args for args in installs if re.search(r"(^|\s)(\.|/\S+)(\s|$)", args)]
    assert tree, f"no pip install of the source tree: {installs}"
    # PySpark (Spark itself) comes with the package's dependencies
    assert any("--no-deps" not in args for args in tree), f"no dependencies installed: {tree}"
    assert "[dev]" not in script and "-e " not in " ".join(installs)
    copied = [args for keyword, args in instructions if keyword == "COPY"]
    assert any("cdc_connectors" in args for args in copied), "the package source is not copied"
    assert any("pyproject.toml" in args for args in copied), "pyproject.toml is not copied"


def test_dockerfile_sets_spark_python_and_home(instructions):
    env = dockerfile_env(instructions)
    for name in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):
        assert env.get(name, "").startswith("/"), f"{name} is not an absolute interpreter path"
    assert env.get("PYSPARK_PYTHON") == env.get("PYSPARK_DRIVER_PYTHON")
    spark_home = env.get("SPARK_HOME", "")
    assert spark_home.endswith("/site-packages/pyspark") or "/pyspark/bin" in env.get("PATH", ""), (
        "spark-class is found neither through SPARK_HOME nor on PATH"
    )
    assert "SPARK_LOCAL_IP" not in env, "cluster nodes must not bind to loopback"


def test_dockerfile_does_not_run_as_root(instructions):
    users = [args for keyword, args in instructions if keyword == "USER"]
    assert users, "no USER: the image would run as root"
    user = users[-1].split(":")[0]
    assert user not in {"root", "0"}, f"USER {users[-1]}"


def test_dockerfile_entrypoint_is_the_command(instructions):
    entrypoints = [args for keyword, args in instructions if keyword == "ENTRYPOINT"]
    assert entrypoints, "no ENTRYPOINT"
    assert json.loads(entrypoints[-1]) == ["cdc-connectors"], entrypoints[-1]


def test_dockerignore_keeps_local_state_out_and_the_copied_sources_in(instructions):
    patterns = dockerignore_patterns()
    for path in (".venv", ".git", ".cdc", ".pytest_cache", ".mypy_cache", ".hypothesis"):
        assert ignored(path, patterns), f"{path} would be sent to the build"
    assert ignored("cdc_connectors/__pycache__/cli.cpython-311.pyc", patterns)
    for keyword, args in instructions:
        if keyword != "COPY" or "--from" in args:
            continue
        for source in shlex.split(args)[:-1]:
            if source.startswith("--"):
                continue
            assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
            assert not ignored(source, patterns), f"COPY {source}: .dockerignore excludes it"
