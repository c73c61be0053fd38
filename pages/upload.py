"""Upload & preview: parse and chunk files, look at every page and chunk, ingest, manage the library.

UI only: widgets are read here, the work (and every rule about what an ingest would do or what to
warn about) is done by `rag.ingest`, `rag.chunking`, `rag.documents.render`, `rag.store` and
`rag.export`, and what they return is rendered.

Session state shared with other pages:
- `uploads`: {filename: bytes} of the files uploaded here (the Chunk Lab reads it).
- `apply_upload_settings`: a `ChunkSettings.as_dict()` the Chunk Lab leaves for this page; it is
  applied to the chunk settings widget at the top of the next run and removed.
- `apply_upload_questions`: the Chunk Lab's question set about an uploaded file, handed over with the
  settings; saved as the knowledge base's question set when that file is ingested.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime

import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from rag import chunking, documents, embeddings, export, ingest, portable
from rag.chunking import Chunk, ChunkSettings
from rag.documents import ocr, page_label, render
from rag.embeddings import Embedder
from rag.errors import RagError
from rag.ingest import IngestResult, Prepared
from rag.ingest.preview import SAMPLE_CHARS, InputWindow, chunks_to_embed, input_window
from rag.ingest.resume import left_to_embed
from rag.portable.jobs import ExportJob, ImportJob, PortableView
from rag.store import KnowledgeBase, Store, StoredDocument
from rag.tuning import kb_check
from ui import format as fmt
from ui import i18n, resources, widgets
from ui.i18n import _, count, place, tr

log = logging.getLogger("pages.upload")

WIDGET = "upload"  # prefix of the chunk settings widget keys (widgets.chunk_settings_widget)
NEW_KB = "New knowledge base…"
# Longer documents get the coloured whole-text view only on request (it is a lot of HTML).
WHOLE_TEXT_AUTO_CHARS = 60_000
STATUS_ICONS = {"stored": "✅", "replaced": "🔁", "unchanged": "☑️", "failed": "❌", "stopped": "⏹️"}
# What an ingest has done so far, set while it runs: still set at the start of a script run, the
# ingest before was stopped (by the Stop button or any other click, which end the run).
RUNNING_KEY = "_upload_running"
# Set by the Ingest button's callback: the next script run ingests (`_ingest_bar`).
INGEST_REQUESTED = "_upload_ingest_requested"
# The knowledge base (and its chunks) whose vector index the last ingest left being built in the background.
INDEXING_KEY = "_upload_indexing"
# How long the run after a Stop waits for the stopped one to end: Streamlit starts it at once (fast reruns)
# while the stopped run finishes the batch it was embedding (seconds to tens of seconds with e5) and keeps it,
# or the write it was waiting for; counted before, the stop said '39 kept' and the resume reused 44.
STOP_WAIT_SECONDS = 120.0
LEGEND = (
    "Alternating colours are chunks, **red** is text shared by two chunks (overlap), "
    "grey is text in no chunk; the dark badge marks where a chunk starts; hover for its number."
)


# -- cached work (so a rerun never parses or renders the same thing twice) -------------------


# Files whose parse (and chunking) a rerun reuses. It was 16: with 37-57 files uploaded, each rerun (the Ingest
# click among them) found none of them left (an LRU read in the same order each time) and parsed them all again,
# so a walk's Stop button and progress came 4-11 s after the click. (A comment: a string here would be drawn.)
CACHED_FILES = 256


@st.cache_resource(max_entries=CACHED_FILES, show_spinner=False)  # the caller says it, in the user's language
def _load(_data: bytes, sha256: str, filename: str) -> tuple[ingest.Loaded | None, str]:
    """The parsed and tokenised file, once per (sha256, filename) whatever the settings; or a
    reason. The filename matters because it decides the type. Shared read-only."""
    bar = st.empty()

    def progress(done: int, total: int, what: str) -> None:
        # Only OCR is slow enough to show (seconds a page); a text page takes a millisecond.
        if what.startswith("OCR"):
            bar.progress(
                done / max(total, 1),
                text=f"{filename}: " + _("OCR, {done} of {total} pages read", done=done, total=total),
            )

    try:
        return ingest.load(_data, filename, progress), ""
    except RagError as exc:
        advice = ingest.unreadable_advice(filename)
        return None, advice or ingest.failure_reason(exc)  # a Text: translated where it is shown (this is cached)
    finally:
        bar.empty()


@st.cache_resource(max_entries=CACHED_FILES, show_spinner=False)
def _prepare(_data: bytes, sha256: str, filename: str, settings: ChunkSettings) -> tuple[Prepared | None, str]:
    """Chunked file (without its bytes, which the session already holds) or a reason; immutable,
    so one copy serves every rerun (st.cache_data stored it pickled and unpickled it on each: for a
    45 MB text, 91 MB of text and chunks, 140 ms a rerun).

    Moving a setting re-chunks the tokens `_load` keeps: no parsing, no tokenising.
    """
    loaded, reason = _load(_data, sha256, filename)
    if loaded is None:
        return None, reason
    prepared = ingest.prepare(b"", filename, settings, loaded)
    return prepared, ""


@st.cache_data(max_entries=64, show_spinner=False)
def _page_png(
    _data: bytes,
    _doc: documents.Document,
    _chunks: tuple[Chunk, ...],
    sha256: str,
    settings: ChunkSettings,
    page: int,
    boxes: bool,
) -> bytes:
    return render.render_page(_data, _doc, page, _chunks if boxes else ()).png


def _sha(name: str, data: bytes) -> str:
    memo: dict[str, tuple[int, str]] = st.session_state.setdefault("_upload_sha", {})
    known = memo.get(name)
    if known is None or known[0] != id(data):
        known = (id(data), documents.sha256_hex(data))
        memo[name] = known
    return known[1]


# -- uploads kept in the session --------------------------------------------------------------


def _uploads() -> dict[str, bytes]:
    return st.session_state.setdefault("uploads", {})


def _sync_uploads() -> None:
    """The uploader changed: add new files to `uploads`, drop the ones the user removed.

    Files uploaded before the user switched pages stay in `uploads` (the uploader widget itself
    starts empty when the page is shown again) until forgotten explicitly.
    """
    files = st.session_state.get("upload_files") or []
    current = {f.file_id: f.name for f in files}
    previous: dict[str, str] = st.session_state.get("_upload_ids", {})
    uploads = _uploads()
    for file_id, name in previous.items():
        if file_id not in current and name not in current.values():
            uploads.pop(name, None)
    first = not uploads  # nothing uploaded before: what was chosen meanwhile was chosen for these files
    for f in files:
        if f.file_id not in previous:
            uploads[f.name] = f.getvalue()
            _choose_again(keep_typed=first)
    st.session_state["_upload_ids"] = current


def _choose_again(keep_typed: bool = False) -> None:
    """A new file came: the knowledge base chosen for the files before it is not its own (a file was
    once preselected into 'office' while stored in 'hlm', another set to go where a stopped ingest
    went), so nothing is chosen until the user chooses, and a new base's name is asked again.
    `keep_typed`: no file came before, so a new base's name the user typed is for these files and stays
    (a walk typed one, uploaded, and saw it erased)."""
    state = st.session_state
    typed = str(state.get("upload_kb_new") or "")
    if keep_typed and state.get("upload_kb_choice") == NEW_KB and typed.strip():
        for key in ("upload_kb_last", "_upload_kb_pending", "_upload_kb_restored"):
            state.pop(key, None)
        return
    for key in ("upload_kb_choice", "upload_kb_last", "_upload_kb_pending", "_upload_kb_restored"):
        state.pop(key, None)
    state["upload_kb_new"] = ""


# {"document": file name, "questions": [rag.evaluation.Question with spans]}: the Chunk Lab's questions, saved
# with the knowledge base the file is next ingested into. (A comment: a bare string in a page is drawn.)
LAB_QUESTIONS = "_upload_lab_questions"


def _forget(names: list[str]) -> None:
    uploads = _uploads()
    for name in names:
        uploads.pop(name, None)


def _apply_chunk_lab_settings() -> None:
    """The Chunk Lab's hand-over: settings to apply before the widget is drawn."""
    questions = st.session_state.pop("apply_upload_questions", None)
    if questions is not None:
        st.session_state[LAB_QUESTIONS] = questions  # kept until the file is ingested
    pending = st.session_state.pop("apply_upload_settings", None)
    if pending is None:
        return
    try:
        settings = chunking.settings_from_dict(dict(pending))
    except (RagError, TypeError, ValueError) as exc:
        st.error(_("The settings sent from the Chunk Lab were not applied: {error}", error=tr(exc)), icon="⚠️")
        return
    widgets.set_chunk_settings(WIDGET, settings)
    st.toast(_("Chunk settings from the Chunk Lab applied"), icon="🧩")
    st.info(
        _(
            "Chunk settings from the Chunk Lab applied: {settings}. The preview below uses them; press **Ingest** "
            "to store with them.",
            settings=tr(chunking.summary(settings)),
        ),
        icon="🧩",
    )


