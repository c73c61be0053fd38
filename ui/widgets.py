"""Widgets more than one page draws: errors as one line, the chunk settings form, keyed tables."""

from __future__ import annotations

import logging

import pandas as pd
import streamlit as st

from rag import chunking
from rag.chunking import FIELDS, ChunkSettings
from rag.errors import FilterSyntaxError, RagError
from rag.query import filters
from rag.store import Store
from ui import format as fmt
from ui import i18n, resources
from ui.i18n import _, tr

log = logging.getLogger(__name__)


def show_error(exc: BaseException, what: str = "") -> None:
    """A rag error as one readable line; anything else logged, with a short message. A filter error
    shows the text as typed with a caret under the problem (as `rag search --filter` prints it)."""
    if isinstance(exc, FilterSyntaxError):
        st.error(f"{what + ': ' if what else ''}{fmt.md(tr(exc.reason))} (position {exc.position}):", icon="⚠️")
        st.code(filters.caret(exc.expression, exc.position), language=None)
    elif isinstance(exc, RagError):
        st.error(f"{what}: {tr(exc)}" if what else tr(exc), icon="⚠️")
    else:
        log.exception("unexpected error")
        st.error(f"{what or _('Something went wrong')}: {type(exc).__name__}: {exc}", icon="⚠️")


def try_store() -> Store | None:
    """The app's store, or None after showing why the database is not available."""
    try:
        return resources.store()
    except RagError as exc:
        show_error(exc, _("Database"))
        return None


def table(key: str, frame: pd.DataFrame, **kwargs: object) -> None:
    """A read-only table in a keyed container (a display dataframe has no key of its own), its column
    names in the user's language."""
    kwargs["column_config"] = i18n.columns(frame, kwargs.get("column_config"))  # type: ignore[arg-type]
    # A missing value is an empty cell: Streamlit writes "None", English in the Chinese UI too (the Upload
    # results of a stopped ingest in a walk).
    kwargs.setdefault("placeholder", "")
    with st.container(key=key):
        st.dataframe(frame, **kwargs)


def document_table(key: str, table: str) -> None:
    """A Markdown table found in a document (`rag.documents.tables_in`) drawn as data, its cells shown as
    text: drawn as Markdown, an image in a cell would be fetched as soon as the file is previewed (issue 33).
    Its column names are the document's, not translated."""
    names, rows = fmt.table_cells(table)
    with st.container(key=key):
        st.dataframe(pd.DataFrame(rows, columns=names, dtype=str), hide_index=True)


def set_chunk_settings(key: str, values: ChunkSettings) -> None:
    """Put settings into the widgets of `chunk_settings_widget(key)` (before they are drawn)."""
    for field in FIELDS:
        st.session_state[f"{key}_{field.short}"] = getattr(values, field.name)
    choice = chunking.preset_choice(values)
    st.session_state[f"{key}_preset"] = choice
    st.session_state[f"{key}_preset_base"] = None if choice == chunking.CUSTOM else choice


def _widget_values(key: str) -> dict[str, object]:
    return {field.name: st.session_state.get(f"{key}_{field.short}", field.default) for field in FIELDS}


def _sync_preset(key: str) -> None:
    """A setting changed: the preset box shows the preset the settings now equal, or '<preset>, changed'."""
    try:
        settings = chunking.from_widget_values(_widget_values(key))
    except RagError:
        settings = None
    choice = chunking.preset_choice(settings)
    st.session_state[f"{key}_preset"] = choice
    if choice != chunking.CUSTOM:
        st.session_state[f"{key}_preset_base"] = choice


def chunk_settings_widget(key: str, initial: ChunkSettings | None = None) -> ChunkSettings | None:
    """Preset picker and the settings it fills in (one widget per chunking.FIELDS entry); returns
    None (after an error) if invalid.

    Widget keys: `{key}_preset`, then `{key}_{field.short}`: `{key}_strategy`, `{key}_chunk_size`,
    `{key}_chunk_overlap`, `{key}_min_chars`, `{key}_min_embed`, `{key}_max_chunks`, `{key}_keep_sep`.
    """
    if f"{key}_strategy" not in st.session_state:
        set_chunk_settings(key, initial or chunking.DEFAULT)

    def apply_preset() -> None:
        chosen = chunking.PRESETS.get(st.session_state[f"{key}_preset"])
        if chosen is not None:
            set_chunk_settings(key, chosen)

    current = st.session_state.get(f"{key}_preset")
    base = st.session_state.get(f"{key}_preset_base")
    # Labels made now, in this run's language (a format_func may be called outside the script run).
    presets = {name: _(name) for name in chunking.PRESETS}
    # '<preset>, changed' only while it is the choice: listed under an unchanged preset, the menu offered the
    # preset twice, once as "changed" (a walk).
    presets[chunking.CUSTOM] = (
        _("{preset}, changed", preset=_(base))
        if current == chunking.CUSTOM and base in chunking.PRESETS
        else _(chunking.CUSTOM)
    )
    preset_help = _(chunking.PRESET_HELP[current]) if current in chunking.PRESET_HELP else ""
    i18n.relabel(f"{key}_preset")
    i18n.relabel(f"{key}_{FIELDS[0].short}")  # the strategy's radio: labels too
    st.selectbox(
        _("Preset"),
        [*chunking.PRESETS, chunking.CUSTOM],
        key=f"{key}_preset",
        on_change=apply_preset,
        format_func=presets.get,
        help=i18n.sentences(preset_help, _("Fills in the settings below; change any of them to customise.")),
    )
    strategy_field, *numbers = FIELDS
    strategies = {s: _(label) for s, label in chunking.STRATEGY_LABELS.items()}
    strategy = st.radio(
        _(strategy_field.label),
        chunking.STRATEGIES,
        horizontal=True,
        format_func=lambda s: strategies.get(s, s),
        key=f"{key}_{strategy_field.short}",
        help=_(strategy_field.help),
        on_change=_sync_preset,
        args=(key,),
    )
    values: dict[str, object] = {"strategy": strategy}
    for pair in (numbers[i : i + 2] for i in range(0, len(numbers), 2)):
        for field, column in zip(pair, st.columns(2)):
            widget_key = f"{key}_{field.short}"
            disabled = not field.applies_to(strategy)
            if field.kind is bool:
                values[field.name] = bool(
                    column.checkbox(
                        _(field.label),
                        key=widget_key,
                        help=_(field.help),
                        disabled=disabled,
                        on_change=_sync_preset,
                        args=(key,),
                    )
                )
            else:
                values[field.name] = int(
                    column.number_input(
                        _(field.label),
                        field.minimum,
                        field.maximum,
                        step=field.step,
                        key=widget_key,
                        help=_(field.help),
                        disabled=disabled,
                        on_change=_sync_preset,
                        args=(key,),
                    )
                )
    try:
        return chunking.from_widget_values(values)
    except RagError as exc:
        show_error(exc, _("Chunk settings"))
        return None
