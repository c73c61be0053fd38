"""Chat: answers grounded in the knowledge bases, with numbered citations that open the cited page.

UI only: widgets are read here and handed as plain values to `rag.generate.engine`, which rewrites
a follow-up, searches, fits the prompt to the model's window and streams the answer (or runs agent
mode); `rag.documents.render` draws the cited passage on its page. What they return is rendered.

How a question flows through the page:
1. Retrieval runs first and the sources are shown (they stay shown when no model is available).
2. The context budget bar says what the prompt costs against the model's window.
3. The answer is generated on the engine's `Runner` thread, kept in session state, and this run
   follows it with `st.write_stream`. A rerun (the Stop button, any other widget) neither kills nor
   restarts the generation: the next run picks it up where it is. Stop sets the runner's
   `stop_event`, which the model's stream checks every 50 ms; the partial answer is kept and marked
   stopped. Following it touches the runner (a heartbeat) and the runner is started with this session's
   `ui.session.keepalive()`: once the session is gone (a closed tab), the process's watchdog stops it
   within `rag.llms.stream.ABANDON_AFTER` seconds, which frees the embedded model for the others. A
   question waiting for the embedded model (one answer at a time) shows its place in line as it moves;
   Stop takes it out of the line.
4. The finished turn joins the history: `[n]` markers become badges that link to their source card
   (`ui.citelinks` opens the card on a click), buttons under the answer open it too, and a card can
   show its page with the passage highlighted.

Session state:
- `chat_turns`: the finished turns (`rag.generate.Turn`) of this session, oldest first.
- `_chat_live`: the turn being answered (`rag.generate.Live`: the turn so far and its `Runner`), or absent.
Widget keys: `chat_kbs`, `chat_model`, `chat_agent`, `chat_mode`, `chat_top_k`, `chat_min_score`,
`chat_filter`, `chat_rewrite`, `chat_temperature`, `chat_think`, `chat_num_ctx`,
`chat_system_prompt`, `chat_prompt_en`, `chat_prompt_zh`, `chat_pull`, `chat_input`, `chat_stop`,
`chat_clear`, `chat_export`, `chat_cite_links` (hears clicks on inline markers); per turn
`chat_sources_<turn>`, and per source `chat_src_<turn>_<n>` (its card), `chat_page_<turn>_<n>` (show the
page), `chat_pageno_<turn>_<n>`, `chat_cite_<turn>_<n>`.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from rag import agent, documents, generate, llms, retrieve
from rag.agent import routes as route_names
from rag.chunking import Chunk
from rag.documents import render
from rag.errors import ModelError, RagError
from rag.generate import Budget, Live, Source, Turn, engine
from rag.llms import ChatModel, StreamEvent
from rag.llms.choice import choice_label, model_options, normalise_choice, ollama_unavailable
from rag.llms.resolve import no_chat_model_advice
from rag.llms.stream import Runner, fold
from rag.model_ref import ModelRef
from rag.query import filters
from rag.settings import Settings
from rag.store import Store
from rag.store.conversations import ConversationInfo
from rag.text import shown_name
from ui import citelinks, i18n, resources, session, widgets
from ui.format import md as _md
from ui.format import md_lines, no_images, no_math
from ui.i18n import _, count, tr

log = logging.getLogger("pages.chat")

TURNS = "chat_turns"
LIVE = "_chat_live"
# The question whose rewrite and search are running: a run ended meanwhile (Stop, or a click elsewhere) is known by
# it in the next one. (A comment, not a string under it: Streamlit's magic draws a page's bare strings.)
ASKING = "_chat_asking"
STOPPED_EARLY = "_chat_stopped_early"
# The id of the stored conversation the turns belong to (None: not saved yet; the first answer creates it).
CONVERSATION = "chat_conversation"
LOCAL = resources.LOCAL
# (Comments, not docstrings, at the top level: Streamlit's magic would print a bare string.)
POLL_SECONDS = 0.1  # how often a run following a generation looks for new text (and for Stop)
DEFAULTS: dict[str, Any] = {
    "chat_mode": retrieve.DEFAULT_MODE,
    "chat_top_k": 8,
    "chat_min_score": 0.0,
    "chat_filter": "",
    "chat_rewrite": True,
    "chat_temperature": 0.2,
    "chat_think": True,
    "chat_num_ctx": 0,
    "chat_agent": False,
    "chat_system_prompt": generate.SYSTEM_PROMPT_EN,
}
MODE_LABELS = {"vector": "Vector", "keyword": "Keyword", "hybrid": "Hybrid"}  # translated where shown


# -- small formatting helpers --------------------------------------------------------------------

BADGES = {
    generate.Status.CITED: ":blue-badge[{n}]",
    generate.Status.MATCHED: ":gray-badge[≈ {n}]",
    "unchecked": ":gray-badge[{n}]",
    generate.Status.OTHER_LANGUAGE: ":gray-badge[🌐 {n}]",
    generate.Status.UNHELD: ":orange-badge[≈ {n} ?]",
    "unknown": ":red-badge[⚠ {n}]",
}
NOT_SUPPORTED_BADGE = ":orange-badge[{n} ?]"  # also for "padding": this source does not hold the words
UNSUPPORTED_FLAG = ":orange-badge[⚠ {no_source}]"
BADGE_LEGEND = (
    "Blue [n]: the cited source states the sentence's claim (the same names, numbers, negation and "
    "relation within one of its sentences; checked by rules, not by a model) · orange [n ?]: it does "
    "not · grey ≈ n: matched to a source afterwards, not cited "
    "by the model · orange ≈ n ?: not cited, and source n holds its words but not its claim · grey n: too short "
    "to check · grey 🌐 n: the source is in another language, its words not compared · ⚠ no source: no passage "
    "holds the sentence's words · red ⚠ n: no such source."
)  # shown as _(BADGE_LEGEND)


def answer_markdown(answer: str, grounding: generate.Grounding, turn_id: str | None = None) -> str:
    """The answer with each `[n]` marker as a badge coloured by what the check found (see BADGE_LEGEND);
    with `turn_id`, a badge of a source the answer had is a link that opens that source's card."""

    def badge(n: int, kind: str) -> str:
        drawn = BADGES.get(kind, NOT_SUPPORTED_BADGE).format(n=n)
        return drawn if turn_id is None or kind == "unknown" else citelinks.marker(drawn, turn_id, n)

    return no_math(generate.annotate(answer, grounding, badge, UNSUPPORTED_FLAG.format(no_source=_("no source"))))


# -- cached look-ups (keyed by the Ollama host, so another host never sees stale answers) ---------


@st.cache_data(ttl=15, show_spinner=False)
def _ollama_chat_models(host: str) -> list[str] | None:
    return llms.list_ollama_chat_models(host)


@st.cache_data(ttl=60, show_spinner=False)
def _thinks(host: str, model: str) -> bool:
    return llms.OllamaChatModel(host, model).supports_thinking


@st.cache_data(ttl=60, show_spinner=False)
def _agent_ok(host: str, model_name: str) -> tuple[bool, str]:
    return agent.agent_available(model_name)