# -- knowledge base choice --------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    name: str | None
    kb: KnowledgeBase | None
    embedder: Embedder | None
    problem: str = ""  # why ingesting into it cannot work now (empty when it can)


def _kb_label(by_name: dict[str, KnowledgeBase]) -> Callable[[str], str]:
    new = f"➕ {_(NEW_KB)}"  # made now, in this run's language (AppTest calls format_func outside the run)

    def label(option: str) -> str:
        kb = by_name.get(option)
        if kb is None:
            return new
        # No counts here: an option's label that changes under the kept key stayed stale in the
        # browser (seen in the Library's picker after a delete); the caption below has them.
        return option

    return label


def _knowledge_base_picker(store: Store | None) -> Target:
    if store is None:
        st.info(_("Knowledge bases need the database: see the error at the top of the page."))
        return Target(None, None, None, _("the database is not available"))
    try:
        kbs = store.list_knowledge_bases()
    except RagError as exc:
        widgets.show_error(exc, _("Knowledge bases"))
        return Target(None, None, None, _("the database is not available"))
    by_name = {kb.name: kb for kb in kbs}
    options = [*by_name, NEW_KB]
    state = st.session_state
    pending = state.pop("_upload_kb_pending", None)
    if pending in by_name and state.get("upload_kb_choice") == NEW_KB:
        # Just created by an ingest: from now on it is an existing knowledge base.
        state["upload_kb_choice"] = pending
        state["upload_kb_new"] = ""
    if "upload_kb_choice" not in state:
        # A new session (or back from another page): never the alphabetically first base, which
        # once took a German maths PDF into a Chinese novel; the one this session used last, or
        # a new one when there is none yet.
        last = state.get("upload_kb_last")
        state["upload_kb_choice"] = last if last in by_name else None if by_name else NEW_KB
        state["_upload_kb_restored"] = last in by_name
    elif state["upload_kb_choice"] not in (*options, None):
        state["upload_kb_choice"] = None  # deleted meanwhile: nothing chosen (told to the browser too)
    i18n.relabel("upload_kb_choice")  # the new base's option is labelled in the user's language
    choice = st.selectbox(
        _("Knowledge base"),
        options,
        index=None,
        key="upload_kb_choice",
        format_func=_kb_label(by_name),
        placeholder=_("Choose a knowledge base…"),
        on_change=lambda: state.update(_upload_kb_restored=False),
        help=_(
            "The `knowledge` tag of every chunk (Spring AI's `metadata->>'knowledge'`). "
            "Searches and chats pick knowledge bases by this name."
        ),
    )
    if choice is None:
        st.caption(
            _(
                "Choose the knowledge base the files go into: none is preselected, so that no file "
                "lands in the wrong one."
            )
        )
        return Target(None, None, None, _("choose a knowledge base"))
    if choice in by_name:
        state["upload_kb_last"] = choice
        if state.get("_upload_kb_restored"):
            st.info(
                _(
                    "**{kb}** is preselected: the knowledge base this session used last. Check that the files belong "
                    "there.",
                    kb=fmt.md(choice),
                ),
                icon="📌",
            )
    if choice == NEW_KB:
        raw = st.text_input(
            _("Name of the new knowledge base"),
            key="upload_kb_new",
            placeholder=_("e.g. finance"),
            help=_("Up to 200 characters. If a knowledge base with this name exists, the files are added to it."),
        )
        if not raw.strip():
            st.caption(_("Give the new knowledge base a name to ingest into it."))
            return Target(None, None, None, _("name the new knowledge base"))
        try:
            name = ingest.validate_kb_name(raw)
        except RagError as exc:
            widgets.show_error(exc, _("Knowledge base name"))
            return Target(None, None, None, _("fix the knowledge base name"))
        kb = by_name.get(name)
        if kb is not None:
            st.info(
                _(
                    "'{kb}' already exists ({documents}): the files will be added to it.",
                    kb=name,
                    documents=count(kb.documents, "document"),
                ),
                icon="ℹ️",
            )
    else:
        name, kb = choice, by_name[choice]

    try:
        embedder = ingest.embedder_for_kb(store, resources.settings(), name)
    except RagError as exc:
        widgets.show_error(exc, _("Embedder"))
        return Target(name, kb, None, _("the embedder is not available"))

    if kb is not None:
        st.markdown(
            _("**Embedder:** `{embedder}` · {dimension} dimensions", embedder=kb.embedder, dimension=kb.dimension)
        )
        st.caption(
            _(
                "Created {date} · {documents} · {chunks}",
                date=f"{kb.created_at:%Y-%m-%d %H:%M}",
                documents=count(kb.documents, "document"),
                chunks=count(kb.chunks, "chunk"),
            )
        )
    else:
        st.markdown(_("**Embedder:** `{embedder}`", embedder=embedder.name))
        st.caption(_("A new knowledge base keeps the embedder it is created with."))
    needs_ollama = ingest.ollama_model(embedder.name) is not None
    blocker = ingest.embedder_blocker(kb, embedder.name, resources.ollama_status() if needs_ollama else None)
    if blocker is not None:
        if blocker.refused:
            st.error(tr(blocker.message), icon="🚫")
        else:
            st.warning(tr(blocker.message), icon="🟠")
    return Target(name, kb, embedder, blocker.short if blocker else "")


def _stored_copies(store: Store | None, uploads: dict[str, bytes], target: str | None) -> None:
    """Say which knowledge base already holds an upload's content, so that it is not added to another by
    mistake (the lookup is the library's: rag.ingest.stored_copies). Not the files the chosen one holds under
    their own names: the preview says they are unchanged (a walk read the note, right after the ingest that
    stored them, as a warning of duplicates)."""
    if store is None or not uploads:
        return
    try:
        copies = ingest.stored_copies(store, {name: _sha(name, data) for name, data in uploads.items()})
    except RagError as exc:
        widgets.show_error(exc, _("Documents"))
        return
    copies = [c for c in copies if (c.stored.knowledge, c.stored.original_filename) != (target, c.filename)]
    lines = "  \n".join(fmt.md(tr(c.note)) for c in copies)
    if len(copies) > ingest.LISTED_COPIES:
        places = ingest.copies_by_base(copies)
        st.info(
            _(
                "{n} of the files are already stored: {where}.",
                n=len({c.filename for c in copies}),
                where=_("; ").join(_("{n} in '{kb}'", n=n, kb=fmt.md(kb)) for kb, n in places),
            ),
            icon="📍",
        )
        with st.expander(_("Which files, where")):
            st.markdown(lines)
    elif copies:
        st.info(lines, icon="📍")


def _kb_settings_hint(target: Target, settings: ChunkSettings | None) -> None:
    kb = target.kb
    if kb is None or settings is None or settings.cuts_as(kb.chunk_settings):
        return
    if settings.older_splitter(kb.chunk_settings):
        st.caption(
            _(
                "'{kb}' was last ingested with these settings but an older version of the splitter: its "
                "documents are cut again when they are ingested.",
                kb=kb.name,
            )
        )
        return
    st.caption(
        _("'{kb}' was last ingested with {settings}.", kb=kb.name, settings=tr(chunking.summary(kb.chunk_settings)))
    )
    try:
        theirs = chunking.settings_from_dict(kb.chunk_settings)
    except (RagError, TypeError, ValueError):
        return
    st.button(
        _("Use the knowledge base's settings"),
        key="upload_use_kb_settings",
        on_click=widgets.set_chunk_settings,
        args=(WIDGET, theirs),
        help=_("Documents of one knowledge base chunked alike compare fairly in search."),
    )


# -- preview -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FilePreview:
    name: str
    data: bytes
    sha256: str
    prepared: Prepared | None
    error: str


def _previews(uploads: dict[str, bytes], settings: ChunkSettings) -> list[FilePreview]:
    out: list[FilePreview] = []
    for name, data in uploads.items():
        sha = _sha(name, data)
        try:
            with st.spinner(_("Reading and chunking {file}…", file=name)):  # shown only if it takes a while
                prepared, error = _prepare(data, sha, name, settings)
        except Exception as exc:
            log.exception("preparing %r failed", name)
            prepared, error = (
                None,
                _("unexpected error while reading it ({error})", error=f"{type(exc).__name__}: {exc}"),
            )
        out.append(FilePreview(name, data, sha, prepared, error))
    return out


