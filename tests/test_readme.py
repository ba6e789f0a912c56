"""Every command and snippet of the README runs as written, from a fresh clone.

The blocks: every ```sh / ```bash block and every ```python block (``text``, ``json`` and
``yaml`` blocks are shown, not run). A block that cannot run here says so just before it,
visibly in the Markdown source: ``<!-- not run: REASON -->``. Any other block runs:

- a sh block in a fresh copy of the repository (its files as a clone has them, ``.venv``
  linked), command by command with bash; and all of them again in order in one copy, as a
  reader following the README does. A command exits 0 unless a comment on its line or
  right below it says ``exit N`` / ``exit status N``; a counts line in those comments
  (``read 7 messages, wrote 6 records, ...``, a pipeline's ``orders: batch 0: 8 in, 5 out,
  3 to the dead-letter output``) must be what it printed. A command an earlier block ran
  identically is checked against that run instead of being run again.
- the python blocks one after another in one process (one Spark session for those that use
  Spark), in one fresh copy, as ``python -c`` runs them from the project's root.
- a block that talks to Kafka at ``127.0.0.1:9092`` gets the test broker's address there
  (in the block and in the copy's example pipelines).

Afterwards the copy's root holds nothing new but ``.cdc/`` (which git ignores), and the
repository's own root nothing new at all.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import ROOT

README = ROOT / "README.md"
RUNNABLE = {"sh": "sh", "bash": "sh", "python": "python"}
# Fence languages that would be code to run under another name: refused, so nothing slips by.
ALIASES = {"shell", "console", "zsh", "py", "python3", "pycon", "shell-session"}
NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<reason>.*?)\s*-->")
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w+-]*)\s*$")
KAFKA = "127.0.0.1:9092"
# What a copy's root may gain: the outputs' directory.
OUTPUTS = {".cdc"}


@dataclass
class Block:
    lang: str  # "sh" or "python"
    code: str
    line: int  # README line of the code's first line
    not_run: str | None = None

    @property
    def name(self) -> str:
        return f"{self.lang}-L{self.line}"

    @property
    def spark(self) -> bool:
        return "SparkSession" in self.code or bool(
            re.search(r"cdc-connectors (run|submit)\b|examples/shop\.py", self.code)
        )

    @property
    def kafka(self) -> bool:
        return KAFKA in self.code


def read_blocks(text: str) -> tuple[list[Block], list[str]]:
    """The README's runnable blocks, and the problems with markers and fences found."""
    lines = text.splitlines()
    blocks: list[Block] = []
    problems: list[str] = []
    pending: tuple[int, str] | None = None  # a not-run marker waiting for its block
    index = 0
    while index < len(lines):
        line = lines[index]
        marker = NOT_RUN.search(line)
        if marker:
            if pending is not None:
                problems.append(f"README.md:{pending[0]}: a not-run marker before no block")
            pending = (index + 1, marker.group("reason"))
            index += 1
            continue
        fence = FENCE.match(line)
        if not fence:
            if line.strip() and pending is not None:
                problems.append(f"README.md:{pending[0]}: a not-run marker before no block")
                pending = None
            index += 1
            continue
        indent, lang = len(fence.group("indent")), fence.group("lang")
        end = index + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        body = "\n".join(raw[indent:] for raw in lines[index + 1 : end]) + "\n"
        if lang in ALIASES:
            problems.append(f"README.md:{index + 1}: ```{lang}: write ```sh or ```python")
        elif lang in RUNNABLE:
            reason = pending[1] if pending else None
            if pending and not reason:
                problems.append(f"README.md:{pending[0]}: a not-run marker without a reason")
            blocks.append(Block(RUNNABLE[lang], body, index + 2, reason))
        elif pending is not None:
            problems.append(f"README.md:{pending[0]}: a not-run marker before a ```{lang} block")
        pending = None
        index = end + 1
    return blocks, problems


BLOCKS, PROBLEMS = read_blocks(README.read_text(encoding="utf-8"))
RUN = [block for block in BLOCKS if block.not_run is None]
SHELL_FAST = [b for b in RUN if b.lang == "sh" and not b.spark and not b.kafka]
PYTHON_FAST = [b for b in RUN if b.lang == "python" and not b.spark]
SPARK = [b for b in RUN if b.spark and not b.kafka]
WITH_KAFKA = [b for b in RUN if b.kafka]


# --- the commands of a sh block ------------------------------------------------------------

EXIT = re.compile(r"#.*\bexit(?: status)? (\d+)\b")
CLAIMS = [
    re.compile(r"read \d+ messages?, wrote \d+ records?, skipped \d+(?: \([^)]*\))?, errors \d+"),
    re.compile(r"[\w.-]+: batch \d+: \d+ in, \d+ out, \d+ to the dead-letter output"),
    re.compile(
        r"[\w.-]+: \d+ batch(?:es)?, \d+ records? in, \d+ out, \d+ to the dead-letter output"
    ),
]