@st.cache_data(ttl=30, show_spinner=False)
def _ollama_window(host: str, model: str) -> engine.Window:
    """An Ollama model's context window (asking Ollama once in 30 s, not on every rerun)."""
    return engine.context_window(llms.OllamaChatModel(host, model))


@st.cache_resource(max_entries=8, show_spinner="…")
def _document(document_id: str, filename: str) -> tuple[bytes, documents.Document] | None:
    data = resources.store().document_bytes(uuid.UUID(document_id))
    if data is None:
        return None
    return data, documents.load_bytes(data, filename)


@st.cache_data(max_entries=64, show_spinner="…")
def _page_png(
    document_id: str, filename: str, page: int, index: int, start: int, end: int, pages: tuple[int, ...]
) -> tuple[bytes, int] | None:
    """The page as PNG with the passage boxed, and how many lines were boxed; None if the
    document is gone or has no page images."""
    loaded = _document(document_id, filename)
    if loaded is None:
        return None
    data, doc = loaded
    if not render.renderable(doc):
        return None
    image = render.render_page(data, doc, page, [Chunk(index, "", 0, start, end, pages)])
    return image.png, image.boxes


# -- controls -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelChoice:
    choice: str
    model: ChatModel | None
    problem: str = ""
    """Why no model can answer (with the commands that fix it)."""
    pull: str = ""
    """An Ollama model that is not pulled yet."""
    context: int | None = None
    context_note: str = ""
    thinks: bool = False


@dataclass(frozen=True)
class Controls:
    kbs: tuple[str, ...]
    top_k: int
    min_score: float | None
    filter: str | None
    mode: str
    temperature: float
    think: bool | None
    rewrite: bool
    agent: bool
    template: str | None
    """The edited system prompt; None while it is one of the defaults (then the question's language picks)."""
    num_ctx: int | None
    model: ModelChoice
    route: str | None = None
    """Agent mode's forced route; None: the router picks."""
    allowed_tools: tuple[str, ...] = ()
    """Tools that may change things which the user allowed (agent mode runs no other such tool)."""
    saved: ConversationInfo | None = None
    """The stored conversation the turns are kept in, as the sidebar listed it (None: not stored yet)."""


def _turns() -> list[Turn]:
    return st.session_state.setdefault(TURNS, [])


def _set_defaults() -> None:
    # A default prompt is shown in the UI's language when the page opens and after a language switch (either
    # default is used to match the question's language, but the Chinese UI showed the English one: a walk read it
    # as what Chinese questions get). The two buttons still show the other one until the language changes. Set in
    # the UI's language here too: Streamlit forgets a widget's value on another page, and back on this one the
    # English default came again while the language had not changed.
    language = i18n.language()
    prompt = generate.SYSTEM_PROMPT_ZH if language == "zh" else generate.SYSTEM_PROMPT_EN
    for key, value in {**DEFAULTS, "chat_system_prompt": prompt}.items():
        st.session_state.setdefault(key, value)
    if st.session_state.get("_chat_prompt_lang") != language:
        st.session_state["_chat_prompt_lang"] = language
        if generate.is_default_prompt(st.session_state["chat_system_prompt"]):
            st.session_state["chat_system_prompt"] = (
                generate.SYSTEM_PROMPT_ZH if language == "zh" else generate.SYSTEM_PROMPT_EN
            )


def _reset_prompt(text: str) -> None:
    st.session_state["chat_system_prompt"] = text


def _pick_model(settings: Settings) -> ModelChoice:
    host = settings.ollama_host
    pulled = _ollama_chat_models(host)
    local_ok, local_reason = resources.local_model_available()
    options, default = model_options(settings.chat_model, pulled, st.session_state.get("_chat_extra_models", []))
    current = st.session_state.get("chat_model")
    if isinstance(current, str) and current.strip():
        # Kept even when not listed now: typed in by the user, or Ollama went away meanwhile.
        choice = normalise_choice(current)
        if choice not in options:
            st.session_state.setdefault("_chat_extra_models", []).append(choice)
            options.insert(len(options) - 1, choice)
        st.session_state["chat_model"] = choice
    else:
        st.session_state["chat_model"] = default

    labels = {o: tr(choice_label(o, pulled, local_ok)) for o in options}  # made in the run (see ui/i18n.py)

    def label(choice: str) -> str:
        return labels.get(choice) or choice_label(choice, pulled, local_ok)

    i18n.relabel("chat_model")  # its labels are translated: after a language switch, send its choice again
    raw = st.selectbox(
        _("Model"),
        options,
        key="chat_model",
        format_func=label,
        accept_new_options=True,
        help=_("Ollama's chat models and the embedded one. Type another Ollama model's name to pull it."),
    )
    choice = normalise_choice(str(raw or default))
    if choice == LOCAL:
        if not local_ok:
            return ModelChoice(
                choice, None, tr(local_reason) if pulled else tr(no_chat_model_advice(host, pulled, local_reason))
            )
        return ModelChoice(choice, llms.resolve_chat_model(settings, LOCAL))
    unavailable = ollama_unavailable(choice, pulled, host, local_ok)
    if unavailable is not None:
        return ModelChoice(choice, None, tr(unavailable.problem), pull=unavailable.pull)
    try:
        model = llms.resolve_chat_model(settings, choice)
    except ModelError as exc:
        return ModelChoice(choice, None, tr(exc))
    return ModelChoice(choice, model, thinks=_thinks(host, ModelRef.parse(choice, bare="ollama").name))


def _pull(settings: Settings, name: str) -> bool:
    bar = st.progress(0.0, text=_("Pulling {name}…", name=name))
    shown = {"fraction": 0.0}

    def progress(status: str, completed: int | None, total: int | None) -> None:
        if total and completed is not None:
            shown["fraction"] = min(max(completed / total, 0.0), 1.0)
            status = f"{status} · {completed / 1e6:,.0f} of {total / 1e6:,.0f} MB"
        bar.progress(shown["fraction"], text=status or "…")

    try:
        llms.pull_model(settings.ollama_host, name, progress)
    except ModelError as exc:
        widgets.show_error(exc, _("Pull"))
        return False
    bar.progress(1.0, text=_("Pulled {name}", name=name))
    _ollama_chat_models.clear()
    return True


def _model_section(settings: Settings) -> ModelChoice:
    picked = _pick_model(settings)
    if picked.model is not None:
        window = _window(settings, picked.model)
        note = _window_note(window, ollama=isinstance(picked.model, llms.OllamaChatModel))
        picked = dataclasses.replace(picked, context=window.tokens, context_note=note)
        st.caption(
            _(
                "In use: **{model}** · context window {tokens} tokens ({note})",
                model=_md(picked.model.name),
                tokens=f"{window.tokens:,}",
                note=note,
            )
        )
    elif picked.pull:
        st.warning(picked.problem, icon="📦")
        if st.button(
            _("Pull {name}", name=picked.pull),
            key="chat_pull",
            icon="⬇️",
            help=_("Download the model into Ollama (POST /api/pull); this can take minutes."),
        ) and _pull(settings, picked.pull):
            st.rerun()  # the model is listed now: it is in use
    else:
        st.error(_("No model in use.") + f" {picked.problem}", icon="🚫")
    return picked


