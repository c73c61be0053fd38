"""`python -m rag ARGS` run in the test's own process: `rag.cli.main(argv, out, err)` with its output
captured, the way a subprocess run would see it (exit code, stdout, stderr).

A subprocess adds an interpreter start and the imports (seconds on 2 loaded cores) to every run and
nothing a test checks, except where the process itself is the point: what a fresh interpreter imports
(-X importtime), a SIGKILL, what a C library writes straight onto file descriptor 2. Those tests keep
their subprocess and say why.

The settings are this process's (tests/conftest.py points them at the test database, the local
WordLlama embedder and an Ollama that is not there); a test that needs another Ollama sets OLLAMA_HOST
with monkeypatch. They are read afresh for each run, as a new process would.
"""

from __future__ import annotations

import contextlib
import io
import signal
from dataclasses import dataclass

from rag import cli
from rag.settings import get_settings


@dataclass(frozen=True)
class Ran:
    """What a `subprocess.run(..., capture_output=True, text=True)` of the CLI would hold."""

    returncode: int
    stdout: str
    stderr: str


def rag(args: list[str]) -> Ran:
    out, err = io.StringIO(), io.StringIO()
    sigterm = signal.getsignal(signal.SIGTERM)  # main() makes SIGTERM exit, as the CLI process should
    get_settings.cache_clear()
    try:
        # argparse writes its usage errors and --help to sys.stderr/sys.stdout, not to out/err.
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(args, out, err)
            except SystemExit as exc:  # argparse: a usage error (2) or --help (0)
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        signal.signal(signal.SIGTERM, sigterm)
        get_settings.cache_clear()  # the next reader sees the environment as it is then
    return Ran(code, out.getvalue(), err.getvalue())
