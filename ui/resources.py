"""What the app shares across reruns and sessions: settings, the store, the embedder, the GPU
sampler and the status look-ups, each cached once (st.cache_resource objects are thread-safe)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import streamlit as st

from rag import gpu, retrieve
from rag import status as rag_status
from rag.embeddings import Embedder
from rag.llms import LocalChatModel
from rag.settings import Settings, get_settings
from rag.store import ServerInfo, Store

if TYPE_CHECKING:
    from rag.generate.kb_tools import KnowledgeBaseTools


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


@st.cache_resource(show_spinner=False)
def preload_embedded_model(name: str | None) -> bool:
    """Start loading the embedded chat model `name` (None: the one `local` means) once per process,
    on a background thread (True when started)."""
    from rag import llms

    return llms.preload_embedded_model(name) is not None


@st.cache_data(ttl=15, show_spinner=False)
def ollama_status() -> rag_status.OllamaStatus:
    return rag_status.ollama_status(get_settings())


@st.cache_resource(show_spinner=False)
def kb_tools() -> KnowledgeBaseTools:
    """This app's own MCP tools, called in-process on the shared store (the Tools page tries them)."""
    from rag.generate.kb_tools import KnowledgeBaseTools

    return KnowledgeBaseTools(settings(), store=store())


@st.cache_data(ttl=60, show_spinner=False)
def gpu_presence() -> rag_status.GpuPresence:
    return rag_status.gpu_presence()


@st.cache_data(ttl=10, show_spinner=False)  # a server killed under the app shows within 10 s (a ~1 ms query)
def server_info() -> ServerInfo:
    return current(store().server_info())


def current(info: ServerInfo) -> ServerInfo:
    """`info` as an instance of the class `rag.store` holds now. An edit under `streamlit run` imports every module
    of the app anew, while the store (st.cache_resource) keeps making the old class's, which st.cache_data cannot
    pickle ("Can't pickle <class 'rag.store.records.ServerInfo'>: it's not the same object"): every page was down
    until a restart (a Chromium walk, the app answering while a file changed)."""
    return ServerInfo(**dataclasses.asdict(info))