@dataclass
class Command:
    text: str
    line: int
    notes: list[str] = field(default_factory=list)  # comments on its line and right below
    bare: str = ""  # the text without its trailing comment: the same command whatever it says

    @property
    def expected_exit(self) -> int:
        for note in self.notes:
            found = EXIT.search(note)
            if found:
                return int(found.group(1))
        return 0

    @property
    def claims(self) -> list[str]:
        return [m.group() for note in self.notes for claim in CLAIMS for m in claim.finditer(note)]


def split_commands(block: Block) -> list[Command]:
    """The commands of a sh block: continued lines (``\\``) and here-documents joined."""
    lines = block.code.splitlines()
    commands: list[Command] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.strip() or line.lstrip().startswith("#"):
            if commands and line.strip():
                commands[-1].notes.append(line.strip())
            index += 1
            continue
        start = index
        while lines[index].endswith("\\") and index + 1 < len(lines):
            index += 1
        text = "\n".join(lines[start : index + 1])
        heredoc = re.search(r"<<-?\s*(['\"]?)(\w+)\1", text)
        if heredoc:
            while index + 1 < len(lines) and lines[index].strip() != heredoc.group(2):
                index += 1
            text = "\n".join(lines[start : index + 1])
        trailing = re.search(r"\s+#\s.*$", lines[start if heredoc else index])
        command = Command(text, block.line + start, bare=text)
        if trailing:
            command.notes.append(trailing.group().strip())
            command.bare = text.replace(trailing.group(), "", 1)
        commands.append(command)
        index += 1
    return commands


# --- a fresh copy of the repository -----------------------------------------------------------


# The package's own code is not copied: commands run the installed package under test.
PACKAGE = ("cdc_connectors/", "pyspark_cdc_files/", "pyspark_cdc_kafka/")


def clone_files() -> list[str]:
    """The files a clone holds (and those about to be committed): git's view of the tree,
    but for the package's code."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", ".venv", ".cdc", "__pycache__", ".pytest_cache", ".mypy_cache", "build"}
        return [
            str(path.relative_to(ROOT))
            for path in ROOT.rglob("*")
            if path.is_file()
            and not skip.intersection(path.relative_to(ROOT).parts)
            and not str(path.relative_to(ROOT)).startswith(PACKAGE)
        ]
    return [name for name in listed.split("\0") if name and not name.startswith(PACKAGE)]


FILES = clone_files()


def fresh_copy(where: Path) -> Path:
    """A copy of the repository as a clone has it, with the project's ``.venv`` (and so the
    package under test, installed there) linked in."""
    where.mkdir(parents=True)
    for name in FILES:
        source = ROOT / name
        if source.is_file():
            target = where / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    (where / ".venv").symlink_to(ROOT / ".venv")
    return where


def environment(copy: Path) -> dict[str, str]:
    """What the README asks a user to export, and nothing of this test run's own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "COV_"))}
    env.update(PYSPARK_PYTHON=str(copy / ".venv" / "bin" / "python"), SPARK_LOCAL_IP="127.0.0.1")
    return env


def entries(directory: Path) -> set[str]:
    return set(os.listdir(directory))


