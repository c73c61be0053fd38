"""`python -m rag eval --kb NAME` gives the same figures after `kb export` -> `kb import` into a fresh data folder
(its own embedded server): on a question file (hit@k, MRR and each question's rank, per search mode) and on
the knowledge base's saved question set, whose earlier run travels with it (issue #31: "the same `rag eval`
figures")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag import documents
from rag.settings import get_settings
from rag.store import Store, stop_embedded_server
from rag.store.question_sets import SavedQuestion
from tests.clirun import rag
from tests.conftest import wipe
from tests.portable.test_portable_cli import NOTES

QUESTIONS = [
    {"question": "Who logged every storm?", "expected": "lighthouse keeper logged every storm"},
    {"question": "What happened after a record quarter?", "expected": "Dividends were paid to shareholders"},
    {"question": "加班工资怎么算？", "expected": "节假日加班工资按照三倍计算"},
    {"question": "How often did the harbour flood?", "expected": "flooded the harbour twice"},
]


def evaluate(args: list[str]) -> dict:
    ran = rag(["eval", "--kb", "harbour", "--json", *args])
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout)


def test_eval_gives_the_same_figures_after_a_round_trip_into_a_fresh_data_folder(
    tmp_path: Path, pg_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    wipe(pg_uri)
    notes = tmp_path / "notes.md"
    notes.write_text(NOTES, encoding="utf-8")
    assert rag(["ingest", str(notes), "--kb", "harbour", "--chunk-size", "32"]).returncode == 0
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in QUESTIONS), encoding="utf-8")
    text = documents.load_path(notes).text
    saved = []
    for q in QUESTIONS:
        start = text.index(q["expected"])
        saved.append(SavedQuestion(q["question"], q["expected"], start, start + len(q["expected"]), "en", "notes.md"))
    with Store.open(get_settings()) as store:
        store.question_sets.replace("harbour", "notes.md", saved)
    on_file = evaluate(["--questions", str(questions), "--details"])
    on_set = evaluate([])  # the saved set's first run, saved with the knowledge base
    assert set(on_file) == {"vector", "keyword", "hybrid"} and on_file["hybrid"]["n"] == len(QUESTIONS)
    assert on_file["keyword"]["mrr"] > 0  # figures worth comparing
    file = tmp_path / "harbour.zip"
    assert rag(["kb", "export", "harbour", "--out", str(file)]).returncode == 0

    fresh = tmp_path / "fresh"
    monkeypatch.setenv("RAG_DATA_DIR", str(fresh))
    try:
        imported = rag(["kb", "import", str(file)])
        assert imported.returncode == 0, imported.stderr
        assert evaluate(["--questions", str(questions), "--details"]) == on_file
        # The saved set's run in the fresh folder is compared with the run made before the export (it came in
        # the file): the same figures, "comparable" (same embedder and chunk settings), no change.
        after = evaluate([])
        for mode, figures in after.items():
            previous, change = figures.pop("previous"), figures.pop("change")
            assert figures == on_set[mode]
            assert previous["comparable"] and previous["mrr"] == on_set[mode]["mrr"]
            assert change == {"hit_at_1": 0.0, "hit_at_3": 0.0, "hit_at_5": 0.0, "mrr": 0.0}
    finally:
        stop_embedded_server(fresh / "pgdata")