def _issues(p: FilePreview, window: InputWindow | None) -> list[str]:
    return ingest.warnings(p.prepared, window) if p.prepared is not None else []


def _parts_label(unit: str) -> str:
    """The Pages metric's name for a file read in other parts (`Document.unit`)."""
    return {"slide": _("Slides"), "sheet": _("Sheets"), "section": _("Sections")}.get(unit, _("Tables"))


def _parts_column(filenames: list[str]) -> str:
    """The key of a table's count of each file's parts: "pages" where every file is read in pages, else "parts"
    (a Word file's 12 headings' sections were headed "pages" beside a PDF's pages)."""
    return "pages" if all(documents.unit_of(f) == "page" for f in filenames) else "parts"


def _parts_config(column: str) -> dict[str, object]:
    if column != "parts":
        return {}
    return {
        "parts": st.column_config.NumberColumn(
            "parts",
            help=_(
                "Pages of a PDF or text file; sections of a Word file or web page (one per heading); slides; "
                "sheets; a CSV's table."
            ),
        )
    }


def _chunk_table(chunks: tuple[Chunk, ...], doc: documents.Document) -> pd.DataFrame:
    # PDF pages by number; slides, sheets, sections and text lines by where they are ('slide 3',
    # 'sheet Sales', '第二回 … · lines 120–164'): what the chunk's citation will say.
    by_page = doc.unit == "page" and not doc.by_lines
    where = "pages" if by_page else "where"
    return pd.DataFrame(
        [
            {
                "#": c.index,
                "tokens": c.tokens,
                "characters": len(c.text),
                where: page_label(c.pages)
                if by_page
                else place(doc.chunk_location(c.pages, c.start, c.end), doc.filename),
                "first words": fmt.first_words(c.text),
            }
            for c in chunks
        ],
        columns=["#", "tokens", "characters", where, "first words"],
    )


def _read_by(doc: documents.Document) -> str:
    """Which reader read the file, and the OCR'd pages with their lowest confidence."""
    scanned = doc.ocr_pages
    if not scanned:
        return tr(doc.reader)
    return tr(doc.reader) + _(" (confidence ≥ {confidence}%)", confidence=f"{min(p.ocr or 0 for p in scanned):.0f}")


def _overview(
    previews: list[FilePreview],
    existing: dict[str, StoredDocument],
    settings: ChunkSettings,
    window: InputWindow | None,
    kb_name: str | None,
) -> None:
    rows = []
    parts = _parts_column([p.name for p in previews])
    for p in previews:
        doc = p.prepared.document if p.prepared else None
        issues = _issues(p, window)
        rows.append(
            {
                "file": p.name,
                "type": doc.kind.upper() if doc else p.name.rsplit(".", 1)[-1].upper(),
                "read by": _read_by(doc) if doc else "",
                "size": i18n.size(len(p.data)),
                parts: doc.page_count if doc else None,
                "chunks": len(p.prepared.chunk_set.chunks) if p.prepared else None,
                "check": ("❌ " + tr(p.error))
                if p.error
                else (f"⚠️ {count(len(issues), 'warning')}" if issues else "✅ " + _("ok")),
                "on ingest": _destiny_label(ingest.destiny(p.prepared, p.sha256, existing.get(p.name), settings))
                if kb_name
                else "",
            }
        )
    widgets.table(
        "upload_overview",
        pd.DataFrame(rows),
        hide_index=True,
        width="stretch",
        column_config={
            # "MuPDF (1 table as rows)" was cut at the default width in the walk.
            "read by": st.column_config.TextColumn("read by", width="medium"),
            "on ingest": st.column_config.TextColumn(
                "on ingest",
                help=_(
                    "new: added · replaces: same filename with other content or "
                    "settings · already stored: stored exactly so before (skipped)"
                ),
            ),
        }
        | _parts_config(parts),
    )


def _destiny_label(destiny: str) -> str:
    """What an ingest would do with a file (rag.ingest.destiny), in the user's language."""
    # Not "unchanged": right after an ingest it said that of the files just stored (a walk found it odd).
    labels = {"new": _("new"), "replaces": _("replaces"), "unchanged": _("already stored"), "fails": _("fails")}
    return labels[destiny]


def _file_preview(p: FilePreview, settings: ChunkSettings, window: InputWindow | None) -> None:
    if p.prepared is None:
        st.error(_("**{file}** cannot be read: {reason}", file=fmt.md(p.name), reason=tr(p.error)), icon="🚫")
        return
    doc, chunk_set = p.prepared.document, p.prepared.chunk_set
    chunks = chunk_set.chunks
    stats = chunking.stats(chunk_set)
    st.caption(
        _(
            "{kind} · read by {reader} · {size} · sha256 {sha}…",
            kind=doc.kind.upper(),
            reader=_read_by(doc),
            size=i18n.size(len(p.data)),
            sha=p.sha256[:12],
        )
    )
    m = st.columns(5)
    if doc.unit == "page":
        m[0].metric(
            _("Pages"),
            f"{len(doc.pages)}/{doc.page_count}" if doc.dropped_pages else doc.page_count,
            help=_("Pages with text / pages in the file") if doc.dropped_pages else _("Pages in the file"),
        )
    else:  # a Word file's parts are its headings' sections, not its pages ("Pages 12" for 12 headings)
        m[0].metric(_parts_label(doc.unit), doc.page_count, help=_("What a chunk's citation names"))
    m[1].metric(_("Chunks"), stats.count, help=f"{tr(chunking.summary(settings))}")
    m[2].metric(
        _("Tokens per chunk"),
        f"{stats.mean_tokens:.0f}" if stats.count else "–",
        help=_(
            "mean; smallest {smallest}, largest {largest} (cl100k tokens)",
            smallest=stats.min_tokens,
            largest=stats.max_tokens,
        ),
    )
    m[3].metric(
        _("Ends mid-sentence"),
        f"{stats.mid_sentence_share:.0%}" if stats.count else "–",
        help=_(
            "Share of the cuts between chunks that fall inside a sentence: such a chunk may lack the end "
            "of the thought it starts (the last chunk ends where the document does)."
        ),
    )
    m[4].metric(_("Dropped pieces"), stats.dropped, help=_(chunking.HELP["min_chunk_length_to_embed"]))
    for issue in _issues(p, window):
        st.warning(tr(issue), icon="⚠️")

    chunks_tab, pages_tab, text_tab = st.tabs([_("🧩 Chunks"), _("📄 Pages"), _("🎨 Whole text")])
    with chunks_tab:
        widgets.table(
            f"upload_chunks_{p.name}",
            _chunk_table(chunks, doc),
            hide_index=True,
            width="stretch",
            column_config={
                "#": st.column_config.NumberColumn("#", help=_("Chunk index, as stored in metadata.chunk_index")),
                "tokens": st.column_config.ProgressColumn(
                    "tokens",
                    min_value=0,
                    max_value=max(settings.chunk_size, stats.max_tokens, 1),
                    format="%d",
                    help=_("cl100k tokens; the bar is relative to the chunk size ({size})", size=settings.chunk_size),
                ),
                "pages": st.column_config.TextColumn("pages", help=_("Pages the chunk's text comes from")),
                "where": st.column_config.TextColumn(
                    "where",
                    help=_("The nearest heading above the chunk's start and the file's lines it covers")
                    if doc.by_lines
                    else _("The slides, sheets or sections (heading path) the chunk's text comes from"),
                ),
                "first words": st.column_config.TextColumn("first words", width="large"),
            },
        )
    with pages_tab:
        _page_view(p, doc, chunks, settings)
    with text_tab:
        show = True
        if len(doc.text) > WHOLE_TEXT_AUTO_CHARS:
            show = st.toggle(
                _("Colour the whole text ({n} characters; may be slow)", n=f"{len(doc.text):,}"),
                key=f"upload_whole_{p.name}",
                value=False,
            )
        if show:
            st.caption(_(LEGEND))
            with st.container(height=560, border=True):
                st.html(render.chunks_html(doc.text, chunks))


