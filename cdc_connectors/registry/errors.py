"""Confluent Schema Registry errors: HTTP status, error code and message.

Every registry raises ``confluent_kafka.schema_registry.error.SchemaRegistryError``
with Confluent's codes, so callers handle an embedded store and a remote
registry alike, and the REST server returns them as they are.
"""

from __future__ import annotations

from confluent_kafka.schema_registry.error import SchemaRegistryError

from cdc_connectors.registry.url_error import RegistryURLError

__all__ = ["RegistryURLError", "RegistryUnavailableError", "SchemaRegistryError"]


class RegistryUnavailableError(SchemaRegistryError):
    """No answer from the registry: it could not be reached, or did not answer in time.

    There is no HTTP status nor error code (both are -1, confluent-kafka's "unknown").
    """

    def __init__(self, error_message: str) -> None:
        super().__init__(-1, SchemaRegistryError.UNKNOWN, error_message)


def subject_not_found(subject: str) -> SchemaRegistryError:
    return SchemaRegistryError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(version: object) -> SchemaRegistryError:
    return SchemaRegistryError(404, 40402, f"Version {version} not found.")


def schema_not_found(schema_id: object = None) -> SchemaRegistryError:
    detail = "Schema not found" if schema_id is None else f"Schema {schema_id} not found"
    return SchemaRegistryError(404, 40403, detail)


def subject_soft_deleted(subject: str) -> SchemaRegistryError:
    return SchemaRegistryError(
        404,
        40404,
        f"Subject '{subject}' was soft deleted. Set permanent=true to delete permanently",
    )


def subject_not_soft_deleted(subject: str) -> SchemaRegistryError:
    return SchemaRegistryError(
        404, 40405, f"Subject '{subject}' was not deleted first before being permanently deleted"
    )


def version_soft_deleted(subject: str, version: int) -> SchemaRegistryError:
    return SchemaRegistryError(
        404,
        40406,
        f"Subject '{subject}' Version {version} was soft deleted. "
        "Set permanent=true to delete permanently",
    )


def version_not_soft_deleted(subject: str, version: int) -> SchemaRegistryError:
    return SchemaRegistryError(
        404,
        40407,
        f"Subject '{subject}' Version {version} was not deleted first before being "
        "permanently deleted",
    )


def subject_level_config_not_found(subject: str) -> SchemaRegistryError:
    return SchemaRegistryError(
        404, 40408, f"Subject '{subject}' does not have subject-level compatibility configured"
    )


def subject_level_mode_not_found(subject: str) -> SchemaRegistryError:
    return SchemaRegistryError(
        404, 40409, f"Subject '{subject}' does not have subject-level mode configured"
    )


def invalid_schema(detail: str) -> SchemaRegistryError:
    return SchemaRegistryError(422, 42201, f"Invalid schema: {detail}")


def invalid_version(version: object) -> SchemaRegistryError:
    return SchemaRegistryError(
        422,
        42202,
        f"The specified version '{version}' is not a valid version id. Allowed values are "
        'between [1, 2^31-1] and the string "latest"',
    )


def invalid_compatibility_level(level: object) -> SchemaRegistryError:
    return SchemaRegistryError(
        422,
        42203,
        f"Invalid compatibility level. Valid values are none, backward, forward, full, "
        f"backward_transitive, forward_transitive, and full_transitive; got {level!r}",
    )


def invalid_mode(mode: object) -> SchemaRegistryError:
    return SchemaRegistryError(
        422,
        42204,
        f"Invalid mode {mode!r}. Valid values are READWRITE, READONLY, READONLY_OVERRIDE "
        "and IMPORT.",
    )


def not_permitted(detail: str) -> SchemaRegistryError:
    return SchemaRegistryError(422, 42205, detail)


def reference_exists(subject: str, version: int) -> SchemaRegistryError:
    return SchemaRegistryError(
        422,
        42206,
        f"One or more references exist to the schema {{subject={subject},version={version}}}.",
    )


def incompatible(subject: str, problems: list[str]) -> SchemaRegistryError:
    return SchemaRegistryError(
        409,
        409,
        f'Schema being registered is incompatible with an earlier schema for subject "{subject}", '
        f"details: {problems}",
    )


def bad_request(detail: str) -> SchemaRegistryError:
    return SchemaRegistryError(400, 400, detail)


def unprocessable(detail: str) -> SchemaRegistryError:
    return SchemaRegistryError(422, 422, detail)
