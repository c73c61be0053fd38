"""The Chunk Lab page, driven through the real app (router, sidebar, Upload page hand-over).

The chunk counts are checked against `split` of the document's plain text (the page splits it tokenised
once, through its caches); the retrieval check's figures are worked out here from the ranks it shows and
the settings in its columns, not by running the page's evaluate() and best_label() again.
"""

from __future__ import annotations

import json
import re
import uuid

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from rag import evaluation
from rag.chunking import ChunkSettings, split
from rag.documents import load_bytes
from rag.embeddings import LocalEmbedder
from rag.ingest import ingest_bytes
from tests.conftest import ROOT
from tests.docgen import make_pdf

# The built-in sample, three sections to a page, as a real PDF.
_SECTIONS = evaluation.sample().text.split("\n## ")
PAGES = ["\n## ".join(_SECTIONS[i : i + 3]) for i in range(0, len(_SECTIONS), 3)]
PDF = make_pdf(PAGES, fontsize=9)
FILENAME = "field-guide.pdf"
DOC = load_bytes(PDF, FILENAME)
QUESTIONS = [evaluation.sample().questions[2], evaluation.sample().questions[6]]
_FIELDS = {
    "strategy": "strategy",
    "chunk_size": "chunk_size",
    "chunk_overlap": "chunk_overlap",
    "min_chars": "min_chunk_size_chars",
    "min_embed": "min_chunk_length_to_embed",
    "max_chunks": "max_num_chunks",
    "keep_sep": "keep_separator",
}