def _page_view(p: FilePreview, doc: documents.Document, chunks: tuple[Chunk, ...], settings: ChunkSettings) -> None:
    with_text = {page.number: i for i, page in enumerate(doc.pages)}
    numbers = list(range(1, doc.page_count + 1))
    if st.session_state.get(f"upload_page_{p.name}", 1) not in numbers:
        st.session_state[f"upload_page_{p.name}"] = 1  # another file of that name came
    titles = {pg.number: pg.title for pg in doc.pages}
    unit = _(doc.unit.capitalize())

    def label(n: int) -> str:
        title = titles.get(n, "")
        if doc.unit in ("sheet", "section") and title:
            return f"{unit} {n}: {title}"
        blank = _(" · blank") if doc.by_lines else _(" · no text")
        return f"{unit} {n}" + (f": {title}" if title else "") + ("" if n in with_text else blank)

    i18n.relabel(f"upload_page_{p.name}")  # 'Page 3' / '第 3 页'
    page = st.columns([1, 2])[0].selectbox(
        unit,
        numbers,
        key=f"upload_page_{p.name}",
        format_func=label,
        help=_("Type a number to jump to a {unit}.", unit=_(doc.unit)),
    )
    renderable = render.renderable(doc)
    left, right = st.columns(2) if renderable else (st.container(), None)
    on_page: list[Chunk] = []
    with left:
        if page not in with_text:
            st.info(
                _("{unit} {number} of the text file is blank: its form feeds enclose nothing.", unit=unit, number=page)
                if doc.by_lines
                else _("{unit} {number} has no extractable text: it will not be searchable.", unit=unit, number=page),
                icon="🖼️",
            )
        else:
            index = with_text[page]
            confidence = doc.pages[index].ocr
            if confidence is not None:
                st.caption(
                    "🔎 "
                    + _(
                        "Read from the page image by OCR ({engine}), mean word confidence {confidence}%: "
                        "check names and numbers against the page.",
                        engine=ocr.engine_name(),
                        confidence=f"{confidence:.0f}",
                    )
                )
            base = doc.page_starts[index]
            on_page = chunking.chunks_in_span(chunks, base, base + len(doc.pages[index].text))
            if on_page:
                first = on_page[0]
                carried = (
                    _(" (continues from the page before)") if chunks[first.index].start < doc.page_starts[index] else ""
                )
                badges = page_label([c.index for c in on_page])  # a chunk's number, as its badge shows it
                st.caption(
                    (
                        _("On this page: chunks #{chunks}", chunks=badges)
                        if len(on_page) > 1
                        else _("On this page: chunk #{chunks}", chunks=badges)
                    )
                    + i18n.sentences(f"{carried}{_('.')}", _(LEGEND))
                )
            else:
                st.caption(_("No chunk covers this page (its pieces were dropped as too short)."))
            with st.container(height=560, border=True):
                st.html(render.chunks_html(doc.pages[index].text, on_page))
            tables = documents.tables_in(doc.pages[index].text)
            if tables:
                with st.expander(
                    _("{tables} on this {unit}, rendered", tables=count(len(tables), "table"), unit=_(doc.unit))
                ):
                    for number, table in enumerate(tables):
                        widgets.document_table(f"upload_table_{p.name}_{page}_{number}", table)
    if right is not None:
        with right:
            boxes = st.toggle(
                _("Draw the chunks on the page"),
                value=True,
                key=f"upload_boxes_{p.name}",
                help=_("Each chunk's lines boxed in its colour, on the rendered page."),
            )
            originals = tuple(chunks[c.index] for c in on_page)
            try:
                with st.spinner(_("Rendering the page…")):
                    png = _page_png(p.data, doc, originals, p.sha256, settings, page, boxes)
            except Exception as exc:
                log.exception("rendering %r page %d failed", p.name, page)
                st.warning(
                    _(
                        "Page {number} could not be rendered ({error}).",
                        number=page,
                        error=f"{type(exc).__name__}: {exc}",
                    ),
                    icon="⚠️",
                )
            else:
                scanned = page in with_text and doc.pages[with_text[page]].ocr is not None
                note = _(" (text read by OCR has no positions on the page: no boxes)") if scanned and boxes else ""
                with st.container(border=True):
                    st.image(png, caption=_("{file}, page {number}", file=p.name, number=page) + note, width="stretch")


# -- ingest ----------------------------------------------------------------------------------


def _run_ingest(
    store: Store, knowledge: str, embedder: Embedder, settings: ChunkSettings, previews: list[FilePreview], new_kb: bool
) -> list[IngestResult]:
    """Ingest the previewed files through `ingest.ingest_files`, the pipeline `rag ingest` runs, handed
    what the preview parsed: no file is parsed (or OCR'd) again, an unchanged one not at all."""
    sources = [ingest.Source.upload(p.name, p.data, p.prepared) for p in previews]
    results: list[IngestResult] = []
    reached: dict[str, str] = {}  # file -> the last stage it reached: what a stop left of it (_after_stop)
    over = threading.Event()  # set once this run has left the ingest, however: what `_after_stop` waits for
    st.session_state[RUNNING_KEY] = {
        "kb": knowledge,
        "settings": settings,
        "sources": sources,
        "done": results,
        "reached": reached,
        "new_kb": new_kb,
        "over": over,
    }
    try:
        return _ingesting(store, knowledge, embedder, settings, sources, results, reached)
    finally:
        over.set()


def _ingesting(
    store: Store,
    knowledge: str,
    embedder: Embedder,
    settings: ChunkSettings,
    sources: list[ingest.Source],
    results: list[IngestResult],
    reached: dict[str, str],
) -> list[IngestResult]:
    total = len(sources)
    stages = len(ingest.STAGES)
    stop_slot = st.empty()
    stop_slot.button(
        _("Stop ingesting"),
        key="upload_stop",
        icon="⏹️",
        help=_(
            "Stops at the next step of the file being ingested: that file is stored whole or "
            "not at all (the chunks it embedded by then are kept, and the next Ingest goes on from there), "
            "the files done before stay, the rest are not started."
        ),
    )
    with st.status(
        _("Ingesting {files} into '{kb}'…", files=count(total, "file"), kb=knowledge), expanded=True
    ) as status:
        rows: dict[str, tuple[DeltaGenerator, DeltaGenerator]] = {}  # file -> (its container, its bar)
        fractions: dict[str, float] = {}
        # Files stored or given their result: a file's result comes after the next file is embedded (results in
        # order), and a walk read "Ingesting 0/2 done" while the first file's bar said stored.
        done: set[str] = set()

        def said(name: str, stage: str) -> None:
            status.update(
                label=_(
                    "Ingesting {done}/{total} done · {file}: {stage}…",
                    done=len(done),
                    total=total,
                    stage=_(stage),
                    file=name,
                ),
                expanded=True,
            )

        def on_stage(name: str) -> ingest.StageCallback:
            """The file `name` starts: its rows, and the callback that moves its bar."""
            reached[name] = "parse"
            fractions[name] = 0.0
            # A container per file: its error stays under it while the next file is read (the pipeline
            # reads one file while it writes the one before).
            box = st.container()
            box.markdown(f"**{len(rows) + 1}/{total} · {fmt.md(name)}**")
            bar = box.progress(0.0, text=_("waiting"))
            rows[name] = (box, bar)
            # Said again each time: the browser keeps an expander at this place closed if one was before. The
            # count is of files done: the next files are read while one is written (a walk saw "22/40" with 10
            # stored when it counted the files begun).
            said(name, "parse")

            def update(stage: str, fraction: float, message: str) -> None:
                step = ingest.STAGES.index(stage) + 1 if stage in ingest.STAGES else 0
                stored = stage == ingest.STAGES[-1] and fraction >= 1.0 and name not in done
                if stored:
                    done.add(name)
                last = next(reversed(rows))
                # The file begun last says its stage (a walk read "reading english_stories.txt…" while it was
                # embedded); a file stored says the count again.
                if (stage != reached[name] and last == name) or stored:
                    said(last, stage if last == name else reached[last])
                reached[name] = stage
                fractions[name] = min(max(float(fraction), 0.0), 1.0)
                bar.progress(fractions[name], text=f"{_(stage)} ({step}/{stages}) · {tr(message)}")

            return update

        def on_index(name: str, chunks: int) -> None:  # after the last file, where the base outgrew exact search
            st.session_state[INDEXING_KEY] = (name, chunks)  # said with the results (`_show_results`)

        # closing: a stop (the RerunException a click raises in a callback, or here) ends the run only once
        # the file being written is stored whole or rolled back.
        run_files = ingest.ingest_files(
            store, embedder, sources, knowledge, settings, on_stage=on_stage, on_index=on_index
        )
        with closing(run_files) as run:
            for result in run:
                results.append(result)
                done.add(result.filename)
                status.update(label=_("Ingesting {done}/{total} done…", done=len(done), total=total), expanded=True)
                box, bar = rows[result.filename]
                if result.ok:
                    bar.progress(
                        1.0,
                        text=f"{STATUS_ICONS.get(result.status, '')} {_(result.status)} · "
                        f"{count(result.pages, 'page')} · {count(result.chunks, 'chunk')}",
                    )
                else:
                    bar.progress(
                        fractions[result.filename],
                        text="❌ " + _("failed during {stage}", stage=_(reached[result.filename])),
                    )
                    box.error(
                        _("**{file}** failed: {reason}", file=fmt.md(result.filename), reason=tr(result.reason)),
                        icon="🚫",
                    )
        failed = sum(not r.ok for r in results)
        status.update(
            label=_ingested(knowledge, results), state="error" if failed == total else "complete", expanded=bool(failed)
        )
    st.session_state.pop(RUNNING_KEY, None)
    stop_slot.empty()
    return results