def _window(settings: Settings, model: ChatModel) -> engine.Window:
    """The window the budget is drawn against, by the engine's rule; num_ctx only for Ollama (the
    embedded model's window is fixed when it is loaded, and its num_ctx widget is disabled)."""
    if not isinstance(model, llms.OllamaChatModel):
        return engine.context_window(model)
    num_ctx = int(st.session_state.get("chat_num_ctx") or 0)
    return engine.context_window(model, num_ctx) if num_ctx else _ollama_window(settings.ollama_host, model.model)


def _window_note(window: engine.Window, ollama: bool) -> str:
    """How the window's figure is known, in the user's language."""
    if window.known == "num_ctx":
        return _("num_ctx set below")
    if window.known == "assumed":
        return _("assumed: Ollama did not say") + f" ({window.reason})"
    return _("from Ollama") if ollama else _("fixed when the embedded model is loaded")


def _open_conversation(store: Store, conversation_id: str) -> None:
    live: Live | None = st.session_state.pop(LIVE, None)
    if live is not None:
        live.runner.stop()
    try:
        info, turns = generate.load_conversation(store.conversations, conversation_id)
    except RagError as exc:
        st.session_state["_chat_flash"] = _("The conversation cannot be opened: {error}", error=tr(exc))
        return
    st.session_state[TURNS] = turns
    st.session_state[CONVERSATION] = str(info.id)
    st.session_state["chat_title"] = info.title
    if info.knowledge_bases:
        st.session_state["chat_kbs"] = list(info.knowledge_bases)


def _delete_conversation(store: Store, conversation_id: str) -> None:
    try:
        store.conversations.delete(conversation_id)
    except RagError as exc:
        st.session_state["_chat_flash"] = _("The conversation was not deleted: {error}", error=tr(exc))
        return
    if st.session_state.get(CONVERSATION) == conversation_id:
        _clear()
    st.session_state["chat_delete_confirm"] = False


def _conversations_section(store: Store | None) -> ConversationInfo | None:
    """Past conversations: open one, rename, export or delete the current one, or start a new one. Returns the
    current one as listed (None: not stored yet, or no database), for the page's own export."""
    with st.expander(_("Conversations"), icon="🗂️"):
        if store is None:
            st.caption(_("Conversations are kept in the database, which is not available."))
            return None
        flash = st.session_state.pop("_chat_flash", None)
        if flash:
            st.error(tr(flash), icon="⚠️")
        st.button(_("New conversation"), key="chat_new", icon="➕", on_click=_clear, width="stretch")
        try:
            saved = store.conversations.list()
        except RagError as exc:
            widgets.show_error(exc, _("Conversations"))
            return None
        by_id = {str(c.id): c for c in saved}
        current = st.session_state.get(CONVERSATION)
        if saved:
            picked = st.selectbox(
                _("Past conversations"),
                list(by_id),
                index=None,
                key="chat_pick",
                placeholder=_("Open one…"),
                format_func={
                    i: f"{c.title} · {c.updated_at:%Y-%m-%d %H:%M} · {', '.join(c.knowledge_bases) or '-'} · "
                    f"{count(c.turns, 'turn')}"
                    for i, c in by_id.items()
                }.get,
            )
            st.button(
                _("Open"),
                key="chat_open",
                disabled=picked is None or picked == current,
                icon="📂",
                on_click=_open_conversation,
                args=(store, picked),
            )
        else:
            st.caption(_("None yet: each answer is saved, and a conversation shows here after its first one."))
        if current not in by_id:
            return None
        info = by_id[current]
        st.caption(
            _(
                "This conversation: {turns}, started {date}.",
                turns=count(info.turns, "turn"),
                date=f"{info.created_at:%Y-%m-%d %H:%M}",
            )
        )
        st.session_state.setdefault("chat_title", info.title)
        title = st.text_input(_("Title"), key="chat_title")
        if st.button(_("Rename"), key="chat_rename", disabled=not (title or "").strip() or title == info.title):
            try:
                store.conversations.rename(current, title)
            except RagError as exc:
                widgets.show_error(exc, _("Rename"))
            else:
                st.rerun()
        turns = _turns()
        markdown, name = _markdown_export(info, turns)
        st.download_button(
            _("Export as Markdown"),
            data=markdown,
            key="chat_export_md",
            file_name=name,
            mime="text/markdown",
            icon="⬇️",
            on_click="ignore",
            width="stretch",
        )
        st.download_button(
            _("Export as JSON"),
            data=generate.conversation_json(info, turns),
            key="chat_export_json",
            file_name=f"conversation-{info.created_at:%Y%m%d-%H%M}.json",
            mime="application/json",
            icon="⬇️",
            on_click="ignore",
            width="stretch",
            help=_(
                "Every turn's record: question, query, route, sources with chunk ids and ranks, answer, model, timings"
            ),
        )
        confirm = st.checkbox(
            _(
                "I understand that '{title}' and its {turns} will be deleted",
                title=info.title,
                turns=count(info.turns, "turn"),
            ),
            key="chat_delete_confirm",
        )
        st.button(
            _("Delete this conversation"),
            key="chat_delete",
            disabled=not confirm,
            icon="🗑️",
            on_click=_delete_conversation,
            args=(store, current),
        )
        return info


