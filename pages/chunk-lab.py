"""Chunk Lab: compare up to three chunk settings on one document and measure retrieval.

UI only: the chunking, pictures, evaluation and snippets come from rag/.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from streamlit.errors import StreamlitAPIException

from rag import chunking, evaluation, retrieve, snippets
from rag.chunking import Chunk, ChunkSet, ChunkSettings, TokenizedText
from rag.documents import Document, load_bytes, page_label, render, sha256_hex, tables_in
from rag.errors import RagError
from rag.evaluation import EmbeddingCache, EvaluationReport, Question, reading
from ui import format as fmt
from ui import resources, widgets
from ui.i18n import _, columns, count, tr

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
    options: dict[str, str] = {f"upload:{name}": f"📄 {name} · just uploaded" for name in uploads}
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
        document_id, _kb, filename, sha = stored[chosen]
        data = _stored_bytes(document_id, sha)
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
                chosen[f"{LETTERS[i]}: {evaluation.describe(settings)}"] = settings
    return chosen


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
                    format="percent", help=_("Share of chunks whose text stops inside a sentence.")
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
        with st.expander(_("{tables} on this {unit}, as tables", tables=count(len(tables), "table"), unit=_(doc.unit))):
            for table in tables:
                st.markdown(table)


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
                annotation_text=f"target {target}",
                annotation_position="top left",
            )
            fig.update_layout(
                title=dict(text=label, font=dict(size=14)),
                height=320,
                margin=dict(l=10, r=10, t=40, b=10),
                bargap=0.05,
                xaxis_title="tokens per chunk",
                yaxis_title="chunks",
                showlegend=False,
                xaxis_range=[0, max([target, *sizes]) * 1.12],
            )
            st.plotly_chart(fig, key=f"lab_hist_{i}")


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


def _run_check(
    source: Source, chunk_sets: dict[str, ChunkSet], questions: list[Question], signature: tuple, mode: str
) -> None:
    embedder = resources.default_embedder()
    bar_slot, stop_slot = st.columns([5, 1], vertical_alignment="center")
    bar = bar_slot.progress(0.0, text=_("Embedding with {embedder}…", embedder=embedder.name))
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
    st.session_state.pop(RUNNING_KEY, None)
    stop_slot.empty()
    st.session_state[REPORT_KEY] = (signature, report)


def _apply_to_upload(settings: ChunkSettings) -> None:
    st.session_state["apply_upload_settings"] = settings.as_dict()
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
    mode = st.radio(
        _("Rank with"),
        retrieve.MODES,
        index=retrieve.MODES.index(retrieve.DEFAULT_MODE),
        key="lab_mode",
        horizontal=True,
        format_func=str.capitalize,
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
            "question": st.column_config.TextColumn("Question", width="medium"),
            "expected": st.column_config.TextColumn(
                "Expected passage",
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
    elif questions and chunk_sets and (run or (auto and (previous is None or stale))):
        st.session_state.pop(STOPPED_KEY, None)
        try:
            _run_check(source, chunk_sets, questions, signature, mode)
        except RagError as exc:
            widgets.show_error(exc, _("Retrieval check"))
            return
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
    best = evaluation.best_label(report)
    first_k = report.ks[0]
    winner = report.result(best) if best is not None else None
    if winner is None or winner.mrr == 0:
        st.warning(
            _(
                "No setting ranked any expected passage: check that each passage is copied from this "
                "document (the notes below say which were not found)."
            )
        )
    else:
        c1, c2 = st.columns([3, 1], vertical_alignment="center")
        c1.success(
            _(
                "Best: **{best}** with MRR {mrr} and hit@{k} {hit} ({chunks}). Ties go to the higher hit@{k}, "
                "then to fewer chunks.",
                best=best,
                mrr=f"{winner.mrr:.2f}",
                k=first_k,
                hit=f"{winner.hit_at(first_k):.0%}",
                chunks=count(winner.n_chunks, "chunk"),
            )
        )
        if c2.button(_("Use {letter} on the Upload page", letter=_letter(best)), key="lab_apply_best", type="primary"):
            _apply_to_upload(winner.settings)
    st.caption(
        _(
            "Embedder {embedder}: {embedded} texts embedded, {reused} reused from the cache.",
            embedder=report.embedder,
            embedded=report.embedded,
            reused=report.reused,
        )
    )

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
        yaxis=dict(range=[0, 1.12], title="share / score"),
        margin=dict(l=10, r=10, t=20, b=10),
        legend=dict(orientation="h", y=-0.15),
    )
    st.plotly_chart(fig, key="lab_check_chart")

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

    rows = []
    for qi, question in enumerate(report.questions):
        row: dict[str, object] = {"Question": question.text}
        for r in report.results:
            q = r.questions[qi]
            row[f"{_letter(r.label)} rank"] = q.rank
            row[f"{_letter(r.label)} score"] = q.score
        row["Notes"] = "; ".join(tr(n) for n in reading.question_notes(report, qi, name=_letter))
        rows.append(row)
    per_question = pd.DataFrame(rows)
    for r in report.results:
        per_question[f"{_letter(r.label)} rank"] = per_question[f"{_letter(r.label)} rank"].astype("Int64")
    st.markdown(
        _(
            "**Per question**: rank and score (cosine, BM25 or fused, by the mode ranked with) "
            "of the best chunk holding the expected passage."
        )
    )
    st.dataframe(
        per_question,
        hide_index=True,
        key="lab_check_questions",
        column_config=columns(
            per_question,
            {c: st.column_config.NumberColumn(format="%.3f") for c in per_question.columns if c.endswith(" score")},
        ),
    )
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
                    "Ranked first: chunk {index} (score {score}, pages {pages})",
                    index=top.index,
                    score=f"{q.top_score:.3f}",
                    pages=", ".join(map(str, top.pages)) or "–",
                )
            )
            left.text(fmt.clip(top.text))
            if q.targets:
                target = by_index[q.targets[0]]
                right.caption(
                    _("Holds the passage: chunk {index} (score {score})", index=target.index, score=f"{q.score:.3f}")
                    if q.score is not None
                    else _("Holds the passage: chunk {index}", index=target.index)
                )
                right.text(evaluation.excerpt(target.text, q.question.expected))
            else:
                right.caption(_("No chunk holds the expected passage."))


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
    st.caption(
        _(
            "{kind} · {with_text} page(s) with text of {total} · {chars} characters",
            kind=doc.kind.upper(),
            with_text=len(doc.pages),
            total=doc.page_count,
            chars=f"{len(doc.text):,}",
        )
        + (f" · ⚠️ {'; '.join(tr(w) for w in doc.warnings)}" if doc.warnings else "")
    )

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
        _export(source, settings)
    except Exception as exc:  # noqa: BLE001
        widgets.show_error(exc, _("Export"))


main()