def _ingested(knowledge: str, results: list[IngestResult]) -> str:
    """ "Ingested into 'finance': 2 stored, 1 failed": the label of an ingest's status once it ended."""
    counts = _(", ").join(
        _status_count(s, sum(r.status == s for r in results))
        for s in ("stored", "replaced", "unchanged", "failed")
        if any(r.status == s for r in results)
    )
    if results and all(r.status == "unchanged" for r in results):
        return _(
            "Nothing to ingest into '{kb}': {counts} (stored before with the same content and settings)",
            kb=knowledge,
            counts=counts,
        )
    return _("Ingested into '{kb}': {counts}", kb=knowledge, counts=counts)


def _status_count(status: str, n: int) -> str:
    """ "2 stored" ("已保存 2 个": a count and its word in the order and with the measure word of the language)."""
    if status == "stored":
        return _("{n} stored", n=n)
    if status == "replaced":
        return _("{n} replaced", n=n)
    if status == "unchanged":
        return _("{n} unchanged", n=n)
    return _("{n} failed", n=n)


def _record(knowledge: str, results: list[IngestResult], new_kb: bool, stopped: bool = False) -> None:
    st.session_state["upload_results"] = {
        "kb": knowledge,
        "at": datetime.now(),
        "stopped": stopped,
        "results": [dataclasses.asdict(r) for r in results],
        "indexing": st.session_state.pop(INDEXING_KEY, None),
    }
    if new_kb and any(r.ok for r in results):
        st.session_state["_upload_kb_pending"] = knowledge
    if st.session_state.get("lib_kb") != knowledge:
        # The Library shows the base just ingested into, not the one viewed before (a base a stop left
        # uncreated is not listed there: the Library then takes its first).
        st.session_state["lib_kb"] = knowledge
        _reset_confirmations()


def _after_stop(store: Store | None) -> None:
    """An ingest whose run ended early: record what it did, as the store holds it."""
    running = st.session_state.pop(RUNNING_KEY, None)
    if running is None or store is None:
        return
    over: threading.Event | None = running.get("over")
    if over is not None and not over.is_set():
        with st.spinner(_("Waiting for the stopped ingest to finish the batch it was embedding…")):
            over.wait(STOP_WAIT_SECONDS)
    results = ingest.results_after_stop(
        store, running["kb"], running["settings"], running["sources"], running["done"], running["reached"]
    )
    _record(running["kb"], results, running["new_kb"], stopped=True)


def _request_ingest() -> None:
    st.session_state[INGEST_REQUESTED] = True


def _show_results() -> None:
    last = st.session_state.get("upload_results")
    if not last:
        return
    results: list[dict] = last["results"]
    failed = [r for r in results if r["status"] == "failed"]
    ended = last.pop("ended", None)  # the status line of an ingest that ended just before this run
    if ended:
        st.status(ended, state="error" if len(failed) == len(results) else "complete", expanded=False)
    done = sum(IngestResult(**r).ok for r in results)
    message = _(
        "Last ingest into **{kb}** at {time}: {done} of {files} in the knowledge base.",
        kb=fmt.md(last["kb"]),
        time=f"{last['at']:%H:%M:%S}",
        done=done,
        files=count(len(results), "file"),
    )
    if last.get("stopped"):
        st.info(
            message
            + _(
                " It was stopped: press **Ingest** to resume (files already stored are skipped, and the chunks "
                "whose vectors were kept, as each file's line below says, are not embedded again)."
            ),
            icon="⏹️",
        )
    elif failed:
        st.warning(message + _(" See the reasons below; fix them and ingest again."), icon="⚠️")
    else:
        st.success(message + _(" See it in the **Library** tab."), icon="✅")
    if last.get("indexing"):
        name, chunks = last["indexing"]
        st.caption(
            "🕸️ "
            + _(
                "The vector index of '{kb}' ({chunks}) is built in the background after the ingest: until it is "
                "ready, a search compares the question with every chunk (exact, only slower).",
                kb=name,
                chunks=count(chunks, "chunk"),
            )
        )
    if last.get("lab"):
        kind, text = last["lab"]
        if kind == "success":
            st.success(text, icon="🧪")
        else:
            st.error(text, icon="🚫")
    parts = _parts_column([r["filename"] for r in results])
    frame = pd.DataFrame(
        [
            {
                "": STATUS_ICONS.get(r["status"], ""),
                "file": r["filename"],
                "status": _(r["status"]),
                # A file that failed or was stopped before it was stored has no pages or chunks in the base.
                parts: None if r["status"] in ("failed", "stopped") else r["pages"],
                "chunks": None if r["status"] in ("failed", "stopped") else r["chunks"],
                "reason": tr(r["reason"]),
            }
            for r in results
        ],
        columns=["", "file", "status", parts, "chunks", "reason"],
    )
    widgets.table(
        "upload_summary",
        frame,
        hide_index=True,
        width="stretch",
        column_config={"reason": st.column_config.TextColumn("reason", width="large")} | _parts_config(parts),
    )


def _ingest_bar(
    store: Store | None,
    target: Target,
    settings: ChunkSettings | None,
    uploads: dict[str, bytes],
    previews: list[FilePreview],
) -> None:
    _after_stop(store)
    blockers = []
    if not uploads:
        blockers.append(_("upload at least one file"))
    elif settings is not None and ingest.all_fail(
        [ingest.destiny(p.prepared, p.sha256, None, settings) for p in previews]
    ):
        blockers.append(
            _("the file would fail (the reasons are in the preview below): fix or replace it")
            if len(previews) == 1
            else _(
                "each of the {n} files would fail (the reasons are in the preview below): fix or replace them",
                n=len(previews),
            )
        )
    if store is None:
        blockers.append(_("the database must be available"))
    if target.problem:
        blockers.append(target.problem)
    if settings is None:
        blockers.append(_("fix the chunk settings"))
    ready = (
        store is not None
        and settings is not None
        and target.name is not None
        and target.embedder is not None
        and not blockers
    )
    # Pressed, it asks for the ingest (a callback) and is drawn greyed while it runs: drawn once, not replaced by a
    # greyed copy, which Chromium showed beside the blue one until the ingest ended (a walk), and not pressed again
    # while it runs (a click would rerun the page: a stop, then the same ingest anew).
    requested = bool(st.session_state.pop(INGEST_REQUESTED, False))
    button, plan = st.columns([1, 5], vertical_alignment="center")
    button.button(
        _("Ingest"),
        key="upload_ingest",
        type="primary",
        icon="📥",
        disabled=not ready or requested,
        width="stretch",
        on_click=_request_ingest,
        help=_("Ingesting: **Stop ingesting** ends it early.")
        if requested
        else _(
            "Parse, chunk, embed and store every file above. A file already "
            "stored with the same content and settings is skipped."
        ),
    )
    if not ready:
        plan.caption(_("To ingest: ") + _("; ").join(tr(b) for b in (blockers or ["choose a knowledge base"])) + _("."))
        return _show_results()
    plan.markdown(
        f"{count(len(uploads), 'file')} → **{fmt.md(target.name)}** · "
        f"`{target.embedder.name}` · {tr(chunking.summary(settings))}"
    )
    texts = chunks_to_embed(
        store,
        target.name if target.kb is not None else None,
        [(p.name, p.sha256, p.prepared) for p in previews],
        settings,
    )
    sample = "".join(p.prepared.document.text[:SAMPLE_CHARS] for p in previews if p.prepared is not None)
    left, embedded = left_to_embed(store, target.embedder, texts)  # a stopped ingest's chunks cost nothing
    # The first guess shown for these chunks stays as it was until a measured rate replaces it (pressing Ingest
    # redraws the plan, under a load the upload itself raised).
    plan_key = (target.embedder.name, hash(tuple(left)))
    shown = st.session_state.get(FIRST_GUESS)
    before = shown[1] if shown and shown[0] == plan_key else None
    expected = embeddings.steady(before, embeddings.estimate(target.embedder, left))
    st.session_state[FIRST_GUESS] = (plan_key, expected)
    notes = ingest.plan_notes(
        target.embedder.name,
        expected,
        len(left),
        sample,
        embeddings.machine_load(),
        embedded,
    )
    if notes.duration:
        plan.caption(f"⏱️ {tr(notes.duration)} " + _("**Stop ingesting** ends it early; the files done by then stay."))
    if notes.language:
        plan.caption(f"🈶 {tr(notes.language)}")
    lab = st.session_state.get(LAB_QUESTIONS)
    if lab is not None and any(p.name == lab["document"] for p in previews):
        plan.caption(
            "🧪 "
            + _(
                "{n} questions from the Chunk Lab about {file} are saved as the knowledge base's question set when "
                "it is ingested.",
                n=len(lab["questions"]),
                file=lab["document"],
            )
        )
    if requested:
        results = _run_ingest(store, target.name, target.embedder, settings, previews, target.kb is None)
        _record(target.name, results, target.kb is None)
        _save_lab_questions(store, target.name, results)
        # The page above was drawn before the ingest: a new knowledge base still offered to be created, each file
        # said "new" (an Ingest pressed again then said "unchanged"). Drawn again as it is now; the results are
        # kept for `_show_results`, and the ingest's last status line with them.
        st.session_state["upload_results"]["ended"] = _ingested(target.name, results)
        st.rerun()
    _show_results()