def _controls(store: Store | None, settings: Settings) -> Controls:
    _set_defaults()
    with st.sidebar:
        st.markdown("### " + _("Chat"))
        saved = _conversations_section(store)
        kbs = []
        if store is not None:
            try:
                kbs = store.list_knowledge_bases()
            except RagError as exc:
                widgets.show_error(exc, _("Knowledge bases"))
        by_name = {kb.name: kb for kb in kbs}
        kept = [n for n in st.session_state.get("chat_kbs") or [] if n in by_name]
        st.session_state["chat_kbs"] = kept or list(by_name)  # none chosen is never useful: all
        docs = {n: count(kb.documents, "doc") for n, kb in by_name.items()}
        chosen = st.multiselect(
            _("Knowledge bases"),
            list(by_name),
            key="chat_kbs",
            placeholder=_("Choose knowledge bases"),
            format_func=lambda n: f"{n} · {docs[n]}" if n in docs else n,
            help=_("The knowledge bases to search; each is searched with the embedder it was built with."),
        )
        if not by_name:
            st.caption(_("No knowledge bases yet: ingest documents on the Upload page first."))

        model = _model_section(settings)
        if model.model is not None:
            ok, reason = _agent_ok(settings.ollama_host, model.model.name)
        else:
            ok, reason = False, _("Agent mode needs a model with tool calling.")
        if not ok:
            st.session_state["chat_agent"] = False
        use_agent = st.toggle(_("Agent mode (tools)"), key="chat_agent", disabled=not ok, help=tr(reason))
        route = _route_picker(settings, use_agent)
        allowed = _consent_picker(use_agent)

        with st.expander(_("Retrieval"), expanded=True, icon="🔎"):
            # Its labels are translated: without this, a switch to Chinese left the browser holding "Hybrid",
            # which no Chinese label matched, and a walk's Chinese session searched by vector.
            i18n.relabel("chat_mode")
            mode = st.radio(
                _("Search mode"),
                retrieve.MODES,
                key="chat_mode",
                horizontal=True,
                format_func={m: _(label) for m, label in MODE_LABELS.items()}.get,
                disabled=use_agent,
                help=_(
                    "Vector: meaning (embeddings). Keyword: BM25 on the words (Chinese "
                    "too). Hybrid: both, their scores normalised and added, the keyword ones weighing more."
                ),
            )
            top_k = st.number_input(
                _("Top-k"),
                1,
                50,
                key="chat_top_k",
                disabled=use_agent,
                help=_(
                    "How many passages are searched for. As many as fit the model's window go "
                    "into the prompt, best first (the last one in part); the rest are "
                    "listed as left out."
                ),
            )
            min_score = st.slider(
                _("Minimum similarity"),
                0.0,
                1.0,
                step=0.05,
                key="chat_min_score",
                disabled=use_agent,
                help=_(
                    "Cosine similarity a vector hit needs (also inside hybrid); at 0 only hits "
                    "opposite in meaning (below 0) are dropped. Keyword hits are kept on their own merit."
                ),
            )
            expression = st.text_input(
                _("Filter"),
                key="chat_filter",
                disabled=use_agent,
                placeholder="original_filename == 'report.pdf' && page >= 3",
                help=_(
                    "Spring AI filter expression over the metadata: ==, !=, <, >=, in [...], nin, "
                    "&&, ||, NOT, parentheses."
                ),
            )
            if expression.strip():
                try:
                    filters.to_sql(expression)
                except RagError as exc:
                    widgets.show_error(exc, _("Filter"))
            rewrite = st.toggle(
                _("Rewrite follow-up questions"),
                key="chat_rewrite",
                help=_(
                    "Before searching, the model turns a follow-up ('and in 2023?', 'what "
                    "about her father?') into a standalone query, searched together with the "
                    "question as asked; a question that stands alone is never rewritten. The "
                    "query searched is shown with the answer."
                ),
            )

        with st.expander(_("Generation"), icon="🎛️"):
            temperature = st.slider(_("Temperature"), 0.0, 1.5, step=0.05, key="chat_temperature")
            think = st.toggle(
                _("Think (reasoning models)"),
                key="chat_think",
                disabled=not model.thinks,
                help=_(
                    "Reasoning models such as deepseek-r1 or qwen3 think before answering; "
                    "the thinking is shown in a collapsed block."
                )
                if model.thinks
                else _("The model in use does not think aloud."),
            )
            is_ollama = (
                isinstance(model.model, llms.OllamaChatModel) or ModelRef.parse(model.choice, bare="ollama").is_ollama
            )
            num_ctx = st.number_input(
                _("Context window (num_ctx)"),
                0,
                1_048_576,
                step=1024,
                key="chat_num_ctx",
                disabled=not is_ollama,
                help=_(
                    "Tokens Ollama loads the model with; 0 keeps the model's own "
                    "setting. A larger window needs more memory."
                ),
            )

        with st.expander(_("System prompt"), icon="📝"):
            st.text_area(
                _("System prompt"),
                key="chat_system_prompt",
                height=220,
                label_visibility="collapsed",
                help=_("`{sources}` is replaced by the numbered sources (they are appended when it is missing)."),
            )
            c1, c2 = st.columns(2)
            c1.button(
                _("English default"),
                key="chat_prompt_en",
                on_click=_reset_prompt,
                args=(generate.SYSTEM_PROMPT_EN,),
                width="stretch",
            )
            c2.button(
                _("Chinese default"),
                key="chat_prompt_zh",
                on_click=_reset_prompt,
                args=(generate.SYSTEM_PROMPT_ZH,),
                width="stretch",
            )
            text = st.session_state["chat_system_prompt"]
            edited = not generate.is_default_prompt(text)
            st.caption(
                _("Edited: used as is.")
                if edited
                else _("A default: the English or Chinese one is used to match the question's language.")
            )

    return Controls(
        kbs=tuple(chosen),
        top_k=int(top_k),
        min_score=float(min_score),
        filter=expression if expression.strip() else None,
        mode=str(mode),
        temperature=float(temperature),
        think=bool(think) if model.thinks else None,
        rewrite=bool(rewrite),
        agent=bool(use_agent and ok),
        template=text if edited and text.strip() else None,
        num_ctx=int(num_ctx) or None,
        model=model,
        route=route,
        allowed_tools=allowed,
        saved=saved,
    )


def _route_picker(settings: Settings, use_agent: bool) -> str | None:
    """Agent mode's route: 'auto' lets the router pick per question; a name forces that route."""
    try:
        routes = generate.agent_routes(settings)
    except RagError as exc:
        widgets.show_error(exc, _("Routes"))
        return None
    names = [route_names.AUTO, *(r.name for r in routes)]
    if st.session_state.get("chat_route") not in names:
        st.session_state["chat_route"] = route_names.AUTO
    # Labels made now, in this run's language: a format_func may be called outside the script run.
    described = {
        r.name: _(
            "{name} · {tools} · budget {budget}",
            name=r.name,
            tools=", ".join(r.tools) or _("no tools"),
            budget=r.budget,
        )
        for r in routes
    }
    # Short: the sidebar cut "auto (greetings get no tools, the r…"; what auto does is said in the help.
    described[route_names.AUTO] = _("auto")
    i18n.relabel("chat_route")
    chosen = st.selectbox(
        _("Route"),
        names,
        key="chat_route",
        disabled=not use_agent,
        format_func=described.get,
        help=_(
            "Which tools the agent gets and how many calls it may make in a turn (routes.toml; see the Tools "
            "page). auto: greetings get no tools, every other question the default route."
        ),
    )
    return None if chosen == route_names.AUTO else str(chosen)


# -- rendering a turn ------------------------------------------------------------------------------


def _expander(label: str, key: str, default: bool, **kwargs: Any) -> DeltaGenerator:
    """A stateful expander (`st.session_state[key]` opens it) whose default applies only at first.

    The default goes into the session state, never into `expanded=`: an expander made with `expanded=` in one
    run and without it in the next is another element to Streamlit (its id is made from its arguments), whose
    state starts closed: the sources panel of a new answer, open, closed at the first click on one of its cards
    (the Chromium walk of issue 31)."""
    if key not in st.session_state:
        st.session_state[key] = default
    return st.expander(label, key=key, on_change="rerun", **kwargs)


def _open_source(turn_id: str, n: int) -> None:
    """A citation badge was clicked: open the sources, the card and its page."""
    st.session_state[f"chat_sources_{turn_id}"] = True
    st.session_state[f"chat_src_{turn_id}_{n}"] = True
    st.session_state[f"chat_page_{turn_id}_{n}"] = True


def _open_cited(turn_id: str, n: int) -> None:
    """An inline `[n]` of an answer was clicked: open that source's card (a number no card has is ignored)."""
    if any(t.id == turn_id and any(s.n == n for s in t.sources) for t in _turns()):
        _open_source(turn_id, n)


