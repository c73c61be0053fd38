"""The app's Streamlit settings (.streamlit/config.toml): its file watcher stays out of the virtualenv, the
data folder and the test artifacts (issue 29: it watched .venv)."""

from __future__ import annotations

import tomllib

import pytest
from streamlit.watcher.folder_black_list import FolderBlackList

from tests.conftest import ROOT

SERVER = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))["server"]


def test_the_watcher_polls_the_apps_own_files_instead_of_watching_its_folder_recursively() -> None:
    # watchdog (the default) schedules the app's folder recursively: .venv and .rag-data included.
    assert SERVER["fileWatcherType"] == "poll"


@pytest.mark.parametrize("folder", [".venv/lib/python3.11/site-packages/x", ".rag-data/pg", "tests/artifacts"])
def test_no_module_in_the_virtualenv_the_data_or_the_artifacts_is_watched(folder: str) -> None:
    # Streamlit's own matcher, on the absolute paths it checks (a relative entry would match none).
    blacklist = FolderBlackList(SERVER["folderWatchBlacklist"])
    assert blacklist.is_blacklisted(str(ROOT / folder / "module.py"))
    assert not FolderBlackList([]).is_blacklisted(str(ROOT / "tests" / "artifacts" / "module.py"))
    assert not blacklist.is_blacklisted(str(ROOT / "rag" / "settings.py"))
    assert not blacklist.is_blacklisted(str(ROOT / "pages" / "upload.py"))
