"""Running pipelines on Spark: batch jobs, streaming queries, progress, stops and summary.

A pipeline runs as a batch job when its ``mode`` says so or, by default, when its source
has ``endingOffsets`` or cannot stream; otherwise as a streaming query whose
``foreachBatch`` stages each micro-batch once (:mod:`~cdc_connectors.pipeline.plan`),
checkpointed under ``<spark.checkpoint>/<pipeline id>``. ``available_now`` processes what
is there and stops.

A first SIGINT or SIGTERM lets the current batch finish and its offsets be committed, then
stops; a second one stops at once. One line per batch goes to stderr, and a summary at the
end. :func:`run` returns the exit status: 0 all good, 1 when records went to the
dead-letter output or a pipeline stopped (fail-fast, max-error-ratio) or failed, 2 for a
setting a connector refused when Spark planned the job, 130 when stopped at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession

from cdc_connectors.connectors.files import FilesDataSource, FilesWriteError
from cdc_connectors.connectors.files_owner import check, owner_of, refuse_owned
from cdc_connectors.connectors.files_plan import FilesPlanDataSource
from cdc_connectors.connectors.files_write import FilesWriter
from cdc_connectors.connectors.kafka_ranges import KafkaRangesDataSource
from cdc_connectors.connectors.messages import SettingError, open_format
from cdc_connectors.connectors.table import TableDataSource, TableWriter, table_app_id
from cdc_connectors.connectors.table_write import COMMITS, letter_reason, task_commits
from cdc_connectors.errors import ConfigError, FailFastError
from cdc_connectors.formats.base import Format
from cdc_connectors.options import TRUE, Options
from cdc_connectors.pipeline import checkpoints, outputs
from cdc_connectors.pipeline.config import Config, Connector, DeadLetterQueue, Pipeline
from cdc_connectors.pipeline.connectors import missing_input, setting_named
from cdc_connectors.pipeline.driver_write import write_on_driver
from cdc_connectors.pipeline.in_task import (
    MESSAGE_LAYOUT,
    FilesOut,
    InTask,
    TableOut,
    in_task,
    planned_rows,
    tasks,
)
from cdc_connectors.pipeline.outputs import StagedOutput
from cdc_connectors.pipeline.plan import Counts, Route, SourceFormat, Stage
from cdc_connectors.pipeline.table_schemas import (
    check_store,
    made_by_making,
    make_store,
    unmake_unused,
)
from cdc_connectors.spark.session import quiet_from_now

__all__ = ["Stopper", "Timing", "refusal", "run"]

EXIT_OK, EXIT_LETTERS, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
_SETTING_ERROR = re.compile(r"SettingError: (.+)")
# Our errors' messages say what and where: their class names, with or without the module,
# are left out of a pipeline's failure line.
_OUR_ERRORS = re.compile(
    r"^(?:cdc_connectors\.[\w.]+\.\w+"
    r"|(?:[\w.]+\.)?(?:SettingError|FailFastError|ConnectorError|FilesWriteError)): "
)
_TRACEBACK = "Traceback (most recent call last):"
_PY4J_ERROR = "py4j.protocol.Py4JJavaError"
# An exception's line: a class ending in Error or Exception, or any class of ours.
_ERROR_LINE = re.compile(
    r"^((?:[\w.]+\.)?(?=\w*(?:Error|Exception): )|cdc_connectors\.[\w.]+\.)(\w+): (.+)$",
    re.MULTILINE,
)


#: The rows of a batch's output (its dead letters; its messages, when the stage is written
#: after it is counted) written by the driver itself, up to this many and up to
#: :data:`DRIVER_BYTES` (as the stage's count sizes them), collected as Arrow. More are
#: written by Spark, a task per partition.
DRIVER_ROWS = 1_000
#: The bytes of the rows the driver writes at most: a thousand messages of a few KiB, or
#: some sixty of Kafka's largest (1 MiB), and never a gigabyte held by the driver.
DRIVER_BYTES = 64 << 20

#: What the start line of a pipeline run in its tasks (:mod:`.in_task`) says.
ONE_PASS = "read and written in one pass per task"


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class PipelineStopped(FailFastError):
    """A pipeline stopped by its dead-letter policy (fail-fast, max-error-ratio)."""


class _Gated(Exception):
    """A micro-batch that began after a stop was asked for: refused before it wrote."""


class SettingRefused(ConfigError):
    """A connector refused its settings when Spark planned the job; names the connector."""


def one_line(exc: BaseException) -> str:
    """The gist of an exception from Spark (a Python error inside a JVM one) in one line:
    the last line of the innermost Python traceback, else the first line of the message."""
    text = str(exc)
    line = ""
    if _TRACEBACK in text:
        for candidate in text.rsplit(_TRACEBACK, 1)[1].splitlines()[1:]:
            if candidate and not candidate[0].isspace():
                line = candidate.strip()
                break
        if line.startswith(_PY4J_ERROR):  # Python code calling the JVM: the JVM's reason
            line = _reason_after(text.rsplit(line, 1)[1]) or line
    if not line:
        found = _ERROR_LINE.findall(text)
        if found:
            module, name, message = found[-1]
            line = message if module.startswith("cdc_connectors.") else f"{name}: {message}"
    if not line:
        line = _java_cause(text)
    if not line:
        line = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    line = _OUR_ERRORS.sub("", line)  # their messages name the connector already
    return line if len(line) <= 400 else line[:397] + "..."


def _reason_after(text: str) -> str:
    """The reason a JVM error's ``text`` gives: an error of ours in it, else its innermost
    Java cause; ``""`` when it has neither."""
    ours = [m for module, _, m in _ERROR_LINE.findall(text) if module.startswith("cdc_connectors.")]
    return ours[-1] if ours else _java_cause(text)


def _java_cause(text: str) -> str:
    """The innermost Java exception of a JVM error's text (py4j's ``: ...`` line and its
    ``Caused by: ...`` lines), or ``""``."""
    found = ""
    for raw in text.splitlines():
        if raw.startswith("Caused by: "):
            found = raw[len("Caused by: ") :].strip()
        elif raw.startswith(": ") and not found:
            found = raw[2:].strip()
    return found


def _setting_error(exc: BaseException) -> str | None:
    if isinstance(exc, SettingError):  # raised here on the driver, not inside Spark's
        return str(exc)
    found = _SETTING_ERROR.findall(str(exc))
    return found[-1].strip() if found else None


class Stopper:
    """SIGINT/SIGTERM/SIGHUP: the first asks for a stop after the current batch, the
    second stops now. A signal ignored by what started the process stays ignored."""

    def __init__(self) -> None:
        self.requested: str | None = None

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for each in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(each) is not signal.SIG_IGN:
                signal.signal(each, self._handle)

    def _handle(self, signum: int, frame: object) -> None:
        name = signal.Signals(signum).name
        if self.requested is not None:
            # Stopping at once: py4j logs the call this interrupts, and the connection it
            # then closes, with their tracebacks; the run says what happened in one line.
            _logs_off()
            raise KeyboardInterrupt(name)
        self.requested = name
        quiet_from_now()  # (the Spark processes' teardown is no news)
        _say(f"{name}: stopping once the current batch is written (again to stop now)")


def _logs_off() -> None:
    """Logs at ERROR and below off until :func:`_logs_back`: py4j logs the call a stop at
    once interrupts, and the connection it then closes, with their tracebacks."""
    logging.disable(logging.ERROR)


def _logs_back() -> None:
    logging.disable(logging.NOTSET)


@dataclass(frozen=True)
class Timing:
    """What a pipeline did in its own time: batches, records read, and the seconds from
    the start of its first batch to the end of its last."""

    pipeline: str
    batches: int
    records: int
    seconds: float


@dataclass(frozen=True)
class _Prepared:
    """How a pipeline's source is read and its destination written, and whether it runs
    in one pass per task (:mod:`.in_task`)."""

    fmt: Format  # the destination's
    route: Route | None
    writer_settings: Options
    source_settings: Options
    fused: SourceFormat | None
    in_task: InTask | None

    @classmethod
    def of(cls, pipeline: Pipeline) -> _Prepared:
        destination = pipeline.destination
        settings = destination.plugin.format_settings(destination.settings)
        fmt = open_format(
            settings,
            default=destination.plugin.default_format,
            registry=settings.get("registry"),
            connector=destination.plugin.spark_name,
        )
        route, writer_settings = destination.plugin.routing(destination.settings)
        writer_settings = _absolute(destination.plugin.spark_name, writer_settings)
        writer_settings = _table_dead_letters(pipeline, writer_settings)
        source_settings, fused = _fused_source(pipeline.source)
        source_settings = _absolute(pipeline.source.plugin.spark_name, source_settings)
        plan = in_task(pipeline, source_settings, writer_settings, fmt, route, fused)
        return cls(fmt, route, writer_settings, source_settings, fused, plan)


def _table_dead_letters(pipeline: Pipeline, settings: Options) -> Options:
    """A table destination's refused records go to the pipeline's dead-letter files (unless
    its ``deadLetters`` says otherwise), where the pipeline counts them."""
    dlq = pipeline.dead_letters
    if pipeline.destination.plugin.spark_name != _TABLE or dlq.plugin.spark_name != _FILES:
        return settings
    if "deadLetters" in settings:
        return settings
    return Options({**settings, "deadLetters": os.path.abspath(dlq.settings["path"])})


def light_driver(config: Config) -> bool:
    """Whether every pipeline of ``config`` runs in one pass per task: then no message
    passes through Spark's JVM, which only plans, and its second compiler tier would spend
    a core-second a run compiling Spark for nothing (:data:`~cdc_connectors.spark.session.
    LIGHT_JVM`). A pipeline whose settings do not open keeps the JVM as it is (the run
    then says what is wrong)."""
    from cdc_connectors.spark.session import compiler_chosen

    if compiler_chosen(*config.spark_conf.values()):
        return False  # the user chose the compilers (in any driver option): that stands
    try:
        return all(_Prepared.of(p).in_task is not None for p in config.pipelines)
    except Exception:
        return False


@dataclass
class _Job:
    """One pipeline being run, and what it did so far."""

    pipeline: Pipeline
    spark: SparkSession
    say: Callable[[str], None] = _say
    totals: Counts = field(default_factory=Counts)
    batches: int = 0
    started: float = field(default_factory=time.monotonic)
    stopped: str | None = None  # why the dead-letter policy stopped it
    failed: str | None = None
    refused: str | None = None  # a connector's setting error, with its place
    gated: bool = False
    in_batch: bool = False
    batch_failed: bool = False  # a batch began and failed (not its planning, nor a read)
    last_batch: int | None = None
    stopping: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    first_began: float = 0.0  # time.monotonic() at the start of the first batch
    last_ended: float = 0.0  # and at the end of the last one
    # a batch run in its tasks: its plan rows, planned on the driver (:meth:`read`)
    plan_rows: list[dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        prepared = _Prepared.of(self.pipeline)
        self.fmt = prepared.fmt
        self.node_id = f"{self.pipeline.id}:{self.pipeline.destination.id}"
        self.route, self.writer_settings = prepared.route, prepared.writer_settings
        self.source_settings, self.fused = prepared.source_settings, prepared.fused
        self.in_task = prepared.in_task
        dlq = self.pipeline.dead_letters
        self.dlq_settings = _absolute(dlq.plugin.spark_name, dlq.settings)

    # -------------------------------------------------------------- one batch

    def process(self, rows: DataFrame, batch_id: int) -> None:
        with self.lock:
            if self.stopping:
                self.gated = True
                raise _Gated(f"batch {batch_id} began after the stop")
            self.in_batch = True
        try:
            self._process(rows, batch_id)
            self.last_batch = batch_id
        except BaseException:
            self.batch_failed = True
            raise
        finally:
            with self.lock:
                self.in_batch = False

    def _process(self, rows: DataFrame, batch_id: int) -> None:
        began = time.monotonic()
        pipeline = self.pipeline
        destination = pipeline.destination
        dlq = pipeline.dead_letters
        staged: list[StagedOutput] = []
        # a files destination written by the tasks: staged first, published as the last
        written_by_tasks: list[StagedOutput] = []
        self.first_began = self.first_began or began
        stage: Stage | None = None
        try:
            plan, writer = self._in_task(batch_id, written_by_tasks)
            stage = Stage(
                rows,
                self.fmt,
                self.node_id,
                destination.plugin.message_columns,
                self.route,
                self.fused,
                tasks(plan, self.plan_rows) if plan is not None else None,
            )
            if stage.copy:
                # Rows copied as they are have no dead letters to split off or to stop for:
                # written first, and counted after (the stage may count them as they go).
                self._write_messages(stage, batch_id, staged)
                counts = stage.count()
            else:
                written: list[Any] = []
                try:
                    counts = stage.count()
                    written = [pickle.loads(found) for found in stage.commits()]
                    self._check_policy(stage, counts, batch_id)
                    # Dead letters first: when their output fails, nothing of the batch is
                    # written. A batch pipeline stages its file outputs and publishes them
                    # once all went through.
                    if counts.letters or self._replaces(dlq.plugin.spark_name):
                        self._write_letters(stage, counts.letters, batch_id, staged)
                except BaseException:
                    if writer is not None:  # what its tasks staged goes (a failed task's too)
                        writer.abort(written)
                    raise
                if writer is not None and not (
                    counts.written or self._replaces(destination.plugin.spark_name)
                ):
                    writer.abort(written)  # nothing to publish, as in the staged way
                elif writer is not None:  # its tasks wrote their files: the job commits them
                    _commit(writer, written)
                    staged.extend(written_by_tasks)
                    if isinstance(writer, TableWriter) and writer.committed is not None:
                        _count_refused(counts, writer.committed.refused)
                elif stage.in_task:
                    pass  # its tasks wrote the messages
                elif counts.written or self._replaces(destination.plugin.spark_name):
                    self._write_messages(stage, batch_id, staged, counts.written, counts)
            for output in reversed(staged):  # the destination first
                outputs.check_publishable(output)
            for output in reversed(staged):
                outputs.publish(output)
        finally:
            for output in [*staged, *(o for o in written_by_tasks if o not in staged)]:
                outputs.discard(output)
            if stage is not None:
                stage.release()
        self.totals.add(counts)
        self.batches += 1
        self.last_ended = time.monotonic()
        rate = counts.records / max(time.monotonic() - began, 1e-6)
        self.say(
            f"{pipeline.id}: batch {batch_id}: {counts.records} in, {counts.written} out, "
            f"{counts.letters} to the dead-letter output, "
            f"{f'{counts.skipped} skipped (no change), ' if counts.skipped else ''}"
            f"{rate:,.{0 if rate >= 10 else 1}f} records/s"
        )

    def _in_task(
        self, batch_id: int, staged: list[StagedOutput]
    ) -> tuple[InTask | None, FilesWriter | TableWriter | None]:
        """The batch's in-task plan, if it has one; with a files destination, the writer
        whose job commits what the tasks write (its output staged as the staged way's);
        with a table, the writer whose commit applies the changes the tasks gathered."""
        plan = self.in_task
        if plan is not None and isinstance(plan.out, TableOut):
            destination = self.pipeline.destination
            settings = self._output(
                _TABLE, self.writer_settings, batch_id, staged, destination.place_of
            )
            with self._noting_refusals(destination.place_of):
                table = TableDataSource(settings).writer(MESSAGE_LAYOUT, False)
            assert isinstance(table, TableWriter)
            return plan, table
        if plan is None or not isinstance(plan.out, FilesOut):
            return plan, None
        destination = self.pipeline.destination
        name = destination.plugin.spark_name
        settings = self._output(name, self.writer_settings, batch_id, staged, destination.place_of)
        with self._noting_refusals(destination.place_of):
            writer = FilesDataSource(settings).writer(MESSAGE_LAYOUT, False)
        assert isinstance(writer, FilesWriter)
        return replace(plan, out=FilesOut(writer)), writer

    def _write_letters(
        self, stage: Stage, letters: int, batch_id: int, staged: list[StagedOutput]
    ) -> None:
        dlq = self.pipeline.dead_letters
        settings = self._output(
            dlq.plugin.spark_name, self.dlq_settings, batch_id, staged, dlq.place_of
        )
        size = None if stage.sizes is None else (letters, stage.sizes.letters)
        self._write_rows(self._not_held(stage.letters()), size, dlq, settings)

    def _not_held(self, letters: DataFrame) -> DataFrame:
        """``letters`` but those whose place the dead-letter files hold already, for a
        batch pipeline into a table: run again over the same input, it applies nothing
        again (the table knows what it holds) and writes no dead letter twice."""
        dlq = self.pipeline.dead_letters
        if not self.pipeline.batch or self.pipeline.destination.plugin.spark_name != _TABLE:
            return letters
        if dlq.plugin.spark_name != _FILES or outputs.is_empty(self.dlq_settings["path"]):
            return letters
        held = (
            self.spark.read.format(_FILES)
            .options(**self.dlq_settings)
            .load()
            .select("position")
            .distinct()
        )
        return letters.join(held, "position", "left_anti")

    def _write_messages(
        self,
        stage: Stage,
        batch_id: int,
        staged: list[StagedOutput],
        rows: int | None = None,
        counts: Counts | None = None,
    ) -> None:
        destination = self.pipeline.destination
        name = destination.plugin.spark_name
        settings = self._output(name, self.writer_settings, batch_id, staged, destination.place_of)
        if name == _TABLE and counts is not None:
            self._apply_table(stage.messages(), settings, counts, batch_id)
            return
        size = None if rows is None or stage.sizes is None else (rows, stage.sizes.messages)
        self._write_rows(stage.messages(), size, destination, settings)

    def _apply_table(
        self, frame: DataFrame, settings: dict[str, str], counts: Counts, batch_id: int
    ) -> None:
        """The staged way into a table: its tasks gather the changes, the batch's dead-letter
        policy sees the records the table refuses, and only then is the batch applied, here,
        in one transaction; refused records are counted with the batch's dead letters."""
        place_of = self.pipeline.destination.place_of
        with self._noting_refusals(place_of):
            writer = TableDataSource(settings).writer(MESSAGE_LAYOUT, False)
        assert isinstance(writer, TableWriter)
        found = frame.mapInArrow(task_commits(writer.settings), COMMITS).collect()
        messages = [pickle.loads(row[0]) for row in found]
        self._check_table_policy([line for m in messages for line in m.letters], counts, batch_id)
        _commit(writer, messages)
        if writer.committed is not None:
            _count_refused(counts, writer.committed.refused)

    def _check_table_policy(self, letters: list[bytes], counts: Counts, batch_id: int) -> None:
        """The dead-letter policy over records the table would refuse: nothing of the batch
        is applied when it stops."""
        if letters:
            self._stop_for(len(letters), lambda: letter_reason(letters[0]), counts, batch_id)

    def _write_rows(
        self,
        frame: DataFrame,
        size: tuple[int, int] | None,
        output: Connector | DeadLetterQueue,
        settings: dict[str, str],
    ) -> None:
        """Append ``frame`` (``size``: its rows and about their bytes, when known) through
        ``output``'s connector (the destination or the dead-letter output): by the driver
        itself when they are at most :data:`DRIVER_ROWS` and :data:`DRIVER_BYTES`
        (:mod:`.driver_write`), else by Spark."""
        if size is not None and size[0] <= DRIVER_ROWS and size[1] <= DRIVER_BYTES:
            with self._noting_refusals(output.place_of):
                if write_on_driver(output.plugin.source_class, settings, frame):
                    return
        self._write(frame, output.plugin.spark_name, settings, output.place_of)

    def timing(self) -> Timing:
        """How long the pipeline's batches took, from the start of the first to the end of
        the last: its own time, without Spark's start."""
        seconds = max(self.last_ended - self.first_began, 0.0) if self.first_began else 0.0
        return Timing(self.pipeline.id, self.batches, self.totals.records, seconds)

    def _replaces(self, name: str) -> bool:
        """Whether a batch pipeline overwrites a file output through data source ``name``:
        then it is written even with no rows, so that it is replaced."""
        return self.pipeline.batch and name == _FILES and self.pipeline.save_mode == "overwrite"

    def _output(
        self,
        name: str,
        settings: dict[str, str],
        batch_id: int,
        staged: list[StagedOutput],
        place_of: Callable[[str], str],
    ) -> dict[str, str]:
        """Settings of a write. A streaming micro-batch to files commits as ``batch-<N>/``
        once (a replayed micro-batch does not add its files again) in a directory that
        belongs to the query; a batch pipeline writes its files to a staging directory (a
        path where none can be made is refused, at ``place_of`` its setting)."""
        if name == _TABLE and not self.pipeline.batch:  # one table transaction a batch
            return {
                **settings,
                "txnAppId": table_app_id(self.pipeline.checkpoint, "cdc-pipeline"),
                "txnVersion": str(batch_id),
            }
        if name != _FILES:
            return settings
        if not self.pipeline.batch:
            return {
                **settings,
                "batchId": str(batch_id),
                "checkpointLocation": os.path.abspath(self.pipeline.checkpoint),
            }
        path = settings["path"]
        try:
            output = outputs.stage(path, self.pipeline.save_mode)
        except OSError as exc:
            refused = f"{name} setting 'path': cannot write to {path!r}: {exc.strerror or exc}"
            raise SettingRefused(f"{place_of(refused)}: {refused}") from None
        staged.append(output)
        return Options({**settings, "path": output.staging})

    def _write(
        self,
        frame: DataFrame,
        name: str,
        settings: dict[str, str],
        place_of: Callable[[str], str],
    ) -> None:
        """Append ``frame`` with the data source ``name``; a refused setting is noted with
        the connector's place in the file."""
        with self._noting_refusals(place_of):
            frame.write.format(name).options(**settings).mode("append").save()

    @contextlib.contextmanager
    def _noting_refusals(self, place_of: Callable[[str], str]) -> Iterator[None]:
        """A setting a connector refuses inside, noted with its place in the file (``place_of``
        the connector's); the error goes on."""
        try:
            yield
        except Exception as exc:
            refused = _setting_error(exc)
            if refused is not None:
                self.refused = f"{place_of(refused)}: {refused}"
            raise

    def _check_policy(self, stage: Stage, counts: Counts, batch_id: int) -> None:
        if counts.letters:
            self._stop_for(0, stage.first_letter, counts, batch_id)

    def _stop_for(
        self,
        more: int,
        first: Callable[[], tuple[str, str]],
        counts: Counts,
        batch_id: int,
    ) -> None:
        """Stop the pipeline (:class:`PipelineStopped`) when its dead-letter policy says so
        of the batch's dead letters and ``more`` of them; ``first``: the place and reason of
        the first."""
        dlq = self.pipeline.dead_letters
        unwritten = f"nothing of batch {batch_id} was written"
        if dlq.fail_fast:
            position, reason = first()
            self.stopped = (
                f"pipeline {self.pipeline.id} stopped by fail-fast: the record at "
                f"{position!r} would go to the dead-letter output: {reason} ({unwritten})"
            )
            raise PipelineStopped(self.stopped)
        if dlq.max_error_ratio is not None:
            letters = self.totals.letters + counts.letters + more
            records = self.totals.records + counts.records
            if records and letters / records > dlq.max_error_ratio:
                self.stopped = (
                    f"pipeline {self.pipeline.id} stopped: {letters} of {records} records "
                    f"({letters / records:.1%}) would go to the dead-letter output, more than "
                    f"max-error-ratio {dlq.max_error_ratio:g} ({unwritten})"
                )
                raise PipelineStopped(self.stopped)

    # -------------------------------------------------------------- reading

    def read(self, streaming: bool) -> DataFrame:
        source = self.pipeline.source
        reader: Any = self.spark.readStream if streaming else self.spark.read
        try:
            name = source.plugin.spark_name
            if self.in_task is not None and not streaming:
                # Planned here: Spark reads numbers alone, the tasks their plan rows.
                self.plan_rows = planned_rows(self.in_task, self.source_settings)
                count = len(self.plan_rows)
                return self.spark.range(0, count, 1, max(count, 1))
            if self.in_task is not None:
                name = self.in_task.parts.plan_source
            return reader.format(name).options(**self.source_settings).load()  # type: ignore[no-any-return]
        except Exception as exc:
            refused = _setting_error(exc)
            if refused is not None:
                raise SettingRefused(f"{source.place_of(refused)}: {refused}") from None
            raise

    def fail(self, exc: BaseException) -> None:
        """Note why the pipeline ended, unless a stop of ours explains it."""
        if self.stopped is None and self.refused is None and not self.gated:
            refused = _setting_error(exc)
            if refused is not None and self.failed is None:
                self.refused = f"{self._refused_by(refused).place_of(refused)}: {refused}"
            else:
                self.failed = f"pipeline {self.pipeline.id} failed: {one_line(exc)}"

    def _refused_by(self, refused: str) -> Connector:
        """The connector whose setting ``refused`` names: the one given that setting, where
        only one is (a source and a destination of one plugin, say); else the destination
        when the message is of its plugin, else the source."""
        source, destination = self.pipeline.source, self.pipeline.destination
        setting = setting_named(refused)
        if setting is not None:
            given = [
                c for c in (source, destination) if setting.lower() in map(str.lower, c.settings)
            ]
            if len(given) == 1:
                return given[0]
        return destination if refused.startswith(destination.plugin.spark_name) else source

    def start_line(self, available_now: bool) -> str:
        p = self.pipeline
        how = "batch" if p.batch else f"streaming{', available now' if available_now else ''}"
        line = (
            f"{p.id}: starting ({how}): {p.source.id} ({p.source.plugin.name}) -> "
            f"{p.destination.id} ({p.destination.plugin.name}), dead letters -> "
            f"{_output_named(p.dead_letters)}"
        )
        if not p.batch:
            line += f", checkpoint {p.checkpoint}"
        if p.schemas is not None:
            line += f", column types from the source's schemas (kept in {_store(p.schemas)})"
        return f"{line}; {ONE_PASS}" if self.in_task is not None else line

    def summary(self) -> str:
        elapsed = time.monotonic() - self.started
        t = self.totals
        dlq = _output_named(self.pipeline.dead_letters)
        return (
            f"{self.pipeline.id}: {self.batches} batch{'es' if self.batches != 1 else ''}, "
            f"{t.records} records in, {t.written} out, {t.letters} to the dead-letter output"
            f"{f' ({dlq})' if t.letters else ''}"
            f"{f', {t.skipped} skipped (no change)' if t.skipped else ''}"
            f"{f', {t.per_message} the per-message way' if t.per_message is not None else ''}"
            f", {elapsed:.1f} s{self._failed_batch()}"
        )

    def _failed_batch(self) -> str:
        """What a summary adds for a batch that failed: it is not counted, and a topic keeps
        what the batch's tasks had delivered. A pipeline that failed before a batch began
        (its source not there, say) wrote nothing, and the summary says so."""
        if self.failed is None:
            return ""
        if not self.batch_failed:  # planning a batch (or reading the source) failed
            if not self.batches:
                return "; it failed before its first batch: nothing was written"
            return "; it failed between batches: nothing of the next was written"
        if self.pipeline.destination.plugin.spark_name == _KAFKA:
            return (
                "; the failed batch is not counted: its tasks may have delivered part of it "
                "to the destination topic, which keeps what it got"
            )
        return "; the failed batch is not counted"


_KAFKA = "cdc-kafka"
_FILES = "cdc-files"
_TABLE = "cdc-table"
_FORMAT_SETTINGS = ("format", "failfast", "typed")


def _output_named(output: DeadLetterQueue) -> str:
    """A dead-letter output as a summary names it: its path, or its Kafka topic."""
    settings = output.settings
    if "path" in settings:
        return str(settings["path"])
    if "topic" in settings:
        return f"{output.plugin.name} topic {settings['topic']}"
    return output.plugin.name


def _count_refused(counts: Counts, refused: int) -> None:
    """Records a table refused went to the dead letters, not into the table: counted so."""
    counts.encode_letters += refused
    counts.written -= refused


def _commit(writer: FilesWriter | TableWriter, messages: list[Any]) -> None:
    """The job commit of files its tasks wrote; what they staged goes when it fails."""
    try:
        writer.commit(messages)
    except BaseException:
        writer.abort(messages)
        raise


def _fused_source(source: Connector) -> tuple[Options, SourceFormat | None]:
    """The settings the source is read with, and the format a fused stage decodes with.

    A Kafka source with a format (not ``raw``, not ``typed``) is read as raw messages and
    decoded in the stage (:func:`~cdc_connectors.pipeline.plan.converter`); any other
    source is read as configured.
    """
    settings = Options(source.settings)
    name = settings.get("format", "raw").strip() or "raw"
    typed = settings.get("typed", "false").strip().lower() in TRUE
    if source.plugin.spark_name != _KAFKA or name == "raw" or typed:
        return settings, None
    fail_fast = settings.get("failFast", "false").strip().lower()
    fmt = open_format(
        Options(
            {k: v for k, v in settings.items() if k.lower() == "format" or k.startswith("format.")}
        ),
        default=name,
        registry=settings.get("registry"),
        connector=_KAFKA,
    )
    raw = Options(
        {
            k: v
            for k, v in settings.items()
            if k.lower() not in _FORMAT_SETTINGS and not k.startswith("format.")
        }
    )
    return raw, SourceFormat(fmt, _KAFKA, fail_fast in TRUE)


def _ready(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    import cdc_connectors.connectors.files
    import cdc_connectors.connectors.kafka
    import cdc_connectors.pipeline.in_task
    import cdc_connectors.pipeline.plan  # noqa: F401  (what a batch's tasks import)

    yield from batches


def _warm_up(spark: SparkSession) -> None:
    """Start the Python workers of every core (they are reused) before the first batch, so
    that its rate is that of its own work, not of Spark starting them."""
    with contextlib.suppress(Exception):  # a cluster without free cores waits in the batch
        cores = max(1, spark.sparkContext.defaultParallelism)
        spark.range(cores, numPartitions=cores).mapInArrow(_ready, "id long").count()


def _absolute(name: str, settings: Mapping[str, str]) -> Options:
    """``settings`` with a files connector's relative ``path`` made absolute here, on the
    driver: executors on other machines resolve paths in their own working directory."""
    absolute = Options(settings)
    if name == _FILES and absolute.get("path"):
        absolute["path"] = os.path.abspath(absolute["path"])
    return absolute


def _store(url: str) -> str:
    """A SQLite registry URL's file, relative to here when it is below."""
    from cdc_connectors.registry.embedded import store_place

    path = str(store_place(url))
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def _file_outputs(pipeline: Pipeline) -> list[tuple[str, str]]:
    """The file outputs of a batch pipeline: (what, path), the destination first."""
    found = []
    if pipeline.destination.plugin.spark_name == _FILES:
        found.append(("destination", pipeline.destination.settings["path"]))
    if pipeline.dead_letters.plugin.spark_name == _FILES:
        found.append(("dead-letter", pipeline.dead_letters.settings["path"]))
    return found


def refused(pipeline: Pipeline) -> str | None:
    """Why ``pipeline`` must not write to its file outputs at all, as one line with its place
    in the file: an output that is a file, or that belongs to another streaming query (a
    batch pipeline's, or a streaming one's whose query is not that output's owner)."""
    if not pipeline.batch:
        other = checkpoints.mismatch(pipeline.checkpoint, pipeline.source.plugin.name)
        if other is not None:
            return (
                f"{pipeline.source.where}: the checkpoint {pipeline.checkpoint} holds the "
                f"offsets of a {other} source, not of this {pipeline.source.plugin.name} one: "
                "give the pipeline another checkpoint (spark.checkpoint, or its id)"
            )
    checkpoint = owner_of(pipeline.checkpoint)
    for what, path in _file_outputs(pipeline):
        where = pipeline.destination.where if what == "destination" else pipeline.dead_letters.where
        if os.path.lexists(path) and not os.path.isdir(path):
            return f"{where}: the {what} path {path} is a file, not a directory"
        above = _file_above(path)
        if above is not None:
            return f"{where}: the {what} path {path} cannot be a directory: {above} is a file"
        try:
            if pipeline.batch:
                refuse_owned(path, "a batch pipeline")
            elif checkpoint is not None:
                check(path, checkpoint)
        except FilesWriteError as exc:
            return f"{where}: {exc}"
    return None


def _file_above(path: str) -> str | None:
    """The nearest existing parent of ``path`` when it is no directory."""
    parent = os.path.dirname(os.path.abspath(path))
    while parent and not os.path.lexists(parent):
        parent = os.path.dirname(parent)
    return parent if parent and not os.path.isdir(parent) else None


def occupied(pipeline: Pipeline) -> str | None:
    """Why a batch pipeline must not write to its file outputs as its save mode stands:
    ``error`` or ``ignore`` and an output that is not empty; else ``None``."""
    if not pipeline.batch or pipeline.save_mode not in ("error", "ignore"):
        return None
    for what, path in _file_outputs(pipeline):
        if not outputs.is_empty(path):
            return f"the {what} path {path} is not empty"
    return None


def refusal(config: Config) -> str | None:
    """The first reason a pipeline of ``config`` cannot run as its outputs stand, with its
    place in the file (pipelines that ``mode: ignore`` skips are not refused); ``None``.
    A source path that does not exist comes first."""
    for pipeline in config.pipelines:
        missing = missing_input(pipeline.source.plugin, pipeline.source.settings, pipeline.batch)
        if missing is not None:
            return f"{pipeline.source.place_of(missing)}: {missing}"
    for pipeline in config.pipelines:
        problem = refused(pipeline)
        if problem is None and pipeline.save_mode != "ignore":
            full = occupied(pipeline)
            if full is not None:
                problem = (
                    f"{pipeline.destination.locate('mode')}: {full}; set mode: overwrite to "
                    "replace it, or mode: append to add to it"
                )
        if problem is not None:
            return problem
    return None


def _register(spark: SparkSession, config: Config) -> None:
    seen: set[str] = set()
    for pipeline in config.pipelines:
        for plugin in (
            pipeline.source.plugin,
            pipeline.destination.plugin,
            pipeline.dead_letters.plugin,
        ):
            if plugin.spark_name not in seen:
                spark.dataSource.register(plugin.source_class)
                seen.add(plugin.spark_name)
    spark.dataSource.register(KafkaRangesDataSource)
    spark.dataSource.register(FilesPlanDataSource)


def run(
    config: Config,
    spark: SparkSession,
    *,
    available_now: bool = False,
    stopper: Stopper | None = None,
    say: Callable[[str], None] = _say,
    timings: list[Timing] | None = None,
) -> int:
    """Run every pipeline of ``config``; the exit status (module docstring). ``timings``
    gets each pipeline's :class:`Timing` once the pipelines ended."""
    stopper = stopper or Stopper()
    _register(spark, config)
    # What cannot run at all is said before any pipeline of the file writes anything.
    problem = refusal(config)
    if problem is not None:
        say(f"Error: {problem}")
        return EXIT_USAGE
    stores = [p for p in config.pipelines if p.schemas is not None]
    made = {p.id: made_by_making(p.schemas) for p in stores}  # type: ignore[arg-type]
    try:
        for step in (check_store, make_store):  # every store checked before any is made
            for pipeline in stores:
                try:
                    step(pipeline.schemas)  # type: ignore[arg-type]
                except ValueError as exc:
                    say(f"Error: {pipeline.destination.where}: {exc}")
                    return EXIT_USAGE
        return _run_made(config, spark, available_now, stopper, say, timings)
    finally:  # a store made for a table the run did not make goes again
        for pipeline in stores:
            unmake_unused(made[pipeline.id], pipeline.destination.settings)


def _run_made(
    config: Config,
    spark: SparkSession,
    available_now: bool,
    stopper: Stopper,
    say: Callable[[str], None],
    timings: list[Timing] | None,
) -> int:
    """The pipelines of ``config`` run, their stores made (:func:`run`)."""
    runnable = []
    for pipeline in config.pipelines:
        full = occupied(pipeline)
        if full is None:
            runnable.append(pipeline)
        else:  # mode: ignore
            say(f"{pipeline.id}: skipped: {full} (mode: ignore)")
    try:
        jobs = [_Job(p, spark, say) for p in runnable]
    except ConfigError as exc:  # (a setting the file's own checks let through)
        say(f"Error: {one_line(exc)}")
        return EXIT_USAGE
    for job in jobs:
        say(job.start_line(available_now))
    if jobs:
        _warm_up(spark)
    try:
        for job in jobs:
            if job.pipeline.batch and stopper.requested is None:
                _run_batch(job)
        streaming = [j for j in jobs if not j.pipeline.batch]
        if streaming and stopper.requested is None:
            _run_streams(config, streaming, available_now, stopper)
    except KeyboardInterrupt as exc:
        try:
            spark.sparkContext.cancelAllJobs()
            for query in spark.streams.active:
                query.stop()
        finally:
            _logs_back()  # (off since the second stop signal: Stopper._handle)
        say(f"stopped at once by {str(exc) or 'SIGINT'}: the last batch may be written in part")
        return EXIT_INTERRUPTED
    except SettingRefused as exc:
        say(f"Error: {exc}")
        return EXIT_USAGE
    if timings is not None:
        timings.extend(job.timing() for job in jobs)
    for job in jobs:
        say(job.summary())
    for job in jobs:
        if job.refused:
            say(f"Error: {job.refused}")
            return EXIT_USAGE
    problems = [j.stopped or j.failed for j in jobs if j.stopped or j.failed]
    for problem in problems:
        say(f"Error: {problem}")
    if stopper.requested:
        say(f"stopped by {stopper.requested}")
    if problems or any(j.totals.letters for j in jobs):
        return EXIT_LETTERS
    return EXIT_OK


def _run_batch(job: _Job) -> None:
    try:
        job.process(job.read(streaming=False), 0)
    except SettingRefused:
        raise
    except Exception as exc:  # reported in the summary; the other pipelines run on
        job.fail(exc)


def _run_streams(config: Config, jobs: list[_Job], available_now: bool, stopper: Stopper) -> None:
    queries = []
    for job in jobs:
        try:
            writer: Any = (
                job.read(streaming=True)
                .writeStream.foreachBatch(job.process)
                .option("checkpointLocation", job.pipeline.checkpoint)
                .queryName(job.pipeline.id)
            )
            checkpoints.mark(job.pipeline.checkpoint, job.pipeline.source.plugin.name)
            if available_now:
                writer = writer.trigger(availableNow=True)
            elif config.trigger:
                writer = writer.trigger(processingTime=config.trigger)
            queries.append((job, writer.start()))
        except SettingRefused:
            raise
        except Exception as exc:
            refused = _setting_error(exc)
            if refused is not None:
                source = job.pipeline.source
                raise SettingRefused(f"{source.place_of(refused)}: {refused}") from None
            job.fail(exc)  # reported in the summary; the other pipelines run on
    stopping = False
    while any(query.isActive for _, query in queries):
        for _, query in queries:
            if query.isActive:
                with contextlib.suppress(StreamingQueryException):  # read below
                    query.awaitTermination(0.2)
        # pipelines are independent: one that fails or stops leaves the others running
        if stopper.requested and not stopping:
            stopping = True
            for job, query in queries:
                if query.isActive:
                    _stop_cleanly(job, query)
    for job, query in queries:
        error = query.exception()
        if error is not None:
            job.fail(error)


def _stop_cleanly(job: _Job, query: Any) -> None:
    """Stop ``query`` between batches: refuse new ones, let the current one be committed."""
    with job.lock:
        job.stopping = True
    while True:
        with job.lock:
            busy = job.in_batch
        if not busy:
            break
        time.sleep(0.05)
    # the batch's commit is written after foreachBatch returns: wait for its progress report
    if job.last_batch is not None:
        for _ in range(600):
            progress = query.lastProgress
            if not query.isActive or (progress and progress.get("batchId", -1) >= job.last_batch):
                break
            time.sleep(0.05)
    query.stop()