def _source_card(turn: Turn, source: Source) -> None:
    hit = source.hit
    meta = hit.metadata
    # Where each search ranked it ("hybrid #2 · vector #3 (0.82) · keyword #1 (BM25 7.4)"), not a bare fused 0.03.
    label = f"{i18n.source_label(source)} · {i18n.ranking(hit)}"
    with _expander(_md(label), f"chat_src_{turn.id}_{source.n}", False):
        where = f" · {_md(i18n.location(hit))}" if meta.get("location") else ""
        scanned = (
            _(" · read by OCR (confidence {confidence}%)", confidence=f"{meta['ocr_confidence']:.0f}")
            if meta.get("ocr") and isinstance(meta.get("ocr_confidence"), (int, float))
            else ""
        )
        st.caption(
            _("knowledge base **{kb}** · chunk {chunk}", kb=_md(hit.knowledge), chunk=meta.get("chunk_index", "?"))
            + f"{where}{scanned}"
        )
        if hit.copies:  # the same passage in other chunks, kept out of the sources (rag.retrieve.copies)
            places = "; ".join(i18n.copy_place(c) for c in hit.copies)
            st.caption(_("The same passage is also in: {places}", places=_md(places)))
        whole = source.text is None or st.toggle(
            _("Show the whole chunk"),
            key=f"chat_whole_{turn.id}_{source.n}",
            help=_("The model was given the part shown (it fits its window)"),
        )
        if not whole:
            st.caption(_("Given to the model in part: the sentences that best match the question."))
        with st.container(border=True, height="content"):
            st.markdown(md_lines(hit.content if whole else source.passage))
        if source.n in turn.gone:
            st.warning(
                _(
                    "This passage's document was deleted or replaced after this answer: the text above is "
                    "what the answer was written from, kept with the conversation."
                ),
                icon="🗑️",
            )
            return
        document_id = meta.get("document_id")
        if not (
            document_id
            and hit.pages
            and isinstance(meta.get("start"), int)
            and isinstance(meta.get("end"), int)
            and render.has_page_images(hit.original_filename)
        ):
            return
        if not st.toggle(_("Show the page with the passage highlighted"), key=f"chat_page_{turn.id}_{source.n}"):
            return
        page = hit.pages[0]
        if len(hit.pages) > 1:
            options = list(hit.pages)
            try:
                loaded = _document(str(document_id), hit.original_filename)
            except (RagError, ValueError, RuntimeError):
                loaded = None  # the page's rendering below says why
            claims = [turn.answer[s.start : s.end] for s in turn.grounding.sentences if source.n in s.numbers]
            first = (
                generate.cited_page(claims, loaded[1].page_parts(int(meta["start"]), int(meta["end"])))
                if loaded is not None
                else None
            )
            page = st.radio(
                _("Page"),
                options,
                index=options.index(first) if first in options else 0,
                key=f"chat_pageno_{turn.id}_{source.n}",
                horizontal=True,
                format_func={p: _("Page {number}", number=p) for p in hit.pages}.get,
            )
        try:
            rendered = _page_png(
                str(document_id),
                hit.original_filename,
                int(page),
                int(meta.get("chunk_index") or 0),
                int(meta["start"]),
                int(meta["end"]),
                tuple(hit.pages),
            )
        except (RagError, ValueError, RuntimeError) as exc:
            widgets.show_error(
                exc, _("Page {number} of {file}", number=page, file=_md(shown_name(hit.original_filename)))
            )
            return
        if rendered is None:
            st.info(
                _(
                    "{file} has no page images (or is no longer stored): the passage is shown above.",
                    file=_md(shown_name(hit.original_filename)),
                ),
                icon="📄",
            )
            return
        png, boxes = rendered
        st.image(
            png,
            caption=_("{file}, page {number}", file=shown_name(hit.original_filename), number=page)
            + ("" if boxes else _(" (the passage could not be located on the page)")),
            width="stretch",
        )


def _sources_panel(turn: Turn, expanded: bool) -> None:
    if turn.rewritten:
        st.caption(
            "🔁 "
            + _("Searched for: *{query}* and the question as asked", query=_md(turn.query))
            # A walk read [3] "rewrite: hybrid #1" below [1] "question: hybrid #2" as numbered out of rank.
            + _(" (sources numbered by both searches together; each shows its ranks in the one that ranked it best)")
        )
    for note in turn.notes:
        st.caption(f"ℹ️ {tr(note)}")
    if not turn.sources:
        if not turn.problem and not turn.agent and not turn.stopped:  # a turn stopped before it searched: its note
            st.info(
                _(
                    "No passage was found: the answer has no sources. Check the knowledge bases, the "
                    "filter and the minimum similarity."
                ),
                icon="🔎",
            )
        return
    where = ", ".join(turn.kbs)
    took = " · " + _("{ms} ms", ms=f"{turn.search_ms:.0f}") if turn.search_ms is not None else ""
    how = (
        _("found by the agent")
        if turn.agent
        else _("{mode} search in {kbs}", mode=_(MODE_LABELS.get(turn.mode, turn.mode)).lower(), kbs=where) + took
    )
    with _expander(f"📚 {count(len(turn.sources), 'source')} · {_md(how)}", f"chat_sources_{turn.id}", expanded):
        for source in turn.sources:
            _source_card(turn, source)
        if turn.left_out:
            st.caption(
                _("Found but not given to the model: ") + "; ".join(_md(i18n.source_label(s)) for s in turn.left_out)
            )


def _budget_bar(budget: Budget | None, model: str) -> None:
    if budget is None:
        return
    total = budget.used + budget.reserve
    st.progress(
        min(budget.share, 1.0),
        text=_(
            "Context: {total} of {limit} tokens ({share}) · {model}",
            total=f"{total:,}",
            limit=f"{budget.limit:,}",
            share=f"{budget.share:.0%}",
            model=model,
        ),
    )
    summary = _("summary {n} · ", n=f"{budget.summary:,}") if budget.summary else ""
    st.caption(
        _("system {system} · sources {sources} · ", system=f"{budget.system:,}", sources=f"{budget.sources:,}")
        + summary
        + _(
            "history {history} · question {question} · kept for the answer {reserve} ({counted})",
            history=f"{budget.history:,}",
            question=f"{budget.question:,}",
            reserve=f"{budget.reserve:,}",
            counted=_md(tr(budget.counted_with)),
        )
    )
    if not budget.fits:
        st.warning(
            _(
                "The prompt ({used} tokens, plus {reserve} for the answer) is larger than the model's "
                "{limit}-token window: the model would lose the start of it (the instructions and the first "
                "sources). Lower top-k, clear the conversation, or raise num_ctx.",
                used=f"{budget.used:,}",
                reserve=f"{budget.reserve:,}",
                limit=f"{budget.limit:,}",
            ),
            icon="✂️",
        )


def _stats_line(turn: Turn) -> str:
    parts = [turn.model] if turn.model else []
    s = turn.stats
    if s is not None:
        if s.eval_count:
            parts.append(_("{n} tokens", n=s.eval_count))
        if s.tokens_per_second:
            parts.append(_("{rate} tok/s", rate=f"{s.tokens_per_second:.1f}"))
        if s.prompt_eval_count:
            parts.append(_("prompt {n} tokens", n=f"{s.prompt_eval_count:,}"))
        if s.total_duration:
            parts.append(_("{s} s", s=f"{s.total_duration:.1f}"))
    return " · ".join(parts)


