"""Running the real app for browser tests: `streamlit run app.py` on a free port + Chromium, started as
the sessions bench starts it (benchmarks/sessions.py holds the one copy)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks import sessions
from benchmarks.sessions import CHROMIUM_ARGS, chromium_path

__all__ = ["CHROMIUM_ARGS", "chromium_path", "running_app"]


@contextmanager
def running_app(env: dict[str, str], log_path: Path) -> Iterator[str]:
    """Start the app as a user would (streamlit run) and yield its URL once it is healthy; stopped after,
    with any child it started."""
    with sessions.running_app(env, log_path, timeout=90) as (url, _pid):
        yield url
