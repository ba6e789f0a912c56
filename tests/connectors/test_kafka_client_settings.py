"""`cdc-kafka` settings that only a Kafka client can judge, refused where they are given.

A bad ``servers`` value, a librdkafka property or value librdkafka refuses (SASL without
its mechanism or credentials, a certificate file that is not there), a producer flag that
is not a boolean and a topic template that cannot be read are refused by the connector's
settings check (no broker needed): in a pipeline file, one line naming the file's line
before any Spark starts; mode-specific Kafka settings likewise.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc_connectors.connectors.kafka_settings import destination_settings, source_settings
from cdc_connectors.connectors.messages import SettingError
from cdc_connectors.pipeline.config import ConfigError, parse

SERVERS = "127.0.0.1:9092"


@pytest.mark.parametrize(
    "servers",
    ["127.0.0.1:notaport", "http://127.0.0.1:9092", "host:0", "host:70000", "a b:1", "[::1"],
)
def test_servers_that_are_not_host_port_are_refused(servers: str) -> None:
    for check, extra in ((source_settings, {"topics": "t"}), (destination_settings, {})):
        with pytest.raises(SettingError, match=r"setting 'servers': .* is not host:port"):
            check({"servers": servers, **extra})


def test_host_port_lists_ipv6_and_names_are_taken() -> None:
    source_settings({"servers": "[::1]:9092, broker-1.example.com:9093", "topics": "t"})
    source_settings({"servers": "SSL://Broker_2.example.com:9093", "topics": "t"})  # (librdkafka's)
    source_settings({"servers": "kafka,[fe80::1%eth0]:9092,", "topics": "t"})  # (9092 for none)


@pytest.mark.parametrize(
    ("kafka", "named", "reason"),
    [
        ({"bogus.prop": "1"}, "kafka.bogus.prop", "No such configuration property"),
        ({"security.protocol": "BOGUS"}, "kafka.security.protocol", "Invalid value"),
        ({"security.protocol": "SASL_PLAINTEXT"}, "kafka.security.protocol", "SASL mechanism"),
        (
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"},
            "kafka.security.protocol",
            "sasl.username and sasl.password must be set",
        ),
    ],
)
def test_what_librdkafka_refuses_is_refused_naming_the_setting(
    kafka: dict[str, str], named: str, reason: str, capfd: pytest.CaptureFixture[str]
) -> None:
    options = {f"kafka.{k}": v for k, v in kafka.items()}
    for check, extra in ((source_settings, {"topics": "t"}), (destination_settings, {})):
        with pytest.raises(SettingError) as refused:
            check({"servers": SERVERS, **extra, **options})
        assert f"setting '{named}'" in str(refused.value) and reason in str(refused.value)
    assert capfd.readouterr().err == ""  # the client made to check logs nothing


def test_settings_librdkafka_takes_pass_and_a_check_connects_nowhere(
    capfd: pytest.CaptureFixture[str],
) -> None:
    destination_settings({"servers": "127.0.0.1:1", "kafka.linger.ms": "5", "topic": "t"})
    source_settings({"servers": "127.0.0.1:1", "topics": "t", "kafka.fetch.max.bytes": "1000000"})
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("value", ["maybe", "flase", ""])
def test_an_idempotence_flag_that_is_no_boolean_is_refused(value: str) -> None:
    with pytest.raises(SettingError, match=r"'kafka.enable.idempotence' must be true or false"):
        destination_settings({"servers": SERVERS, "kafka.enable.idempotence": value})
    for given in ("false", "no", "true", "1"):
        destination_settings({"servers": SERVERS, "kafka.enable.idempotence": given})


@pytest.mark.parametrize("topic", ["cdc.{bogus}", '{{ index .Metadata "k" ', "a}b"])
def test_a_topic_template_that_cannot_be_read_is_refused_with_the_settings(topic: str) -> None:
    with pytest.raises(SettingError, match=r"setting 'topic': .* is not a topic name or template"):
        destination_settings({"servers": SERVERS, "topic": topic})


PIPELINE = """\
version: "2.2"
pipelines:
  - id: p
    {mode}
    connectors:
      - id: in
        type: source
        plugin: kafka
        settings:
          servers: {servers}
          topics: t
          {source}
      - id: out
        type: destination
        plugin: kafka
        settings:
          servers: {servers}
          {destination}
