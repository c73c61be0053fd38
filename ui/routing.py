"""Keep every page behind the router (app.py), even on a fresh server's very first request.

Streamlit treats an app with a `pages/` folder next to its main script as an old-style multipage
app until `st.navigation` has run once in the process (`PagesManager.uses_pages_directory`, a
class attribute; Streamlit >= 1.44, read in 1.67's source). So the first visitor after a restart
who opens a deep link such as /chat gets that page's script run on its own: a navigation listing
the files of pages/ and none of the router's sidebar. A page that finds itself started that way
switches the process to `st.navigation` mode and reruns; the rerun asks for the same page, which
the router then draws, because Streamlit names the discovered page after its file and app.py gives
every page its file name as URL path.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager
from streamlit.runtime.scriptrunner import get_script_run_ctx


def started_without_router() -> bool:
    """True when Streamlit's discovery of pages/, not app.py, is running the current page."""
    if not PagesManager.uses_pages_directory:
        return False
    ctx = get_script_run_ctx()
    if ctx is None:  # imported outside a script run (tests, the CLI)
        return False
    running = ctx.pages_manager.get_pages().get(ctx.page_script_hash)
    if running is None or not running.get("script_path"):
        return False
    # The discovered listing holds app.py too; when it runs, it calls st.navigation itself.
    return Path(running["script_path"]).resolve() != Path(ctx.main_script_path).resolve()


def through_router() -> None:
    """Rerun through app.py if the current page was started without it (a no-op otherwise)."""
    if started_without_router():
        PagesManager.uses_pages_directory = False  # what st.navigation sets on its first call
        st.rerun()
