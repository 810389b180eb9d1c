"""The docs test: every command of README.md and docs/*.md runs as written, so the docs cannot drift.

The convention (docs/README.md says the same; follow it in any new docs/<topic>.md, which this test
picks up by itself):

- A fenced block opened with ```` ```sh ```` is run. Each block runs in bash (``set -eo pipefail``)
  at the root of a scratch copy of the checkout, and must exit 0 within 60 s (``timeout=N`` after
  ``sh`` on the fence line changes that: ```` ```sh timeout=120 ````). A block that fails, or times
  out, fails the test with its file, line and output.
- Files run in order: README.md first (it starts ``make demo`` and activates the venv), then
  docs/*.md by name, every block of a file in order. *Exported* variables carry over to later blocks
  and later files (README.md exports ``BASIL``, the demo's address, and ``TOKEN``, its admin token;
  ``PATH`` holds the activated ``.venv/bin``); plain shell variables and functions do not.
- ```` ```sh background until="TEXT" ```` starts a long-running command (``make demo``, a lab): it
  runs in the background until the end of the test session, which waits (at most 180 s) for a line
  of its output containing TEXT and fails if it exits first; it is stopped with SIGINT (Ctrl-C), then
  SIGKILL after 60 s.
- A block opened with ```` ```text ```` is shown, never run: use it for output, for commands this
  machine cannot run (a real vCenter, root or a container engine, PowerShell) and for ones too long
  for `make test` (benchmarks, `make test` itself). Data blocks (```` ```json ````, ```` ```yaml ````,
  ```` ```jsonc ````) are not run either; ```` ```powershell ```` blocks are not run (no PowerShell
  here), but each Basil cmdlet they call must be exported by the module. A fence without a language
  is an error: every block says what it is.

The scratch copy is the working tree without .git, var/, dist/, caches and built output; .venv,
build/, plugin/node_modules and plugin/dist are symbolic links to the checkout's (so `make demo` there
finds the venv, the lab and the plugin built, and builds nothing). The demo runs there on a fresh
store and does not touch the checkout's own var/demo. Run time: about a minute and a half, most of it
the demo's first recommendation.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.vcenter.labproc import ROOT

pytestmark = pytest.mark.lab

FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,})(?P<info>.*)$")
LINKED = (".venv", "build", "plugin/node_modules", "plugin/dist")
SKIPPED = {
    ".git",
    "var",
    "dist",
    "test-artifacts",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".hypothesis",
}
DEFAULT_TIMEOUT_S = 60
READY_TIMEOUT_S = 180


@dataclass
class Block:
    path: Path
    line: int
    info: str
    text: str

    @property
    def lang(self) -> str:
        return self.info.split()[0] if self.info.split() else ""

    def option(self, name: str) -> str | None:
        found = re.search(rf'\b{name}=(?:"([^"]*)"|(\S+))', self.info)
        return None if found is None else (found.group(1) if found.group(1) is not None else found.group(2))

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file (``` or longer fences; the closing fence is as long)."""
    found: list[Block] = []
    opened: tuple[int, str, str] | None = None
    body: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = FENCE.match(line)
        if opened is None:
            if match:
                opened, body = (number, match["fence"], match["info"].strip()), []
        elif match and match["fence"] == opened[1] and not match["info"].strip():
            found.append(Block(path, opened[0], opened[2], "\n".join(body) + "\n"))
            opened = None
        else:
            body.append(line)
    assert opened is None, f"{path}:{opened[0]}: a fence is never closed"
    return found


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_every_block_says_what_it_is() -> None:
    """A fence without a language would be silently not run; the convention needs one on each."""
    bare = [b.where for path in doc_files() for b in blocks(path) if not b.lang]
    assert not bare, f"fenced blocks without a language (sh, text, json, ...): {bare}"


