"""The app's words in English and Simplified Chinese.

gettext's way: the English text is the message id (`_("Model")`), and `ui/zh.py` holds its Chinese.
The language follows the browser (`st.context.locale`) until the sidebar's switch picks one, which is
remembered in the URL (`?lang=zh`: it survives a reload and a bookmark). tests/ui/test_i18n.py fails
when a message id used in a translated page has no Chinese, when a translation's placeholders differ
from its id's, and when a translated page shows English while Chinese is on. The CLI stays English.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, TypeVar

import streamlit as st

from rag.text import place_in_file, shown_name
from ui.format import no_images, plural
from ui.format import size as byte_size
from ui.zh import ZH

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd

    from rag.generate import Source
    from rag.store import Copy, Hit

LANGUAGES = {"en": "English", "zh": "中文"}
QUERY_KEY = "lang"
WIDGET_KEY = "ui_language"


CHOICE_KEY = "_ui_language_choice"


def language() -> str:
    """'zh' or 'en': the switch's choice (kept in the session and the URL), else the browser's language."""
    chosen = st.session_state.get(CHOICE_KEY) or st.query_params.get(QUERY_KEY)
    if chosen in LANGUAGES:
        return chosen
    try:
        locale = str(st.context.locale or "")
    except Exception:  # noqa: BLE001 - no browser context (bare mode): English
        locale = ""
    return "zh" if locale.lower().startswith("zh") else "en"


def _(message: str, **values: object) -> str:
    """`message` in the user's language, with `values` put into its {placeholders}."""
    text = ZH.get(message, message) if language() == "zh" else message
    return text.format(**values) if values else text


def sentences(*texts: str) -> str:
    """Messages shown one after another: a space between them in English, none in Chinese, which sets no space
    after its full stop (a walk saw "TXT 和 Markdown。 扫描页…")."""
    return ("" if language() == "zh" else " ").join(t for t in texts if t)


def tr(text: str | BaseException) -> str:
    """A library message in the user's language: a `rag.text.Text` (or an exception made with one) by its
    template, with its values translated the same way; plain text by the catalogue, else as it is."""
    from rag.text import Text, text_of

    text = text_of(text)
    if isinstance(text, Text):
        shown = _(text.template, **{k: tr(v) if isinstance(v, Text) else v for k, v in text.values.items()})
    else:
        shown = _(text)  # a plain message id (a page's own words)
    return no_images(shown)  # its values may be names a user chose: no picture loads from them


COLUMNS = (
    "Setting",
    "Search",
    "Prompt tokens",
    "Chunks",
    "Mean tokens",
    "Min tokens",
    "Max tokens",
    "Cut mid-sentence",
    "Dropped (too short)",
    "Split in ms",
    "Target size",
    "Overlap",
    "Question",
    "question",
    "expected",
    "Notes",
    "Process",
    "VRAM (MiB)",
    "Model",
    "Size (GiB)",
    "In VRAM (GiB)",
    "Placement",
    "Context",
    "Unloads in",
    "route",
    "tools",
    "budget",
    "keywords",
    "what for",
    "tokens",
    "characters",
    "pages",
    "parts",
    "first words",
    "file",
    "type",
    "read by",
    "size",
    "chunks",
    "check",
    "on ingest",
    "status",
    "reason",
    "knowledge base",
    "documents",
    "embedder",
    "dimension",
    "chunk settings",
    "created",
    "ingested at",
    "filename",
    "where",
)
"""The tables' column names the pages use; their Chinese is in ui/zh.py (tests/ui/test_i18n.py checks)."""


def columns(frame: pd.DataFrame, config: dict[str, object] | None = None) -> dict[str, object]:
    """`config` (st.dataframe's column_config) with each column of `frame` labelled in the user's language:
    the label only, so the data, its keys and what tests read stay English."""
    out = dict(config or {})
    for name in map(str, frame.columns):
        label = tr(name)
        if label == name:
            continue
        entry = out.get(name)
        if entry is None:
            out[name] = st.column_config.Column(label)
        elif isinstance(entry, dict):
            out[name] = {**entry, "label": label}
    return out