def open_lab(uploads: dict[str, bytes] | None = None, lang: str | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    if lang is not None:
        at.query_params["lang"] = lang
    at.session_state["uploads"] = {FILENAME: PDF} if uploads is None else uploads
    at.run()
    assert not at.exception
    at.switch_page("pages/chunk-lab.py").run()
    assert not at.exception
    return at


def table(at: AppTest, column: str) -> pd.DataFrame:
    """The (only) table on the page that has `column`."""
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert len(found) == 1, [list(d.value.columns) for d in at.dataframe]
    return found[0]


def settings_of(at: AppTest, i: int) -> ChunkSettings:
    """The settings in column i, read from its widgets."""
    values = {field: at.session_state[f"lab_s{i}_{suffix}"] for suffix, field in _FIELDS.items()}
    if values["strategy"] == "spring":
        values["chunk_overlap"] = 0
    return ChunkSettings(**values)


def label_of(i: int, settings: ChunkSettings) -> str:
    return f"{'ABC'[i]}: {evaluation.describe(settings)}"


def test_stats_count_equals_split_and_follows_the_chunk_size() -> None:
    at = open_lab()
    assert at.selectbox(key="lab_doc").value == f"upload:{FILENAME}"
    assert not at.error
    stats = table(at, "Mean tokens")
    first = settings_of(at, 0)
    expected = split(DOC.text, first, DOC.pages_for_span)
    row = stats.iloc[0]
    assert row["Setting"] == label_of(0, first)
    assert row["Chunks"] == len(expected.chunks)
    assert row["Max tokens"] == max(c.tokens for c in expected.chunks)

    at.number_input(key="lab_s0_chunk_size").set_value(160).run()
    assert not at.exception
    smaller = settings_of(at, 0)
    assert smaller.chunk_size == 160
    count = table(at, "Mean tokens").iloc[0]["Chunks"]
    assert count == len(split(DOC.text, smaller).chunks)
    assert count > row["Chunks"]


def test_one_two_three_settings_side_by_side() -> None:
    at = open_lab()
    at.radio(key="lab_n_settings").set_value(1).run()
    assert not at.exception
    assert len(table(at, "Mean tokens")) == 1
    at.radio(key="lab_n_settings").set_value(2).run()
    assert not at.exception
    stats = table(at, "Mean tokens")
    assert len(stats) == 2
    for i in range(2):
        settings = settings_of(at, i)
        assert stats.iloc[i]["Setting"] == label_of(i, settings)
        assert stats.iloc[i]["Chunks"] == len(split(DOC.text, settings).chunks)
    at.radio(key="lab_n_settings").set_value(3).run()
    assert not at.exception
    assert len(table(at, "Mean tokens")) == 3
    # The other views draw one picture per setting.
    at.session_state["lab_view"] = "On the page"
    at.selectbox(key="lab_page").set_value(2).run()
    assert not at.exception
    assert len(at.image) == 3
    at.session_state["lab_view"] = "Chunk sizes"
    at.run()
    assert not at.exception
    # Export: the chosen setting as Python and as Spring AI Java.
    at.selectbox(key="lab_export").set_value(label_of(2, settings_of(at, 2))).run()
    assert not at.exception
    python, java = at.code[0].value, at.code[1].value
    third = settings_of(at, 2)
    assert f"chunk_size={third.chunk_size}," in python and f".withChunkSize({third.chunk_size})" in java


def upload_questions(at: AppTest, questions) -> None:
    csv = "question,expected\n" + "".join(f'"{q.text}","{q.expected}"\n' for q in questions)
    at.file_uploader(key="lab_questions_csv").set_value(("questions.csv", csv.encode(), "text/csv")).run()
    assert not at.exception
    assert at.data_editor(key="lab_questions").value["question"].tolist() == [q.text for q in questions]


def paired_lead(ranks_a: list[int | None], ranks_b: list[int | None]) -> tuple[float, float]:
    """A's mean lead over B in 1/rank and 1.96 standard errors of the per-question differences."""
    diff = [(1 / a if a else 0.0) - (1 / b if b else 0.0) for a, b in zip(ranks_a, ranks_b)]
    mean = sum(diff) / len(diff)
    sd = (sum((d - mean) ** 2 for d in diff) / (len(diff) - 1)) ** 0.5
    return mean, 1.96 * sd / len(diff) ** 0.5


def test_retrieval_check_figures_follow_its_ranks_and_the_best_is_applied() -> None:
    at = open_lab()
    # Neither setting is the Upload page's default, so applying either one shows; windows of 8 tokens cut
    # every passage, so the other setting is clearly better over the sample's questions.
    at.number_input(key="lab_s0_chunk_size").set_value(400).run()
    at.radio(key="lab_s1_strategy").set_value("token").run()
    at.number_input(key="lab_s1_chunk_size").set_value(8).run()
    at.number_input(key="lab_s1_chunk_overlap").set_value(0).run()
    questions = evaluation.sample().questions
    upload_questions(at, questions)
    at.button(key="lab_run_check").click().run()
    assert not at.exception
    assert not at.error

    chosen = {label_of(i, s): s for i, s in ((i, settings_of(at, i)) for i in range(2))}
    summary = table(at, "MRR").set_index("Setting")
    assert list(summary.index) == list(chosen)
    per_question = table(at, "Question")
    assert per_question["Question"].tolist() == [q.text for q in questions]
    for label, settings in chosen.items():
        shown = summary.loc[label]
        assert shown["Chunks"] == len(split(DOC.text, settings).chunks)
        # Each figure from the ranks shown per question (None: not among the hits read).
        ranks = [None if pd.isna(r) else int(r) for r in per_question[f"{label[0]} rank"]]
        assert all(r is None or 1 <= r <= shown["Chunks"] for r in ranks), ranks
        for k in (1, 3, 5):
            assert shown[f"hit@{k}"] == pytest.approx(sum(r is not None and r <= k for r in ranks) / len(ranks))
        assert shown["MRR"] == pytest.approx(sum(1 / r for r in ranks if r is not None) / len(ranks))
    # The built-in sample's questions are answered in its text: some setting finds each one's passage.
    assert all(
        any(not pd.isna(per_question.iloc[i][f"{label[0]} rank"]) for label in chosen) for i in range(len(questions))
    )
    # Best: the highest MRR, ahead of the other by more than 1.96 standard errors of the per-question differences.
    best, other = sorted(chosen, key=lambda label: -summary.loc[label, "MRR"])
    ranks = {label: [None if pd.isna(r) else int(r) for r in per_question[f"{label[0]} rank"]] for label in chosen}
    lead, bound = paired_lead(ranks[best], ranks[other])
    assert lead > bound > 0
    assert any(f"Best: **{best}**" in s.value for s in at.success)
    assert not any("tie" in i.value for i in at.info)
    # Why not first: where the chunk ranked first is, as a citation says it ("pages 1" before).
    firsts = [c.value for c in at.caption if c.value.startswith("Ranked first")]
    assert firsts and all(
        re.fullmatch(r"Ranked first: chunk \d+ \(score -?[0-9.]+, (p\. \d+|pp\. \d+–\d+)\)", c) for c in firsts
    )

    holding = [c.value for c in at.caption if c.value.startswith("Holds the passage")]
    assert holding and all(re.search(r"\((score -?[0-9.]+, )?(p\. \d+|pp\. \d+–\d+)\)$", c) for c in holding), holding

    at.button(key="lab_apply_best").click().run()
    assert not at.exception
    applied = chosen[best]
    assert applied != ChunkSettings()
    if "apply_upload_settings" in at.session_state:  # the Upload page has not consumed it (yet)
        assert at.session_state["apply_upload_settings"] == applied.as_dict()
    else:  # the switch reached the Upload page, which put the settings into its widgets
        assert at.session_state["upload_strategy"] == applied.strategy
        assert at.session_state["upload_chunk_size"] == applied.chunk_size


def test_the_chinese_check_labels_its_chart_and_per_question_columns_in_chinese() -> None:
    """A walk found "share / score" and "A rank", "B score" in the Chinese UI."""
    at = open_lab(lang="zh")
    upload_questions(at, QUESTIONS)
    at.button(key="lab_run_check").click().run()
    assert not at.exception
    frame = next(d for d in at.dataframe if "Question" in d.value.columns)
    config = json.loads(frame.proto.columns or "{}")
    labels = {name: (config.get(name) or {}).get("label") for name in map(str, frame.value.columns)}
    assert {labels[c] for c in ("A rank", "A score", "B rank", "B score")} == {"A 排名", "A 得分", "B 排名", "B 得分"}
    [chart] = at.get("plotly_chart")
    assert json.loads(chart.proto.spec)["layout"]["yaxis"]["title"]["text"] == "比例 / 得分"
    # The settings are named with their strategy in Chinese too ("A: spring 320" beside the buttons' "Spring AI").
    names = {"spring": "Spring", "recursive": "递归", "token": "词元"}
    expected = [
        f"{'AB'[i]}: {names[s.strategy]} {s.chunk_size}" + ("" if s.strategy == "spring" else f"/{s.chunk_overlap}")
        for i, s in enumerate(settings_of(at, i) for i in range(2))
    ]
    summary = next(d.value for d in at.dataframe if "hit@1" in d.value.columns)
    assert summary["Setting"].tolist() == expected


def test_the_chunk_size_charts_speak_chinese() -> None:
    """A walk found "tokens per chunk", "chunks" and "target 320" on the Chinese UI's histograms."""
    from ui.zh import ZH

    at = open_lab(lang="zh")
    at.session_state["lab_view"] = ZH["Chunk sizes"]  # a tab is chosen by its label
    at.run()
    assert not at.exception
    charts = [json.loads(c.proto.spec)["layout"] for c in at.get("plotly_chart")]
    histograms = [c for c in charts if c.get("shapes")]  # the target's dashed line
    assert histograms
    for layout in histograms:
        assert (layout["xaxis"]["title"]["text"], layout["yaxis"]["title"]["text"]) == ("每个分块的词元数", "分块")
        assert layout["annotations"][0]["text"].startswith("目标 ")


def test_a_question_no_chunk_answers_reads_a_dash_not_none() -> None:
    """A walk found "None" in the per-question table's rank column for a passage no chunk held."""
    from types import SimpleNamespace

    missing = SimpleNamespace(text="Who painted the lighthouse?", expected="a passage this guide never says")
    at = open_lab()
    upload_questions(at, [QUESTIONS[0], missing])
    at.button(key="lab_run_check").click().run()
    assert not at.exception
    frame = next(d for d in at.dataframe if "Question" in d.value.columns)
    assert pd.isna(frame.value.iloc[1]["A rank"]) and not pd.isna(frame.value.iloc[0]["A rank"])
    assert frame.proto.placeholder == "—"
    config = json.loads(frame.proto.columns or "{}")
    assert config["A rank"]["help"] == "—: no chunk in the ranking holds the passage."


def test_typed_questions_and_the_sample_when_nothing_is_uploaded(store) -> None:
    # `store` empties the database: nothing uploaded, nothing stored -> the built-in sample.
    at = open_lab(uploads={})
    assert at.selectbox(key="lab_doc").value == "sample"
    editor = at.data_editor(key="lab_questions")
    assert len(editor.value) == len(evaluation.sample().questions)
    at.session_state["lab_questions"] = {
        "edited_rows": {},
        "deleted_rows": list(range(1, len(evaluation.sample().questions))),
        "added_rows": [
            {
                "question": "Who guides reversing trucks?",
                "expected": "Reversing on the yard is done only with a banksman",
            }
        ],
    }
    at.run()
    at.button(key="lab_run_check").click().run()
    assert not at.exception
    assert len(table(at, "Question")) == 2
    # A half-filled row is named, not a traceback.
    at.session_state["lab_questions"] = {
        "edited_rows": {},
        "deleted_rows": [],
        "added_rows": [{"question": "Half a row", "expected": None}],
    }
    at.run()
    assert not at.exception
    assert any("no expected passage" in e.value for e in at.error)


def test_a_broken_upload_is_an_error_message() -> None:
    at = open_lab(uploads={"broken.pdf": b"%PDF-1.7 not really"})
    assert not at.exception
    assert any("broken.pdf" in e.value for e in at.error)


def test_a_document_from_a_knowledge_base(store) -> None:
    result = ingest_bytes(store, LocalEmbedder(), PDF, "stored-guide.pdf", "lab-kb", ChunkSettings(chunk_size=300))
    assert result.status != "failed", result
    stored = store.find_document("lab-kb", "stored-guide.pdf")
    at = open_lab(uploads={})
    doc_picker = at.selectbox(key="lab_doc")
    assert "🗄️ lab-kb / stored-guide.pdf" in doc_picker.options
    doc_picker.set_value(f"stored:{stored.id}").run()
    assert not at.exception and not at.error
    first = settings_of(at, 0)
    assert table(at, "Mean tokens").iloc[0]["Chunks"] == len(split(DOC.text, first).chunks)
    at.session_state["lab_view"] = "On the page"
    at.run()
    assert not at.exception
    assert len(at.image) == 2


def test_the_stop_button_is_gone_once_the_check_is_done() -> None:
    at = open_lab()
    upload_questions(at, QUESTIONS)
    at.button(key="lab_run_check").click().run()
    assert not at.exception and not at.error
    assert table(at, "MRR") is not None  # the check ran to its end
    assert "lab_stop_check" not in [b.key for b in at.button]


def _unique_document(tag: str) -> tuple[bytes, list[evaluation.Question]]:
    """The sample as Markdown with a tag in each section: chunks no other test embedded."""
    text = evaluation.sample().text.replace("\n## ", f"\n## {tag} ")
    questions = [evaluation.Question(f"{q.text} ({tag})", q.expected) for q in evaluation.sample().questions[:3]]
    return text.encode(), questions


def test_the_check_says_what_it_will_embed_and_embeds_nothing_for_keyword() -> None:
    data, questions = _unique_document(uuid.uuid4().hex[:8])
    at = open_lab(uploads={"tagged.md": data})
    at.radio(key="lab_n_settings").set_value(1).run()
    upload_questions(at, questions)
    # Before the check: how many texts, with which embedder (the chunks and questions, nothing cached yet).
    chunks = split(load_bytes(data, "tagged.md").text, settings_of(at, 0)).chunks
    expected = len({q.text for q in questions} | {c.text for c in chunks})
    plans = [c.value for c in at.caption if "to embed" in c.value]
    assert len(plans) == 1 and plans[0].startswith(f"⏱️ {expected} texts to embed with {LocalEmbedder.NAME}"), plans

    at.radio(key="lab_mode").set_value("keyword").run()
    assert any("Nothing to embed: keyword ranking (BM25) needs no vectors." in c.value for c in at.caption)
    at.button(key="lab_run_check").click().run()
    assert not at.exception and not at.error
    assert any("Ranked by keyword (BM25): nothing was embedded." in c.value for c in at.caption)
    assert "lab_stop_check" not in [b.key for b in at.button]


def test_a_check_after_an_ingest_under_the_same_settings_embeds_only_the_questions(store) -> None:
    data, questions = _unique_document(uuid.uuid4().hex[:8])
    at = open_lab(uploads={"tagged.md": data})
    at.radio(key="lab_n_settings").set_value(1).run()
    result = ingest_bytes(store, LocalEmbedder(), data, "tagged.md", "lab-reuse", settings_of(at, 0))
    assert result.status == "stored", result
    upload_questions(at, questions)
    plans = [c.value for c in at.caption if "to embed" in c.value]
    stored = len({c.text for c in split(load_bytes(data, "tagged.md").text, settings_of(at, 0)).chunks})
    assert plans == [
        f"⏱️ {len(questions)} texts to embed with {LocalEmbedder.NAME} ({stored} reused, {stored} of them from "
        "the knowledge base)" + plans[0].split("knowledge base)", 1)[1]
    ], plans
    at.button(key="lab_run_check").click().run()
    assert not at.exception and not at.error
    assert any(f"{len(questions)} texts embedded, {stored} reused from the cache." in c.value for c in at.caption), [
        c.value for c in at.caption
    ]


def test_settings_that_rank_alike_tie_and_no_best_is_named() -> None:
    at = open_lab()
    for suffix in ("strategy", "chunk_size"):  # B as A: the same chunks, the same ranks
        at.session_state[f"lab_s1_{suffix}"] = at.session_state[f"lab_s0_{suffix}"]
    at.run()
    assert settings_of(at, 0) == settings_of(at, 1)
    upload_questions(at, QUESTIONS)
    at.button(key="lab_run_check").click().run()
    assert not at.exception and not at.error
    assert not at.success and "lab_apply_best" not in [b.key for b in at.button]
    a, b = (label_of(i, settings_of(at, i)) for i in range(2))
    assert any(f"{a}, {b} rank every question's passage alike: they tie." in i.value for i in at.info)


def test_a_tables_pictures_and_links_are_shown_as_text_not_fetched() -> None:
    """Issue 33: the Chunk Lab drew a document's tables as Markdown too, so a CSV cell
    `![](http://127.0.0.1:9999/x)` made the browser fetch it when the file was looked at."""
    cells = [
        ["name", "picture", "link"],
        ["Falcon X", "![](http://127.0.0.1:9999/x)", "[open](http://127.0.0.1:9999/y)"],
    ]
    at = open_lab({"prices.csv": "\n".join(",".join(row) for row in cells).encode()})
    drawn = [m.value for m in at.get("markdown")] + [a.value for a in at.get("alert")]
    live = [text for text in drawn if "](http://127.0.0.1:9999" in text]
    assert not live, live
    (expander,) = [e for e in at.expander if e.label.startswith("1 table on this")]
    shown = expander.dataframe[0].value
    assert list(shown.columns) == cells[0] and shown.values.tolist() == cells[1:]


def test_a_word_file_is_counted_in_sections_not_pages() -> None:
    """A .docx is read in its headings' sections: the caption said "12 page(s) with text of 12"."""
    from tests.docgen import make_real_docx

    data = make_real_docx()
    at = open_lab({"report.docx": data})
    sections = load_bytes(data, "report.docx").page_count
    [shape] = [c.value for c in at.caption if c.value.startswith("DOCX · ")]
    assert shape.startswith(f"DOCX · {sections} section{'s' if sections > 1 else ''} · ") and "page" not in shape


@pytest.mark.parametrize(
    ("lang", "expected"), [(None, "TXT · 1 page with text of 1 · "), ("zh", "TXT · 1 页中 1 页有文字 · ")]
)
def test_a_one_page_file_is_counted_in_the_singular(lang: str | None, expected: str) -> None:
    """The caption read "1 page(s) with text of 1" (a walk)."""
    at = open_lab({"notes.txt": b"The keeper lit the lamp at dusk and put it out at dawn."}, lang=lang)
    [shape] = [c.value for c in at.caption if c.value.startswith("TXT · ")]
    assert shape.startswith(expected), shape


def test_an_overlap_not_under_the_chunk_size_is_said_in_the_fields_words() -> None:
    """It said "chunk_overlap (250) must be smaller than chunk_size (200)", the settings' names in the code."""
    from rag.errors import ChunkSettingsError

    with pytest.raises(ChunkSettingsError) as caught:
        ChunkSettings(strategy="recursive", chunk_size=200, chunk_overlap=250)
    assert str(caught.value) == "the overlap (250 tokens) must be smaller than the chunk size (200 tokens)"