def _save_lab_questions(store: Store, knowledge: str, results: list[IngestResult]) -> None:
    """The Chunk Lab's questions about a file this ingest stored, saved as the knowledge base's question set."""
    lab = st.session_state.get(LAB_QUESTIONS)
    if lab is None or not any(r.ok and r.filename == lab["document"] for r in results):
        return
    # Told with the results (`_show_results`): the page may be drawn again at once (a new knowledge base).
    try:
        total = kb_check.save_questions(store, knowledge, lab["document"], lab["questions"])
    except RagError as exc:
        st.session_state["upload_results"]["lab"] = ("error", f"{_('Questions from the Chunk Lab')}: {tr(exc)}")
        return
    st.session_state.pop(LAB_QUESTIONS, None)
    st.session_state["upload_results"]["lab"] = (
        "success",
        _(
            "Saved {n} questions from the Chunk Lab as the question set of {kb} ({total} in all): "
            "`python -m rag eval --kb {kb}` re-runs them.",
            n=len(lab["questions"]),
            kb=knowledge,
            total=total,
        ),
    )


# -- the upload tab ------------------------------------------------------------------------------


def _ocr_note() -> str:
    if ocr.available():
        return _("Scanned pages are read by OCR ({engine}, a few seconds a page).", engine=ocr.engine_name())
    return _("Scanned pages cannot be read yet: {hint}.", hint=tr(ocr.ENABLE_HINT))


def _files_column() -> dict[str, bytes]:
    limit = st.get_option("server.maxUploadSize")
    # No `type=` filter: the browser would refuse other files with a reason shown only on hover;
    # here each gets a row in the preview saying why it is not read and what to do instead.
    files = (
        st.file_uploader(
            _("Documents"),
            accept_multiple_files=True,
            key="upload_files",
            on_change=_sync_uploads,
            help=_(
                "{types}; up to {limit} MB per file (server.maxUploadSize in .streamlit/config.toml). Nothing is "
                "stored until you press Ingest.",
                types=tr(ingest.READ_TYPES),
                limit=limit,
            ),
        )
        or []
    )
    st.caption(i18n.sentences(_("Read: {types}.", types=tr(ingest.READ_TYPES)), _ocr_note()))
    uploads = _uploads()
    first = not uploads
    for f in files:  # safety net: the callback normally did this already
        if f.name not in uploads:
            uploads[f.name] = f.getvalue()
            _choose_again(keep_typed=first)
    st.session_state["_upload_ids"] = {f.file_id: f.name for f in files}
    names = [f.name for f in files]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        st.warning(
            _(
                "Several files are named {names}: only the last one is kept, because a knowledge base tells "
                "documents apart by filename. Rename the others to ingest them too.",
                names=", ".join(repr(d) for d in duplicates),
            ),
            icon="⚠️",
        )
    kept = [n for n in uploads if n not in set(names)]
    if kept:
        st.caption(_("Kept from earlier in this session: {files}.", files=", ".join(fmt.md(k) for k in kept)))
        st.button(_("Forget them"), key="upload_forget", on_click=_forget, args=(kept,), icon="🧹")
    if uploads:
        st.caption(
            _(
                "{files}, {size} in this session.",
                files=count(len(uploads), "file"),
                size=i18n.size(sum(len(d) for d in uploads.values())),
            )
        )
    return uploads


def _upload_tab(store: Store | None) -> None:
    files_col, kb_col, chunk_col = st.columns([1.2, 1, 1.2], gap="large")
    with files_col:
        st.markdown(_("##### 1 · Files"))
        uploads = _files_column()
    with kb_col:
        st.markdown(_("##### 2 · Knowledge base"))
        target = _knowledge_base_picker(store)
        _stored_copies(store, uploads, target.name)
    with chunk_col:
        st.markdown(_("##### 3 · Chunking"))
        settings = widgets.chunk_settings_widget(WIDGET, chunking.DEFAULT)
        _kb_settings_hint(target, settings)

    previews = _previews(uploads, settings) if uploads and settings is not None else []
    st.markdown(_("##### 4 · Ingest"))
    _ingest_bar(store, target, settings, uploads, previews)

    st.divider()
    st.markdown(_("#### Preview"))
    if not uploads:
        st.info(
            _(
                "Upload files to see their pages and where the chunks fall. Nothing is stored until "
                "you press **Ingest**."
            ),
            icon="📄",
        )
        return
    if settings is None:
        st.info(_("Fix the chunk settings above to see the chunks."), icon="🧩")
        return
    window = input_window(target.embedder)  # counts chunks in the embedder's own tokens where it can
    existing: dict[str, StoredDocument] = {}
    if store is not None and target.kb is not None:
        try:
            existing = {d.original_filename: d for d in store.list_documents(target.kb.name)}
        except RagError as exc:
            widgets.show_error(exc, _("Documents"))
    _overview(previews, existing, settings, window, target.name)
    labels = [("❌ " if p.error else "⚠️ " if _issues(p, window) else "📄 ") + fmt.md(p.name) for p in previews]
    for tab, p in zip(st.tabs(labels), previews):
        with tab:
            _file_preview(p, settings, window)


# -- the library tab ----------------------------------------------------------------------------


def _flash(kind: str, message: str) -> None:
    st.session_state["_lib_flash"] = (kind, message)


def _delete_document(knowledge: str, filename: str) -> None:
    try:
        removed = resources.store().delete_document(knowledge, filename)
    except RagError as exc:
        _flash("error", _("Could not delete '{file}' from '{kb}': {error}", file=filename, kb=knowledge, error=tr(exc)))
        return
    st.session_state["lib_doc_confirm"] = False
    if removed:
        _flash("success", _("Deleted '{file}' and its chunks from '{kb}'.", file=filename, kb=knowledge))
    else:
        _flash("warning", _("'{file}' was no longer in '{kb}'.", file=filename, kb=knowledge))


def _delete_knowledge_base(knowledge: str) -> None:
    try:
        removed = resources.store().delete_knowledge_base(knowledge)
    except RagError as exc:
        _flash("error", _("Could not delete the knowledge base '{kb}': {error}", kb=knowledge, error=tr(exc)))
        return
    st.session_state["lib_kb_confirm"] = False
    st.session_state["lib_doc_confirm"] = False
    if removed:
        _flash("success", _("Deleted the knowledge base '{kb}' with all its documents and chunks.", kb=knowledge))
    else:
        _flash("warning", _("The knowledge base '{kb}' was already gone.", kb=knowledge))


def _reset_confirmations() -> None:
    st.session_state["lib_doc_confirm"] = False
    st.session_state["lib_kb_confirm"] = False


