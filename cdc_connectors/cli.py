"""The ``cdc-connectors`` command.

Exit codes of ``convert``: 0 when every message converted or was skipped by
policy, 1 when any failed (written to ``--errors`` when given), 2 on usage
errors. Counts go to stderr.
"""

from __future__ import annotations

import sys
from contextlib import ExitStack
from typing import IO

import click

from cdc_connectors import plugins as plugin_groups
from cdc_connectors.formats import FormatOptionError, load_format
from cdc_connectors.formats.convert import FailFast, convert_stream
from cdc_connectors.formats.deadletter import DeadLetterWriter


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="cdc-connectors")
def main() -> None:
    """Carry change-data-capture streams through Spark as OpenCDC records."""


def _parse_opts(values: tuple[str, ...]) -> dict[str, str]:
    opts: dict[str, str] = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"{item!r} is not NAME=VALUE", param_hint="--opt")
        opts[name.strip()] = value
    return opts


def _split_opts(
    opts: dict[str, str], names: tuple[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """Give each format the options it declares; an option neither knows is a usage error."""
    classes = [load_format(n) for n in names]
    split: tuple[dict[str, str], dict[str, str]] = ({}, {})
    for key, value in opts.items():
        taken = False
        for cls, target in zip(classes, split, strict=True):
            if key in cls.options:
                target[key] = value
                taken = True
        if not taken:
            raise click.BadParameter(
                f"neither {names[0]!r} nor {names[1]!r} has an option {key!r}",
                param_hint="--opt",
            )
    return split


@main.command()
@click.option("--from", "from_", required=True, metavar="FORMAT", help="Input format.")
@click.option("--to", "to", required=True, metavar="FORMAT", help="Output format.")
@click.option("--registry", metavar="URL", help="Schema registry URL (sqlite:///..., http://...).")
@click.option("--opt", "opts", multiple=True, metavar="NAME=VALUE", help="Format option.")
@click.option("--kv", is_flag=True, help='Lines are {"key": ..., "value": ...}.')
@click.option(
    "--errors",
    "errors_path",
    type=click.Path(dir_okay=False, writable=True),
    help="Write messages that fail as dead-letter records (OpenCDC JSON lines) here.",
)
@click.option("--fail-fast", is_flag=True, help="Stop at the first bad message.")
@click.argument("input_path", metavar="[IN]", required=False, type=click.Path(dir_okay=False))
@click.option("-o", "--output", "output_path", type=click.Path(dir_okay=False), help="Output file.")
def convert(
    from_: str,
    to: str,
    registry: str | None,
    opts: tuple[str, ...],
    kv: bool,
    errors_path: str | None,
    fail_fast: bool,
    input_path: str | None,
    output_path: str | None,
) -> None:
    """Convert a CDC stream from one format to another, without Spark.

    Reads IN (stdin by default) and writes to -o (stdout by default). JSON
    formats hold one message per line; opencdc-proto is length-delimited.
    """
    try:
        in_opts, out_opts = _split_opts(_parse_opts(opts), (from_, to))
        decoder = load_format(from_)(in_opts, registry=registry)
        encoder = load_format(to)(out_opts, registry=registry)
    except FormatOptionError as exc:
        raise click.UsageError(str(exc)) from None

    with ExitStack() as stack:
        source: IO[bytes] = (
            stack.enter_context(open(input_path, "rb")) if input_path else sys.stdin.buffer
        )
        sink: IO[bytes] = (
            stack.enter_context(open(output_path, "wb")) if output_path else sys.stdout.buffer
        )
        dead_letters = None
        if errors_path:
            dead_letters = DeadLetterWriter(
                stack.enter_context(open(errors_path, "ab")), node_id=f"convert:{from_}->{to}"
            )
        try:
            stats = convert_stream(
                source,
                sink,
                decoder,
                encoder,
                kv_in=kv,
                kv_out=kv,
                dead_letters=dead_letters,
                fail_fast=fail_fast,
                source_name=input_path or "<stdin>",
            )
        except FailFast as stop:
            click.echo(f"error: {stop.error}", err=True)
            sys.exit(1)
        sink.flush()
    for line in stats.first_errors:
        click.echo(f"error: {line}", err=True)
    if stats.errors > len(stats.first_errors):
        click.echo(f"error: ... and {stats.errors - len(stats.first_errors)} more", err=True)
    click.echo(stats.summary(), err=True)
    sys.exit(1 if stats.errors else 0)


@main.group()
def registry() -> None:
    """The schema registry."""


@registry.command("serve")
@click.option(
    "--store",
    default="sqlite:///.cdc/registry.db",
    show_default=True,
    metavar="URL",
    help="The store to serve (sqlite:///path or memory://).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=8081, show_default=True, type=int, help="Port to bind.")
@click.option(
    "--basic-auth",
    metavar="USER:PASSWORD",
    envvar="CDC_REGISTRY_BASIC_AUTH",
    help="Require HTTP basic auth (or set CDC_REGISTRY_BASIC_AUTH).",
)
@click.option(
    "--token",
    metavar="TOKEN",
    envvar="CDC_REGISTRY_TOKEN",
    help="Accept this bearer token (or set CDC_REGISTRY_TOKEN).",
)
@click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False), help="Serve HTTPS.")
@click.option("--tls-key", type=click.Path(exists=True, dir_okay=False), help="Key of --tls-cert.")
def registry_serve(
    store: str,
    host: str,
    port: int,
    basic_auth: str | None,
    token: str | None,
    tls_cert: str | None,
    tls_key: str | None,
) -> None:
    """Serve the Confluent Schema Registry REST API over an embedded store."""
    from cdc_connectors.registry.serve import serve

    if basic_auth and ":" not in basic_auth:
        raise click.BadParameter("expected USER:PASSWORD", param_hint="--basic-auth")
    if bool(tls_cert) != bool(tls_key):
        raise click.UsageError("--tls-cert and --tls-key go together")
    scheme = "https" if tls_cert else "http"
    click.echo(f"schema registry on {scheme}://{host}:{port} serving {store}", err=True)
    serve(store, host, port, basic_auth=basic_auth, bearer_token=token, tls=(tls_cert, tls_key))


@main.command()
def plugins() -> None:
    """List the connectors, formats and registries found by entry point."""
    for title, group in plugin_groups.GROUPS.items():
        click.echo(f"{title}:")
        found = plugin_groups.available(group)
        if not found:
            click.echo("  (none)")
        for name, value in found.items():
            click.echo(f"  {name:<20} {value}")


if __name__ == "__main__":
    main()
