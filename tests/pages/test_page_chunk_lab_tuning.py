"""The Chunk Lab's tuning (issue #30), driven through the real app: questions written by a stand-in chat model
(tests/tuning/standin.py: it answers from the passage in the prompt, as a model streams), shown as they come,
edited, stopped; a sweep on the real embedder drawn as charts; the recommendation sent to the Upload page.

The background jobs are the page's own (kept in the session); a test waits for one to end, then reruns the
page as the page's poll would.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import pytest
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.testing.v1 import AppTest

from rag import llms
from rag.store import Store
from rag.tuning.files import load_questions
from rag.tuning.pareto import pareto_front
from rag.tuning.recommend import recommend
from rag.tuning.sweep import SweepResult
from tests.conftest import ROOT
from tests.tuning.samples import english_document, english_reply
from tests.tuning.standin import ReplyingModel
from tests.ui.test_i18n import english_phrases, shown_texts

TEXT = english_document(12)
FILENAME = "lighthouses.md"
QUESTIONS_JOB = "_lab_questions_job"
SWEEP_JOB = "_lab_sweep_job"
SWEEP_RESULT = "_lab_sweep_result"


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[ReplyingModel]:
    """The stand-in, as the chat model the page resolves."""
    scripted = ReplyingModel(english_reply)
    monkeypatch.setattr(llms, "resolve_chat_model", lambda settings, choice=None: scripted)
    yield scripted


def open_lab(lang: str = "en") -> AppTest:
    """The page in the app (its router and the Upload page it hands over to); in Chinese on its own, as
    tests/ui/test_i18n.py opens it (the query parameter that picks the language stays with the page)."""
    if lang == "en":
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
        at.session_state["uploads"] = {FILENAME: TEXT.encode()}
        at.run()
        assert not at.exception
        at.switch_page("pages/chunk-lab.py").run()
    else:
        at = AppTest.from_file(str(ROOT / "pages/chunk-lab.py"), default_timeout=240)
        at.query_params["lang"] = lang
        at.session_state["uploads"] = {FILENAME: TEXT.encode()}
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    at.radio(key="lab_n_settings").set_value(1).run()
    return at


def editor(at: AppTest):
    found = [e for e in at.data_editor if str(e.key).startswith("lab_tune_questions_")]
    assert len(found) == 1, [e.key for e in at.data_editor]
    return found[0]


def finish(at: AppTest, key: str, timeout: float = 240) -> None:
    """Wait for the page's job under `key` to end, then rerun the page (as its poll would). A quick job may
    have ended, and been taken in, within the run that started it."""
    if key in at.session_state:
        assert at.session_state[key][1].wait(timeout)
    at.run()
    assert not at.exception, [e.value for e in at.exception]


def write_questions(at: AppTest, n: int) -> None:
    at.number_input(key="lab_tune_count").set_value(n).run()
    at.button(key="lab_write_questions").click().run()
    assert not at.exception, [e.value for e in at.exception]
    finish(at, QUESTIONS_JOB)


def small_grid(at: AppTest) -> None:
    at.multiselect(key="lab_grid_strategies").set_value(["recursive", "token"]).run()
    at.multiselect(key="lab_grid_sizes").set_value([64, 128]).run()
    at.multiselect(key="lab_grid_overlaps").set_value([0, 32]).run()
    at.multiselect(key="lab_grid_modes").set_value(["vector", "keyword"]).run()
    assert not at.exception and not at.error, [e.value for e in at.error]


def figure(at: AppTest, key: str) -> dict:
    charts = [c for c in at.get("plotly_chart") if c.proto.id and key in c.proto.id]
    assert len(charts) == 1, [c.proto.id for c in at.get("plotly_chart")]
    return json.loads(charts[0].proto.spec)


def test_questions_appear_in_the_table_and_can_be_edited(model: ReplyingModel) -> None:
    at = open_lab()
    at.number_input(key="lab_tune_count").set_value(4).run()
    estimate = [c.value for c in at.caption if "will write 4 questions" in c.value]
    assert len(estimate) == 1 and estimate[0].startswith(f"⏱️ {model.name} will write 4 questions: about "), estimate
    write_questions(at, 4)
    assert len(model.prompts) == 4
    table = editor(at).value
    assert len(table) == 4
    assert all(q.startswith("Who built the ") for q in table["question"])
    assert all(a in TEXT for a in table["answer"])
    assert any("4 of 4 questions kept" in c.value for c in at.caption), [c.value for c in at.caption]

    # Edit one, delete one, add one of one's own: the sweep takes the table as edited.
    key = editor(at).key
    first = table.iloc[0]
    at.session_state[key] = {
        "edited_rows": {0: {"question": "Which engineer built the first lighthouse?"}},
        "deleted_rows": [1],
        "added_rows": [{"question": "How many steps lead to the gallery?", "answer": "Visitors climb 100 steps"}],
    }
    at.run()
    assert not at.exception and not at.error
    small_grid(at)
    at.button(key="lab_run_sweep").click().run()
    finish(at, SWEEP_JOB)
    result: SweepResult = at.session_state[SWEEP_RESULT][1]
    asked = [(q.text, q.expected) for q in result.questions]
    assert asked[0] == ("Which engineer built the first lighthouse?", first["answer"])
    assert (table.iloc[1]["question"], table.iloc[1]["answer"]) not in asked
    assert asked[-1] == ("How many steps lead to the gallery?", "Visitors climb 100 steps")
    assert len(asked) == 4


def test_a_stop_keeps_the_questions_written_so_far(model: ReplyingModel) -> None:
    gate = threading.Event()
    model.on_call = lambda n: gate.wait(60) if n == 3 else None  # the third passage waits for the test
    at = open_lab()
    at.number_input(key="lab_tune_count").set_value(6).run()
    at.button(key="lab_write_questions").click().run()
    job = at.session_state[QUESTIONS_JOB][1]
    deadline = time.monotonic() + 60
    while len(job.view().questions) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    at.run()
    assert not at.exception
    live = next(d.value for d in at.dataframe if "answer" in d.value.columns)
    assert len(live) == 2  # each kept question shows as it comes
    assert any("2 kept" in str(p.proto.text) for p in at.get("progress"))
    at.button(key="lab_stop_questions").click().run()
    gate.set()
    finish(at, QUESTIONS_JOB)
    assert len(model.prompts) == 3  # stopped during the third passage: no fourth asked
    table = editor(at).value
    assert table["question"].tolist() == [q.text for q in job.view().questions]
    assert len(table) == 2
    assert any(c.value.startswith("Stopped: 2 of 2 questions kept") for c in at.caption), [c.value for c in at.caption]
    assert "lab_stop_questions" not in [b.key for b in at.button]


def test_the_sweep_draws_its_charts_recommends_and_sends_the_setting_to_upload(model: ReplyingModel) -> None:
    at = open_lab()
    write_questions(at, 6)
    small_grid(at)
    plan = [c.value for c in at.caption if "ways to search" in c.value]
    assert len(plan) == 1 and plan[0].startswith("⏱️ 16 settings (8 chunkings × 2 ways to search) on 6 questions."), plan
    at.button(key="lab_run_sweep").click().run()
    finish(at, SWEEP_JOB)
    assert not at.error, [e.value for e in at.error]
    result: SweepResult = at.session_state[SWEEP_RESULT][1]
    assert not result.stopped and len(result.points) == 16

    table = next(d.value for d in at.dataframe if "nDCG@10" in d.value.columns)
    assert len(table) == 16
    for row, point in zip(table.itertuples(), result.points):
        assert pytest.approx(point.mrr) == row.MRR and row.Chunks == point.chunks
        assert row._9 == round(point.prompt_tokens)  # Prompt tokens

    scatter = figure(at, "lab_sweep_scatter")
    traces = {t["name"]: t for t in scatter["data"]}
    front = pareto_front(result.points)
    assert traces["Pareto front"]["mode"] == "lines+markers"
    assert traces["Pareto front"]["x"] == pytest.approx([p.prompt_tokens for p in front])
    assert traces["Pareto front"]["y"] == pytest.approx([p.mrr for p in front])
    assert len(traces["Settings"]["x"]) == 16
    for strategy in ("recursive", "token"):
        spec = figure(at, f"lab_sweep_heat_{strategy}")
        heat = spec["data"][0]
        assert heat["type"] == "heatmap" and heat["y"] == ["64", "128"] and heat["x"] == ["0", "32"]
        # The sizes and overlaps are categories: as numbers plotly put ticks at 0/20/40 between them.
        assert spec["layout"]["xaxis"]["type"] == spec["layout"]["yaxis"]["type"] == "category"

    found = recommend(result)
    # The reason as the library words it, the settings named with the search mode in words.
    shown = [m.value for m in [*at.success, *at.info] if "95% interval" in m.value]
    assert len(shown) == 1, [m.value for m in [*at.success, *at.info]]
    assert shown[0].endswith(str(found.reason).replace(" · vector", " · Vector").replace(" · keyword", " · Keyword"))
    spread = (
        f"{len(result.questions)} questions, all scored alike: no spread to draw an interval from"
        if found.interval.low == found.interval.high
        else f"95% interval {found.interval.low:.3f}–{found.interval.high:.3f}"
    )
    assert spread in shown[0]
    per_question = next((d.value for d in at.dataframe if "rank" in d.value.columns), None)
    assert per_question is not None, ([list(d.value.columns) for d in at.dataframe], [e.value for e in at.error])
    assert per_question["Question"].tolist() == [q.text for q in result.questions]

    at.button(key="lab_apply_recommended").click().run()
    assert not at.exception
    applied = found.recommended.settings
    if "apply_upload_settings" in at.session_state:  # the Upload page has not consumed it (yet)
        assert at.session_state["apply_upload_settings"] == applied.as_dict()
    else:  # the switch reached the Upload page, which put the settings into its widgets
        assert at.session_state["upload_strategy"] == applied.strategy
        assert at.session_state["upload_chunk_size"] == applied.chunk_size


def test_the_questions_go_with_the_setting_to_upload_and_are_saved_with_the_ingested_file(
    model: ReplyingModel, store: Store
) -> None:
    """The walk of issue #30 found `rag eval --kb NAME` with no saved questions after the app's whole flow."""
    at = open_lab()
    write_questions(at, 3)
    small_grid(at)
    at.button(key="lab_run_sweep").click().run()
    finish(at, SWEEP_JOB)
    result: SweepResult = at.session_state[SWEEP_RESULT][1]
    at.button(key="lab_apply_recommended").click().run()
    assert not at.exception, [e.value for e in at.exception]
    at.switch_page("pages/upload.py").run()  # AppTest reruns the page it was told of, whatever st.switch_page did
    at.text_input(key="upload_kb_new").set_value("lights").run()
    assert any("3 questions from the Chunk Lab about lighthouses.md" in c.value for c in at.caption), (
        [c.value for c in at.caption],
        [k for k in ("apply_upload_questions", "_upload_lab_questions") if k in at.session_state],
        [e.value for e in at.error],
    )
    at.button(key="upload_ingest").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Saved 3 questions from the Chunk Lab as the question set of lights" in s.value for s in at.success)
    saved = store.question_sets.questions("lights")
    assert [(q.text, (q.start, q.end), q.document) for q in saved] == [
        (q.text, q.span, FILENAME) for q in result.questions
    ]
    assert all(TEXT[q.start : q.end] == q.answer for q in saved)