PLOTLY_WORDS = (
    "Download plot as a PNG",
    "Download plot as a png",
    "Download plot",
    "Zoom",
    "Pan",
    "Box Select",
    "Lasso Select",
    "Zoom in",
    "Zoom out",
    "Autoscale",
    "Reset axes",
    "Toggle Spike Lines",
    "Show closest data on hover",
    "Compare data on hover",
    "Double-click to zoom back out",
    "Double-click on legend to isolate one trace",
    "Taking snapshot - this may take a few seconds",
    "Snapshot succeeded",
    "Sorry, there was a problem downloading your snapshot!",
)
"""What Plotly's chart toolbar says (its buttons' tooltips and the notes a download shows), by the English
plotly.js looks its words up with: a chart's own config can hold a locale's dictionary (`chart_config`). The
toolbar's last button, "Fullscreen", is Streamlit's, titled without plotly.js's dictionary: it stays English."""


def chart_config() -> dict[str, object]:
    """`st.plotly_chart`'s config: no Plotly logo, and in Chinese the toolbar's tooltips in Chinese (a walk found
    them English on the GPU page; plotly.js reads a `locales` dictionary from a chart's config, no script needed)."""
    config: dict[str, object] = {"displaylogo": False}
    if language() == "zh":
        config["locale"] = "zh-CN"
        config["locales"] = {"zh-CN": {"dictionary": {word: ZH[word] for word in PLOTLY_WORDS}}}
    return config


_Default = TypeVar("_Default")


def relabel(key: str, default: _Default | None = None) -> _Default | None:
    """Call before drawing the keyed selectbox, radio or multiselect `key` whose option labels are translated:
    after a language switch its value is handed to the browser again. The browser holds a choice by its label
    (Streamlit 1.67 sends the label, not the option) and kept showing the English one in Chinese ("Spring
    AI 320 (fits e5)"), since the option it stands for was unchanged and so never sent again.

    Returns the widget's `default` (or index) to give it: `default` until the state holds a choice, then None (a
    widget given a default beside a state that holds its value made Streamlit warn)."""
    state = st.session_state
    marker = f"_relabel_lang::{key}"
    current = language()
    if state.get(marker, current) != current and key in state:
        state[key] = state[key]  # read by the last run's labels; sent with this run's
    state[marker] = current
    return None if key in state else default


def _remember() -> None:
    chosen = st.session_state.get(WIDGET_KEY) or language()
    st.session_state[CHOICE_KEY] = chosen
    st.query_params[QUERY_KEY] = chosen


def language_switch() -> None:
    """The sidebar's language switch (English / 中文). A choice stays for the session and goes back
    into the URL after a page change (Streamlit's navigation drops query parameters), so a reload keeps it.
    A language the URL named when the session began counts as chosen: a link with `?lang=zh` fell back to the
    browser's English at the first click in the sidebar."""
    state = st.session_state
    if not state.get(CHOICE_KEY) and st.query_params.get(QUERY_KEY) in LANGUAGES:
        state[CHOICE_KEY] = st.query_params[QUERY_KEY]
    current = language()
    if st.session_state.get(CHOICE_KEY) and st.query_params.get(QUERY_KEY) != current:
        st.query_params[QUERY_KEY] = current
    st.session_state[WIDGET_KEY] = current
    st.sidebar.segmented_control(
        "Language · 语言",
        list(LANGUAGES),
        format_func=LANGUAGES.get,
        key=WIDGET_KEY,
        on_change=_remember,
        label_visibility="collapsed",
    )
    uploader_words()


