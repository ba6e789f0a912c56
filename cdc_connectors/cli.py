"""The ``cdc-connectors`` command.

Exit codes of ``convert``: 0 when every message converted or was skipped by
policy, 1 when any failed (written to ``--errors`` when given) or a read or
write failed midway (one line naming the stream), 2 on usage errors (formats,
options, paths, a closed standard stream and the registry: checked before any file is
touched) and when
the registry fails midway (-o is then left unchanged). Counts go to stderr.

Exit codes of ``run`` and ``submit``: 0 when every pipeline ran and nothing went to its
dead-letter output, 1 when records did, or a pipeline was stopped by its dead-letter
policy (fail-fast, max-error-ratio) or failed midway (one line each), 2 for a pipeline
file or setting that cannot be run (one line naming file, line and key), 130 when a
second Ctrl-C stopped it at once.
"""

from __future__ import annotations

import difflib
import errno
import os
import signal
import stat
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, nullcontext, suppress
from dataclasses import dataclass
from types import FrameType
from typing import IO, TYPE_CHECKING, Any, NoReturn, TypeGuard

import click
from click.core import ParameterSource

from cdc_connectors import plugins as plugin_groups
from cdc_connectors.convert import DeadLetterWriter, FailFast, convert_stream, layout_of
from cdc_connectors.convert.engine import ConvertStats, ProgressLine
from cdc_connectors.convert.files import (
    ClosedStdout,
    Guarded,
    Output,
    Place,
    PlaceError,
    StreamError,
    check_places,
    close_quietly,
    open_input,
    settle_stdout,
)
from cdc_connectors.formats import Format, FormatOptionError, available_formats, load_format
from cdc_connectors.text import printable

if TYPE_CHECKING:
    from confluent_kafka.schema_registry.error import SchemaRegistryError

_NoArgsIsHelp = getattr(click.exceptions, "NoArgsIsHelpError", ())