def test_an_edited_question_survives_a_visit_to_another_page(model: ReplyingModel) -> None:
    at = open_lab()
    write_questions(at, 3)
    at.number_input(key="lab_tune_count").set_value(5).run()
    at.session_state[editor(at).key] = {
        "edited_rows": {0: {"question": "Which engineer built the first lighthouse of the guide?"}},
        "deleted_rows": [],
        "added_rows": [],
    }
    at.run()
    assert editor(at).value["question"].tolist()[0] != "Which engineer built the first lighthouse of the guide?"
    at.switch_page("pages/upload.py").run()
    at.switch_page("pages/chunk-lab.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert editor(at).value["question"].tolist()[0] == "Which engineer built the first lighthouse of the guide?"
    assert at.number_input(key="lab_tune_count").value == 5


def test_a_size_typed_into_the_grid_is_swept_and_a_wrong_one_is_named(model: ReplyingModel) -> None:
    at = open_lab()
    write_questions(at, 3)
    small_grid(at)
    at.multiselect(key="lab_grid_sizes").set_value([64, "96"]).run()
    plan = [c.value for c in at.caption if "ways to search" in c.value]
    assert len(plan) == 1 and plan[0].startswith("⏱️ 16 settings (8 chunkings"), plan
    at.button(key="lab_run_sweep").click().run()
    finish(at, SWEEP_JOB)
    result: SweepResult = at.session_state[SWEEP_RESULT][1]
    assert sorted({p.settings.chunk_size for p in result.points}) == [64, 96]
    at.multiselect(key="lab_grid_sizes").set_value([64, "ninety"]).run()
    assert [e.value for e in at.error] == ["Grid: Chunk sizes (tokens): 'ninety' is not a whole number"]


def test_a_running_sweep_shows_the_settings_scored_so_far(
    model: ReplyingModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rag.tuning import sweep

    gate, calls = threading.Event(), []
    original = sweep._score

    def held(*args: object, **kwargs: object) -> object:  # the sweep's own scoring, held before the 4th point
        calls.append(1)
        if len(calls) == 4:
            gate.wait(120)
        return original(*args, **kwargs)

    monkeypatch.setattr(sweep, "_score", held)
    at = open_lab()
    write_questions(at, 3)
    small_grid(at)
    try:
        at.button(key="lab_run_sweep").click().run()
        deadline = time.monotonic() + 120
        while len(calls) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        at.run()
        shown = [c.value for c in at.caption if c.value.startswith("Scored so far")]
        assert shown == ["Scored so far: 3 of 16 settings; the best of them:"], [c.value for c in at.caption]
        table = next(d.value for d in at.dataframe if "MRR" in d.value.columns)
        assert len(table) == 3 and list(table.columns) == ["Setting", "Search", "hit@5", "MRR"]
        assert table["MRR"].tolist() == sorted(table["MRR"].tolist(), reverse=True)
    finally:
        gate.set()
    finish(at, SWEEP_JOB)
    assert not [c.value for c in at.caption if c.value.startswith("Scored so far")]
    assert len(at.session_state[SWEEP_RESULT][1].points) == 16


def test_a_stopped_sweep_says_so_and_the_next_run_finishes_it(model: ReplyingModel) -> None:
    at = open_lab()
    write_questions(at, 3)
    small_grid(at)
    at.button(key="lab_run_sweep").click().run()
    if SWEEP_JOB in at.session_state:  # else it ended within the run that started it
        at.session_state[SWEEP_JOB][1].stop()
    finish(at, SWEEP_JOB)
    result: SweepResult = at.session_state[SWEEP_RESULT][1]
    if result.stopped:  # a stop may come after the last point on a fast machine
        assert any("The sweep was stopped after" in i.value for i in at.info)
        at.button(key="lab_run_sweep").click().run()
        finish(at, SWEEP_JOB)
    result = at.session_state[SWEEP_RESULT][1]
    assert not result.stopped and len(result.points) == 16


def test_the_chinese_ui_has_no_english_on_the_tuning_widgets(model: ReplyingModel) -> None:
    at = open_lab("zh")
    assert at.radio(key="lab_mode").options == ["向量", "关键词", "混合"]
    check_editor = json.loads(at.data_editor(key="lab_questions").proto.columns)
    assert [check_editor[c]["label"] for c in ("question", "expected")] == ["问题", "预期段落"]
    write_questions(at, 3)
    small_grid(at)
    at.button(key="lab_run_sweep").click().run()
    finish(at, SWEEP_JOB)
    labels = json.loads(editor(at).proto.columns)
    assert [labels[c]["label"] for c in ("question", "answer")] == ["问题", "答案（引自文档）"]
    assert at.multiselect(key="lab_grid_modes").options == ["向量", "关键词", "混合"]
    # Streamlit's own placeholder is English ("Choose options"): each grid box says its own.
    assert at.multiselect(key="lab_grid_modes").proto.placeholder == "选择一个或多个…"
    assert at.multiselect(key="lab_grid_sizes").proto.placeholder == "选择，或输入一个数字…"
    allowed = ["Northwind", "Spring AI", "TokenTextSplitter", "spring-exact", "hit@k", "MRR", "BM25", "CSV", "JSONL"]
    allowed += [model.name, "nDCG@10"]
    found = english_phrases(shown_texts(at), allowed)
    assert found == [], "\n".join(found)
    scatter = figure(at, "lab_sweep_scatter")
    assert [t["name"] for t in scatter["data"]] == ["设置", "帕累托前沿", "推荐"]


def test_the_set_downloads_as_jsonl_and_loads_again_with_a_csv_of_ones_own(
    model: ReplyingModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved: list[tuple[bytes, str | None]] = []
    original = MemoryMediaFileStorage.load_and_get_id

    def keep(self, path_or_data, mimetype, kind, filename=None):
        saved.append((path_or_data, filename))
        return original(self, path_or_data, mimetype, kind, filename)

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", keep)
    at = open_lab()
    write_questions(at, 3)
    generated = editor(at).value
    # A row of one's own, its answer typed as it stands in the text (the span is found again for the file).
    at.session_state[editor(at).key] = {
        "edited_rows": {},
        "deleted_rows": [],
        "added_rows": [{"question": "How far is the Arden lamp seen?", "answer": "seen from 20 miles away"}],
    }
    at.run()
    files = [data for data, name in saved if name == "lighthouses-questions.jsonl"]
    assert files, [name for _data, name in saved]
    loaded = load_questions(files[-1], document=TEXT)  # every span checked against the document
    assert [q.text for q in loaded] == [*generated["question"], "How far is the Arden lamp seen?"]
    assert TEXT[loaded[-1].start : loaded[-1].end] == "seen from 20 miles away"

    # In a new session: the JSONL, then a CSV, each adds its rows to the table.
    at = open_lab()
    at.file_uploader(key="lab_tune_file").set_value(("set.jsonl", files[-1], "application/jsonl")).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert editor(at).value["question"].tolist() == [q.text for q in loaded]
    csv = 'question,expected\n"Who drew the harbour walls below Belmont?","Tobias Venn"\n'
    at.file_uploader(key="lab_tune_file").set_value(("own.csv", csv.encode(), "text/csv")).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    table = editor(at).value
    assert len(table) == len(loaded) + 1
    assert table.iloc[-1].tolist() == ["Who drew the harbour walls below Belmont?", "Tobias Venn"]


def test_dropped_questions_are_counted_by_reason(model: ReplyingModel) -> None:
    model.fail_on = {2}  # the model falls over on the second passage: counted, the rest still asked
    at = open_lab()
    write_questions(at, 4)
    assert len(editor(at).value) == 3
    kept = [c.value for c in at.caption if c.value.startswith("3 of 4 questions kept")]
    assert len(kept) == 1 and kept[0].endswith("Dropped: model error 1"), [c.value for c in at.caption]


def test_a_language_switch_sends_the_grids_choices_again_in_the_new_labels(model: ReplyingModel) -> None:
    """A Chromium walk: after English -> Chinese the grid's chips stayed English, and on the way back the chosen
    search modes were emptied (the browser holds a multiselect's choice by its labels, which changed). After the
    switch the page sends the choices again, labelled in the new language, and keeps them."""
    from ui import i18n

    at = open_lab("en")
    at.multiselect(key="lab_grid_modes").set_value(["vector", "keyword"]).run()
    at.multiselect(key="lab_grid_strategies").set_value(["recursive"]).run()
    assert not at.multiselect(key="lab_grid_modes").proto.set_value
    at.session_state[i18n.CHOICE_KEY] = "zh"  # what the sidebar's 中文 button leaves
    at.run()
    modes, strategies = at.multiselect(key="lab_grid_modes"), at.multiselect(key="lab_grid_strategies")
    assert modes.value == ["vector", "keyword"] and strategies.value == ["recursive"]
    assert modes.proto.set_value and list(modes.proto.raw_values) == ["向量", "关键词"]
    assert strategies.proto.set_value and list(strategies.proto.raw_values) == [strategies.format_func("recursive")]
    assert strategies.format_func("recursive") != "Recursive"
    at.run()  # told once
    assert not at.multiselect(key="lab_grid_modes").proto.set_value
    assert at.multiselect(key="lab_grid_modes").value == ["vector", "keyword"]
    assert not at.error, [e.value for e in at.error]
