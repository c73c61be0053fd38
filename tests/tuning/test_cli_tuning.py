"""`rag questions`, `rag tune` and `rag eval --kb NAME` on a saved question set, run in this process
(tests/clirun.py) with a stand-in chat model (tests/tuning/standin.py), the WordLlama embedder and the
embedded PostgreSQL."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from rag.llms.types import ChatModel
from rag.settings import Settings
from tests.clirun import rag
from tests.conftest import wipe
from tests.tuning.samples import chinese_document, chinese_reply, english_document, english_reply
from tests.tuning.standin import ReplyingModel


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> ReplyingModel:
    """The chat model every command resolves (as `rag ask` resolves it: rag.llms.resolve_chat_model)."""
    standin = ReplyingModel(lambda p: chinese_reply(p) if "灯塔" in p else english_reply(p))
    chosen: list[str | None] = []

    def resolve(settings: Settings, choice: str | None = None) -> ChatModel:
        chosen.append(choice)
        return standin

    import rag.llms

    monkeypatch.setattr(rag.llms, "resolve_chat_model", resolve)
    standin.chosen = chosen  # type: ignore[attr-defined]
    return standin


@pytest.fixture
def doc(tmp_path: Path) -> Path:
    path = tmp_path / "lighthouses.txt"
    path.write_text(english_document(12), encoding="utf-8")
    return path


def test_questions_writes_a_jsonl_set_with_the_estimate_first(doc: Path, tmp_path: Path, model: ReplyingModel) -> None:
    out = tmp_path / "q.jsonl"
    proc = rag(["questions", str(doc), "--n", "4", "--out", str(out)])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("lighthouses.txt: ollama:scripted writes up to 4 questions, one per passage: about ")
    assert [line.strip() for line in lines[1:5]] == [f"passage {i}/4" for i in range(1, 5)]
    assert "kept 4 of 4 questions" in proc.stderr and proc.stdout == ""
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    text = english_document(12)
    assert len(rows) == 4 and all(text[r["start"] : r["end"]] == r["answer"] for r in rows)
    assert {r["language"] for r in rows} == {"en"}


def test_ctrl_c_keeps_the_questions_written_so_far(doc: Path, tmp_path: Path, model: ReplyingModel) -> None:
    before = signal.getsignal(signal.SIGINT)  # default_int_handler; SIG_IGN in a job started in the background
    model.on_call = lambda n: os.kill(os.getpid(), signal.SIGINT) if n == 3 else None
    out = tmp_path / "q.jsonl"
    proc = rag(["questions", str(doc), "--n", "6", "--out", str(out)])
    assert proc.returncode == 130, proc.stderr
    assert "stopping: what is done is kept" in proc.stderr and "stopped after 2 of 6 passages" in proc.stderr
    assert len(out.read_text(encoding="utf-8").splitlines()) == 2
    assert signal.getsignal(signal.SIGINT) is before  # the handler is put back


def test_tune_prints_the_table_and_the_recommendation(doc: Path, tmp_path: Path, model: ReplyingModel) -> None:
    out = tmp_path / "q.jsonl"
    assert rag(["questions", str(doc), "--n", "6", "--out", str(out)]).returncode == 0
    grid = "strategies=recursive,token,sizes=64,192,overlaps=0"
    proc = rag(["tune", str(doc), "--questions-file", str(out), "--grid", grid, "--grid", "modes=keyword"])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["setting", "hit@1", "hit@3", "hit@5", "MRR", "nDCG@10", "chunks", "prompt", "tokens"]
    assert len(lines) == 1 + 4 + 2 and lines[-2] == ""
    assert " scores highest " in lines[-1] or " is best: " in lines[-1]
    assert proc.stderr.startswith("lighthouses.txt: 4 settings scored on 6 questions with local:wordllama")

    as_json = json.loads(rag(["tune", str(doc), "--questions-file", str(out), "--grid", grid, "--json"]).stdout)
    points = as_json["points"]
    assert [(p["strategy"], p["chunk_size"]) for p in points] == [
        ("recursive", 64),
        ("recursive", 192),
        ("token", 64),
        ("token", 192),
    ]
    assert all(0 <= p["hit@1"] <= min(p["mrr"], p["hit@5"]) <= 1 and p["chunks"] > 0 for p in points)
    assert as_json["questions"] == 6 and as_json["recommendation"]["label"] in {p["label"] for p in points}


def test_tune_generates_chinese_questions_when_given_none(tmp_path: Path, model: ReplyingModel) -> None:
    path = tmp_path / "灯塔.md"
    path.write_text(chinese_document(12), encoding="utf-8")
    proc = rag(["tune", str(path), "--questions", "3", "--grid", "strategies=recursive,sizes=64,overlaps=0,16"])
    assert proc.returncode == 0, proc.stderr
    assert "writes up to 3 questions" in proc.stderr and "2 settings scored on 3 questions" in proc.stderr
    assert all(p.startswith("阅读下面的段落") for p in model.prompts)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--grid", "sizes=64,colours=red"], "--grid: unknown name 'colours' (use strategies, sizes, overlaps"),
        (["--grid", "64,128"], "--grid: '64' has no name: write e.g. sizes=128,256"),
        (["--grid", "sizes=big"], "--grid: sizes= takes numbers, got big"),
        (["--grid", "strategies=zigzag"], "unknown"),
        (["--questions", "3", "--questions-file", "q.jsonl"], "give --questions N or --questions-file FILE, not both"),
    ],
)
def test_tune_errors_are_one_line(doc: Path, args: list[str], message: str, model: ReplyingModel) -> None:
    proc = rag(["tune", str(doc), *args])
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


@pytest.fixture
def clean_db(pg_uri: str) -> None:
    wipe(pg_uri)


def test_a_saved_set_is_rerun_by_eval_with_the_difference_from_the_last_run(
    doc: Path, clean_db: None, model: ReplyingModel
) -> None:
    refused = rag(["questions", str(doc), "--n", "4", "--kb", "lights"])
    assert refused.returncode == 2 and "no knowledge base named 'lights'" in refused.stderr
    assert rag(["ingest", str(doc), "--kb", "lights", "--chunk-size", "128"]).returncode == 0
    nothing = rag(["eval", "--kb", "lights"])
    assert nothing.returncode == 2 and "has no saved questions" in nothing.stderr

    saved = rag(["questions", str(doc), "--n", "6", "--kb", "lights"])
    assert saved.returncode == 0, saved.stderr
    assert "saved 6 questions about lighthouses.txt as 'lights''s question set (6 in all)" in saved.stderr

    first = rag(["eval", "--kb", "lights", "--mode", "keyword"])
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0].startswith("6 saved questions on 'lights' (local:wordllama") and "spring 128" in lines[0]
    assert lines[2].startswith("keyword ") and "first run of this set" in lines[3]
    figures = [float(v) for v in lines[2].split()[1:]]
    assert figures[2] == 1.0  # the engineer's name finds its paragraph by keyword

    again = rag(["eval", "--kb", "lights", "--mode", "keyword"])
    assert "vs " in again.stdout and "hit@1 +0.000  hit@3 +0.000  hit@5 +0.000  MRR +0.000" in again.stdout
    assert "changed since" not in again.stdout

    assert rag(["ingest", str(doc), "--kb", "lights", "--chunk-size", "400"]).stdout.startswith(
        "lighthouses.txt: replaced"
    )
    changed = json.loads(rag(["eval", "--kb", "lights", "--mode", "keyword", "--json"]).stdout)["keyword"]
    assert changed["previous"]["comparable"] and changed["previous"]["chunk_settings"]["chunk_size"] == 128
    assert set(changed["change"]) == {"hit_at_1", "hit_at_3", "hit_at_5", "mrr"}
    text = rag(["eval", "--kb", "lights", "--mode", "keyword"]).stdout
    assert "changed since" not in text  # compared with the run just before, on the same settings

    tuned = json.loads(rag(["tune", "lights", "--grid", "strategies=recursive,sizes=128,overlaps=0", "--json"]).stdout)
    assert tuned["questions"] == 6 and len(tuned["points"]) == 1 and not tuned["not_found"]
    assert len(model.prompts) == 6  # the saved set was used: no question written again


def test_a_changed_file_is_not_saved_against_the_stored_copy(doc: Path, clean_db: None, model: ReplyingModel) -> None:
    assert rag(["ingest", str(doc), "--kb", "lights"]).returncode == 0
    doc.write_text(english_document(6), encoding="utf-8")
    proc = rag(["questions", str(doc), "--n", "2", "--kb", "lights"])
    assert proc.returncode == 2 and "lighthouses.txt differs from the copy in 'lights'" in proc.stderr
    assert model.prompts == []
    missing = rag(["tune", "nowhere"])
    assert missing.returncode == 2 and "nowhere: no such file, nor a knowledge base of that name" in missing.stderr
    neither = rag(["questions", str(doc)])
    assert neither.returncode == 2 and "give --out FILE" in neither.stderr
