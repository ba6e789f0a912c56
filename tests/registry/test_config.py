"""Setting the compatibility level through `set_config` / `PUT /config`, however it is named."""

from __future__ import annotations

import pytest
from confluent_kafka.schema_registry.common.schema_registry_client import (
    ConfigCompatibilityLevel as Level,
)

from cdc_connectors.registry import SchemaRegistry, SchemaRegistryError
from cdc_connectors.registry.base import ServerConfig

from .conftest import InProcessServer, http


def _level(config: ServerConfig) -> str:
    level = config.compatibility or config.compatibility_level
    assert level is not None, config
    return str(level.value)


@pytest.mark.parametrize("field", ["compatibility", "compatibility_level"])
def test_set_config_round_trips_the_level(registry: SchemaRegistry, field: str):
    assert _level(registry.set_config("s", ServerConfig(**{field: Level.FORWARD}))) == "FORWARD"
    assert _level(registry.get_config("s")) == "FORWARD"
    assert registry.get_compatibility("s") == "FORWARD"
    assert _level(registry.set_config(config=ServerConfig(**{field: Level.FULL}))) == "FULL"
    assert _level(registry.get_config()) == "FULL"
    assert registry.get_compatibility() == "FULL"
    assert registry.get_compatibility("s") == "FORWARD"  # the subject keeps its own


def test_set_config_with_both_names_of_the_level(registry: SchemaRegistry):
    same = ServerConfig(compatibility=Level.NONE, compatibility_level=Level.NONE)
    assert _level(registry.set_config("s", same)) == "NONE"
    differ = ServerConfig(compatibility=Level.FULL, compatibility_level=Level.FORWARD)
    with pytest.raises(SchemaRegistryError) as e:
        registry.set_config("s", differ)
    assert e.value.error_code == 42203
    assert registry.get_compatibility("s") == "NONE"


def test_set_config_without_a_level_changes_nothing(registry: SchemaRegistry):
    registry.set_compatibility(level="FULL_TRANSITIVE")
    assert _level(registry.set_config(config=ServerConfig())) == "FULL_TRANSITIVE"
    assert registry.get_compatibility() == "FULL_TRANSITIVE"


@pytest.mark.parametrize("key", ["compatibility", "compatibilityLevel"])
def test_put_config_reads_either_key_and_answers_as_confluent(
    app_server: InProcessServer, key: str
):
    url = app_server.url
    assert http("PUT", f"{url}/config", {key: "FULL"})[::2] == (200, {"compatibility": "FULL"})
    assert http("GET", f"{url}/config")[::2] == (200, {"compatibilityLevel": "FULL"})
    assert http("PUT", f"{url}/config/s", {key: "forward"})[::2] == (
        200,
        {"compatibility": "FORWARD"},
    )
    assert http("GET", f"{url}/config/s")[::2] == (200, {"compatibilityLevel": "FORWARD"})


@pytest.mark.parametrize(
    "body",
    [
        {"compatibility": "SIDEWAYS"},
        {"compatibilityLevel": "SIDEWAYS"},
        {"compatibility": 5},
        {"compatibilityLevel": ["FULL"]},
        {"compatibility": ""},
        {"compatibility": "FULL", "compatibilityLevel": "NONE"},
        {"compatibility": "FULL", "compatibilityLevel": "SIDEWAYS"},
    ],
)
def test_put_config_refuses_a_level_that_is_not_one(app_server: InProcessServer, body: object):
    url = app_server.url
    for path in ("/config", "/config/s"):
        status, _, answer = http("PUT", url + path, body)
        assert (status, answer["error_code"]) == (422, 42203), answer
    assert http("GET", f"{url}/config")[2] == {"compatibilityLevel": "BACKWARD"}
    assert http("GET", f"{url}/config/s")[2]["error_code"] == 40408


def test_put_config_without_a_level_answers_the_level_unchanged(app_server: InProcessServer):
    url = app_server.url
    http("PUT", f"{url}/config", {"compatibility": "NONE"})
    assert http("PUT", f"{url}/config", {})[::2] == (200, {"compatibility": "NONE"})
    assert http("PUT", f"{url}/config", {"compatibility": None})[::2] == (
        200,
        {"compatibility": "NONE"},
    )
    assert http("GET", f"{url}/config")[2] == {"compatibilityLevel": "NONE"}
