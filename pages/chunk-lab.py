"""Chunk Lab: compare up to three chunk settings on one document and measure retrieval.

UI only: the chunking, pictures, evaluation and snippets come from rag/.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from streamlit.errors import StreamlitAPIException

from rag import chunking, evaluation, llms, retrieve, snippets, tuning
from rag.chunking import Chunk, ChunkSet, ChunkSettings, TokenizedText
from rag.documents import Document, load_bytes, page_label, render, sha256_hex, tables_in
from rag.embeddings.timing import machine_load
from rag.errors import RagError
from rag.evaluation import EmbeddingCache, EvaluationReport, Question, reading
from rag.evaluation.plan import CheckPlan, plan_check
from rag.evaluation.ranking import verdict
from rag.ingest.preview import busy_note
from rag.llms.types import ChatModel
from rag.scripts import language_of
from rag.store import Store
from rag.text import Text
from rag.tuning import kb_check
from rag.tuning import runner as tuning_runner
from rag.tuning.pareto import pareto_front
from rag.tuning.questions import DEFAULT_COUNT as DEFAULT_QUESTIONS
from rag.tuning.questions import MAX_COUNT as MAX_QUESTIONS
from rag.tuning.recommend import Recommendation, recommend
from rag.tuning.runner import QuestionsJob, SweepJob
from rag.tuning.sweep import Grid, PointResult, Search, SweepResult, default_grid, typed_numbers
from ui import format as fmt
from ui import resources, widgets
from ui.i18n import _, chart_config, columns, count, pages_place, relabel, sentences, tr

LETTERS = "ABC"
INITIAL: tuple[ChunkSettings, ...] = (
    chunking.DEFAULT,  # the default preset, whose chunks the default embedder reads whole
    ChunkSettings(strategy="recursive", chunk_size=256, chunk_overlap=32),
    ChunkSettings(strategy="token", chunk_size=128, chunk_overlap=16),
)
UPLOAD_PAGE = "pages/upload.py"
SAMPLE_ID = "sample"
REPORT_KEY = "lab_check_result"
# Set while a check embeds: still set at the start of a run, the check before was stopped.
RUNNING_KEY = "_lab_check_running"
STOPPED_KEY = "_lab_check_stopped"
PLAN_KEY = "_lab_check_plan"
VIEWS = ("Text", "On the page", "Chunk sizes")
COLOURS = ("#2f6fdf", "#ec8c1c", "#38a14a")


@dataclass(frozen=True)
class Source:
    """The document under study."""

    id: str
    filename: str
    sha: str
    data: bytes | None
    doc: Document
    knowledge: str | None = None
    """The knowledge base of a stored document (None: an upload or the sample)."""


# --- cached resources (keyed by content hash, so nothing is parsed or tokenised twice) ------


@st.cache_resource(max_entries=8, show_spinner="Reading the document…")
def _parse(sha: str, filename: str, _data: bytes) -> Document:
    return load_bytes(_data, filename)


@st.cache_resource(max_entries=8, show_spinner="Tokenising the document (once)…")
def _tokenized(sha: str, _text: str) -> TokenizedText:
    return chunking.tokenize(_text)


@dataclass(frozen=True)
class Chunked:
    chunk_set: ChunkSet
    stats: chunking.ChunkStats
    split_ms: float
    """How long splitting took the first time (the tokens were already there)."""


@st.cache_resource(max_entries=24, show_spinner=False)
def _chunked(sha: str, settings: ChunkSettings, _tokenized: TokenizedText, _doc: Document) -> Chunked:
    """Chunks and their statistics; immutable, so one copy serves every rerun and session."""
    started = time.perf_counter()
    chunk_set = chunking.split(_tokenized, settings, _doc.pages_for_span)
    elapsed = (time.perf_counter() - started) * 1000
    return Chunked(chunk_set, chunking.stats(chunk_set), elapsed)


@st.cache_resource(max_entries=8, show_spinner="Loading the document from the knowledge base…")
def _stored_bytes(document_id: str, sha: str) -> bytes:
    data = resources.store().document_bytes(uuid.UUID(document_id))
    if data is None:
        raise RagError("that document is no longer in the knowledge base: pick another one")
    return data


def _stored_documents() -> list[tuple[str, str, str, str]]:
    """(id, knowledge base, filename, sha256) of every stored document.

    Not cached: one small query per rerun, so a file ingested a moment ago is listed at once.
    """
    return [(str(d.id), d.knowledge, d.original_filename, d.sha256) for d in resources.store().list_documents()]


@st.cache_data(max_entries=64, show_spinner="Drawing the page…")
def _page_png(
    sha: str, page_number: int, settings: ChunkSettings, _data: bytes, _doc: Document, _chunks: tuple[Chunk, ...]
) -> bytes:
    return render.render_page(_data, _doc, page_number, _chunks).png


@st.cache_resource
def _embedding_cache() -> EmbeddingCache:
    """Vectors of chunks and questions, shared by all sessions: unchanged chunks are never re-embedded."""
    return EmbeddingCache(max_entries=50_000)


# --- the document -----------------------------------------------------------------------------


def _uploads() -> dict[str, bytes]:
    raw = st.session_state.get("uploads") or {}
    found: dict[str, bytes] = {}
    if isinstance(raw, dict):
        for name, value in raw.items():
            if isinstance(value, (bytes, bytearray, memoryview)):
                found[str(name)] = bytes(value)
            elif hasattr(value, "getvalue"):
                found[str(name)] = bytes(value.getvalue())
    return found


def _pick_document() -> Source:
    uploads = _uploads()
    options: dict[str, str] = {f"upload:{name}": "📄 " + _("{name} · just uploaded", name=name) for name in uploads}
    stored: dict[str, tuple[str, str, str, str]] = {}
    try:
        for row in _stored_documents():
            stored[f"stored:{row[0]}"] = row
            options[f"stored:{row[0]}"] = f"🗄️ {row[1]} / {row[2]}"
    except RagError as exc:
        st.caption(
            "⚠️ "
            + _("Stored documents are not available ({error}). Uploaded files and the sample still work.", error=exc)
        )
    options[SAMPLE_ID] = "🧪 " + _("Sample: Northwind field guide (built in)")
    if st.session_state.get("lab_doc") not in options:
        st.session_state["lab_doc"] = next(iter(options))
    chosen = st.selectbox(
        _("Document"),
        list(options),
        format_func=options.__getitem__,
        key="lab_doc",
        help=_(
            "Files uploaded on the Upload page, documents already in a knowledge base (knowledge base / "
            "file), or a built-in sample."
        ),
    )
    if chosen.startswith("upload:"):
        filename = chosen.removeprefix("upload:")
        data = uploads[filename]
        sha = sha256_hex(data)
    elif chosen.startswith("stored:"):
        document_id, knowledge, filename, sha = stored[chosen]
        data = _stored_bytes(document_id, sha)
        return Source(chosen, filename, sha, data, _parse(sha, filename, data), knowledge)
    else:
        filename = evaluation.sample().filename
        data = evaluation.sample().text.encode("utf-8")
        sha = sha256_hex(data)
    doc = _parse(sha, filename, data)
    return Source(chosen, filename, sha, data, doc)


# --- settings --------------------------------------------------------------------------------


def _pick_settings() -> dict[str, ChunkSettings]:
    """Label -> settings for each valid column (an invalid one shows its error and is left out)."""
    n = st.radio(
        _("Settings to compare"),
        [1, 2, 3],
        index=1,
        horizontal=True,
        key="lab_n_settings",
        help=_("Each setting gets its own column in every view below."),
    )
    chosen: dict[str, ChunkSettings] = {}
    for i, column in enumerate(st.columns(n, border=True)):
        with column:
            initial = st.session_state.get(f"lab_saved_s{i}", INITIAL[i])
            st.markdown(_("**Setting {letter}**", letter=LETTERS[i]))
            settings = widgets.chunk_settings_widget(f"lab_s{i}", initial)
            if settings is not None:
                # Kept outside the widgets, so hiding a column and showing it again restores it.
                st.session_state[f"lab_saved_s{i}"] = settings
                chosen[f"{LETTERS[i]}: {_setting_name(settings)}"] = settings
    return chosen


def _setting_name(settings: ChunkSettings) -> str:
    """A setting's short name ('spring 800', 'recursive 256/32'), its strategy in the UI's language (the Chinese
    UI named them 'A: spring 320', 'B: recursive 256/32' beside the strategy buttons' 'Spring AI' and '递归')."""
    words = {
        "spring": _("spring"),
        "spring-exact": _("spring-exact"),
        "token": _("token"),
        "recursive": _("recursive"),
    }
    strategy = settings.strategy  # chunking.label starts with it
    return words.get(strategy, strategy) + chunking.label(settings)[len(strategy) :]


# --- views -----------------------------------------------------------------------------------


def _stats_table(chunked: dict[str, Chunked]) -> None:
    rows = []
    for label, c in chunked.items():
        s, settings = c.stats, c.chunk_set.settings
        rows.append(
            {
                "Setting": label,
                "Chunks": s.count,
                "Mean tokens": round(s.mean_tokens, 1),
                "Min tokens": s.min_tokens,
                "Max tokens": s.max_tokens,
                "Target size": settings.chunk_size,
                "Overlap": settings.chunk_overlap,
                "Cut mid-sentence": s.mid_sentence_share,
                "Dropped (too short)": s.dropped_share,
                "Split in ms": round(c.split_ms, 1),
            }
        )
    stats = pd.DataFrame(rows)
    st.dataframe(
        stats,
        hide_index=True,
        key="lab_stats",
        column_config=columns(
            stats,
            {
                "Cut mid-sentence": st.column_config.NumberColumn(
                    format="percent", help=_("Share of the cuts between chunks that fall inside a sentence.")
                ),
                "Dropped (too short)": st.column_config.NumberColumn(
                    format="percent", help=_("Share of pieces discarded as too short to embed.")
                ),
                "Split in ms": st.column_config.NumberColumn(
                    help=_("Time to split the document (tokenised once) the first time with these settings.")
                ),
            },
        ),
    )


def _text_view(source: Source, chunk_sets: dict[str, ChunkSet], page_index: int) -> None:
    doc = source.doc
    start = doc.page_starts[page_index]
    page = doc.pages[page_index]
    end = start + len(page.text)
    for (label, chunk_set), column in zip(chunk_sets.items(), st.columns(len(chunk_sets))):
        with column:
            shown = chunking.chunks_in_span(chunk_set.chunks, start, end)
            st.caption(
                _(
                    "**{label}**: chunks {chunks} on page {number}. Hover for the chunk number; red text lies in "
                    "two chunks (overlap), grey text in none.",
                    label=label,
                    chunks=_chunk_numbers(shown),
                    number=page.number,
                )
            )
            with st.container(height=520):
                st.html(render.chunks_html(page.text, shown))
    tables = tables_in(page.text)
    if tables:
        with st.expander(_("{tables} on this {unit}, rendered", tables=count(len(tables), "table"), unit=_(doc.unit))):
            for number, table in enumerate(tables):
                widgets.document_table(f"lab_table_{page.number}_{number}", table)  # data: no picture is fetched


def _chunk_numbers(chunks: list[Chunk]) -> str:
    return page_label([c.index for c in chunks]) if chunks else "none"


def _page_view(source: Source, chunk_sets: dict[str, ChunkSet], page_number: int) -> None:
    if not render.renderable(source.doc) or source.data is None:
        st.info(
            _(
                "{kind} files have no page images; only PDF, EPUB and XPS do. The Text view shows where the chunks "
                "fall.",
                kind=source.doc.kind.upper(),
            )
        )
        return
    for (label, chunk_set), column in zip(chunk_sets.items(), st.columns(len(chunk_sets))):
        with column:
            on_page = tuple(c for c in chunk_set.chunks if page_number in c.pages)
            png = _page_png(source.sha, page_number, chunk_set.settings, source.data, source.doc, on_page)
            st.image(
                png,
                caption=_(
                    "{label}: chunks {chunks} boxed in alternating colours",
                    label=label,
                    chunks=_chunk_numbers(list(on_page)),
                ),
                width="stretch",
            )


def _sizes_view(chunk_sets: dict[str, ChunkSet]) -> None:
    for i, ((label, chunk_set), column) in enumerate(zip(chunk_sets.items(), st.columns(len(chunk_sets)))):
        with column:
            sizes = [c.tokens for c in chunk_set.chunks]
            target = chunk_set.settings.chunk_size
            fig = go.Figure(go.Histogram(x=sizes, nbinsx=30, marker_color=COLOURS[i % len(COLOURS)], name=label))
            fig.add_vline(
                x=target,
                line_dash="dash",
                line_color="#1d2433",
                annotation_text=_("target {size}", size=target),
                annotation_position="top left",
            )
            fig.update_layout(
                title=dict(text=label, font=dict(size=14)),
                height=320,
                margin=dict(l=10, r=10, t=40, b=10),
                bargap=0.05,
                xaxis_title=_("tokens per chunk"),
                yaxis_title=_("chunks"),
                showlegend=False,
                xaxis_range=[0, max([target, *sizes]) * 1.12],
            )
            st.plotly_chart(fig, key=f"lab_hist_{i}", config=chart_config())


def _views(source: Source, chunk_sets: dict[str, ChunkSet]) -> None:
    doc = source.doc
    numbers = [p.number for p in doc.pages]
    titles = {p.number: p.title for p in doc.pages}
    if st.session_state.get("lab_page") not in numbers:
        st.session_state["lab_page"] = numbers[0]
    page_number = st.selectbox(
        _(doc.unit.capitalize()),
        numbers,
        key="lab_page",
        format_func={
            n: _("{unit} {number} of {total}", unit=_(doc.unit.capitalize()), number=n, total=doc.page_count)
            + (f": {titles[n]}" if titles.get(n) else "")
            for n in numbers
        }.get,
        help=_("The page shown in the Text and On the page views")
        + (_(" (pages without text, such as scans, are not listed).") if doc.dropped_pages else _(".")),
    )
    text_tab, page_tab, sizes_tab = st.tabs([_(v) for v in VIEWS], key="lab_view", on_change="rerun")
    with text_tab:
        if text_tab.open is not False:
            _text_view(source, chunk_sets, numbers.index(page_number))
    with page_tab:
        if page_tab.open:
            _page_view(source, chunk_sets, page_number)
    with sizes_tab:
        if sizes_tab.open:
            _sizes_view(chunk_sets)


# --- retrieval check -------------------------------------------------------------------------


def _questions_table(source: Source) -> pd.DataFrame:
    questions: list[Question] = []
    upload = st.file_uploader(
        _("…or upload them as a CSV with the header question,expected (it fills the table above)"),
        type=["csv"],
        key="lab_questions_csv",
        help=_(
            "UTF-8, one question per line with the passage of the document that answers it; "
            "quote cells that contain commas. The table then holds the CSV's questions, to edit further."
        ),
    )
    if upload is not None:
        try:
            questions = evaluation.parse_questions_csv(upload.getvalue())
        except RagError as exc:
            widgets.show_error(exc)
    elif source.id == SAMPLE_ID:
        questions = list(evaluation.sample().questions)
    return pd.DataFrame(
        {
            "question": pd.Series([q.text for q in questions], dtype="string"),
            "expected": pd.Series([q.expected for q in questions], dtype="string"),
        }
    )


def _signature(source: Source, settings: dict[str, ChunkSettings], questions: list[Question]) -> tuple:
    return source.sha, tuple(settings.items()), tuple(questions)


def _store() -> Store | None:
    """The store whose chunks and kept vectors the check reuses; None when the database is not there."""
    try:
        return resources.store()
    except RagError:
        return None


def _plan(chunk_sets: dict[str, ChunkSet], questions: list[Question], signature: tuple, mode: str) -> CheckPlan:
    """What the check has left to embed (the stored vectors put in the cache first), worked out once per
    signature: it reads the database and counts tokens, not for every rerun."""
    embedder = resources.default_embedder()
    key = (signature, embedder.name)
    kept = st.session_state.get(PLAN_KEY)
    if kept is not None and kept[0] == key:
        plan: CheckPlan = kept[1]
        return plan
    store = _store() if mode != "keyword" else None
    plan = plan_check(chunk_sets, questions, embedder, _embedding_cache(), mode, store=store)
    st.session_state[PLAN_KEY] = (key, plan)
    return plan


def _run_check(
    source: Source,
    chunk_sets: dict[str, ChunkSet],
    questions: list[Question],
    signature: tuple,
    mode: str,
    plan: CheckPlan,
) -> None:
    embedder = resources.default_embedder()
    st.session_state.pop(PLAN_KEY, None)  # the cache changes: the next plan counts again
    bar_slot, stop_column = st.columns([5, 1], vertical_alignment="center")
    bar = bar_slot.progress(0.0, text=_("Embedding with {embedder}…", embedder=embedder.name))
    stop_slot = stop_column.empty()  # emptied when the check is done: a column's own empty() would add to it
    if plan.to_embed:
        # A click ends this script run at the bar's next update, after a slice of texts is embedded and
        # kept in the cache; the next run sees the mark below and says it was stopped.
        stop_slot.button(
            _("Stop"),
            key="lab_stop_check",
            icon="⏹️",
            width="stretch",
            help=_("Stop embedding. What is embedded so far is kept: running the check again goes on from there."),
        )
    st.session_state[RUNNING_KEY] = signature

    def progress(done: int, total: int) -> None:
        bar.progress(
            done / total if total else 1.0,
            text=_("Embedding new chunks and questions: {done}/{total}", done=done, total=total),
        )

    try:
        report = evaluation.evaluate(
            chunk_sets, source.doc.text, questions, embedder, _embedding_cache(), progress=progress, mode=mode
        )
    finally:
        bar.empty()
        stop_slot.empty()
    st.session_state.pop(RUNNING_KEY, None)
    st.session_state[REPORT_KEY] = (signature, report)


def _apply_to_upload(settings: ChunkSettings, questions: Sequence[Question] = (), source: Source | None = None) -> None:
    st.session_state["apply_upload_settings"] = settings.as_dict()
    if source is not None and source.id.startswith("upload:") and any(q.span for q in questions):
        # Saved as the knowledge base's question set once the Upload page has ingested the file (its spans
        # index this parse of it, which the Upload page stores): `rag eval --kb NAME` re-runs them.
        st.session_state["apply_upload_questions"] = {"document": source.filename, "questions": list(questions)}
    try:
        st.switch_page(UPLOAD_PAGE)
    except StreamlitAPIException:
        st.success(_("Settings saved for the Upload page: open it from the menu."))


def _retrieval_check(source: Source, chunk_sets: dict[str, ChunkSet], settings: dict[str, ChunkSettings]) -> None:
    st.subheader(_("Retrieval check"))
    st.caption(
        _(
            "Which setting puts the right passage on top? Give a few questions, each with the passage of the "
            "document that answers it. Every setting's chunks are ranked for each question as the chat's "
            "search would rank them (in memory, nothing is stored); **hit@k** is the share of questions whose "
            "passage is in the top k chunks, **MRR** the mean of 1/rank (1.0 = always first)."
        )
    )
    mode_names = _mode_names()
    mode = st.radio(
        _("Rank with"),
        retrieve.MODES,
        # Its labels are translated: after a language switch its choice is sent again (relabel).
        index=relabel("lab_mode", retrieve.MODES.index(retrieve.DEFAULT_MODE)),
        key="lab_mode",
        horizontal=True,
        format_func=mode_names.__getitem__,
        help=_(
            "Vector: cosine similarity of the embeddings. Keyword: BM25 over the setting's chunks. "
            "Hybrid (the chat's default): both, fused as the chat fuses them."
        ),
    )
    editor_slot = st.container()  # drawn above the CSV uploader, but filled after reading it
    initial = _questions_table(source)
    edited = editor_slot.data_editor(
        initial,
        key="lab_questions",
        num_rows="dynamic",
        hide_index=True,
        width="stretch",
        column_config={
            "question": st.column_config.TextColumn(_("Question"), width="medium"),
            "expected": st.column_config.TextColumn(
                _("Expected passage"),
                width="large",
                help=_("Copy it from the document; case and line breaks do not matter."),
            ),
        },
    )
    questions: list[Question] = []
    try:
        questions = evaluation.questions_from_rows(zip(edited["question"].tolist(), edited["expected"].tolist()))
    except RagError as exc:
        widgets.show_error(exc, _("Questions"))
    signature = (*_signature(source, settings, questions), mode)
    c1, c2 = st.columns([1, 2], vertical_alignment="center")
    run = c1.button(
        _("Run retrieval check"),
        key="lab_run_check",
        type="primary",
        disabled=not questions or not chunk_sets,
        help=None if questions else _("Add at least one question with its expected passage."),
    )
    auto = c2.toggle(
        _("Re-run when the settings change"),
        key="lab_auto_check",
        help=_("Chunks already embedded are reused, so only changed chunks cost time."),
    )
    plan_note = st.empty()  # what the check will embed; cleared once it ran (its report says what it did)
    try:
        plan = _plan(chunk_sets, questions, signature, mode) if questions and chunk_sets else None
    except RagError as exc:
        widgets.show_error(exc, _("Retrieval check"))
        return
    if plan is not None:
        plan_note.caption("⏱️ " + tr(plan.message))
    previous = st.session_state.get(REPORT_KEY)
    stale = previous is not None and previous[0] != signature
    interrupted = st.session_state.pop(RUNNING_KEY, None)
    if interrupted is not None:
        st.session_state[STOPPED_KEY] = interrupted
    stopped = st.session_state.get(STOPPED_KEY) == signature and not run
    if stopped:
        st.info(
            _(
                "The retrieval check was stopped. The chunks and questions embedded so far are kept: "
                "**Run retrieval check** goes on from there."
            ),
            icon="⏹️",
        )
    elif plan is not None and (run or (auto and (previous is None or stale))):
        st.session_state.pop(STOPPED_KEY, None)
        try:
            _run_check(source, chunk_sets, questions, signature, mode, plan)
        except RagError as exc:
            widgets.show_error(exc, _("Retrieval check"))
            return
        plan_note.empty()
        previous, stale = st.session_state[REPORT_KEY], False
    if previous is None:
        return
    report: EvaluationReport = previous[1]
    if stale:
        st.info(
            _(
                "The document, settings or questions changed since this check: run it again to update "
                "(unchanged chunks are not embedded again)."
            )
        )
    _show_report(report, chunk_sets if not stale else {})


def _show_report(report: EvaluationReport, chunk_sets: dict[str, ChunkSet]) -> None:
    found = verdict(report)
    first_k = report.ks[0]
    if found.best is not None:
        winner = report.result(found.best)
        c1, c2 = st.columns([3, 1], vertical_alignment="center")
        figures = {
            "best": found.best,
            "mrr": f"{winner.mrr:.2f}",
            "k": first_k,
            "hit": f"{winner.hit_at(first_k):.0%}",
            "chunks": count(winner.n_chunks, "chunk"),
            "n": len(report.questions),
        }
        if len(report.results) == 1:  # nothing to be ahead of
            c1.success(
                _(
                    "**{best}**: MRR {mrr} and hit@{k} {hit} ({chunks}) over {n} questions. Add a second setting "
                    "to compare it with.",
                    **figures,
                )
            )
        else:
            c1.success(
                _(
                    "Best: **{best}** with MRR {mrr} and hit@{k} {hit} ({chunks}), ahead of the others by more "
                    "than the noise of {n} questions.",
                    **figures,
                )
            )
        if c2.button(
            _("Use {letter} on the Upload page", letter=_letter(found.best)), key="lab_apply_best", type="primary"
        ):
            _apply_to_upload(winner.settings)
    elif found.reason is not None:
        st.info("⚖️ " + tr(found.reason))
    else:
        st.warning(
            _(
                "No setting ranked any expected passage: check that each passage is copied from this "
                "document (the notes below say which were not found)."
            )
        )
    if report.embedded or report.reused:
        st.caption(
            _(
                "Embedder {embedder}: {embedded} texts embedded, {reused} reused from the cache.",
                embedder=report.embedder,
                embedded=report.embedded,
                reused=report.reused,
            )
        )
    else:
        st.caption(_("Ranked by keyword (BM25): nothing was embedded."))

    metrics = [f"hit@{k}" for k in report.ks] + ["MRR"]
    fig = go.Figure()
    for i, r in enumerate(report.results):
        values = [r.hit_at(k) for k in report.ks] + [r.mrr]
        fig.add_bar(
            name=r.label,
            x=metrics,
            y=values,
            marker_color=COLOURS[i % len(COLOURS)],
            text=[f"{v:.2f}" for v in values],
            textposition="outside",
        )
    fig.update_layout(
        barmode="group",
        height=340,
        yaxis=dict(range=[0, 1.12], title=_("share / score")),
        margin=dict(l=10, r=10, t=20, b=10),
        legend=dict(orientation="h", y=-0.15),
    )
    st.plotly_chart(fig, key="lab_check_chart", config=chart_config())

    summary = pd.DataFrame(
        [
            {"Setting": r.label, "Chunks": r.n_chunks, **{f"hit@{k}": r.hit_at(k) for k in report.ks}, "MRR": r.mrr}
            for r in report.results
        ]
    )
    st.dataframe(
        summary,
        hide_index=True,
        key="lab_check_summary",
        column_config=columns(
            summary,
            {f"hit@{k}": st.column_config.NumberColumn(format="percent") for k in report.ks}
            | {"MRR": st.column_config.NumberColumn(format="%.3f")},
        ),
    )
    trivial = [
        _("{label} has only {chunks}", label=r.label, chunks=count(r.n_chunks, "chunk"))
        for r in reading.trivial(report)
    ]
    if trivial:
        st.caption(
            "⚠️ "
            + _("; ").join(trivial)
            + _(
                ": with k at least the number of chunks, hit@k is 100 % "
                "whatever the ranking. Compare MRR and hit@1, or use a longer "
                "document."
            )
        )

    st.markdown(
        _(
            "**Per question**: rank and score (cosine, BM25 or fused, by the mode ranked with) "
            "of the best chunk holding the expected passage."
        )
    )
    _per_question(report, "lab_check_questions")
    if report.not_found:
        st.warning(
            _(
                "{n} expected passage(s) are not in the document word for word, so they count as misses: copy the "
                "passage from the document (case and line breaks do not matter).",
                n=len(report.not_found),
            )
        )
    if chunk_sets:
        _misses(report, chunk_sets)


def _per_question(report: EvaluationReport, key: str, *, single: bool = False) -> None:
    """Each question's rank and score under each setting, named by its column's letter (`single`: one
    setting, under plain headers)."""
    notes_name: Callable[[str], str] = (lambda label: label) if single else _letter
    name: Callable[[str], str] = (lambda label: "") if single else _letter
    rows = []
    for qi, question in enumerate(report.questions):
        row: dict[str, object] = {"Question": question.text}
        for r in report.results:
            q = r.questions[qi]
            row[f"{name(r.label)} rank".strip()] = q.rank
            row[f"{name(r.label)} score".strip()] = q.score
        row["Notes"] = "; ".join(tr(n) for n in reading.question_notes(report, qi, name=notes_name))
        rows.append(row)
    per_question = pd.DataFrame(rows)
    for r in report.results:
        column = f"{name(r.label)} rank".strip()
        per_question[column] = per_question[column].astype("Int64")
    config: dict[str, object] = {
        c: st.column_config.NumberColumn(format="%.3f") for c in per_question.columns if c.endswith("score")
    }
    unranked = _("—: no chunk in the ranking holds the passage.")
    if "rank" in per_question.columns:  # one setting: plain headers, translated here
        config = {
            "rank": st.column_config.NumberColumn(_("Rank"), help=unranked),
            "score": st.column_config.NumberColumn(_("Score"), format="%.3f"),
        }
    else:  # a setting's letter and what its column holds ("A rank"), translated here
        for r in report.results:
            letter = name(r.label)
            config[f"{letter} rank"] = st.column_config.NumberColumn(_("{setting} rank", setting=letter), help=unranked)
            config[f"{letter} score"] = st.column_config.NumberColumn(
                _("{setting} score", setting=letter), format="%.3f"
            )
    # A question whose passage no chunk holds has no rank: "—", not Streamlit's "None" (a walk read it as a bug).
    st.dataframe(per_question, hide_index=True, key=key, column_config=columns(per_question, config), placeholder="—")


def _letter(label: str) -> str:
    """The column's letter ('A') of a setting labelled 'A: spring 800'."""
    return label.split(":")[0]


def _misses(report: EvaluationReport, chunk_sets: dict[str, ChunkSet]) -> None:
    """For each question not ranked first: what came first instead, next to the right chunk."""
    missed = reading.misses(report)
    if not missed:
        return
    with st.expander(_("Why not first? {n} question/setting pair(s) in detail", n=len(missed))):
        for r, q in missed:
            chunk_set = chunk_sets.get(r.label)
            if chunk_set is None:
                continue
            by_index = {c.index: c for c in chunk_set.chunks}
            st.markdown(f"**{r.label}** · {q.question.text} · " + _("rank {rank}", rank=q.rank if q.rank else "—"))
            left, right = st.columns(2)
            top = by_index[q.top_index]
            left.caption(
                _(
                    "Ranked first: chunk {index} (score {score}, {pages})",
                    index=top.index,
                    score=f"{q.top_score:.3f}",
                    pages=pages_place(top.pages),
                )
            )
            left.text(fmt.clip(top.text))
            if q.targets:
                target = by_index[q.targets[0]]
                right.caption(
                    _(
                        "Holds the passage: chunk {index} (score {score}, {pages})",
                        index=target.index,
                        score=f"{q.score:.3f}",
                        pages=pages_place(target.pages),
                    )
                    if q.score is not None
                    else _(
                        "Holds the passage: chunk {index} ({pages})",
                        index=target.index,
                        pages=pages_place(target.pages),
                    )
                )
                right.text(evaluation.excerpt(target.text, q.question.expected))
            else:
                right.caption(_("No chunk holds the expected passage."))


# --- tuning on generated questions (issue #30) -------------------------------------------------------------
# The long work (writing questions, the sweep) runs on rag.tuning.runner's jobs, kept in the session: the page
# starts them, draws what they did so far and polls them in a fragment, so a click elsewhere loses nothing.

QUESTIONS_JOB = "_lab_questions_job"
# The question table's rows before the editor's edits: {sha, rows, known, version, files, last}.
QUESTION_SET = "_lab_question_set"
# The rows as last edited (the editor's output), folded into the set when questions are added to it.
QUESTION_ROWS = "_lab_question_rows"
CHAT_MODEL = "_lab_chat_model"
SWEEP_JOB = "_lab_sweep_job"
SWEEP_RESULT = "_lab_sweep_result"
SWEEP_PLAN = "_lab_sweep_plan"
POLL_SECONDS = 1.0
SIZES = (64, 96, 128, 192, 256, 320, 384, 512, 768, 1024)
OVERLAPS = (0, 16, 32, 64, 96, 128)
WEIGHTS = (0.5, 1.0, 1.5, 2.5, 4.0)


def _editor_key(version: int) -> str:
    """The question editor's key: a new one whenever rows are added from outside the editor, so that the
    browser's edits (kept against the old rows) are not applied to the new ones."""
    return f"lab_tune_questions_{version}"


def _question_set(source: Source) -> dict:
    kept = st.session_state.get(QUESTION_SET)
    if kept is None or kept["sha"] != source.sha:
        kept = {"sha": source.sha, "rows": [], "known": [], "version": 0, "files": set(), "last": None}
        st.session_state[QUESTION_SET] = kept
        st.session_state.pop(QUESTION_ROWS, None)
    return kept


def _add_rows(kept: dict, rows: list[tuple[str, str]], known: Sequence[tuning.GeneratedQuestion]) -> None:
    """`rows` appended to the set as it was last edited; the editor starts again from the result."""
    current = st.session_state.get(QUESTION_ROWS)
    edited = current[1] if current is not None and current[0] == kept["version"] else kept["rows"]
    kept["rows"] = [*edited, *rows]
    kept["known"] = [*kept["known"], *known]
    kept["version"] += 1


def _chat_model() -> ChatModel:
    """The chat model that writes the questions (the chat's default: RAG_CHAT_MODEL, else Ollama's first,
    else the embedded one), looked up once a session."""
    model = st.session_state.get(CHAT_MODEL)
    if model is None:
        model = llms.resolve_chat_model(resources.settings())
        st.session_state[CHAT_MODEL] = model
    return model


def _start_questions(document: str, sha: str, count: int) -> None:
    _stop_job(QUESTIONS_JOB)  # one at a time: a finished job of another document is replaced
    try:
        job = QuestionsJob(document, _chat_model(), count)
    except (RagError, ValueError) as exc:
        st.session_state["_lab_questions_error"] = tr(exc)
        return
    st.session_state.pop("_lab_questions_error", None)
    st.session_state[QUESTIONS_JOB] = (sha, job)


def _stop_job(key: str) -> None:
    found = st.session_state.get(key)
    if found is not None:
        found[1].stop()


def _seconds(seconds: float) -> str:
    if seconds < 90:
        return _("{n} s", n=max(round(seconds), 1))
    return _("{n} min", n=round(seconds / 60))


def _drop_reasons() -> dict[str, str]:
    """rag.tuning.checks' reason codes in words."""
    return {
        "no_reply": _("no question in the reply"),
        "answer_not_found": _("answer not in the document"),
        "answer_too_long": _("answer too long"),
        "answer_ambiguous": _("answer found in several places"),
        "gives_away": _("question gives the answer away"),
        "too_generic": _("too generic"),
        "matches_elsewhere": _("its words match several other passages as well"),
        "duplicate": _("duplicate"),
        "model_failed": _("model error"),
    }


def _dropped_line(dropped: dict[str, int]) -> str:
    names = _drop_reasons()
    parts = [f"{names.get(reason, reason)} {n}" for reason, n in dropped.items() if n]
    return _("Dropped: {reasons}", reasons=_("; ").join(parts)) if parts else _("None dropped.")


def _collect_questions(source: Source, kept: dict) -> None:
    """A finished question job's questions, added to its document's set once (left waiting while another
    document is shown)."""
    found = st.session_state.get(QUESTIONS_JOB)
    if found is None or found[1].running or found[0] != source.sha:
        return
    _sha, job = st.session_state.pop(QUESTIONS_JOB)
    view = job.view()
    kept["last"] = view
    if view.questions:
        _add_rows(kept, [(q.text, q.answer) for q in view.questions], view.questions)


@st.fragment(run_every=POLL_SECONDS)
def _questions_progress(base_rows: list[tuple[str, str]]) -> None:
    """The running question job: progress, Stop, and the table as the questions come (redrawn every second)."""
    found = st.session_state.get(QUESTIONS_JOB)
    if found is None:
        return
    job: QuestionsJob = found[1]
    view = job.view()
    if not view.running:
        st.rerun(scope="app")  # the whole page takes the questions into the editable table
    bar, stop = st.columns([5, 1], vertical_alignment="center")
    bar.progress(
        view.asked / view.planned if view.planned else 0.0,
        text=_(
            "Writing questions with {model}: {asked}/{planned} passages · {kept} kept",
            model=job.model,
            asked=view.asked,
            planned=view.planned,
            kept=len(view.questions),
        ),
    )
    stop.button(
        _("Stop"),
        key="lab_stop_questions",
        icon="⏹️",
        width="stretch",
        on_click=_stop_job,
        args=(QUESTIONS_JOB,),
        disabled=view.stop_requested,
        help=_("Stop after the passage being read; the questions written so far are kept."),
    )
    st.caption(_dropped_line(view.dropped))
    rows = [*base_rows, *((q.text, q.answer) for q in view.questions)]
    live = pd.DataFrame(rows, columns=["question", "answer"])
    st.dataframe(live, hide_index=True, key="lab_tune_live", column_config=_question_columns())


def _question_columns() -> dict[str, object]:
    return {
        "question": st.column_config.TextColumn(_("Question"), width="medium"),
        "answer": st.column_config.TextColumn(
            _("Answer (quoted from the document)"),
            width="large",
            help=_(
                "The passage that answers the question, copied from the document; case and line breaks do not matter."
            ),
        ),
    }


def _tune_questions(source: Source) -> list[Question]:
    """Write, show and edit the question set; the questions as the sweep takes them."""
    kept = _question_set(source)
    _collect_questions(source, kept)
    job = st.session_state.get(QUESTIONS_JOB)
    running = job is not None and job[1].running
    st.markdown(_("**1. Questions**"))
    count_col, button_col = st.columns([1, 2], vertical_alignment="bottom")
    n = count_col.number_input(
        _("Questions to write"),
        min_value=1,
        max_value=MAX_QUESTIONS,
        value=DEFAULT_QUESTIONS,
        key="lab_tune_count",
        persist_state="session",
        disabled=running,
        help=_("One question per passage, spread over the document; some are dropped (see below)."),
    )
    model: ChatModel | None = None
    try:
        model = _chat_model()
    except RagError as exc:
        widgets.show_error(exc, _("Chat model"))
    button_col.button(
        _("Write questions"),
        key="lab_write_questions",
        type="primary",
        disabled=running or model is None,
        on_click=_start_questions,
        args=(source.doc.text, source.sha, int(n)),
        help=_(
            "The chat model reads passages of this document and writes one question each, with its answer "
            "quoted from the passage. A question is kept only if its answer is found in the document."
        ),
    )
    if st.session_state.get("_lab_questions_error"):
        st.error(st.session_state["_lab_questions_error"], icon="⚠️")
    if model is not None and not running:
        seconds = tuning.estimate_seconds(int(n), model, language_of(source.doc.text[:4000]))
        load = machine_load()
        busy = tr(busy_note(load)) if load is not None and load.busy else ""
        estimate = _(
            "{model} will write {n} questions: about {duration} on a quiet CPU (longer on a busy one, or "
            "while the model loads).",
            model=model.name,
            n=int(n),
            duration=_seconds(seconds),
        )
        st.caption("⏱️ " + sentences(estimate, busy))  # no space after "。" in Chinese; an empty one is left out
    last = kept.get("last")
    if last is not None and not running:
        note = _(
            "{kept} of {asked} questions kept ({seconds}).",
            kept=len(last.questions),
            asked=last.asked,
            seconds=_seconds(last.result.seconds) if last.result is not None else "–",
        )
        if last.stopped:
            note = _("Stopped: {note}", note=note)
        st.caption(_("{first} {second}", first=note, second=_dropped_line(last.dropped)))
        if last.error:
            st.error(tr(last.error), icon="⚠️")
    if running:
        _questions_progress(list(kept["rows"]) if job[0] == source.sha else [])
        return []

    upload = st.file_uploader(
        _("Add your own questions (CSV with the header question,expected, or JSONL)"),
        type=["csv", "jsonl"],
        key="lab_tune_file",
        help=_("Their rows are added to the table, to edit further. A JSONL is checked against this document."),
    )
    if upload is not None and upload.file_id not in kept["files"]:
        try:
            rows, known = tuning_runner.read_question_file(upload.name, upload.getvalue(), source.doc.text)
        except RagError as exc:
            widgets.show_error(exc, _("Questions"))
        else:
            kept["files"].add(upload.file_id)
            _add_rows(kept, rows, known)
    edited_before = st.session_state.get(QUESTION_ROWS)
    if (
        _editor_key(kept["version"]) not in st.session_state
        and edited_before is not None
        and edited_before[0] == kept["version"]
        and edited_before[1] != kept["rows"]
    ):
        # Back on the page: Streamlit dropped the editor's edits with the widget when the page was left (a walk
        # lost an edited question on the way to Upload and back). Start a new editor from them.
        kept["rows"] = list(edited_before[1])
        kept["version"] += 1
    frame = pd.DataFrame(
        {
            "question": pd.Series([q for q, _a in kept["rows"]], dtype="string"),
            "answer": pd.Series([a for _q, a in kept["rows"]], dtype="string"),
        }
    )
    edited = st.data_editor(
        frame,
        key=_editor_key(kept["version"]),
        num_rows="dynamic",
        hide_index=True,
        width="stretch",
        column_config=_question_columns(),
    )
    rows = [
        ("" if pd.isna(q) else str(q), "" if pd.isna(a) else str(a))
        for q, a in zip(edited["question"].tolist(), edited["answer"].tolist())
    ]
    st.session_state[QUESTION_ROWS] = (kept["version"], rows)
    questions: list[Question] = []
    try:
        questions = evaluation.questions_from_rows(rows)
    except RagError as exc:
        widgets.show_error(exc, _("Questions"))
    if questions:
        located = tuning_runner.locate_rows(rows, source.doc.text, kept["known"])
        st.download_button(
            _("Download the questions (JSONL)"),
            tuning.dump_questions(located.questions),
            file_name=f"{source.filename.rsplit('.', 1)[0]}-questions.jsonl",
            mime="application/jsonl",
            key="lab_tune_download",
            help=_("One question a line with its answer and where it stands in the document: load it here again."),
        )
        if (
            source.knowledge is not None
            and located.questions
            and st.button(
                _("Save as the question set of {kb}", kb=source.knowledge),
                key="lab_tune_save",
                help=_(
                    "The knowledge base keeps these questions about this document: `python -m rag eval --kb {kb}` "
                    "re-runs them after a change of chunk settings, embedder or search mode.",
                    kb=source.knowledge,
                ),
            )
        ):
            try:
                total = kb_check.save_questions(
                    resources.store(), source.knowledge, source.filename, tuning.to_questions(located.questions)
                )
            except RagError as exc:
                widgets.show_error(exc, _("Questions"))
            else:
                st.success(
                    _(
                        "Saved {n} questions about {file} as the question set of {kb} ({total} in all).",
                        n=len(located.questions),
                        file=source.filename,
                        kb=source.knowledge,
                        total=total,
                    )
                )
        questions = located.with_spans(questions)
        if located.not_found:
            st.caption(
                "⚠️ "
                + _(
                    "Rows {rows}: the answer is not in the document word for word, so these questions count as "
                    "misses and are left out of the download.",
                    rows=", ".join(map(str, located.not_found)),
                )
            )
    return questions


def _mode_names() -> dict[str, str]:
    """The search modes in words (worked out in the run: a widget's format_func may be called outside it)."""
    return {m: _(m.capitalize()) for m in retrieve.MODES}


def _search_name(search: Search) -> str:
    if search.keyword_weight is not None:
        return _("Hybrid ×{weight}", weight=f"{search.keyword_weight:g}")
    return _(search.mode.capitalize())


def _point_name(point: PointResult) -> str:
    return f"{_setting_name(point.settings)} · {_search_name(point.search)}"


def _grid_editor(embedder_grid: Grid) -> Grid | None:
    strategies = {s: _(label) for s, label in chunking.STRATEGY_LABELS.items()}
    st.markdown(_("**2. The grid**"))
    c1, c2, c3 = st.columns(3)
    # Their chips are translated: after a language switch their choice is sent again (the browser holds it by its
    # labels, and a walk saw the English ones kept in Chinese, and the search modes emptied on the way back).
    chosen_strategies = c1.multiselect(
        _("Strategies"),
        chunking.STRATEGIES,
        default=relabel("lab_grid_strategies", list(embedder_grid.strategies)),
        format_func=lambda s: strategies.get(s, s),
        key="lab_grid_strategies",
        placeholder=_("Choose one or more…"),  # Streamlit's own is English: 'Choose options'
        persist_state="session",
    )
    sizes = c2.multiselect(
        _("Chunk sizes (tokens)"),
        sorted(set(SIZES) | set(embedder_grid.sizes)),
        default=list(embedder_grid.sizes),
        key="lab_grid_sizes",
        placeholder=_("Choose, or type a number…"),
        persist_state="session",
        accept_new_options=True,
        help=_("The default holds the sizes the embedder reads whole. Type a number to try another."),
    )
    overlaps = c3.multiselect(
        _("Overlaps (tokens)"),
        sorted(set(OVERLAPS) | set(embedder_grid.overlaps)),
        default=list(embedder_grid.overlaps),
        key="lab_grid_overlaps",
        placeholder=_("Choose, or type a number…"),
        persist_state="session",
        accept_new_options=True,
        help=_("Spring AI's splitters have no overlap: they are tried once a size. Type a number to try another."),
    )
    m1, m2 = st.columns(2)
    modes = m1.multiselect(
        _("Search modes"),
        retrieve.MODES,
        default=relabel("lab_grid_modes", list(embedder_grid.modes)),
        format_func=_mode_names().__getitem__,
        key="lab_grid_modes",
        placeholder=_("Choose one or more…"),
        persist_state="session",
        help=_("Each setting is ranked every way chosen here."),
    )
    weights = list(embedder_grid.keyword_weights)
    if "hybrid" in modes:
        weights = m2.multiselect(
            _("Hybrid: keyword weight"),
            sorted(set(WEIGHTS) | set(embedder_grid.keyword_weights)),
            default=list(embedder_grid.keyword_weights),
            key="lab_grid_weights",
            placeholder=_("Choose, or type a number…"),
            persist_state="session",
            accept_new_options=True,
            help=_("How much the keyword list counts against the vector list's 1 when fused (the chat's: 2.5)."),
        )
    try:
        return Grid(
            strategies=tuple(chosen_strategies),
            sizes=tuple(int(n) for n in typed_numbers(sizes, _("Chunk sizes (tokens)"))),
            overlaps=tuple(int(n) for n in typed_numbers(overlaps, _("Overlaps (tokens)"))),
            modes=tuple(modes),
            keyword_weights=typed_numbers(weights, _("Hybrid: keyword weight"), whole=False),
        )
    except RagError as exc:
        widgets.show_error(exc, _("Grid"))
        return None


def _sweep_plan(source: Source, questions: list[Question], grid: Grid, signature: tuple) -> CheckPlan:
    kept = st.session_state.get(SWEEP_PLAN)
    if kept is not None and kept[0] == signature:
        plan: CheckPlan = kept[1]
        return plan
    plan = tuning_runner.plan_sweep(
        source.doc.text, questions, grid, resources.default_embedder(), _embedding_cache(), store=_store()
    )
    st.session_state[SWEEP_PLAN] = (signature, plan)
    return plan


def _start_sweep(text: str, questions: list[Question], grid: Grid, signature: tuple) -> None:
    st.session_state.pop(SWEEP_PLAN, None)  # the cache fills: the next plan counts again
    job = SweepJob(text, questions, resources.default_embedder(), _embedding_cache(), grid, key=signature)
    st.session_state[SWEEP_JOB] = (signature, job)


# Settings shown while a sweep runs: a sweep of the default grid on a CPU takes minutes to tens of minutes,
# and the user sees which settings lead long before the chart is drawn. (A comment: a bare string in a
# page is drawn on it.)
SO_FAR_SHOWN = 5


@st.fragment(run_every=POLL_SECONDS)
def _sweep_progress() -> None:
    found = st.session_state.get(SWEEP_JOB)
    if found is None:
        return
    job: SweepJob = found[1]
    view = job.view()
    if not view.running:
        st.rerun(scope="app")
    p = view.progress
    bar, stop = st.columns([5, 1], vertical_alignment="center")
    if p is None or (p.to_embed and p.embedded < p.to_embed):
        done, total = (p.embedded, p.to_embed) if p is not None else (0, 0)
        bar.progress(
            done / total if total else 0.0,
            text=_("Embedding chunks and questions: {done}/{total}", done=done, total=total)
            if total
            else _("Cutting the document with each setting…"),  # before the count is known ("0/0")
        )
    else:
        bar.progress(
            p.scored / p.points if p.points else 1.0,
            text=_("Scoring settings: {done}/{total}", done=p.scored, total=p.points),
        )
    stop.button(
        _("Stop"),
        key="lab_stop_sweep",
        icon="⏹️",
        width="stretch",
        on_click=_stop_job,
        args=(SWEEP_JOB,),
        disabled=view.stop_requested,
        help=_("Stop the sweep. What is embedded so far is kept: running it again goes on from there."),
    )
    if p is not None and p.done:
        best = sorted(p.done, key=lambda point: point.mrr, reverse=True)[:SO_FAR_SHOWN]
        st.caption(_("Scored so far: {done} of {total} settings; the best of them:", done=len(p.done), total=p.points))
        table = pd.DataFrame(
            [
                {
                    "Setting": _setting_name(point.settings),
                    "Search": _search_name(point.search),
                    "hit@5": point.hit_at(5),
                    "MRR": point.mrr,
                }
                for point in best
            ]
        )
        st.dataframe(
            table,
            hide_index=True,
            column_config=columns(
                table,
                {
                    "hit@5": st.column_config.NumberColumn(format="percent"),
                    "MRR": st.column_config.NumberColumn(format="%.3f"),
                },
            ),
        )


def _collect_sweep() -> None:
    found = st.session_state.get(SWEEP_JOB)
    if found is None or found[1].running:
        return
    signature, job = st.session_state.pop(SWEEP_JOB)
    view = job.view()
    if view.error:
        st.session_state["_lab_sweep_error"] = view.error
    elif view.result is not None:
        st.session_state.pop("_lab_sweep_error", None)
        st.session_state[SWEEP_RESULT] = (signature, view.result)


def _sweep(source: Source, questions: list[Question]) -> None:
    _collect_sweep()
    embedder = resources.default_embedder()
    grid = _grid_editor(default_grid(embedder))
    if grid is None:
        return
    signature = (source.sha, grid, tuple(questions), embedder.name)
    running = st.session_state.get(SWEEP_JOB) is not None
    st.button(
        _("Run the sweep"),
        key="lab_run_sweep",
        type="primary",
        disabled=running or not questions,
        on_click=_start_sweep,
        args=(source.doc.text, questions, grid, signature),
        help=None if questions else _("Write or add at least one question first."),
    )
    if questions and not running:
        try:
            plan = _sweep_plan(source, questions, grid, signature)
        except RagError as exc:
            widgets.show_error(exc, _("Sweep"))
            return
        searches = len(grid.searches())
        size = (
            _(
                "{points} settings ({chunkings} chunkings × {searches} ways to search) on {n} questions.",
                points=grid.size,
                chunkings=len(grid.chunkings()),
                searches=searches,
                n=len(questions),
            )
            if searches > 1
            else _("{points} settings (one way to search) on {n} questions.", points=grid.size, n=len(questions))
        )
        st.caption("⏱️ " + _("{first} {second}", first=size, second=tr(plan.message)))
    if running:
        _sweep_progress()
        return
    if st.session_state.get("_lab_sweep_error"):
        st.error(tr(st.session_state["_lab_sweep_error"]), icon="⚠️")
    previous = st.session_state.get(SWEEP_RESULT)
    if previous is None or previous[0][0] != source.sha:
        return
    result: SweepResult = previous[1]
    if previous[0] != signature:
        st.info(
            _(
                "The grid or the questions changed since this sweep: run it again to update (vectors already made "
                "are reused)."
            )
        )
    if result.stopped:
        st.info(
            _(
                "The sweep was stopped after {done} of {total} settings. What was embedded is kept: **Run the "
                "sweep** goes on from there.",
                done=len(result.points),
                total=result.grid.size,
            ),
            icon="⏹️",
        )
    if result.points:
        _sweep_results(source, result)


def _sweep_results(source: Source, result: SweepResult) -> None:
    points = result.points
    try:
        found = recommend(result)
    except RagError as exc:
        widgets.show_error(exc, _("Recommendation"))
        return
    (st.success if found.sure else st.info)(("🏆 " if found.sure else "⚖️ ") + _reason(found, points))
    if st.button(
        _("Use {setting} on the Upload page", setting=_setting_name(found.recommended.settings)),
        key="lab_apply_recommended",
        type="primary",
        help=_(
            "The Upload page takes this setting; an uploaded file's questions go with it and are saved as the "
            "knowledge base's question set when the file is ingested (`python -m rag eval --kb NAME` re-runs them)."
        ),
    ):
        _apply_to_upload(found.recommended.settings, result.questions, source)

    rows = [
        {
            "Setting": _setting_name(p.settings),
            "Search": _search_name(p.search),
            "hit@1": p.hit_at(1),
            "hit@3": p.hit_at(3),
            "hit@5": p.hit_at(5),
            "MRR": p.mrr,
            "nDCG@10": p.ndcg,
            "Chunks": p.chunks,
            "Prompt tokens": round(p.prompt_tokens),
        }
        for p in points
    ]
    table = pd.DataFrame(rows)
    st.dataframe(
        table,
        hide_index=True,
        key="lab_sweep_table",
        column_config=columns(
            table,
            {f"hit@{k}": st.column_config.NumberColumn(format="percent") for k in (1, 3, 5)}
            | {m: st.column_config.NumberColumn(format="%.3f") for m in ("MRR", "nDCG@10")}
            | {
                "Prompt tokens": st.column_config.NumberColumn(
                    help=_("Mean tokens of the top {k} chunks a question puts in the prompt.", k=result.top_k)
                )
            },
        ),
    )
    front = pareto_front(points)
    fig = go.Figure()
    fig.add_scatter(
        x=[p.prompt_tokens for p in points],
        y=[p.mrr for p in points],
        mode="markers",
        name=_("Settings"),
        text=[_point_name(p) for p in points],
        hovertemplate="%{text}<br>MRR %{y:.3f} · " + _("%{x:.0f} tokens") + "<extra></extra>",
        marker=dict(color=COLOURS[0], size=9, opacity=0.7),
    )
    fig.add_scatter(
        x=[p.prompt_tokens for p in front],
        y=[p.mrr for p in front],
        mode="lines+markers",
        name=_("Pareto front"),
        text=[_point_name(p) for p in front],
        hovertemplate="%{text}<br>MRR %{y:.3f} · " + _("%{x:.0f} tokens") + "<extra></extra>",
        line=dict(color=COLOURS[1], width=2),
        marker=dict(color=COLOURS[1], size=11),
    )
    fig.add_scatter(
        x=[found.recommended.prompt_tokens],
        y=[found.recommended.mrr],
        mode="markers",
        name=_("Recommended"),
        text=[_point_name(found.recommended)],
        hovertemplate="%{text}<extra></extra>",
        marker=dict(color=COLOURS[2], size=18, symbol="star"),
    )
    fig.update_layout(
        height=380,
        margin=dict(l=10, r=10, t=30, b=10),
        xaxis_title=_("prompt tokens (top {k} chunks)", k=result.top_k),
        yaxis_title="MRR",
        legend=dict(orientation="h", y=-0.2),
    )
    st.plotly_chart(fig, key="lab_sweep_scatter", config=chart_config())

    searches = list(dict.fromkeys(p.search for p in points))
    search = searches[0]
    if len(searches) > 1:
        search_names = {s: _search_name(s) for s in searches}
        search = st.selectbox(
            _("Heatmap of"), searches, format_func=search_names.__getitem__, key="lab_sweep_heat_search"
        )
    maps = tuning_runner.heatmaps(points, search.label)
    for heat, column in zip(maps, st.columns(len(maps))):
        with column:
            fig = go.Figure(
                go.Heatmap(
                    z=[list(row) for row in heat.values],
                    x=[str(o) for o in heat.overlaps],
                    y=[str(s) for s in heat.sizes],
                    colorscale="Blues",
                    zmin=0,
                    zmax=1,
                    text=[[("–" if v is None else f"{v:.2f}") for v in row] for row in heat.values],
                    texttemplate="%{text}",
                    colorbar=dict(title="MRR"),
                )
            )
            fig.update_layout(
                title=dict(text=_(chunking.STRATEGY_LABELS.get(heat.strategy, heat.strategy)), font=dict(size=14)),
                height=300,
                margin=dict(l=10, r=10, t=40, b=10),
                # Categories: plotly read "0"/"32"/"64" as numbers and drew ticks at 0/20/40/60 (a Chromium walk).
                xaxis=dict(title=_("overlap (tokens)"), type="category"),
                yaxis=dict(title=_("chunk size (tokens)"), type="category"),
            )
            st.plotly_chart(fig, key=f"lab_sweep_heat_{heat.strategy}", config=chart_config())
    _point_detail(source, result, found.recommended)


def _reason(found: Recommendation, points: Sequence[PointResult]) -> str:
    """The recommendation's reason, its settings named as the page names them (the search mode in words)."""
    reason = found.reason
    if not isinstance(reason, Text):
        return tr(reason)
    names = {p.label: _point_name(p) for p in points}
    return tr(
        Text(reason.template, **{k: names.get(v, v) if isinstance(v, str) else v for k, v in reason.values.items()})
    )


def _point_detail(source: Source, result: SweepResult, recommended: PointResult) -> None:
    """The per-question view of one point, ranked again from the vectors the sweep left in the cache."""
    points = list(result.points)
    names = [_point_name(p) for p in points]
    index = st.selectbox(
        _("Per question, for"),
        range(len(points)),
        index=points.index(recommended),
        format_func=names.__getitem__,
        key="lab_sweep_point",
    )
    point = points[index]
    tokenized = _tokenized(source.sha, source.doc.text)
    chunk_set = _chunked(source.sha, point.settings, tokenized, source.doc).chunk_set
    label = _point_name(point)
    with st.spinner(_("Ranking…")):
        report = evaluation.evaluate(
            {label: chunk_set},
            source.doc.text,
            list(result.questions),
            resources.default_embedder(),
            _embedding_cache(),
            mode=point.search.mode,
            fusion=point.search.fusion,
        )
    _per_question(report, "lab_sweep_questions", single=True)
    _misses(report, {label: chunk_set})


def _tuning(source: Source) -> None:
    st.subheader(_("Tune on questions from the document"))
    st.caption(
        _(
            "No questions of your own? The chat model writes them from this document, each with its answer quoted "
            "from it. Check and edit them, then try a whole grid of chunk settings on them: the chart shows "
            "quality against the tokens each setting puts in the prompt, and the recommendation says how sure it is."
        )
    )
    questions = _tune_questions(source)
    _sweep(source, questions)


# --- export ----------------------------------------------------------------------------------


def _export(source: Source, settings: dict[str, ChunkSettings]) -> None:
    st.subheader(_("Export"))
    labels = list(settings)
    if st.session_state.get("lab_export") not in labels:
        st.session_state["lab_export"] = labels[0]
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    label = c1.selectbox(_("Setting to export"), labels, key="lab_export")
    chosen = settings[label]
    if c2.button(_("Use on the Upload page"), key="lab_apply_export"):
        _apply_to_upload(chosen)
    python_col, java_col = st.columns(2)
    python_col.caption(_("Python, with this project's `rag` package"))
    python_col.code(snippets.python_snippet(chosen, filename=source.filename), language="python", wrap_lines=True)
    java_col.caption(_("Java, with Spring AI's `TokenTextSplitter`"))
    java_col.code(snippets.spring_snippet(chosen), language="java", wrap_lines=True)


# --- page ------------------------------------------------------------------------------------


def main() -> None:
    st.title(_("🧩 Chunk Lab"))
    st.caption(
        _(
            "Tune chunking on a real document, see where the chunks fall, and measure which setting "
            "retrieves the right passage."
        )
    )
    try:
        source = _pick_document()
    except RagError as exc:
        widgets.show_error(exc, _("Document"))
        st.info(_("Pick another document, upload the file again on the Upload page, or use the built-in sample."))
        return
    except Exception as exc:  # noqa: BLE001 - shown, never a traceback
        widgets.show_error(exc, _("Document"))
        return
    doc = source.doc
    shape = (
        _(
            "{kind} · {pages} with text of {total} · {chars} characters",
            kind=doc.kind.upper(),
            pages=count(len(doc.pages), "page"),
            total=doc.page_count,
            chars=f"{len(doc.text):,}",
        )
        if doc.unit == "page"
        else _(  # a Word file's parts are its headings' sections, not pages
            "{kind} · {parts} · {chars} characters",
            kind=doc.kind.upper(),
            parts=count(doc.page_count, doc.unit),
            chars=f"{len(doc.text):,}",
        )
    )
    st.caption(shape + (f" · ⚠️ {'; '.join(tr(w) for w in doc.warnings)}" if doc.warnings else ""))

    settings = _pick_settings()
    if not settings:
        st.info(_("Fix the chunk settings above to see the chunks."))
        return
    try:
        tokenized = _tokenized(source.sha, doc.text)
        chunked = {label: _chunked(source.sha, s, tokenized, doc) for label, s in settings.items()}
        chunk_sets = {label: c.chunk_set for label, c in chunked.items()}
    except RagError as exc:
        widgets.show_error(exc, _("Chunking"))
        return
    except Exception as exc:  # noqa: BLE001
        widgets.show_error(exc, _("Chunking"))
        return
    st.caption(_("{n} cl100k tokens, tokenised once; each setting re-splits the same tokens.", n=f"{len(tokenized):,}"))
    _stats_table(chunked)

    try:
        _views(source, chunk_sets)
    except Exception as exc:  # noqa: BLE001 - RagError or not, one line to the user
        widgets.show_error(exc, _("Views"))

    st.divider()
    try:
        _retrieval_check(source, chunk_sets, settings)
    except Exception as exc:  # noqa: BLE001
        widgets.show_error(exc, _("Retrieval check"))

    st.divider()
    try:
        _tuning(source)
    except Exception as exc:  # noqa: BLE001
        widgets.show_error(exc, _("Tuning"))

    st.divider()
    try:
        _export(source, settings)
    except Exception as exc:  # noqa: BLE001
        widgets.show_error(exc, _("Export"))


main()
