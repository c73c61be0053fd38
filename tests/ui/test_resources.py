"""What the app caches across reruns (ui/resources.py) survives an edit under `streamlit run`."""

from __future__ import annotations

import importlib
import pickle
import sys

import pytest


def test_the_servers_info_is_pickled_after_the_library_was_imported_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    """An edit makes Streamlit import every module of the app again, while the store (st.cache_resource) keeps
    making instances of the old classes: st.cache_data could not pickle them, and every page showed
    UnserializableReturnValueError until a restart (a Chromium walk)."""
    import rag.store.records as before

    old = before.ServerInfo(True, "embedded", "18.4", "0.8.5")
    monkeypatch.delitem(sys.modules, "rag.store.records")
    again = importlib.import_module("rag.store.records")
    monkeypatch.setattr(sys.modules["rag.store"], "ServerInfo", again.ServerInfo)
    assert again.ServerInfo is not before.ServerInfo
    with pytest.raises(pickle.PicklingError, match="not the same object"):
        pickle.dumps(old)

    from ui import resources

    monkeypatch.setattr(resources, "ServerInfo", again.ServerInfo)
    made = resources.current(old)
    assert pickle.loads(pickle.dumps(made)) == again.ServerInfo(True, "embedded", "18.4", "0.8.5")