class _Command(click.Group):
    """The command group; output lost to a full or closed stdout ends in one line.

    A process started with stdout closed gets a stand-in that refuses writes, so that
    ``--help`` and ``--version`` (which click would skip silently) end in that line too.
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:  # the run's cleanups are done (unwound on the way here)
            raise _Interrupted() from None

    def main(self, *args: Any, **kwargs: Any) -> Any:
        if sys.stdout is None:
            sys.stdout = ClosedStdout()
        kwargs.pop("standalone_mode", None)
        try:
            # Not click's standalone mode: a usage error is one line here, not click's
            # usage block, hint and error (four lines).
            result = super().main(*args, standalone_mode=False, **kwargs)  # type: ignore[call-overload]
        except _NoArgsIsHelp as exc:  # a group alone: its help, as click shows it
            exc.show()
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            command = exc.ctx.command_path if exc.ctx is not None else "cdc-connectors"
            click.echo(f"Error: {exc.format_message()} (see '{command} --help')", err=True)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        except OSError as exc:
            settle_stdout()
            click.echo(f"Error: cannot write the output: {exc.strerror or exc}", err=True)
            sys.exit(_lost_output_status(exc))
        # What click returns without standalone mode: a command's exit status (ctx.exit,
        # --help, --version), or None when it simply returned.
        sys.exit(result if isinstance(result, int) else 0)


@click.group(cls=_Command, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="cdc-connectors")
def main() -> None:
    """Carry change-data-capture streams through Spark as OpenCDC records."""


def _parse_opts(values: tuple[str, ...]) -> dict[str, str]:
    opts: dict[str, str] = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise click.BadParameter(f"{item!r} is not NAME=VALUE", param_hint="--opt")
        name = name.strip()
        if name in opts:
            raise click.BadParameter(
                f"{name!r} is given twice ({opts[name]!r} and {value!r})", param_hint="--opt"
            )
        opts[name] = value
    return opts


def _check_registry(url: str | None) -> None:
    """A usage error for a registry URL whose scheme no registry plugin serves, checked
    by name without opening anything."""
    if url is None:
        return
    from cdc_connectors.registry import url_scheme
    from cdc_connectors.registry.redact import redact_url

    scheme = url_scheme(url)
    known = plugin_groups.available(plugin_groups.REGISTRIES)
    if scheme not in known:
        problem = f"no registry serves its scheme {scheme!r}" if scheme else "it has no scheme"
        raise click.BadParameter(
            f"{redact_url(url)!r}: {problem} (schemes: {', '.join(known) or 'none installed'})",
            param_hint="--registry",
        )


def _open_registry(url: str) -> None:
    """Open the registry of ``url`` and ask it one question, before any file is touched:
    the formats then use this one (it is shared by URL). Whatever keeps it from being
    used ends the run in one line without credentials, exit 2."""
    from cdc_connectors.registry import checked_registry

    try:
        checked_registry(url)
    except ValueError as exc:
        _stop(f"--registry: {exc}", 2)


def _progress_line(writes_stdout: bool) -> ProgressLine | None:
    """A progress line when standard error is a terminal, unless the records themselves
    go to that terminal (standard output is one too): they show the progress there."""
    if not _is_terminal(sys.stderr) or (writes_stdout and _is_terminal(sys.stdout)):
        return None
    return ProgressLine(sys.stderr)


def _is_terminal(stream: IO[str] | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (OSError, ValueError):  # closed
        return False


class _Terminated(click.ClickException):
    """A run stopped by SIGTERM: one line and exit 128 + 15, once the partial output was
    removed (the exception unwinds the run's cleanups on its way)."""

    exit_code = 128 + signal.SIGTERM

    def __init__(self) -> None:
        super().__init__(f"stopped by {signal.Signals(self.exit_code - 128).name}")


class _HungUp(_Terminated):
    """A run stopped by SIGHUP."""

    exit_code = 128 + signal.SIGHUP


class _Interrupted(_Terminated):
    """A run stopped by SIGINT (Ctrl-C): Python's ``KeyboardInterrupt``, which click
    would end in a blank line, ``Aborted!`` and exit 1 (the status of dead letters)."""

    exit_code = 128 + signal.SIGINT


_STOPPED_BY = {signal.SIGTERM: _Terminated, signal.SIGHUP: _HungUp, signal.SIGINT: _Interrupted}


#: How soon a stop signal that came during an import is delivered again.
_AGAIN_SECONDS = 0.01


@dataclass
class _PutOff:
    """A stop signal that came while a module was being imported: raised inside the
    import machinery, the stop would leave a module lock held (a ``KeyError`` at the next
    import) or be lost. It is delivered again in a moment, and acted on at the latest
    before the run keeps its output (:func:`_stop_if_signalled`)."""

    signum: int | None = None
    again: threading.Timer | None = None

    def hold(self, signum: int) -> None:
        self.cancel()
        self.signum = signum
        self.again = threading.Timer(_AGAIN_SECONDS, os.kill, (os.getpid(), signum))
        self.again.daemon = True
        self.again.start()

    def cancel(self) -> None:
        if self.again is not None:
            self.again.cancel()
        self.signum, self.again = None, None


_put_off = _PutOff()


def _importing(frame: FrameType | None) -> bool:
    """Whether ``frame`` (where a signal came) is in Python's import machinery."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _stopped(signum: int) -> NoReturn:
    _put_off.cancel()
    for each in _STOPPED_BY:
        signal.signal(each, signal.SIG_IGN)
    raise _STOPPED_BY[signal.Signals(signum)]()


def _stop_if_signalled() -> None:
    """A stop signal put off by an import ends the run now (before its output is kept)."""
    if _put_off.signum is not None:
        _stopped(_put_off.signum)


@contextmanager
def _signals_held() -> Iterator[None]:
    """Stop signals that come meanwhile are delivered when the block ends (in the main
    thread; elsewhere Python handles none)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, set(_STOPPED_BY))
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _stop_on_signals(stack: ExitStack) -> None:
    """Until ``stack`` closes, SIGTERM and SIGHUP raise :class:`_Terminated` (once: a
    second one waits until the cleanups are done)."""
    if threading.current_thread() is not threading.main_thread():
        return  # only the main thread may handle signals; the caller keeps its own

    def stop(signum: int, frame: FrameType | None) -> None:
        if _importing(frame):
            _put_off.hold(signum)
            return
        _stopped(signum)

    stack.callback(_put_off.cancel)
    for each in _STOPPED_BY:
        if signal.getsignal(each) == signal.SIG_IGN:
            continue  # ignored by who started it (nohup, a shell's background job): so be it
        stack.callback(signal.signal, each, signal.signal(each, stop))


