"""How a process of ours ends (the helpers every entry point, `rag ...` and `python -m rag.mcp.server`, runs first)
and how it starts worker processes.

Kept apart from `rag.cli`, so that the MCP server, which `rag mcp` starts, does not import the CLI back."""

from __future__ import annotations

import signal
import sys
import threading
import types
from collections.abc import Iterator
from contextlib import contextmanager


def exit_on_sigterm() -> None:
    """SIGTERM ends the process as Ctrl+C would, through the exit handlers: the embedded PostgreSQL this
    process started stops with it (by default SIGTERM kills Python without running them)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


_main_lock = threading.Lock()


@contextmanager
def no_main_script() -> Iterator[None]:
    """Worker processes started inside do not run the `__main__` script again. Under `streamlit run` the page being
    run is `__main__`, a module with a `__file__` and no `__spec__`, and multiprocessing's spawn runs such a script
    in each child: a tokenizer's worker ran the whole app (118 lines of Streamlit warnings, the embedded chat model
    mapped, 1.4 GB resident). A module run by name (`python -m rag`) is left as it is: spawn does not run it."""
    with _main_lock:
        main = sys.modules.get("__main__")
        if main is None or getattr(main, "__spec__", None) is not None or not getattr(main, "__file__", None):
            yield
            return
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            yield
        finally:
            sys.modules["__main__"] = main