def _steps(steps: Sequence[agent.Step]) -> None:
    for step in steps:
        with st.expander(
            f"{step.index}. {_md(step.name)} ({_md(step.source or '?')}) · {_(step.status)} · "
            + _("{s} s", s=f"{step.duration:.2f}"),
            type="step",
            icon="✅" if step.ok else "⚠️",
        ):
            st.json(dict(step.arguments))
            st.code(step.result, wrap_lines=True, language=None)


def _web_sources(turn: Turn) -> None:
    with _expander(
        f"🌐 {count(len(turn.web_sources), 'web source')} · " + _("found by web search"), f"chat_web_{turn.id}", True
    ):
        for item in turn.web_sources:
            date = f" · {_md(item.date)}" if item.date else ""
            st.markdown(f":violet-badge[web] [{_md(item.title)}]({item.url}){date}  \n{_md(item.summary)}")


def _answer(turn: Turn) -> None:
    """A finished turn's answer: badges, checks, citation buttons."""
    if turn.problem:
        st.error(tr(turn.problem), icon="🚫")
    if turn.route:
        tools = ", ".join(f"`{t}`" for t in turn.route_tools) or _("no tools")
        st.caption(
            "🧭 "
            + _(
                "Route **{route}** ({reason}) · {tools} · budget {budget}",
                route=_md(turn.route),
                reason=tr(turn.route_reason),
                tools=tools,
                budget=turn.route_budget,
            )
        )
    if turn.steps:
        with st.expander(f"🛠️ {tr(turn.agent_summary) or count(len(turn.steps), 'tool call')}"):
            _steps(turn.steps)
    if turn.web_warning:
        st.warning(tr(turn.web_warning), icon="🌐")
    if turn.thinking:
        with st.expander("💭 " + _("Thinking"), type="compact"):
            st.markdown(_md(turn.thinking))
    if turn.answer:
        st.markdown(
            no_images(no_math(turn.answer) if turn.agent else answer_markdown(turn.answer, turn.grounding, turn.id))
        )
    elif not turn.problem and not turn.error:
        st.caption(_("(the model wrote nothing)") if not turn.stopped else _("(stopped before the first word)"))
    if turn.web_sources:
        _web_sources(turn)
    if turn.error:
        kept = _(" The part above arrived before the failure.") if turn.answer else ""
        st.error(f"{tr(turn.error)}{kept}", icon="⚠️")
    if turn.problem or (not turn.answer and not turn.stopped):
        return
    check, grounding = turn.citations, turn.grounding
    with st.container(horizontal=True, vertical_alignment="center", gap="small"):
        if turn.stopped:
            st.badge(_("stopped"), icon="⏹️", color="gray")
        if turn.looped:
            st.badge(_("repetition cut"), icon="🔁", color="gray")
        if not turn.agent:
            if grounding.grounded:
                st.badge(
                    _("cites {k} of {sources}", k=len(grounding.cited), sources=count(len(turn.sources), "source")),
                    icon="✅",
                    color="green",
                )
            elif turn.attributed:
                st.badge(_("matched to sources, not cited by the model"), icon="≈", color="gray")
            elif check.uncited and turn.answer and not turn.stopped:  # stopped: its grey badge says why (a walk)
                st.badge(_("uncited"), icon="⚠️", color="orange")
            sentences = count(grounding.judged, "sentence")
            # Told apart (a walk read "not supported by the sources" of a sentence that only the source it cites
            # does not hold, another one in another language holding it): the source cited does not say it; or the
            # sentence cites none and no source holds its words (its ⚠ no source).
            unsupported, nowhere, unheld = (
                len(grounding.not_supported),
                len(grounding.found_in_none),
                len(grounding.unheld),
            )
            miscited = len(grounding.miscited)
            for k, said in (
                (
                    unsupported,
                    _("{k} of {sentences} not supported by the source cited", k=unsupported, sentences=sentences),
                ),
                (nowhere, _("{k} of {sentences} citing no source, found in none", k=nowhere, sentences=sentences)),
                (
                    unheld,
                    _(
                        "{k} of {sentences} citing no source, its words in one that does not say it",
                        k=unheld,
                        sentences=sentences,
                    ),
                ),
                (
                    miscited,
                    _(
                        "{k} of {sentences} citing a source that does not hold it (≈ n: the one that does)",
                        k=miscited,
                        sentences=sentences,
                    ),
                ),
            ):
                if k:
                    st.badge(said, icon="⚠️", color="orange")
            if grounding.other_language:
                st.badge(
                    _(
                        "{sentences} not checked: the sources are in another language",
                        sentences=count(len(grounding.other_language), "sentence"),
                    ),
                    icon="🌐",
                    color="gray",
                )
            if grounding.padding:
                st.badge(
                    _(
                        "{sources} not supporting the sentence citing it",
                        sources=count(len(grounding.padding), "cited source"),
                    ),
                    icon="⚠️",
                    color="orange",
                )
            if grounding.other_measure:
                st.badge(_("measures another thing than the question asks"), icon="❓", color="orange")
            if grounding.figure_missing:
                st.badge(_("gives no figure, where the question asks for one"), icon="❓", color="orange")
            if grounding.other_subject:
                st.badge(
                    _("in the sources, but about another subject than the one the question points back to"),
                    icon="❓",
                    color="orange",
                )
            elif grounding.off_question:
                st.badge(_("in the sources, but not what the question asks about"), icon="❓", color="orange")
            if grounding.nothing_held:  # a badge, not a line of its own: a card opened below keeps its head in view
                st.badge(_("not in the sources: the model may have guessed"), icon="🔎", color="red")
            if check.unknown:
                st.badge(
                    _("{markers} pointing at no source", markers=count(len(check.unknown), "marker")),
                    icon="🚩",
                    color="red",
                )
        line = _stats_line(turn)
        if line:
            st.caption(_md(line))
    if not turn.agent and check.unknown:
        st.caption(
            "🚩 "
            + ", ".join(f"[{n}]" for n in check.unknown)
            + (
                _(
                    " points at no source (this answer had {n}): the claim there is not backed by a passage shown "
                    "here.",
                    n=len(turn.sources),
                )
                if len(check.unknown) == 1
                else _(
                    " point at no source (this answer had {n}): the claims there are not backed by a passage "
                    "shown here.",
                    n=len(turn.sources),
                )
            )
        )
    if not turn.agent and check.uncited and turn.answer:
        st.caption(tr(generate.cites_none(turn)))
    if not turn.agent and (grounding.flagged or grounding.padding or turn.attributed):
        st.caption(_(BADGE_LEGEND))
    # The sources the answer cites, then those that hold a sentence it cites another one for (its grey ≈ n).
    holding = [n for s in grounding.miscited for n in s.backing if n not in check.cited]
    if not turn.agent and (check.cited or holding):
        by_n = {s.n: s for s in turn.sources}
        with st.container(horizontal=True, gap="small"):
            for n in dict.fromkeys([*check.cited, *holding]):
                gone = n in turn.gone
                st.button(
                    i18n.source_label(by_n[n]) + (_(" · deleted since") if gone else ""),
                    key=f"chat_cite_{turn.id}_{n}",
                    on_click=_open_source,
                    args=(turn.id, n),
                    icon="🗑️" if gone else "📄" if n in grounding.cited else "📌" if n in holding else "❔",
                    type="tertiary",
                    help=(
                        _(
                            "Its document was deleted or replaced after this answer: the card shows the text "
                            "the answer was written from"
                        )
                        if gone
                        else _("Open this source and its page")
                        + (
                            ""
                            if n in grounding.cited
                            else _(" (it holds a sentence the answer cites another source for)")
                            if n in holding
                            else _(" (it does not support the sentence citing it)")
                        )
                    ),
                )


