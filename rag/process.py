"""How a process of ours ends: the helpers every entry point (`rag ...`, `python -m rag.mcp.server`) runs first.

Kept apart from `rag.cli`, so that the MCP server, which `rag mcp` starts, does not import the CLI back."""

from __future__ import annotations

import signal
import sys
import threading


def exit_on_sigterm() -> None:
    """SIGTERM ends the process as Ctrl+C would, through the exit handlers: the embedded PostgreSQL this
    process started stops with it (by default SIGTERM kills Python without running them)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