def test_the_fence_parser_sees_runnable_blocks(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text(
        "# x\n```sh timeout=5\necho one\n```\n\n````text\n```sh\nnot a block\n```\n````\n"
        '```sh background until="up now"\nserve\n```\n',
        encoding="utf-8",
    )
    found = blocks(doc)
    assert [(b.line, b.lang, b.text) for b in found] == [
        (2, "sh", "echo one\n"),
        (6, "text", "```sh\nnot a block\n```\n"),
        (11, "sh", "serve\n"),
    ]
    assert found[0].option("timeout") == "5"
    assert found[2].option("until") == "up now"
    assert found[2].option("timeout") is None


def scratch_copy(target: Path) -> Path:
    """The working tree (not .git, var/, caches), with the built parts linked rather than copied."""

    def ignore(directory: str, names: list[str]) -> set[str]:
        rel = Path(directory).relative_to(ROOT)
        skip = {n for n in names if (rel / n).as_posix() in LINKED or n == "__pycache__"}
        if rel == Path("."):
            skip |= SKIPPED & set(names)
        return skip

    shutil.copytree(ROOT, target, ignore=ignore, symlinks=True)
    for rel in LINKED:
        if (ROOT / rel).exists():
            (target / rel).symlink_to(ROOT / rel)
    return target


@dataclass
class Background:
    block: Block
    proc: subprocess.Popen[str]
    output: list[str] = field(default_factory=list)
    ready: threading.Event = field(default_factory=threading.Event)
    reader: threading.Thread | None = None

    def read(self, until: str) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.output.append(line)
            if until in line:
                self.ready.set()

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)
        if self.reader is not None:
            self.reader.join(timeout=30)  # it ends at the output's end, once the process has exited
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class DocsShell:
    """Runs the files' sh blocks in one scratch copy, carrying exported variables from block to block."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.state = root.parent / "exported.sh"
        self.state.write_text("", encoding="utf-8")
        self.background: list[Background] = []
        self.results: dict[Path, list[str]] = {}
        # Nothing of the test's own process leaks in: no BASIL_ settings, no PYTHONPATH.
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("BASIL_") and k != "PYTHONPATH"}

    def run_file(self, path: Path) -> list[str]:
        """The failures of *path*'s sh blocks (once per file and session)."""
        if path not in self.results:
            self.results[path] = [f for b in blocks(path) if b.lang == "sh" for f in self.run(b)]
        return self.results[path]

    def run(self, block: Block) -> list[str]:
        started = time.monotonic()
        failures = self._run(block)
        # What each block took (shown with pytest -s), to keep the whole run short.
        print(f"docs: {block.where} {time.monotonic() - started:.1f} s", flush=True)
        return failures

    def _run(self, block: Block) -> list[str]:
        until = block.option("until")
        if "background" in block.info.split():
            return self.start(block, until) if until else [f"{block.where}: background needs until=TEXT"]
        timeout = float(block.option("timeout") or DEFAULT_TIMEOUT_S)
        script = (
            f"set -a; . {shlex.quote(str(self.state))}; set +a\nset -eo pipefail\n{block.text}\n"
            f"export -p > {shlex.quote(str(self.state))}\n"
        )
        try:
            done = subprocess.run(
                ["bash", "-c", script], cwd=self.root, env=self.env, capture_output=True, text=True,
                timeout=timeout, check=False, start_new_session=True,
            )  # fmt: skip
        except subprocess.TimeoutExpired as err:
            return [f"{block.where}: still running after {timeout:.0f} s\n{block.text}{err.stdout or ''}"]
        if done.returncode != 0:
            return [
                f"{block.where}: exit {done.returncode}\n{block.text}--- output\n{done.stdout}{done.stderr}"
            ]
        return []

    def start(self, block: Block, until: str) -> list[str]:
        script = f"set -a; . {shlex.quote(str(self.state))}; set +a\nexec {block.text}"
        proc = subprocess.Popen(
            ["bash", "-c", script], cwd=self.root, env=self.env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, start_new_session=True,
        )  # fmt: skip
        started = Background(block, proc)
        self.background.append(started)
        started.reader = threading.Thread(target=started.read, args=(until,), daemon=True)
        started.reader.start()
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not started.ready.wait(1.0):
            if proc.poll() is not None or time.monotonic() > deadline:
                started.ready.wait(2.0)  # the reader may still hold the last lines
                if started.ready.is_set():
                    break
                state = f"exited {proc.returncode}" if proc.poll() is not None else "never got ready"
                return [f"{block.where}: {state} (waited for {until!r})\n{''.join(started.output[-40:])}"]
        return []

    def close(self) -> None:
        for started in reversed(self.background):
            started.stop()


@pytest.fixture(scope="module")
def docs_shell(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DocsShell]:
    root = scratch_copy(tmp_path_factory.mktemp("docs") / "basil")
    # `make demo` in the copy must find everything built (an outdated venv would be re-installed
    # from the copy): only the demo itself may be left to run.
    plan = subprocess.run(
        ["make", "--no-print-directory", "-n", "demo"], cwd=root, capture_output=True, text=True, check=True
    )
    steps = [line for line in plan.stdout.splitlines() if line.strip()]
    assert steps, plan.stdout
    assert all("scripts/demo.py" in line for line in steps), (
        f"make demo would build first; run `make venv lab plugin` in the checkout: {steps}"
    )
    shell = DocsShell(root)
    try:
        yield shell
    finally:
        shell.close()


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_commands_run_as_written(docs_shell: DocsShell, path: Path) -> None:
    readme = docs_shell.run_file(ROOT / "README.md")
    assert not readme or path == ROOT / "README.md", "README.md's commands failed first (see its test)"
    failures = docs_shell.run_file(path)
    assert not failures, "\n\n".join(failures)


def test_powershell_blocks_use_the_modules_commands() -> None:
    """PowerShell cannot run here (tests/powershell parses the module itself): every Basil cmdlet the
    docs' powershell blocks call must be one the module exports."""
    manifest = (ROOT / "scripts" / "powershell" / "Basil" / "Basil.psd1").read_text(encoding="utf-8")
    exported = set(re.findall(r"'([A-Z][a-z]+-Basil\w*)'", manifest))
    assert exported, "no exported function found in Basil.psd1"
    found = [b for path in doc_files() for b in blocks(path) if b.lang == "powershell"]
    assert found, "no powershell block in the docs: the check would prove nothing"
    unknown = [
        f"{block.where}: {name}"
        for block in found
        for name in sorted(set(re.findall(r"\b[A-Z][a-z]+-Basil\w*", block.text)) - exported)
    ]
    assert not unknown, f"cmdlets the module does not export: {unknown}"
