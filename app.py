"""RAG Knowledge Lab: the router and the shared sidebar (status of every part, with fixes)."""
from __future__ import annotations

import streamlit as st

from ui import shared
from rag import gpu
from rag import status as rag_status
from rag.errors import RagError

st.set_page_config(page_title="RAG Knowledge Lab", page_icon="🧪", layout="wide")

PAGES = [
    st.Page("pages/upload.py", title="Upload & preview", icon="📄", url_path="upload", default=True),
    st.Page("pages/chunk_lab.py", title="Chunk Lab", icon="🧩", url_path="chunk-lab"),
    st.Page("pages/chat.py", title="Chat", icon="💬", url_path="chat"),
    st.Page("pages/gpu.py", title="GPU monitor", icon="🖥️", url_path="gpu"),
    st.Page("pages/tools.py", title="Tools", icon="🛠️", url_path="tools"),
]


def sidebar() -> None:
    settings = shared.settings()
    checks: list[rag_status.Check] = []
    try:
        info = shared.server_info()
        where = "embedded" if info.embedded else f"external ({info.location})"
        checks.append(rag_status.Check("Database", True,
                                       f"PostgreSQL {info.postgres_version} + pgvector {info.pgvector_version}, {where}"))
    except RagError as exc:
        checks.append(rag_status.Check("Database", False, str(exc),
                                       "check DATABASE_URL, or unset it to use the embedded database"))
    ollama = shared.ollama_status()
    checks.append(rag_status.ollama_check(settings, ollama))
    try:
        checks.append(rag_status.embedder_check(settings, ollama, shared.default_embedder().name))
    except RagError as exc:
        checks.append(rag_status.Check("Embedder", False, str(exc), "set RAG_EMBEDDER=local to work offline"))
    checks.append(rag_status.gpu_check(shared.gpu_presence()))
    with st.sidebar:
        st.markdown("### Status")
        for check in checks:
            icon = "🟢" if check.ok else "🟠"
            st.markdown(f"{icon} **{check.name}**: {check.summary}")
            if check.fix:
                st.caption(f"↳ {check.fix}")


page = st.navigation(PAGES)
shared.gpu_sampler(gpu.selected_nvml())
sidebar()
page.run()