_DROPZONE = '[data-testid="stFileUploaderDropzone"]'
UPLOADER_TEXTS = {
    "upload": f'{_DROPZONE} button[data-testid="stBaseButton-secondary"] [data-testid="stMarkdownContainer"] p',
    "limit": '[data-testid="stFileUploaderDropzoneInstructions"] span',
    "drop": f"{_DROPZONE} > div:not([data-testid]) > span",  # shown while files are dragged over it
}
"""Where Streamlit's file uploader (1.67) draws its own English: the button ("Upload"), the limit ("200MB per
file") and the drop hint ("Drag and drop files here"); tests/e2e checks them in Chromium."""


def uploader_words() -> None:
    """Streamlit's file uploader in the user's language: its button ("Upload"), its limit ("200MB per file")
    and what it says while a file is dragged over it are the browser's, not a parameter (its label and help
    are the pages'): in Chinese, CSS puts the Chinese in their place, on every page. In English an empty
    style takes the Chinese one's place (a style-only st.html outlives the run that drew it)."""
    if language() != "zh":
        st.html("<style></style>")
        return
    limit = st.get_option("server.maxUploadSize")
    words = {
        "upload": _("Upload"),
        "limit": _("up to {limit} MB per file", limit=limit),
        "drop": _("Drop the files here"),
    }
    # Each English text is hidden (font-size 0) and the Chinese drawn in its place by ::after.
    rules = [f"{UPLOADER_TEXTS[name]} {{font-size: 0 !important}}" for name in words]
    rules += [
        f'{UPLOADER_TEXTS[name]}::after {{content: "{text}"; font-size: 0.875rem; line-height: 1.6}}'
        for name, text in words.items()
    ]
    st.html("<style>" + "\n".join(rules) + "</style>")


UNITS = {
    "turn": ("turn", "轮"),
    "doc": ("doc", "篇文档"),
    "source": ("source", "个来源"),
    "web source": ("web source", "个网页来源"),
    "exchange": ("exchange", "轮对话"),
    "tool call": ("tool call", "次工具调用"),
    "sentence": ("sentence", "句"),
    "cited source": ("cited source", "个被引用的来源"),
    "marker": ("marker", "个标记"),
    "document": ("document", "篇文档"),
    "chunk": ("chunk", "个分块"),
    "file": ("file", "个文件"),
    "page": ("page", "页"),
    "warning": ("warning", "个警告"),
    "table": ("table", "个表格"),
    "tool": ("tool", "个工具"),
    "section": ("section", "个章节"),
    "slide": ("slide", "张幻灯片"),
    "sheet": ("sheet", "个工作表"),
}
"""Counted things: English singular (an 's' is added) and the Chinese measure word with its noun."""


def count(n: int, unit: str) -> str:
    """'3 turns' / '3 轮'; '10,001 chunks' / '10,001 个分块'."""
    english, chinese = UNITS[unit]
    return f"{n:,} {chinese}" if language() == "zh" else plural(n, english)


def size(n: int) -> str:
    """'688 bytes' / '688 字节'; '2.6 MB' in both."""
    shown = byte_size(n)
    return shown.replace(" bytes", " 字节") if language() == "zh" else shown


def ordinal(n: int) -> str:
    """'1st', '2nd', '11th', '23rd'; in Chinese the bare number (its template says 第 {place} 位)."""
    if language() == "zh":
        return str(n)
    suffix = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def message_ids(path: str) -> list[str]:
    """The message ids a source file passes to `_` (its literal first arguments), in order."""
    import ast

    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "_"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append(node.args[0].value)
    return found


