"""RAG Knowledge Lab: the router and the shared sidebar (status of every part, with fixes).

Every page has its own URL, the first one included: the root URL opens the Upload page at
/upload, and a page reached without this router (Streamlit's discovery of the `pages/` folder on a
server's first request) comes back through it (ui/routing.py).
"""

from __future__ import annotations

import streamlit as st

from rag import gpu, heap
from rag import status as rag_status
from rag.errors import RagError, install_log_masking
from ui import resources
from ui.gate import password_gate
from ui.i18n import _, language_switch, tr

st.set_page_config(page_title="RAG Knowledge Lab", page_icon="🧪", layout="wide")
install_log_masking()  # a driver's error quoted in a log line may hold a connection string
heap.map_large_buffers()  # a thread's heap grew by ~50 MB for an answer now and then (rag.heap)

# Each URL path is the page's file name (chunk-lab too): ui/routing.py relies on it.
UPLOAD = st.Page("pages/upload.py", title=_("Upload & preview"), icon="📄", url_path="upload")
PAGES = [
    UPLOAD,
    st.Page("pages/chunk-lab.py", title=_("Chunk Lab"), icon="🧩", url_path="chunk-lab"),
    st.Page("pages/chat.py", title=_("Chat"), icon="💬", url_path="chat"),
    st.Page("pages/gpu.py", title=_("GPU monitor"), icon="🖥️", url_path="gpu"),
    st.Page("pages/tools.py", title=_("Tools"), icon="🛠️", url_path="tools"),
]


def home() -> None:
    """The root URL. Streamlit serves its default page at the root only, so the default is this
    hidden page, and the Upload page keeps a path of its own (/upload) like every other page."""
    st.switch_page(UPLOAD, query_params=st.query_params.to_dict())  # ?lang= kept


HOME = st.Page(home, title="Home", url_path="home", default=True, visibility="hidden")


def sidebar() -> None:
    settings = resources.settings()
    checks: list[rag_status.Check] = []
    try:
        info = resources.server_info()
        where = _("embedded") if info.embedded else _("external ({location})", location=info.location)
        checks.append(
            rag_status.Check(
                "Database",
                True,
                _(
                    "PostgreSQL {pg} + pgvector {vector}, {where}",
                    pg=info.postgres_version,
                    vector=info.pgvector_version,
                    where=where,
                ),
            )
        )
    except RagError as exc:
        checks.append(
            rag_status.Check(
                "Database",
                False,
                tr(exc),
                _("check DATABASE_URL, or unset it to use the embedded database")
                if settings.database_url
                else _("the embedded database did not answer: see the message, then reload"),
            )
        )
    ollama = resources.ollama_status()
    if settings.preload_chat_model and rag_status.embedded_chat_is_default(settings, ollama):
        resources.preload_embedded_model(settings.chat_model)  # the first question need not wait for it
    checks.append(rag_status.ollama_check(settings, ollama))
    try:
        checks.append(rag_status.embedder_check(settings, ollama, resources.default_embedder().name))
    except RagError as exc:
        checks.append(rag_status.Check("Embedder", False, tr(exc), _("set RAG_EMBEDDER=local to work offline")))
    checks.append(rag_status.gpu_check(resources.gpu_presence()))
    language_switch()
    with st.sidebar:
        st.markdown("### " + _("Status"))
        for check in checks:
            icon = "🟢" if check.ok else "🟠"
            st.markdown(f"{icon} **{_(check.name)}**: {tr(check.summary)}")
            if check.fix:
                st.caption(f"↳ {tr(check.fix)}")


try:
    app_settings = resources.settings()
except (RagError, ValueError) as exc:  # a bad environment value: say which, never a traceback
    st.error(tr(exc), icon="⚠️")
    st.stop()
if not password_gate(app_settings.app_password):
    st.stop()
page = st.navigation([HOME, *PAGES])
resources.gpu_sampler(gpu.selected_nvml())
sidebar()
page.run()