def _split_opts(
    opts: dict[str, str], names: tuple[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """Give each format the options it declares; an option neither knows is a usage error
    that lists the options both have (and the nearest one, for a misspelling)."""
    classes = [load_format(n) for n in names]
    split: tuple[dict[str, str], dict[str, str]] = ({}, {})
    for key, value in opts.items():
        taken = False
        for cls, target in zip(classes, split, strict=True):
            if key in cls.options:
                target[key] = value
                taken = True
        if not taken:
            raise click.BadParameter(_unknown_option(key, names, classes), param_hint="--opt")
    return split


def _unknown_option(key: str, names: tuple[str, str], classes: list[type[Format]]) -> str:
    """The message for an option neither format has: what each has, and the nearest one."""
    pairs = list(dict(zip(names, classes, strict=True)).items())  # --from and --to alike: once
    if len(pairs) == 1 and not pairs[0][1].options:
        return f"{names[0]!r} has no options ({key!r} given)"
    if len(pairs) == 1:
        problem = f"{names[0]!r} has no option {key!r}"
    else:
        problem = f"neither {names[0]!r} nor {names[1]!r} has an option {key!r}"
    known = sorted({option for _, cls in pairs for option in cls.options})
    nearest = difflib.get_close_matches(key, known, n=1)
    hint = f"; did you mean {nearest[0]!r}?" if nearest else ""
    lists = "; ".join(
        f"{name} options: {', '.join(sorted(cls.options))}"
        if cls.options
        else f"{name} has no options"
        for name, cls in pairs
    )
    return f"{problem}{hint} ({lists})"


@main.command()
@click.option("--from", "from_", required=True, metavar="FORMAT", help="Input format.")
@click.option("--to", "to", required=True, metavar="FORMAT", help="Output format.")
@click.option("--registry", metavar="URL", help="Schema registry URL (sqlite:///..., http://...).")
@click.option("--opt", "opts", multiple=True, metavar="NAME=VALUE", help="Format option.")
@click.option(
    "--kv", is_flag=True, help='Lines are {"key": ..., "value": ...}; "value": null is a tombstone.'
)
@click.option(
    "--errors",
    "errors_path",
    metavar="FILE",
    help="Append messages that fail as dead-letter records (OpenCDC JSON lines) here; "
    "- for standard output when -o names a file.",
)
@click.option(
    "--fail-fast", is_flag=True, help="Stop at the first bad message (-o is then left unchanged)."
)
@click.argument("input_path", metavar="[IN]", required=False)
@click.option(
    "-o", "--output", "output_path", metavar="OUT", help="Output file (- for standard output)."
)
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

    Reads IN (stdin by default or with -) and writes to -o (stdout by default
    or with -o -). JSON formats hold one message per line; opencdc-proto is
    length-delimited. Every path is checked before any file is touched; -o is
    replaced only when the run reads its whole input.
    """
    _check_registry(registry)
    input_path = None if input_path == "-" else input_path  # "-": standard input
    output_path = None if output_path == "-" else output_path  # "-": standard output
    decoder, encoder = _formats(from_, to, opts, registry)
    places = _places(input_path, output_path, errors_path, registry)
    if registry is not None:
        _open_registry(registry)
    progress = _progress_line(writes_stdout=output_path is None or places.errors_to_stdout)
    with ExitStack() as stack:
        _stop_on_signals(stack)
        streams = _open_streams(stack, places)
        try:
            stats, stopped = _convert_streams(
                streams,
                places,
                decoder,
                encoder,
                kv=kv,
                fail_fast=fail_fast,
                node_id=f"convert:{from_}->{to}",
                registry=registry,
                progress=progress,
            )
        except StreamError as exc:
            if streams.output is None or places.errors_to_stdout:
                settle_stdout()
                if exc.closed_pipe:
                    # The reader has what it wanted (``| head``): end as a Unix tool killed
                    # by SIGPIPE does, without a word.
                    sys.exit(128 + signal.SIGPIPE)
            _stop(str(exc), 1)
        if streams.errors_made is not None:
            streams.errors_made.ended = True
    _report(stats, stopped, output_path)
    sys.exit(1 if stats.errors else 0)


def _needs_open(name: str, fd: int, why: str) -> None:
    """A usage error (exit 2) when the process was started with standard stream ``fd``
    closed: what the command says there would be lost, or land in a file opened later."""
    try:
        os.fstat(fd)
    except OSError:
        _stop(f"{name} is closed: {why}", 2)


def _stop(message: str, code: int) -> NoReturn:
    """End the command with one error line and exit status ``code``."""
    click.echo(f"Error: {message}", err=True)
    sys.exit(code)


def _formats(
    from_: str, to: str, opts: tuple[str, ...], registry: str | None
) -> tuple[Format, Format]:
    """The ``--from`` and ``--to`` formats with their ``--opt`` options; a usage error for
    an option or format that cannot be used."""
    try:
        in_opts, out_opts = _split_opts(_parse_opts(opts), (from_, to))
        decoder = load_format(from_)(in_opts, registry=registry)
        encoder = load_format(to)(out_opts, registry=registry)
        if not encoder.writable:
            raise FormatOptionError(f"format {to!r} is read-only: it cannot be a --to format")
    except FormatOptionError as exc:
        raise click.UsageError(str(exc)) from None
    return decoder, encoder


@dataclass(frozen=True)
class _Places:
    """Where ``convert`` reads and writes: IN, -o and --errors (``errors_path`` ``None``
    when the dead letters go to standard output, ``errors_to_stdout``, or nowhere)."""

    source: Place
    outputs: list[Place]
    errors: Place | None
    input_path: str | None
    output_path: str | None
    errors_path: str | None
    errors_to_stdout: bool


def _store_files(registry: str | None) -> list[Place]:
    """The files of the SQLite store ``registry`` names (none for another registry): no
    output may be one of them."""
    from cdc_connectors.registry import url_scheme

    if registry is None or url_scheme(registry) != "sqlite":
        return []
    from cdc_connectors.registry.embedded import JOURNALS, store_place

    try:
        path = store_place(registry)
    except ValueError:  # said in one line when the registry is opened
        return []
    if path is None:
        return []
    real = os.path.realpath(path)  # (SQLite names its journal after the file itself)
    return [
        Place("--registry", str(path), -1),
        *(Place("the journal of --registry", f"{real}{part}", -1) for part in JOURNALS),
    ]


def _places(
    input_path: str | None,
    output_path: str | None,
    errors_path: str | None,
    registry: str | None = None,
) -> _Places:
    """The places of a run, each checked before any file is touched (exit 2 naming it)."""
    errors_to_stdout = errors_path == "-"  # "-": standard output, when -o names a file
    if errors_to_stdout:
        if output_path is None:
            _stop("--errors -: standard output already holds the output; give -o FILE", 2)
        errors_path = None
    source = Place("IN", input_path, 0)
    errors = (
        Place("--errors", errors_path, 1 if errors_to_stdout else -1)
        if errors_path is not None or errors_to_stdout
        else None
    )
    outputs = [Place("-o", output_path, 1), *([errors] if errors else [])]
    try:
        check_places(source, outputs, _store_files(registry))
    except PlaceError as exc:
        _stop(str(exc), 2)
    return _Places(source, outputs, errors, input_path, output_path, errors_path, errors_to_stdout)


class _MadeErrorsFile:
    """The dead letters' file a run made: removed when the run did not end (a stop, an
    error) and nothing was written into it, if it is still the file the run made."""

    def __init__(self, path: str, stream: IO[bytes]):
        self.path, self.stream = path, stream
        made = os.fstat(stream.fileno())
        self.identity = (made.st_dev, made.st_ino)
        self.ended = False  # set once the run has ended as it should

    def __call__(self, kind: object, exc: object, traceback: object) -> bool:
        if not self.ended:
            close_quietly(self.stream)
            with suppress(OSError):
                found = os.stat(self.path)
                if (found.st_dev, found.st_ino) == self.identity and found.st_size == 0:
                    os.unlink(self.path)
        return False  # (whatever ended the run goes on)


def _special_file(path: str) -> bool:
    """Whether ``path`` is there and no regular file (a FIFO, a device)."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


@dataclass(frozen=True)
class _Streams:
    """The open streams of a run: input, the staged -o file (``None``: standard output),
    and the dead letters' stream (``None``: no --errors)."""

    raw_in: IO[bytes]
    output: Output | None
    raw_errors: IO[bytes] | None
    #: The dead letters' file, when the run made it (removed if the run does not end).
    errors_made: _MadeErrorsFile | None = None


def _open_streams(stack: ExitStack, places: _Places) -> _Streams:
    """Open every place of the run, closed (and a staged -o discarded) with ``stack``;
    exit 2 naming the place that cannot be opened."""
    try:
        where, action = places.source, "cannot open"
        # standard input only when it is read: a process may run without one
        raw_in: IO[bytes] = (
            stack.enter_context(open_input(places.input_path))
            if places.input_path
            else sys.stdin.buffer
        )
        where, action = places.outputs[0], "cannot be written there"
        # A stop between the file made and its cleanup kept waits until both are done; a
        # FIFO or a device is opened as it is (nothing to clean up), and opening a FIFO
        # waits for its reader: a stop must end that wait.
        staged = places.output_path is not None and not _special_file(places.output_path)
        with _signals_held() if staged else nullcontext():
            output = Output(places.output_path) if places.output_path else None
            if output is not None:
                stack.callback(output.discard)  # a no-op once committed
        raw_errors: IO[bytes] | None = sys.stdout.buffer if places.errors_to_stdout else None
        made: _MadeErrorsFile | None = None
        if places.errors is not None and places.errors_path is not None:
            where, path = places.errors, places.errors_path
            with nullcontext() if _special_file(path) else _signals_held():
                new = not os.path.lexists(path)
                raw_errors = open(path, "ab")  # noqa: SIM115
                stack.callback(close_quietly, raw_errors)
                if new:
                    made = _MadeErrorsFile(path, raw_errors)
                    stack.push(made)
    except OSError as exc:
        _stop(f"{where}: {action}: {exc.strerror or exc}", 2)
    return _Streams(raw_in, output, raw_errors, made)


def _convert_streams(
    streams: _Streams,
    places: _Places,
    decoder: Format,
    encoder: Format,
    *,
    kv: bool,
    fail_fast: bool,
    node_id: str,
    registry: str | None,
    progress: ProgressLine | None,
) -> tuple[ConvertStats, bool]:
    """Convert the input to the output (committed unless a fail-fast stop came first):
    the counts, and whether a fail-fast stop ended the run."""
    output = streams.output
    sink = Guarded(output.stream if output else sys.stdout.buffer, str(places.outputs[0]))
    dead_letters = None
    if streams.raw_errors is not None:
        dead_letters = DeadLetterWriter(
            Guarded(streams.raw_errors, str(places.errors)), node_id=node_id
        )
    stopped = False
    try:
        stats = convert_stream(
            Guarded(streams.raw_in, str(places.source)),
            sink,
            decoder,
            encoder,
            kv_in=kv,
            kv_out=kv,
            dead_letters=dead_letters,
            fail_fast=fail_fast,
            source_name=printable(places.input_path) if places.input_path else "<stdin>",
            progress=progress,
        )
    except FailFast as failed:
        stats, stopped = failed.stats, True
    except Exception as exc:
        # Not one bad message (a schema it does not have is one): the registry
        # itself failed (unreachable, refused, read-only, not a registry).
        if not _is_registry_error(exc):
            raise
        from cdc_connectors.registry import describe_error

        _stop(describe_error(exc, registry or ""), 2)
    if dead_letters is not None:
        dead_letters.stream.flush()
    if output is None:
        sink.flush()
    elif not stopped:
        _stop_if_signalled()
        output.commit()
    return stats, stopped


def _is_registry_error(exc: BaseException) -> TypeGuard[SchemaRegistryError]:
    """Whether ``exc`` is confluent-kafka's registry error, without importing its client
    (a third of a second) for a conversion that uses no registry: none can have been raised
    before the client was imported."""
    errors = sys.modules.get("confluent_kafka.schema_registry.error")
    return errors is not None and isinstance(exc, errors.SchemaRegistryError)


def _report(stats: ConvertStats, stopped: bool, output_path: str | None) -> None:
    """The first errors, the fail-fast stop and the counts, on standard error."""
    for line in stats.first_errors:
        click.echo(f"error: {line}", err=True)
    if stats.errors > len(stats.first_errors):
        click.echo(f"error: ... and {stats.errors - len(stats.first_errors)} more", err=True)
    if stopped and output_path:
        click.echo(
            f"error: stopped at the first bad message, -o {printable(output_path)} unchanged",
            err=True,
        )
    click.echo(stats.summary(), err=True)


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
@click.option(
    "--port", default=8081, show_default=True, type=int, help="Port to bind (0: a free one)."
)
@click.option(
    "--basic-auth",
    metavar="USER:PASSWORD",
    envvar="CDC_REGISTRY_BASIC_AUTH",
    help="Require HTTP basic auth; better set CDC_REGISTRY_BASIC_AUTH (arguments show in ps).",
)
@click.option(
    "--token",
    metavar="TOKEN",
    envvar="CDC_REGISTRY_TOKEN",
    help="Accept this bearer token; better set CDC_REGISTRY_TOKEN (arguments show in ps).",
)
@click.option("--tls-cert", metavar="FILE", help="Serve HTTPS with this PEM certificate (chain).")
@click.option("--tls-key", metavar="FILE", help="The PEM private key of --tls-cert.")
@click.option(
    "--max-body",
    default="16MiB",
    show_default=True,
    metavar="SIZE",
    help="Largest request body (bytes, or 512k, 16M, 1G); bigger ones get 413.",
)
def registry_serve(
    store: str,
    host: str,
    port: int,
    basic_auth: str | None,
    token: str | None,
    tls_cert: str | None,
    tls_key: str | None,
    max_body: str,
) -> None:
    """Serve the Confluent Schema Registry REST API over an embedded store.

    Stop it with Ctrl-C or SIGTERM. Anything that keeps it from serving is one
    line on stderr and exit status 2.
    """
    from cdc_connectors.registry import guards
    from cdc_connectors.registry.serve import ServeError, serve

    try:
        basic_auth = _credential(
            "basic_auth", basic_auth, "CDC_REGISTRY_BASIC_AUTH", guards.check_basic_auth
        )
        token = _credential("token", token, "CDC_REGISTRY_TOKEN", guards.check_token)
        if bool(tls_cert) != bool(tls_key):
            raise ServeError("--tls-cert and --tls-key go together")
        if not 0 <= port <= 65535:
            raise ServeError(f"--port {port} is not a port (0..65535; 0 binds a free one)")
        try:
            limit = guards.parse_size(max_body)
        except ValueError as exc:
            raise ServeError(f"--max-body {exc}") from None
        serve(
            store,
            host,
            port,
            basic_auth=basic_auth,
            bearer_token=token,
            tls=(tls_cert, tls_key),
            max_body=limit,
            announce=lambda line: click.echo(line, err=True),
            warn=lambda line: click.echo(f"Warning: {line}", err=True),
        )
    except ServeError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(2)


def _credential(
    name: str, value: str | None, envvar: str, check: Callable[[str | None], None]
) -> str | None:
    """The credential of option ``name``, checked; the message names where it came from."""
    from cdc_connectors.registry.serve import ServeError

    ctx = click.get_current_context()
    from_env = ctx.get_parameter_source(name) is ParameterSource.ENVIRONMENT
    if value is None and envvar in os.environ:
        # click reads a variable that is set but empty as unset: that must not mean "open"
        value, from_env = os.environ[envvar], True
    try:
        check(value)
    except ValueError as exc:
        option = "--" + name.replace("_", "-")
        raise ServeError(f"{envvar if from_env else option} {exc}") from None
    return value


@main.command()
def plugins() -> None:
    """List the connectors, formats and registries found by entry point."""
    lines = []
    for title, group in plugin_groups.GROUPS.items():
        lines.append(f"{title}:")
        found = plugin_groups.available(group)
        if not found:
            lines.append("  (none)")
        lines.extend(f"  {name:<20} {value}" for name, value in found.items())
    _write_stdout("".join(f"{line}\n" for line in lines))


@main.command()
@click.argument("names", metavar="[FORMAT]...", nargs=-1)
def formats(names: tuple[str, ...]) -> None:
    """List the formats found by entry point: what each reads and writes, and its options.

    A read+write format serves as --from and --to of convert, a read format as --from
    only; options are given with --opt NAME=VALUE (format.NAME in connectors).
    """
    try:
        classes = {name: load_format(name) for name in names or available_formats()}
    except FormatOptionError as exc:
        raise click.UsageError(str(exc)) from None
    _write_stdout("\n".join(_describe(name, cls) for name, cls in classes.items()))


_LAYOUTS = {
    "lines": "one message per line (--kv: key and value lines)",
    "kv": "key and value lines, base64",
    "delimited": "length-delimited messages",
}


def _describe(name: str, cls: type[Format]) -> str:
    direction = "read+write" if cls.writable else "read"
    lines = [f"{name:<20} {direction:<11} {_LAYOUTS[layout_of(cls, kv=False)]}"]
    if not cls.options:
        lines.append("    (no options)")
    width = max(len(option) for option in cls.options) if cls.options else 0
    for option, meaning in sorted(cls.options.items()):
        lead = f"    {option:<{width}}  "
        lines.append(
            textwrap.fill(
                meaning,
                100,
                initial_indent=lead,
                subsequent_indent=" " * len(lead),
                break_on_hyphens=False,
            )
        )
    return "".join(f"{line}\n" for line in lines)


@main.command("run")
@click.argument("pipeline_file", metavar="PIPELINE.yaml")
@click.option(
    "--available-now",
    is_flag=True,
    help="Streaming pipelines process what is there, then stop.",
)
def run_pipeline(pipeline_file: str, available_now: bool) -> None:
    """Run the pipelines of a pipeline file on Spark (its spark.master, local[*] by default).

    One line per batch and a summary go to stderr. Ctrl-C stops once the current
    batch is written (a second Ctrl-C at once). Exit status: 0 all good (a run
    Ctrl-C stopped after its batch too), 1 when records went to the dead-letter output
    or a pipeline stopped itself (fail-fast, max-error-ratio) or failed, 2 for a file
    or setting that cannot be run, 130 when a second Ctrl-C stopped it at once.
    """
    from cdc_connectors.pipeline import ConfigError, load
    from cdc_connectors.pipeline.launch import run_local
    from cdc_connectors.pipeline.registries import check_registries

    _needs_open("standard error", 2, "the run's lines and summary go there")
    try:
        check_registries(load(pipeline_file))
    except ConfigError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(2)
    sys.exit(run_local(pipeline_file, available_now=available_now))


@main.command()
@click.argument("pipeline_file", metavar="PIPELINE.yaml")
@click.option(
    "--available-now",
    is_flag=True,
    help="Streaming pipelines process what is there, then stop.",
)
@click.argument("spark_submit_args", nargs=-1, metavar="[-- SPARK_SUBMIT_ARGS]")
def submit(pipeline_file: str, available_now: bool, spark_submit_args: tuple[str, ...]) -> None:
    """Run a pipeline file through spark-submit, shipping the package to the executors.

    --master comes from the file's spark.master unless given after --; its
    spark.conf entries become --conf options. spark-submit passes the driver's
    lines on to stdout. Exit status as for run.
    """
    from cdc_connectors.pipeline import ConfigError, load
    from cdc_connectors.pipeline.launch import submit as submit_pipeline
    from cdc_connectors.pipeline.registries import check_registries

    ctx = click.get_current_context()
    if spark_submit_args and "--" not in sys.argv[1:] and not ctx.resilient_parsing:
        raise click.UsageError(
            f"unexpected argument {spark_submit_args[0]!r}; put spark-submit arguments after --"
        )
    _needs_open("standard output", 1, "the driver's lines and summary go there")
    _needs_open("standard error", 2, "spark-submit's errors go there")
    try:
        config = load(pipeline_file)
        check_registries(config)
    except ConfigError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(2)
    sys.exit(submit_pipeline(config, pipeline_file, spark_submit_args, available_now=available_now))


def _write_stdout(text: str) -> None:
    """Write ``text`` to stdout; a closed or full stdout is one error line
    (:func:`_lost_output_status`)."""
    try:
        if sys.stdout is None:  # started with stdout closed
            raise OSError(errno.EBADF, "it is closed")
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError as exc:
        settle_stdout()
        click.echo(f"Error: cannot write to stdout: {exc.strerror or exc}", err=True)
        sys.exit(_lost_output_status(exc))


def _lost_output_status(exc: OSError) -> int:
    """2 for a stream that was closed before the command ran (misuse, as a missing file
    is); 1 for one that failed under a write (a full disk, a reader gone)."""
    return 2 if exc.errno == errno.EBADF else 1


if __name__ == "__main__":
    main()