def ranking(hit: Hit) -> str:
    """Where each search put a hit (`Hit.ranking`) in the user's language: 'hybrid #2 · vector #3 (0.82) ·
    keyword: not found' / '混合 #2 · 向量 #3 (0.82) · 关键词：未找到'."""
    hybrid = hit.fused_rank is not None
    parts = [_("hybrid #{rank}", rank=hit.fused_rank)] if hybrid else []
    if hit.vector_rank is not None:
        score = "" if hit.vector_score is None else f" ({hit.vector_score:.2f})"
        parts.append(_("vector #{rank}", rank=hit.vector_rank) + score)
    elif hybrid:
        parts.append(_("vector: not found"))
    if hit.keyword_rank is not None:
        score = "" if hit.keyword_score is None else f" (BM25 {hit.keyword_score:.1f})"
        parts.append(_("keyword #{rank}", rank=hit.keyword_rank) + score)
    elif hybrid:
        parts.append(_("keyword: not found"))
    shown = " · ".join(parts) or _("score {score}", score=f"{hit.score:.3f}")
    if hit.found_by == "rewrite":
        return _("rewrite: {ranking}", ranking=shown)
    if hit.found_by == "with previous":
        return _("with previous: {ranking}", ranking=shown)
    if hit.found_by == "question":
        return _("question: {ranking}", ranking=shown)
    return shown


_LINES = re.compile(r"^(?:(?P<heading>.*) · )?lines? (?P<lines>\d+(?:–\d+)?)$", re.DOTALL)
_UNIT = re.compile(r"^(?P<unit>slides?|sheets?) (?P<which>.+)$", re.DOTALL)


def location(hit: Hit) -> str:
    """Where a hit is in its file (`Hit.location`: 'p. 4', 'pp. 4–5', 'slide 3', 'sheet Sales', a heading
    path, 'Guide › Install · lines 7–9') in the user's language: '第 4 页', '第 7–9 行'; a heading or a
    sheet's name as it is."""
    return _place_in_file(str(hit.metadata.get("location") or ""), hit.pages, hit.original_filename)


def copy_place(copy: Copy) -> str:
    """Where a copy of a hit's passage stands ('report.pdf pp. 8–9', 'report.pdf 第 8–9 页')."""
    return f"{copy.filename} {_place_in_file(copy.location, copy.pages, copy.filename)}".strip()


def _place_in_file(location: str, pages: Sequence[int], filename: str) -> str:
    """`records.place_in_file` in the user's language."""
    where = place_in_file(location, pages)
    if language() != "zh" or not where:
        return where
    if not location:  # the pages ('p. 4', 'pp. 4–5')
        return pages_place(pages)
    return place(where, filename)


def pages_place(pages: Sequence[int]) -> str:
    """Pages from the first to the last of `pages` in the user's language: 'p. 4', 'pp. 4–5', '第 4–5 页';
    '–' for none."""
    if not pages:
        return "–"
    first, last = min(pages), max(pages)
    return _("p. {page}", page=first) if first == last else _("pp. {first}–{last}", first=first, last=last)


def place(where: str, filename: str) -> str:
    """A location that `rag.documents.Document` wrote for a chunk of `filename` ('slide 3', 'sheet Sales',
    'Guide › Install · lines 7–9', a heading path) in the user's language."""
    if language() != "zh":
        return where
    lines = _LINES.match(where)
    if lines and filename.lower().endswith((".txt", ".md")):
        shown = _("lines {lines}", lines=lines["lines"])
        return f"{lines['heading']} · {shown}" if lines["heading"] else shown
    unit = _UNIT.match(where)
    if unit and filename.lower().endswith((".pptx", ".xlsx", ".xls")):
        if unit["unit"].startswith("slide"):
            return _("slides {numbers}", numbers=unit["which"])
        return _("sheets {names}", names=unit["which"])
    return where


def export_source(source: Source) -> str:
    """A source's line in an exported conversation: its label, where each search ranked it, its chunk."""
    return _(
        "{label} ({ranking}, chunk {id})", label=source_label(source), ranking=ranking(source.hit), id=source.hit.id
    )


def source_label(source: Source) -> str:
    """A numbered source as its citation names it (`Source.label`: '[1] report.pdf p. 4'), its location
    in the user's language."""
    where = location(source.hit)
    return f"[{source.n}] {shown_name(source.hit.original_filename)}{' ' + where if where else ''}"