def _sync_panel(store: Store, kb: KnowledgeBase) -> None:
    """A knowledge base built by `rag sync`: its folder, and syncing it again from here."""
    st.caption(
        "📁 "
        + _(
            "Kept in step with the folder `{folder}` (`python -m rag sync`): new files are stored, changed "
            "ones replaced, unchanged ones left, with the chunk settings above.",
            folder=kb.source_folder,
        )
    )
    left, right = st.columns([1, 2])
    delete_missing = right.checkbox(_("Also delete the documents whose file is gone"), key="lib_sync_delete")
    if not left.button(_("Sync"), key="lib_sync", icon="🔄"):
        return
    settings = chunking.settings_from_dict(dict(kb.chunk_settings))
    with st.status(_("Syncing '{kb}' with {folder}…", kb=kb.name, folder=kb.source_folder), expanded=True) as status:
        bars: dict[str, object] = {}

        def on_stage(name: str):  # noqa: ANN202 - the progress callback of one file
            bar = bars.setdefault(name, st.progress(0.0, text=f"{name}: {_('waiting')}"))
            return lambda stage, fraction, message: bar.progress(
                min(max(fraction, 0.0), 1.0), text=f"{name}: {_(stage)} · {tr(message)}"
            )

        try:
            embedder = ingest.embedder_for_kb(store, resources.settings(), kb.name)
            report = ingest.sync(
                store,
                embedder,
                kb.source_folder,
                kb.name,
                settings,
                delete_missing=delete_missing,
                on_line=lambda line: st.text(tr(line)),
                on_stage=on_stage,
            )
        except RagError as exc:
            status.update(label=_("Sync of '{kb}' failed", kb=kb.name), state="error")
            widgets.show_error(exc, _("Sync"))
            return
        status.update(
            label=tr(report.summary()), state="error" if report.failed else "complete", expanded=bool(report.failed)
        )
    failures = "".join(f"\n- {fmt.md(tr(r.line()))}" for r in report.results if not r.ok)
    st.session_state["_lib_flash"] = ("warning" if report.failed else "success", tr(report.summary()) + failures)
    st.rerun()


def _library_tab(store: Store | None) -> None:
    _collect_portable_jobs()
    flash = st.session_state.pop("_lib_flash", None)
    if flash:
        kind, message = flash
        {"success": st.success, "warning": st.warning}.get(kind, st.error)(tr(message))
    if store is None:
        st.info(_("The library needs the database: see the error at the top of the page."))
        return
    shown = _library(store)
    _import_panel(store, expanded=not shown)


def _library(store: Store) -> bool:
    """The knowledge bases, one of them in full; whether there is any."""
    try:
        kbs = store.list_knowledge_bases()
    except RagError as exc:
        widgets.show_error(exc, _("Knowledge bases"))
        return False
    if not kbs:
        st.info(_("No knowledge bases yet: upload files on the first tab and press **Ingest**."), icon="📚")
        return False
    widgets.table(
        "lib_overview",
        pd.DataFrame(
            [
                {
                    "knowledge base": kb.name,
                    "documents": kb.documents,
                    "chunks": kb.chunks,
                    "embedder": kb.embedder,
                    "dimension": kb.dimension,
                    "chunk settings": tr(chunking.summary(kb.chunk_settings, short=True)),
                    "created": kb.created_at,
                }
                for kb in kbs
            ],
            columns=["knowledge base", "documents", "chunks", "embedder", "dimension", "chunk settings", "created"],
        ),
        hide_index=True,
        width="stretch",
        column_config={
            "created": st.column_config.DatetimeColumn("created", format="YYYY-MM-DD HH:mm"),
            "chunk settings": st.column_config.TextColumn(
                "chunk settings", help=_("The settings of the latest ingest")
            ),
        },
    )
    by_name = {kb.name: kb for kb in kbs}
    # A stale choice (deleted meanwhile) is replaced, not dropped: assigning it tells the browser
    # too, while a dropped one keeps showing there and is sent back on the next click.
    if st.session_state.get("lib_kb") not in by_name:
        st.session_state["lib_kb"] = kbs[0].name
    # Plain names: a label with the document count went stale in the browser after a delete
    # ("2 docs" beside a table saying 1), like any option label that changes under a kept key.
    name = st.selectbox(_("Knowledge base"), list(by_name), key="lib_kb", on_change=_reset_confirmations)
    kb = by_name[name]
    m = st.columns(4)
    m[0].metric(_("Documents"), kb.documents)
    m[1].metric(_("Chunks"), kb.chunks)
    m[2].metric(_("Dimension"), kb.dimension)
    # The model's short name (the whole one cut to "local:wordll…"); the caption below and the help say it whole.
    m[3].metric(_("Embedder"), embeddings.short_name(kb.embedder), help=f"`{kb.embedder}`")
    st.caption(
        _(
            "Embedder `{embedder}` · chunk settings of the latest ingest: {settings}",
            embedder=kb.embedder,
            settings=tr(chunking.summary(kb.chunk_settings)),
        )
    )
    if kb.source_folder:
        _sync_panel(store, kb)
    try:
        docs = store.list_documents(name)
    except RagError as exc:
        widgets.show_error(exc, _("Documents"))
        return True
    parts = _parts_column([d.original_filename for d in docs])
    widgets.table(
        "lib_docs",
        pd.DataFrame(
            [
                {
                    "filename": d.original_filename,
                    parts: d.page_count,
                    "chunks": d.chunk_count,
                    "size": i18n.size(d.size_bytes),
                    "ingested at": d.ingested_at,
                    "chunk settings": tr(chunking.summary(d.chunk_settings, short=True)),
                }
                for d in docs
            ],
            columns=["filename", parts, "chunks", "size", "ingested at", "chunk settings"],
        ),
        hide_index=True,
        width="stretch",
        column_config={"ingested at": st.column_config.DatetimeColumn("ingested at", format="YYYY-MM-DD HH:mm")}
        | _parts_config(parts),
    )
    stem = export.file_stem(name)
    d1, d2, _spare = st.columns([1, 1, 3])
    d1.download_button(
        _("Chunks as CSV"),
        data=lambda: export.chunks_csv(store.iter_chunks(name)),
        file_name=f"{stem}-chunks.csv",
        mime="text/csv",
        key="lib_csv",
        icon="⬇️",
        on_click="ignore",
        disabled=kb.chunks == 0,
        width="stretch",
        help=_(
            "id, knowledge, original_filename, pages, chunk_index, tokens, content; UTF-8 with BOM "
            "so Excel shows every script correctly. Text that would start a formula (=, +, -, @) "
            "gets a leading ' so a spreadsheet shows it rather than runs it; JSONL keeps it exact."
        ),
    )
    d2.download_button(
        _("Chunks as JSONL"),
        data=lambda: export.chunks_jsonl(store.iter_chunks(name)),
        file_name=f"{stem}-chunks.jsonl",
        mime="application/jsonl",
        key="lib_jsonl",
        icon="⬇️",
        on_click="ignore",
        disabled=kb.chunks == 0,
        width="stretch",
        help=_("One JSON object per line: id, content and the full metadata."),
    )
    _export_panel(store, kb)
    with st.expander(_("🗑️ Delete a document or the whole knowledge base")):
        if docs:
            filenames = [d.original_filename for d in docs]
            # One picker per knowledge base: the browser kept showing (and sending back) the previous
            # base's file when one picker's options changed under it, which unticked the confirmation
            # on every click (seen in Chromium; AppTest did not show it).
            picker = f"lib_doc::{name}"
            if st.session_state.get(picker) not in filenames:
                st.session_state[picker] = filenames[0]  # the document was deleted: the first one
            chosen = st.selectbox(_("Document"), filenames, key=picker, on_change=_reset_confirmations)
            doc = next(d for d in docs if d.original_filename == chosen)
            confirm = st.checkbox(
                _(
                    "I understand that '{document}' and its {chunks} will be removed from '{kb}'",
                    document=chosen,
                    chunks=count(doc.chunk_count, "chunk"),
                    kb=name,
                ),
                key="lib_doc_confirm",
            )
            st.button(
                _("Delete the document"),
                key="lib_doc_delete",
                disabled=not confirm,
                icon="🗑️",
                on_click=_delete_document,
                args=(name, chosen),
            )
            st.divider()
        confirm_kb = st.checkbox(
            _(
                "I understand that the knowledge base '{kb}' with its {documents} and {chunks} "
                "will be removed for good",
                kb=name,
                documents=count(kb.documents, "document"),
                chunks=count(kb.chunks, "chunk"),
            ),
            key="lib_kb_confirm",
        )
        st.button(
            _("Delete the knowledge base"),
            key="lib_kb_delete",
            disabled=not confirm_kb,
            type="primary",
            icon="🗑️",
            on_click=_delete_knowledge_base,
            args=(name,),
        )
    return True


# -- export and import (issue #31) ---------------------------------------------------------------------------
# The work runs on rag.portable.jobs' background jobs, kept in the session: a fragment polls them, and the
# whole page takes the outcome once one ends (a flash line, or the export's download button).