def run_group(
    args: list[str], cwd: Path, stdin: str | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``args`` run in ``cwd`` in a process group of its own, which is gone when this
    returns (whatever a command left running in the background, or when time ran out)."""
    process = subprocess.Popen(
        args,
        cwd=cwd,
        env=environment(cwd),
        stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        stderr += f"\n(killed after {timeout} s)"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    return subprocess.CompletedProcess(args, process.returncode, stdout, stderr)


class Shell:
    """Runs the commands of sh blocks, each block in a fresh copy under ``tmp``."""

    def __init__(self, tmp: Path, kafka: str | None = None):
        self.tmp = tmp
        self.kafka = kafka
        self.done: dict[str, subprocess.CompletedProcess[str]] = {}

    def copy_for(self, block: Block) -> Path:
        copy = fresh_copy(self.tmp / block.name)
        if self.kafka:
            for pipeline in (copy / "examples" / "pipelines").glob("*.yaml"):
                pipeline.write_text(pipeline.read_text().replace(KAFKA, self.kafka))
        return copy

    def run(self, block: Block) -> None:
        copy = self.copy_for(block)
        before = entries(copy)
        for command in split_commands(block):
            self.check(command, copy)
        gained = entries(copy) - before - OUTPUTS
        assert not gained, f"README.md:{block.line}: the block left {sorted(gained)} in the root"

    def check(self, command: Command, copy: Path) -> None:
        text = command.bare.replace(KAFKA, self.kafka) if self.kafka else command.bare
        result = self.done.get(text)
        if result is None:
            result = self.done[text] = run_group(["bash", "-c", "set -o pipefail\n" + text], copy)
        said = result.stdout + result.stderr
        where = f"README.md:{command.line}: {command.text}"
        assert result.returncode == command.expected_exit, (
            f"{where}\nexit {result.returncode}, the README says {command.expected_exit}\n"
            f"stdout: {result.stdout[-2000:]}\nstderr: {result.stderr[-3000:]}"
        )
        for claim in command.claims:
            assert claim in said, f"{where}\nthe README says {claim!r}; it said:\n{said[-3000:]}"


RUNNER = r"""
import json, os, sys, traceback
sys.path.insert(0, os.getcwd())  # as python -c does: the project's root is importable
for line, code in json.load(sys.stdin):
    print(f"=== README.md:{line}", flush=True)
    try:
        exec(compile("\n" * (line - 1) + code, "README.md", "exec"), {"__name__": "__main__"})
    except BaseException:
        traceback.print_exc()
        print(f"=== README.md:{line} failed", flush=True)
        sys.exit(1)
"""


def run_python(blocks: list[Block], copy: Path) -> None:
    """The python blocks, in order, in one process (one Spark session) in ``copy``."""
    before = entries(copy)
    code = json.dumps([[block.line, block.code] for block in blocks])
    result = run_group([str(copy / ".venv" / "bin" / "python"), "-c", RUNNER], copy, code, 600)
    assert result.returncode == 0, f"{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
    gained = entries(copy) - before - OUTPUTS
    assert not gained, f"the python blocks left {sorted(gained)} in the root"


@pytest.fixture
def root_unchanged() -> Iterator[None]:
    """The repository's own root gains nothing while the README's blocks run elsewhere."""
    before = entries(ROOT)
    yield
    assert entries(ROOT) - before == set()


# --- the tests ------------------------------------------------------------------------------


def test_every_block_runs_or_says_why_not():
    assert not PROBLEMS, "\n".join(PROBLEMS)
    assert len(BLOCKS) >= 20
    groups = [SHELL_FAST, PYTHON_FAST, SPARK, WITH_KAFKA]
    for block in BLOCKS:
        runs = sum(block in group for group in groups)
        assert runs == (0 if block.not_run else 1), block.name
    assert SHELL_FAST and PYTHON_FAST and SPARK and WITH_KAFKA


def test_a_block_neither_run_nor_marked_cannot_hide():
    text = (
        "<!-- not run: needs docker -->\n```sh\ndocker compose up\n```\n\n"
        "```shell\nls\n```\n<!-- not run:  -->\n```python\nx = 1\n```\n"
        "<!-- not run: stray -->\n\nSome prose.\n```sh\nmake run\n```\n"
    )
    blocks, problems = read_blocks(text)
    assert [(b.name, b.not_run) for b in blocks] == [
        ("sh-L3", "needs docker"),
        ("python-L11", ""),
        ("sh-L17", None),
    ]
    assert problems == [
        "README.md:6: ```shell: write ```sh or ```python",
        "README.md:9: a not-run marker without a reason",
        "README.md:13: a not-run marker before no block",
    ]


def test_commands_and_what_the_readme_says_they_print():
    block = Block(
        "sh",
        "mkdir -p .cdc\n"
        ".venv/bin/cdc-connectors convert --from a --to b \\\n    in -o .cdc/out\n"
        "# stderr: read 7 messages, wrote 6 records, skipped 0, errors 1 (exit status 1)\n"
        ".venv/bin/python - <<'PY'\n# not a comment of the block\nprint(1)\nPY\n"
        ".venv/bin/cdc-connectors run p.yaml   # exit 1: four bad lines\n"
        "# shop: batch 0: 14 in, 10 out, 4 to the dead-letter output, 0.7 records/s\n",
        10,
    )
    commands = split_commands(block)
    assert [(c.line, c.expected_exit, c.claims) for c in commands] == [
        (10, 0, []),
        (11, 1, ["read 7 messages, wrote 6 records, skipped 0, errors 1"]),
        (14, 0, []),
        (18, 1, ["shop: batch 0: 14 in, 10 out, 4 to the dead-letter output"]),
    ]
    assert commands[2].text.endswith("print(1)\nPY")


def test_the_examples_the_readme_names_exist():
    named = set(re.findall(r"examples/[\w./*-]*\w/?", README.read_text(encoding="utf-8")))
    missing = sorted(name for name in named if not list(ROOT.glob(name.rstrip("/"))))
    assert not missing


@pytest.mark.parametrize("block", SHELL_FAST, ids=lambda block: block.name)
def test_readme_commands_run_as_written(block: Block, tmp_path: Path, root_unchanged: None):
    Shell(tmp_path).run(block)


@pytest.mark.slow
def test_readme_commands_run_in_order_in_one_clone(tmp_path: Path, root_unchanged: None):
    """As a reader following the README top to bottom: the blocks share one clone (and its
    `.cdc/registry.db`), so none may trip over what an earlier one left."""
    copy = fresh_copy(tmp_path / "clone")
    before = entries(copy)
    shell = Shell(tmp_path)
    for block in SHELL_FAST:
        for command in split_commands(block):
            shell.check(command, copy)
    assert entries(copy) - before - OUTPUTS == set()


def test_readme_python_blocks_run_as_written(tmp_path: Path, root_unchanged: None):
    run_python(PYTHON_FAST, fresh_copy(tmp_path / "python"))