def _render_turn(question: str, answer: Turn | Live | Callable[[], Turn | Live], sources_open: bool) -> None:
    """One exchange: the question, then the assistant's message: the summary its prompt carried, the
    sources, the context budget, and the answer, finished or followed as it streams. `answer` may be a
    call: a new question's rewrite and search run inside the assistant's message, under its spinners."""
    with st.chat_message("user"):
        st.markdown(_md(question))
    with st.chat_message("assistant"):
        shown = answer() if callable(answer) else answer
        turn = shown.turn if isinstance(shown, Live) else shown
        _summary_block(turn)
        _sources_panel(turn, expanded=sources_open)
        _budget_bar(turn.budget, turn.model)
        if isinstance(shown, Live):
            _follow_live(shown, st.empty())
        else:
            _answer(turn)


# -- the live turn -------------------------------------------------------------------------------


def _stop_early() -> None:
    """The Stop button before the answer begins: the rewrite or search in progress ends with the run it is in (a
    click ends a run at its next yield point), and the question is kept as stopped (`main`); an answer begun
    meanwhile is stopped too."""
    st.session_state[STOPPED_EARLY] = True
    _stop_live()


def _stop_live() -> None:
    """The Stop button: end the generation now (the text so far is kept)."""
    live: Live | None = st.session_state.get(LIVE)
    if live is not None:
        live.runner.stop()


def _progress(
    runner: Runner[Any], model: str, writing: bool, thinking: bool, place: int = 0, reading: bool = False
) -> str:
    """The status line; `place`: the answer's place in line for a model that answers one at a time (0: none);
    `reading`: that model has its turn and reads the prompt (on a CPU, tens of seconds for a long one, which
    the words "loading a model" described wrongly)."""
    elapsed = time.monotonic() - runner.started
    if runner.stop_requested:
        return "⏹️ " + _("Stopping…")
    if place > 0:
        return "🚶 " + _(
            "Waiting for the local model: {place} in line · {s} s", place=i18n.ordinal(place), s=f"{elapsed:.0f}"
        )
    if writing:
        return "✍️ " + _("{model} is writing… {s} s", model=model, s=f"{elapsed:.0f}")
    if thinking:
        return "💭 " + _("{model} is thinking… {s} s", model=model, s=f"{elapsed:.0f}")
    if reading:
        return "📖 " + _("{model} is reading the question and its sources… {s} s", model=model, s=f"{elapsed:.0f}")
    return "⏳ " + _("Waiting for {model}… {s} s (loading a model can take a while)", model=model, s=f"{elapsed:.0f}")


def _follow(runner: Runner[Any], model: str, status: Any, on_thinking: Callable[[str], None]) -> Iterator[str]:
    """The answer's text as it arrives (for st.write_stream); thinking goes to `on_thinking`."""
    seen = place = 0
    writing = thinking = reading = False
    shown = last = ""
    while True:
        runner.touch()  # the heartbeat: this session still follows it (rag.llms.stream.Watchdog)
        items, finished = runner.wait(seen, POLL_SECONDS)
        seen += len(items)
        arrived = fold(items, strip=False)
        for item in items:
            if isinstance(item, StreamEvent) and item.kind == "queue" and item.place is not None:
                place = item.place
                reading = place == 0
        if arrived.thinking:
            thinking = True
            on_thinking(arrived.thinking)
        writing = writing or bool(arrived.text)
        line = _progress(runner, model, writing, thinking, place, reading)
        if line != shown and not finished:
            status.caption(line)
            shown = line
        if arrived.text:
            # No picture loads from what the model writes, also when "![" comes in two pieces.
            text = no_images(("\\" if last == "!" and arrived.text.startswith("[") else "") + arrived.text)
            last = arrived.text[-1]
            yield no_math(text)
        if finished:
            status.empty()
            return
        st.session_state.get(LIVE)  # a yield point: a click on Stop is handled now, even between tokens


def _stream_answer(live: Live) -> None:
    runner = live.runner
    left, right = st.columns([1, 4], vertical_alignment="center")
    left.button(
        _("Stop"),
        key="chat_stop",
        icon="⏹️",
        on_click=_stop_live,
        disabled=runner.stop_requested,
        help=_("End the answer now; what was written so far is kept."),
    )
    status = right.empty()
    thinking_slot = st.empty()
    thoughts: list[str] = []
    box: dict[str, Any] = {}

    def on_thinking(text: str) -> None:
        thoughts.append(text)
        if "inner" not in box:
            box["inner"] = thinking_slot.expander("💭 " + _("Thinking"), type="compact").empty()
        box["inner"].markdown(_md("".join(thoughts)))

    st.write_stream(_follow(runner, live.turn.model, status, on_thinking))


def _stream_agent(live: Live) -> None:
    runner = live.runner
    st.button(
        _("Stop"),
        key="chat_stop",
        icon="⏹️",
        on_click=_stop_live,
        disabled=runner.stop_requested,
        help=_("Stop after the current model request or tool call."),
    )
    with st.status(_("Working…"), expanded=True) as box:
        seen = 0
        while True:
            runner.touch()  # the heartbeat, as in _follow
            items, finished = runner.wait(seen, POLL_SECONDS)
            seen += len(items)
            _steps([i for i in items if isinstance(i, agent.Step)])
            if finished:
                break
            st.session_state.get(LIVE)  # a yield point for the Stop button
        box.update(label=_("Done"), state="complete", expanded=False)


def _finalize(live: Live) -> Turn:
    """Move the live turn into the history (once)."""
    store = widgets.try_store() if live.turn.agent else None
    final = engine.finish(live, store.get_chunk if store is not None else None)
    if st.session_state.get(LIVE) is live:
        del st.session_state[LIVE]
        _turns().append(final)
        _save(final)
    return final


def _save(turn: Turn) -> None:
    """Keep the finished turn in the stored conversation (the first one creates it)."""
    store = widgets.try_store()
    if store is None or turn.problem:
        return
    try:
        st.session_state[CONVERSATION] = generate.save_turn(
            store.conversations, st.session_state.get(CONVERSATION), turn
        )
    except RagError as exc:
        st.warning(_("This turn was not saved: {error}", error=tr(exc)), icon="💾")


def _follow_live(live: Live, slot: Any) -> None:
    live.runner.touch()
    with slot.container():
        (_stream_agent if live.turn.agent else _stream_answer)(live)
    final = _finalize(live)
    with slot.container():
        _answer(final)


# -- a new question ------------------------------------------------------------------------------


def _consent_picker(use_agent: bool) -> tuple[str, ...]:
    """The MCP tools that may change things (not marked read-only): agent mode runs only those ticked here."""
    if not use_agent:
        return ()
    changing = generate.tools_needing_consent()
    if not changing:
        return ()
    picked = st.multiselect(
        _("Allow tools that may change things"),
        changing,
        key="chat_allowed_tools",
        placeholder=_("none: they are not run"),
        help=_(
            "These tools are not marked read-only by their servers. A document or web "
            "page can ask the model to call them; each runs only if you tick it here."
        ),
    )
    return tuple(picked)