"""


@pytest.mark.parametrize(
    ("fields", "line", "said"),
    [
        ({"destination": "topic: cdc.{bogus}"}, 18, "is not a topic name or template"),
        ({"destination": "topic: t\n          kafka.bogus.prop: 1"}, 19, "librdkafka refuses"),
        ({"source": "kafka.security.protocol: BOGUS"}, 12, "librdkafka refuses"),
        ({"servers": "127.0.0.1:notaport", "destination": "topic: t"}, 10, "not host:port"),
        (
            {
                "mode": "mode: batch",
                "source": "maxOffsetsPerTrigger: 10",
                "destination": "topic: t",
            },
            12,
            "is for streaming reads",
        ),
        (
            {
                "mode": "mode: streaming",
                "source": "endingOffsets: latest",
                "destination": "topic: t",
            },
            12,
            "is for batch reads",
        ),
    ],
)
def test_a_pipeline_file_is_refused_at_the_line_of_the_setting(
    fields: dict[str, str], line: int, said: str, tmp_path: Path
) -> None:
    values = {"mode": "", "servers": SERVERS, "source": "", "destination": "", **fields}
    text = PIPELINE.format(**values)
    with pytest.raises(ConfigError) as refused:
        parse(text, "p.yaml")
    message = str(refused.value)
    assert message.startswith(f"p.yaml:{line}: ") and said in message, message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("offset", "shown"), [("true", "true"), ('"x"', '"x"'), ("-3", "-3"), ("1.5", "1.5")]
)
def test_an_offset_that_is_no_integer_is_shown_as_json_wrote_it(offset: str, shown: str) -> None:
    with pytest.raises(SettingError) as refused:
        source_settings(
            {"servers": SERVERS, "topics": "t", "startingOffsets": f'{{"t": {{"0": {offset}}}}}'}
        )
    assert str(refused.value).endswith(f"t/0 has offset {shown}, not an integer of -2 or more")


def test_a_certificate_file_is_checked_where_it_is_opened(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """A source's driver connects (it lists offsets): its files must be there. A
    destination's producers run on the executors, where its files may be shipped."""
    ssl = {"kafka.security.protocol": "SSL", "kafka.ssl.ca.location": "/nowhere/ca.pem"}
    with pytest.raises(SettingError, match=r"setting 'kafka.ssl.ca.location': .* failed"):
        source_settings({"servers": SERVERS, "topics": "t", **ssl})
    destination_settings({"servers": SERVERS, "topic": "t", **ssl})
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize(
    ("kafka", "named"),
    [
        ({"acks": "1"}, "kafka.acks"),
        ({"retries": "0"}, "kafka.retries"),
        ({"linger.ms": "40000"}, "kafka.linger.ms"),  # (beyond deliveryTimeoutMs)
    ],
)
def test_a_destination_is_checked_with_the_producer_s_own_guarantees(
    kafka: dict[str, str], named: str
) -> None:
    options = {f"kafka.{k}": v for k, v in kafka.items()}
    with pytest.raises(SettingError, match=f"setting '{named}': librdkafka refuses it"):
        destination_settings({"servers": SERVERS, "topic": "t", **options})
    if "acks" in kafka:  # without idempotence, acks=1 is the user's to choose
        destination_settings(
            {"servers": SERVERS, "topic": "t", **options, "kafka.enable.idempotence": "false"}
        )


def test_settings_a_check_cannot_make_a_client_of_are_one_line_or_left_alone() -> None:
    with pytest.raises(SettingError, match="librdkafka refuses them: expected error_cb"):
        destination_settings({"servers": SERVERS, "kafka.error_cb": "print"})
    source_settings({"servers": SERVERS, "topics": "t", "kafka.Client.Id": "mine"})
    oidc = {  # a client made with these would fetch a token: not made to check
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "OAUTHBEARER",
        "kafka.sasl.oauthbearer.method": "oidc",
        "kafka.sasl.oauthbearer.token.endpoint.url": "http://127.0.0.1:9/token",
        "kafka.sasl.oauthbearer.client.id": "id",
        "kafka.sasl.oauthbearer.client.secret": "secret",
    }
    source_settings({"servers": SERVERS, "topics": "t", **oidc})
