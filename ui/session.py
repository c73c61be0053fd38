"""Whether the browser session of this script run is still there, asked from another thread.

Streamlit has no session-end callback. What it has: `Runtime.is_active_session(id)`, documented as
safe on any thread, which turns False as soon as the session's websocket closes (a closed tab; the
session is then kept 120 s for a reconnect, which makes it active again). A generation's watchdog asks
it about once a second (`rag.llms.stream.Keepalive.attended`), so a session that moved to another page
keeps its answer, and one that is gone stops it.
"""

from __future__ import annotations

from collections.abc import Callable

from rag.llms.stream import ABANDON_AFTER, Keepalive


def connected_probe() -> Callable[[], bool] | None:
    """A call telling whether this run's browser session is still connected; None where there is no
    Streamlit server (AppTest, bare mode): then only the page's touches keep a generation going."""
    from streamlit import runtime
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is None or not runtime.exists():
        return None
    server = runtime.get_instance()
    session_id = ctx.session_id
    # `is True`: AppTest's stand-in Runtime is a MagicMock, whose answers are truthy mocks, not a
    # served session; there, as in bare mode, the page's touches alone count.
    if server.is_active_session(session_id) is not True:
        return None
    return lambda: server.is_active_session(session_id) is True


def keepalive() -> Keepalive:
    """How a generation this session starts is stopped once the session is gone."""
    return Keepalive(ABANDON_AFTER, connected_probe())
