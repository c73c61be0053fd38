"""`python -m rag kb export` and `kb import`: a knowledge base moved into a fresh data folder (its own
embedded server) answers the same searches with the same chunk ids and scores; refusals are one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.store import stop_embedded_server
from tests.clirun import rag
from tests.conftest import wipe

NOTES = (
    "# Harbour log\n\nThe lighthouse keeper logged every storm in the harbour ledger. Storm surges flooded the "
    "harbour twice.\n\n# Finance\n\nDividends were paid to shareholders after a record quarter; the board raised "
    "the dividend again.\n\n# 假期\n\n节假日加班工资按照三倍计算，加班需要提前申请。"
)
QUERIES = ("Who logged the storms?", "dividend after a record quarter", "加班工资")


def found(kb: str) -> list[list[tuple[str, float]]]:
    out = []
    for mode in ("vector", "keyword", "hybrid"):
        for query in QUERIES:
            ran = rag(["search", query, "--kb", kb, "--mode", mode, "--top-k", "3", "--json"])
            assert ran.returncode == 0, ran.stderr
            out.append([(h["id"], h["score"]) for h in json.loads(ran.stdout)])
    return out


def test_kb_export_and_import_into_a_fresh_data_folder(
    tmp_path: Path, pg_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    wipe(pg_uri)
    (tmp_path / "notes.md").write_text(NOTES, encoding="utf-8")
    assert rag(["ingest", str(tmp_path / "notes.md"), "--kb", "harbour", "--chunk-size", "32"]).returncode == 0
    before = found("harbour")
    file = tmp_path / "harbour.zip"
    exported = rag(["kb", "export", "harbour", "--out", str(file)])
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout.startswith("exported 'harbour': 1 document, ") and str(file) in exported.stdout
    assert "chunks: " in exported.stderr  # a stage line on a stderr that is not a terminal

    fresh = tmp_path / "fresh"
    monkeypatch.setenv("RAG_DATA_DIR", str(fresh))
    try:
        imported = rag(["kb", "import", str(file)])
        assert imported.returncode == 0, imported.stderr
        assert imported.stdout.startswith("imported 'harbour': 1 document, ")
        assert found("harbour") == before
        again = rag(["kb", "import", str(file)])
        assert again.returncode == 2
        assert again.stderr.strip().splitlines()[-1] == (
            "error: a knowledge base named 'harbour' exists already: import with --replace to replace it, "
            "or --as NAME to import under another name"
        )
        copy = rag(["kb", "import", str(file), "--as", "harbour 2"])
        assert copy.returncode == 0 and "given new ids, as the file's are in use here" in copy.stdout, copy.stdout
        replaced = rag(["kb", "import", str(file), "--replace"])
        assert replaced.returncode == 0 and "replaced the one before" in replaced.stdout
        assert found("harbour") == before
        listed = {k["name"]: k["chunks"] for k in json.loads(rag(["kb", "list", "--json"]).stdout)}
        assert listed == {"harbour": listed["harbour"], "harbour 2": listed["harbour"]}
    finally:
        stop_embedded_server(fresh / "pgdata")


def test_kb_import_refuses_a_bad_file_in_one_line(tmp_path: Path, pg_uri: str) -> None:
    wipe(pg_uri)
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"PK\x03\x04 truncated")
    ran = rag(["kb", "import", str(bad)])
    assert ran.returncode == 2
    assert ran.stderr.strip() == f"error: {bad}: not a knowledge base export (not a zip file)"
    missing = rag(["kb", "export", "nope", "--out", str(tmp_path / "nope.zip")])
    assert missing.returncode == 2 and missing.stderr.strip() == "error: no knowledge base named 'nope'"
    assert not (tmp_path / "nope.zip").exists()


def test_kb_import_refuses_another_embedder_unless_re_embedding(tmp_path: Path, store) -> None:
    from rag.portable import export_knowledge_base
    from tests.portable.helpers import EMBEDDER, build_kb

    build_kb(store, embedder="ollama:nomic-embed-text", dim=16)
    file = export_knowledge_base(store, "harbour", tmp_path / "ollama.zip").path
    refused = rag(["kb", "import", str(file), "--as", "mine"])
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        f"error: {file} was built with ollama:nomic-embed-text, and knowledge base 'mine' would be searched with "
        f"{EMBEDDER}: set RAG_EMBEDDER=ollama:nomic-embed-text, or import with --reembed to embed its chunks "
        f"again with {EMBEDDER}"
    )
    done = rag(["kb", "import", str(file), "--as", "mine", "--reembed"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        f"imported 'mine': 3 documents, 10 chunks, 1 saved question ({EMBEDDER}, 256-d; re-embedded; given new "
        "ids, as the file's are in use here)"
    )
    assert "embedding 10 chunks again" in done.stderr
    found = json.loads(rag(["search", "Who logged the storms?", "--kb", "mine", "--json"]).stdout)
    assert found[0]["metadata"]["original_filename"] == "harbour.txt"


def test_a_resumed_copy_says_so_in_a_line_that_stays() -> None:
    """The bar is redrawn in place on a terminal and each stage is one line in a log; that a copy goes on from a
    killed one is said in a line of its own either way."""
    import io

    from rag.cli import _RowsProgress

    err = io.StringIO()
    progress = _RowsProgress(err)
    progress("resuming", 34_000, 100_000)
    progress("stage", 35_000, 100_000)
    lines = err.getvalue().splitlines()
    assert lines[0] == "resuming a copy that did not finish: 34,000 of 100,000 chunks are on the target already"
    assert lines[1:] == ["stage: 35,000 of 100,000 rows done"]