EXPORT_JOB = "_lib_export_job"
EXPORTED = "_lib_exported"
IMPORT_JOB = "_lib_import_job"
IMPORT_OPEN = "lib_import_open"  # the import expander's state: opened when an import ends, to read its outcome
FIRST_GUESS = "_upload_first_guess"  # (embedder and chunks, the estimate shown for them): see embeddings.steady
IMPORT_OUTCOME = "_lib_import_outcome"  # (kind, line) of the import that ended, drawn in the import panel
IMPORT_UPLOADS = "_lib_import_uploads"  # imports done: the uploader's key counts them, so a done file leaves it
POLL_SECONDS = 0.5


def _stage_label(stage: str) -> str:
    return {
        "documents": _("documents"),
        "chunks": _("chunks"),
        "vectors": _("vectors"),
        "questions": _("saved questions"),
        "receive": _("receiving the file"),
        "verify": _("checking the file"),
        "embed": _("embedding again"),
        "write": _("writing"),
        "index": _("building the search index"),
    }.get(stage, _("starting"))


def _busy() -> bool:
    return any(st.session_state.get(key) is not None for key in (EXPORT_JOB, IMPORT_JOB))


def _start_export(store: Store, name: str) -> None:
    previous: ExportJob | None = st.session_state.pop(EXPORTED, None)
    if previous is not None:  # one export kept per session: the new one replaces it
        previous.discard()
    sources = bool(st.session_state.get("lib_export_sources", True))
    st.session_state[EXPORT_JOB] = ExportJob(store, name, resources.settings().data_dir, sources=sources)


def _import_file_key() -> str:
    """The import uploader's key: a new one after each import that succeeded, which empties it (a file uploader's
    value cannot be set; the walk found the imported file still there, and Import enabled for it again)."""
    done = st.session_state.get(IMPORT_UPLOADS, 0)
    return "lib_import_file" if not done else f"lib_import_file_{done}"


def _start_import(store: Store) -> None:
    upload = st.session_state.get(_import_file_key())
    if upload is None:
        return
    st.session_state[IMPORT_JOB] = ImportJob(
        store,
        resources.settings(),
        upload,
        upload.name,
        name=(st.session_state.get("lib_import_name") or "").strip() or None,
        replace=bool(st.session_state.get("lib_import_replace")),
        reembed=bool(st.session_state.get("lib_import_reembed")),
    )


def _collect_portable_jobs() -> None:
    """A finished export kept for its download button; a finished import said in one line."""
    export_job: ExportJob | None = st.session_state.get(EXPORT_JOB)
    if export_job is not None and not export_job.running:
        del st.session_state[EXPORT_JOB]
        view = export_job.view()
        if view.error:
            export_job.discard()
            _flash("error", _("Export of '{kb}' failed: {error}", kb=export_job.name, error=tr(view.error)))
        else:
            st.session_state[EXPORTED] = export_job
    import_job: ImportJob | None = st.session_state.get(IMPORT_JOB)
    if import_job is not None and not import_job.running:
        del st.session_state[IMPORT_JOB]
        st.session_state[IMPORT_OPEN] = True  # the expander stays open on its outcome (before it is drawn)
        view = import_job.view()
        # Said in the import panel, beside the controls a refusal names (at the top of the tab it was ~450 px
        # above them).
        if view.error or view.result is None:
            st.session_state[IMPORT_OUTCOME] = ("error", _("Not imported: {error}", error=tr(view.error)))
        else:
            st.session_state[IMPORT_OUTCOME] = ("success", tr(view.result.line()))
            st.session_state[IMPORT_UPLOADS] = st.session_state.get(IMPORT_UPLOADS, 0) + 1
            st.session_state["lib_kb"] = view.result.name  # the Library shows the base just imported


def _progress_text(what: str, view: PortableView) -> str:
    text = _(
        "{what}: {stage} {done}/{total}", what=what, stage=_stage_label(view.stage), done=view.done, total=view.total
    )
    if view.seconds_left is not None:
        text += " · " + _("about {seconds} s left", seconds=round(view.seconds_left))
    return text


@st.fragment(run_every=POLL_SECONDS)
def _portable_progress(key: str, what: str) -> None:
    """A running export's or import's progress bar, redrawn until it ends; then the whole page takes its outcome."""
    job: ExportJob | ImportJob | None = st.session_state.get(key)
    if job is None:
        return
    view = job.view()
    if not view.running:
        st.rerun(scope="app")
    st.progress(view.fraction, text=_progress_text(what, view))


def _export_panel(store: Store, kb: KnowledgeBase) -> None:
    """Export the whole knowledge base to one file (rag.portable's format), then offer it for download."""
    left, right = st.columns([1, 2], vertical_alignment="center")
    left.button(
        _("Export the knowledge base"),
        key="lib_export",
        icon="📦",
        width="stretch",
        disabled=_busy(),
        on_click=_start_export,
        args=(store, kb.name),
        help=_(
            "One zip with its documents, chunks, vectors, settings and saved questions, to import here or "
            "elsewhere (python -m rag kb import) without embedding anything again."
        ),
    )
    right.checkbox(
        _("With the documents' own files"),
        value=True,
        key="lib_export_sources",
        help=_("Without them the file is smaller, but the imported documents' pages cannot be shown."),
    )
    running: ExportJob | None = st.session_state.get(EXPORT_JOB)
    if running is not None:
        _portable_progress(EXPORT_JOB, _("Exporting '{kb}'", kb=running.name))
    done: ExportJob | None = st.session_state.get(EXPORTED)
    view = done.view() if done is not None else None
    if done is None or view is None or not isinstance(view.result, portable.ExportResult) or done.name != kb.name:
        return
    result = view.result
    file_name = f"{export.file_stem(kb.name)}.zip"
    st.download_button(
        _("Download {file} ({size})", file=file_name, size=i18n.size(result.size_bytes)),
        data=result.path.read_bytes,  # read when clicked, from the file in the data folder
        file_name=file_name,
        mime="application/zip",
        key="lib_export_download",
        icon="⬇️",
        on_click="ignore",
    )
    st.caption(tr(portable.contents(result.documents, result.chunks, result.questions)) + _("."))


def _import_panel(store: Store, *, expanded: bool) -> None:
    """Import a file written by an export: checked whole before anything is written, then one transaction.
    `expanded`: open at first (no knowledge base to show yet); later the user's choice, opened again when an
    import ends (IMPORT_OPEN), so that a refusal is read beside the controls it names."""
    if IMPORT_OPEN not in st.session_state:
        st.session_state[IMPORT_OPEN] = expanded
    with st.expander(_("📦 Import a knowledge base"), key=IMPORT_OPEN, on_change="rerun"):
        st.file_uploader(
            _("A file exported from a Library or by python -m rag kb export"),
            type=["zip"],
            key=_import_file_key(),
        )
        st.text_input(
            _("Import as"),
            key="lib_import_name",
            placeholder=_("the name it was exported under"),
            help=_("Leave empty to keep the name the knowledge base was exported under."),
        )
        st.checkbox(
            _("Replace an existing knowledge base of that name"),
            key="lib_import_replace",
            help=_("The one there stays, searchable, until the imported one is whole."),
        )
        st.checkbox(
            _("Re-embed with the current embedder"),
            key="lib_import_reembed",
            help=_(
                "For a file built with another embedder: its chunks are embedded again with the app's one "
                "(RAG_EMBEDDER={embedder}; minutes per thousand chunks on a CPU). Otherwise such a file is refused.",
                embedder=resources.settings().embedder,
            ),
        )
        st.button(
            _("Import"),
            key="lib_import",
            icon="📥",
            type="primary",
            disabled=_busy() or st.session_state.get(_import_file_key()) is None,
            on_click=_start_import,
            args=(store,),
        )
        if st.session_state.get(IMPORT_JOB) is not None:
            _portable_progress(IMPORT_JOB, _("Importing"))
        outcome = st.session_state.pop(IMPORT_OUTCOME, None)
        if outcome is not None:
            kind, line = outcome
            (st.success if kind == "success" else st.error)(line)


# -- the page ----------------------------------------------------------------------------------------


def main() -> None:
    st.title(_("📄 Upload & preview"))
    st.caption(
        _(
            "Upload documents, check how each page parses and where the chunks fall, then ingest "
            "them into a knowledge base. Nothing is stored before you press **Ingest**."
        )
    )
    _apply_chunk_lab_settings()
    store = widgets.try_store()
    upload_tab, library_tab = st.tabs([_("📥 Upload & ingest"), _("📚 Library")])
    with upload_tab:
        _upload_tab(store)
    with library_tab:
        _library_tab(store)


main()
