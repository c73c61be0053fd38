"""Resources and small widgets shared by the pages (UI only; the work happens in rag/)."""
from __future__ import annotations

import logging

import streamlit as st

from rag import chunking, gpu
from rag import status as rag_status
from rag.chunking import ChunkSettings
from rag import retrieve
from rag.embeddings import Embedder
from rag.errors import RagError
from rag.llms import LocalChatModel
from rag.settings import Settings, get_settings
from rag.store import ServerInfo, Store

log = logging.getLogger(__name__)


def settings() -> Settings:
    return get_settings()


@st.cache_resource(show_spinner="Starting the database…")
def store() -> Store:
    """One connection pool for the whole app (thread-safe)."""
    return Store.open(get_settings())


@st.cache_resource(show_spinner="Loading the embedder…")
def default_embedder() -> Embedder:
    return retrieve.embedder_named_or_default(get_settings())


@st.cache_resource(show_spinner=False, max_entries=1, on_release=gpu.GpuSampler.stop)
def gpu_sampler(source: str) -> gpu.GpuSampler:
    """One sampler for the whole app, started with it so that the GPU page has the history of
    generations made before it was opened; `source` names the NVML in use."""
    return gpu.GpuSampler(gpu.nvml_factory(source)).start()


LOCAL = "local"
"""The model choice that names the embedded chat model (as rag.llms.resolve_chat_model reads it)."""


@st.cache_data(ttl=300, show_spinner=False)
def local_model_available() -> tuple[bool, str]:
    """(True, '') when the embedded chat model can run, else (False, what to install)."""
    return LocalChatModel.available()


@st.cache_data(ttl=15, show_spinner=False)
def ollama_status() -> rag_status.OllamaStatus:
    return rag_status.ollama_status(get_settings())


@st.cache_data(ttl=60, show_spinner=False)
def gpu_presence() -> rag_status.GpuPresence:
    return rag_status.gpu_presence()


@st.cache_data(ttl=60, show_spinner=False)
def server_info() -> ServerInfo:
    return store().server_info()


def show_error(exc: BaseException, what: str = "") -> None:
    """A rag error as one readable line; anything else logged, with a short message."""
    if isinstance(exc, RagError):
        st.error(f"{what}: {exc}" if what else str(exc), icon="⚠️")
    else:
        log.exception("unexpected error")
        st.error(f"{what or 'Something went wrong'}: {type(exc).__name__}: {exc}", icon="⚠️")


def try_store() -> Store | None:
    try:
        return store()
    except RagError as exc:
        show_error(exc, "Database")
        return None


_FIELDS = {
    "strategy": "strategy", "chunk_size": "chunk_size", "chunk_overlap": "chunk_overlap",
    "min_chars": "min_chunk_size_chars", "min_embed": "min_chunk_length_to_embed",
    "max_chunks": "max_num_chunks", "keep_sep": "keep_separator",
}


def set_chunk_settings(key: str, values: ChunkSettings) -> None:
    """Put settings into the widgets of `chunk_settings_widget(key)` (before they are drawn)."""
    for suffix, field in _FIELDS.items():
        st.session_state[f"{key}_{suffix}"] = getattr(values, field)
    matching = next((n for n, p in chunking.PRESETS.items() if p == values), "Custom")
    st.session_state[f"{key}_preset"] = matching


def chunk_settings_widget(key: str, initial: ChunkSettings | None = None) -> ChunkSettings | None:
    """Preset picker and the settings it fills in; returns None (after an error) if invalid.

    Widget keys: `{key}_preset`, `{key}_strategy`, `{key}_chunk_size`, `{key}_chunk_overlap`,
    `{key}_min_chars`, `{key}_min_embed`, `{key}_max_chunks`, `{key}_keep_sep`.
    """
    if f"{key}_strategy" not in st.session_state:
        set_chunk_settings(key, initial or chunking.SPRING_DEFAULT)

    def apply_preset() -> None:
        chosen = chunking.PRESETS.get(st.session_state[f"{key}_preset"])
        if chosen is not None:
            set_chunk_settings(key, chosen)

    st.selectbox("Preset", [*chunking.PRESETS, "Custom"], key=f"{key}_preset", on_change=apply_preset,
                 help="Fills in the settings below; change any of them to customise.")
    strategy = st.radio("Strategy", chunking.STRATEGIES, horizontal=True, key=f"{key}_strategy",
                        help=chunking.HELP["strategy"])
    c1, c2 = st.columns(2)
    size = c1.number_input("Chunk size (tokens)", 1, 8192, step=16, key=f"{key}_chunk_size",
                           help=chunking.HELP["chunk_size"])
    overlap = c2.number_input("Overlap (tokens)", 0, 4096, step=8, key=f"{key}_chunk_overlap",
                              help=chunking.HELP["chunk_overlap"], disabled=strategy == "spring")
    c3, c4 = st.columns(2)
    min_chars = c3.number_input("Min chunk size (chars)", 0, 10000, key=f"{key}_min_chars",
                                help=chunking.HELP["min_chunk_size_chars"], disabled=strategy != "spring")
    min_embed = c4.number_input("Min length to embed (chars)", 0, 1000, key=f"{key}_min_embed",
                                help=chunking.HELP["min_chunk_length_to_embed"])
    c5, c6 = st.columns(2)
    max_chunks = c5.number_input("Max chunks", 1, 1_000_000, key=f"{key}_max_chunks",
                                 help=chunking.HELP["max_num_chunks"])
    keep = c6.checkbox("Keep separator", key=f"{key}_keep_sep", help=chunking.HELP["keep_separator"],
                       disabled=strategy != "spring")
    try:
        chosen = ChunkSettings(strategy=strategy, chunk_size=int(size),
                               chunk_overlap=0 if strategy == "spring" else int(overlap),
                               min_chunk_size_chars=int(min_chars), min_chunk_length_to_embed=int(min_embed),
                               max_num_chunks=int(max_chunks), keep_separator=bool(keep))
    except RagError as exc:
        show_error(exc, "Chunk settings")
        return None
    if chosen not in chunking.PRESETS.values() and st.session_state.get(f"{key}_preset") != "Custom":
        st.caption("Custom settings (changed from the preset).")
    return chosen