def _request(c: Controls) -> engine.Request:
    return engine.Request(
        kbs=c.kbs,
        top_k=c.top_k,
        min_score=c.min_score,
        filter=c.filter,
        mode=c.mode,
        rewrite=c.rewrite,
        template=c.template,
        temperature=c.temperature,
        think=c.think,
        num_ctx=c.num_ctx,
        context=c.model.context,
        thinks=c.model.thinks,
        agent=c.agent,
        route=c.route,
        allowed_tools=c.allowed_tools,
    )


def _ask(question: str, c: Controls, store: Store | None, settings: Settings) -> None:
    # Made only once a place is told (rarely: another session's answer ahead): an element added to every
    # ask moved the turn drawn after it, and the next run drew its source cards twice for a moment.
    line: list[Any] = []

    def on_place(place: int) -> None:
        """The rewrite's or summary's place in line for the embedded model, under its spinner."""
        if place > 0:
            if not line:
                line.append(st.empty())
            line[0].caption("🚶 " + _("Waiting for the local model: {place} in line", place=i18n.ordinal(place)))
        elif line:
            line[0].empty()

    def start() -> Turn | Live:
        st.session_state[ASKING] = question
        early = st.empty()
        early.button(
            _("Stop"),
            key="chat_stop_early",
            icon="⏹️",
            on_click=_stop_early,
            help=_("Stop before the answer begins: nothing is answered."),
        )
        started = engine.start(
            question,
            _request(c),
            model=c.model.model,
            store=store,
            settings=settings,
            history=generate.history_messages(_turns()),
            searched=generate.searched_queries(_turns()),
            memory=generate.memory_of(_turns()),
            model_problem=c.model.problem,
            busy=lambda text: st.spinner(tr(text)),
            warn=lambda text: st.warning(tr(text), icon="🧰"),
            keepalive=session.keepalive(),  # stopped once this session is gone, not after its last token
            on_place=on_place,
            tick=lambda: st.session_state.get(ASKING),  # a yield point: a click on Stop ends the rewrite now
        )
        if isinstance(started, Turn):  # nothing to generate: the turn is finished as it is
            _turns().append(started)
            _save(started)
        else:
            st.session_state[LIVE] = started
        st.session_state.pop(ASKING, None)
        early.empty()
        return started

    _render_turn(question, start, sources_open=True)


def _summary_block(turn: Turn) -> None:
    """The running summary this turn's prompt carried instead of the oldest exchanges."""
    if turn.summary:
        with st.expander(
            "🧠 "
            + _(
                "Earlier in this conversation ({exchanges}, summarised)",
                exchanges=count(turn.summary_covers, "exchange"),
            ),
            expanded=False,
        ):
            st.markdown(_md(turn.summary))


# -- the page --------------------------------------------------------------------------------------


def _clear() -> None:
    live: Live | None = st.session_state.pop(LIVE, None)
    if live is not None:
        live.runner.stop()
    for key in [
        k
        for k in st.session_state
        if isinstance(k, str) and k.startswith(("chat_sources_", "chat_src_", "chat_page_", "chat_pageno_"))
    ]:
        del st.session_state[key]
    st.session_state[TURNS] = []
    st.session_state[CONVERSATION] = None
    st.session_state.pop("chat_title", None)


def _markdown_export(info: ConversationInfo | None, turns: Sequence[Turn]) -> tuple[str, str]:
    """The turns as Markdown in the user's language, and its file's name: the stored conversation's (its title,
    its start) where there is one."""
    if info is None:
        return generate.export_markdown(turns, say=tr, source_line=i18n.export_source), (
            f"conversation-{datetime.now():%Y%m%d-%H%M}.md"
        )
    markdown = generate.conversation_markdown_export(info, turns, say=tr, source_line=i18n.export_source)
    return markdown, f"conversation-{info.created_at:%Y%m%d-%H%M}.md"


def _toolbar(turns: Sequence[Turn], saved: ConversationInfo | None) -> None:
    if not turns:
        return
    with st.container(horizontal=True, vertical_alignment="center"):
        st.button(
            _("New conversation"),
            key="chat_clear",
            icon="🧹",
            on_click=_clear,
            help=_("Start afresh; this one stays under Conversations in the sidebar."),
        )
        # The stored conversation's, as the sidebar's export writes it (a walk got two files: its title against
        # "# Conversation", its start against the time of the click).
        markdown, name = _markdown_export(saved, turns)
        st.download_button(
            _("Export as Markdown"),
            data=markdown,
            key="chat_export",
            file_name=name,
            mime="text/markdown",
            icon="⬇️",
            on_click="ignore",
            help=_("The questions, answers and the sources of each answer."),
        )
        st.caption(_("{turns} in this session", turns=count(len(turns), "turn")))


def main() -> None:
    st.title("💬 " + _("Chat"))
    st.caption(
        _(
            "Answers from your knowledge bases with numbered citations: click a citation to see the "
            "passage on its page. The sources are shown before the answer is written."
        )
    )
    settings = resources.settings()
    store = widgets.try_store()
    controls = _controls(store, settings)
    told = len(_turns())  # the turns the sidebar was drawn with (see the end)
    with st.sidebar:  # an element of no height: it hears clicks on the answers' [n] links
        clicked = citelinks.listen("chat_cite_links", card_key="chat_src_{turn}_{n}")
    if clicked is not None:
        _open_cited(*clicked)
    question = st.chat_input(_("Ask about your documents (English or 中文)…"), key="chat_input", submit_mode="disable")
    live: Live | None = st.session_state.get(LIVE)
    if question and live is not None:  # asked again while answering: the running answer stops here
        live.runner.stop()
        live.runner.join(2.0)
        _finalize(live)
        live = None
    asking, stopped_early = st.session_state.pop(ASKING, None), st.session_state.pop(STOPPED_EARLY, False)
    if asking is not None and live is None and not question:
        # The run preparing `asking` ended before its answer began: by its Stop (kept as stopped), or by a click
        # elsewhere (asked again: a slider moved during a rewrite lost the question before).
        if stopped_early:
            model = controls.model.model
            stopped = engine.stopped_before_answer(asking, _request(controls), model.name if model is not None else "")
            _turns().append(stopped)
            _save(stopped)
        else:
            question = asking
    turns = _turns()
    if not turns and live is None and not question:
        st.info(_("Ask a question below. Choose the knowledge bases and the model in the sidebar."), icon="💬")
    for i, turn in enumerate(turns):
        _render_turn(turn.question, turn, sources_open=i == len(turns) - 1 and live is None and not question)
    if question and question.strip():
        _ask(question.strip(), controls, store, settings)
    elif live is not None:
        _render_turn(live.turn.question, live, sources_open=True)
    _toolbar(_turns(), controls.saved)
    if len(_turns()) != told:
        # The sidebar was drawn before this run's answer was done: its turn count and its exports left it out (a
        # walk exported three of four turns). Drawn again with it.
        st.rerun()


if __name__ == "__main__":
    main()
