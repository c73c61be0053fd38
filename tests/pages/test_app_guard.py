"""Issue 18 (6, 9): a malformed DATABASE_URL shows no password and no traceback; RAG_APP_PASSWORD
guards every page."""

from __future__ import annotations

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT

APP = str(ROOT / "app.py")


def shown(at: AppTest) -> list[str]:
    """Every text the run put on the page or into the sidebar."""
    texts = []
    for kind in ("markdown", "caption", "error", "warning", "info", "success", "title", "exception"):
        texts += [str(getattr(e, "value", "") or getattr(e, "message", "")) for e in getattr(at, kind)]
    return texts


@pytest.fixture
def fresh_resources():
    from rag.settings import get_settings

    def clear() -> None:
        get_settings.cache_clear()
        st.cache_resource.clear()
        st.cache_data.clear()

    clear()
    yield
    clear()  # nothing cached from this test's environment (monkeypatch restores it right after)


def test_a_malformed_database_url_is_named_without_its_password(monkeypatch, fresh_resources) -> None:
    # psycopg quotes the whole string in its ProgrammingError, which used to end on every page with a
    # traceback, password included.
    monkeypatch.setenv("DATABASE_URL", "postgres//rag:S3cretPW@db.example/rag")
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    texts = shown(at)
    assert not at.exception, [e.value for e in at.exception]
    assert not any("S3cretPW" in t for t in texts), texts
    assert any("DATABASE_URL is not a valid PostgreSQL connection string" in t and "rag:***@" in t for t in texts), (
        texts
    )


def test_a_password_guards_every_page(monkeypatch, fresh_resources) -> None:
    monkeypatch.setenv("RAG_APP_PASSWORD", "open sesame")
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert [t.value for t in at.title] == ["RAG Knowledge Lab"]
    assert not at.sidebar.markdown  # no status, no navigation before the password
    at.text_input(key="app_password_typed").input("open sesam")
    at.button[0].click()
    at.run()
    assert [e.value for e in at.error] == ["Wrong password."]
    assert not at.sidebar.markdown
    at.text_input(key="app_password_typed").input("open sesame")
    at.button[0].click()
    at.run()
    assert "📄 Upload & preview" in [t.value for t in at.title]
    assert any("Status" in m.value for m in at.sidebar.markdown)


def test_the_app_listens_on_this_machine_only_by_default() -> None:
    import tomllib

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["address"] == "127.0.0.1"
    assert config["client"]["showErrorDetails"] == "type"  # an uncaught error shows no message, no traceback
    assert "--server.address $(ADDRESS)" in (ROOT / "Makefile").read_text(encoding="utf-8")
