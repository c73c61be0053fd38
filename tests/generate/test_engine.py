"""The one question -> answer flow (rag.generate.engine) against a real database and an Ollama stand-in."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from rag import generate, ingest, retrieve
from rag.chunking import ChunkSettings
from rag.generate import Turn, engine
from rag.llms import GenerationStats, Message, OllamaChatModel, StreamEvent
from rag.llms.counting import CL100K
from rag.llms.stream import Runner
from rag.retrieve.fusion import QUESTION_WEIGHT, fuse_queries
from rag.settings import Settings
from rag.store import Store
from tests.docgen import make_pdf
from tests.generate.samples import MODELS_ASKED
from tests.generate.standin import (  # noqa: F401 - slow_ollama is a fixture
    FINAL,
    MODEL,
    NDJSON,
    QUESTION,
    bodies,
    chunk,
    live_answer,
    ndjson,
    slow_ollama,
)

REPORT = make_pdf(
    [
        "Quarterly report. Revenue rose eleven percent on subscriptions in the third quarter.",
        "Dividends. The board approved a dividend of 42 cents per share, paid in December.",
    ]
)
SMALL_CHUNKS = ChunkSettings(strategy="token", chunk_size=16, chunk_overlap=0, min_chunk_length_to_embed=5)


@pytest.fixture
def kb(store: Store, settings: Settings) -> Store:
    embedder = retrieve.embedder_named_or_default(settings)
    result = ingest.ingest_bytes(store, embedder, REPORT, "report.pdf", "fin", SMALL_CHUNKS)
    assert result.ok, result.reason
    return store


def ask_follow_up(
    kb: Store,
    settings: Settings,
    httpserver: HTTPServer,
    rewrite: str,
    question: str = "And what about dividends?",
    history: tuple[Message, ...] = (
        Message("user", QUESTION),
        Message("assistant", "Revenue rose eleven percent [1]."),
    ),
    said: str = "A dividend of 42 cents [1].",
) -> Turn:
    """`question` ('And what about dividends?' after the revenue question), the model rewriting it as `rewrite` and
    answering `said`."""

    def answer(request: Request) -> Response:
        messages = request.get_json()["messages"]
        text = rewrite if "Standalone query:" in messages[-1]["content"] else said
        return Response(ndjson(chunk(text), FINAL), content_type=NDJSON)

    httpserver.expect_request("/api/chat", method="POST").respond_with_handler(answer)
    model = OllamaChatModel(httpserver.url_for("/").rstrip("/"), MODEL, timeout=5)
    return engine.ask(
        question,
        engine.Request(kbs=("fin",), context=4096, thinks=False),
        model=model,
        store=kb,
        settings=settings,
        history=history,
    )


def test_the_sources_of_a_refused_rewrite_are_not_labelled_as_the_rewrites(
    kb: Store, settings: Settings, httpserver: HTTPServer
) -> None:
    """A walk: the rewrite was refused (the note under the answer said so) and its sources were labelled "改写检索"
    (found by the rewrite). What was searched is the question after the one before it: "with previous"."""
    turn = ask_follow_up(kb, settings, httpserver, "And what about dividends?")  # given back unchanged: refused
    assert turn.query == f"{QUESTION} And what about dividends?" and "unchanged" in str(turn.notes[0])
    assert {s.hit.found_by for s in turn.sources} <= {"with previous", "question"}
    assert any(s.hit.found_by == "with previous" for s in turn.sources)
    assert all(s.hit.ranking.startswith(f"{s.hit.found_by}: ") for s in turn.sources)


def test_the_sources_of_a_rewrite_holding_the_question_whole_are_the_rewrites(
    kb: Store, settings: Settings, httpserver: HTTPServer
) -> None:
    """A walk: "最早是谁建造的？" rewritten "美庐别墅最早是谁建造的？" (used: the note said so) had every source
    labelled "连同上一问检索" (with previous), the rewrite holding the question whole as a refused rewrite's search
    does."""
    history = (Message("user", "美庐别墅在哪里？"), Message("assistant", "在牯岭东谷 [1]。"))
    turn = ask_follow_up(
        kb, settings, httpserver, "美庐别墅最早是谁建造的？", "最早是谁建造的？", history, "英国人 [1]。"
    )
    assert turn.query == "美庐别墅最早是谁建造的？" and not turn.notes
    assert {s.hit.found_by for s in turn.sources} <= {"rewrite", "question"}
    assert any(s.hit.found_by == "rewrite" for s in turn.sources)


def test_a_follow_up_is_rewritten_searched_and_answered_with_the_history(
    kb: Store, settings: Settings, httpserver: HTTPServer
) -> None:
    turn = ask_follow_up(kb, settings, httpserver, "How much did the dividends rise?\nAnd more")

    assert turn.query == "How much did the dividends rise?" and turn.rewritten and not turn.notes
    # The rewrite and the question as asked are both searched, the rewrite's list weighing more.
    lists = [retrieve.search(kb, settings, q, ["fin"], top_k=8) for q in (turn.query, turn.question)]
    expected = fuse_queries(lists, (1.0, QUESTION_WEIGHT), 8, ("rewrite", "question"))
    # each source says which of the two searches ranked it as shown
    assert [(s.hit.id, s.hit.found_by) for s in turn.sources] == [(h.id, h.found_by) for h in expected]
    assert all(s.hit.ranking.startswith(f"{s.hit.found_by}: ") for s in turn.sources)
    assert turn.answer == "A dividend of 42 cents [1]." and turn.citations.cited == (1,)
    assert turn.budget is not None and turn.budget.limit == 4096 and turn.budget.history > 0
    assert turn.stats is not None and turn.stats.eval_count == 24 and not turn.stopped and not turn.error
    rewrite, last = bodies(httpserver, "/api/chat")
    assert "User: How much did revenue rise?" in rewrite["messages"][0]["content"]
    assert rewrite["options"] == {"temperature": 0.0}
    assert [m["role"] for m in last["messages"]] == ["system", "user", "assistant", "user"]
    assert last["messages"][-1]["content"] == "And what about dividends?"


def test_without_a_store_or_a_model_the_turn_says_why(kb: Store, settings: Settings) -> None:
    request = engine.Request(kbs=("fin",))
    no_store = engine.start(QUESTION, request, model=None, store=None, settings=settings)
    assert isinstance(no_store, Turn)
    assert no_store.problem == "Search failed: the database is not available (see above)."
    no_model = engine.start(QUESTION, request, model=None, store=kb, settings=settings, model_problem="Start Ollama.")
    assert isinstance(no_model, Turn) and no_model.sources
    assert no_model.problem == "No answer: no chat model is available. Start Ollama."
    bad = engine.start(QUESTION, engine.Request(kbs=("nope",)), model=None, store=kb, settings=settings)
    assert isinstance(bad, Turn) and bad.problem.startswith("Search failed: no knowledge base named 'nope'")


def test_a_rewrite_that_fails_searches_the_question_with_the_one_before(
    kb: Store, settings: Settings, dead_host: str
) -> None:
    model = OllamaChatModel(dead_host, MODEL, timeout=2)
    history = [Message("user", QUESTION), Message("assistant", "yes")]
    started = engine.start(
        "And in 2023?",
        engine.Request(kbs=("fin",), context=4096, thinks=False),
        model=model,
        store=kb,
        settings=settings,
        history=history,
    )
    assert isinstance(started, engine.Live)
    assert started.turn.query == f"{QUESTION} And in 2023?"
    assert started.turn.notes[0].startswith("Rewriting the follow-up failed (")
    final = engine.wait(started)
    assert final.error and final.answer == ""


def test_stop_keeps_the_partial_answer_and_ends_the_stream(slow_ollama: tuple[HTTPServer, threading.Event]) -> None:  # noqa: F811 - the fixture imported above
    """The state machine the Stop button drives: the runner stops at once, the text so far stays."""
    server, hangup = slow_ollama
    live = live_answer(server.url_for("/").rstrip("/"))
    seen: list[Any] = []
    while len(seen) < 3:
        items, done = live.runner.wait(len(seen), 2.0)
        assert not done
        seen += items
    live.runner.stop()  # what the Stop button's callback does
    # The stream has 200 words, one per 50 ms: ending within 5 s (or before word 199) is ending at the stop.
    assert live.runner.join(5.0), "the runner did not end after Stop"
    assert hangup.wait(5), "Ollama was not told to stop generating"

    turn = engine.finish_chat(live.turn, live.runner)

    assert turn.stopped and not turn.error
    assert turn.answer.startswith("word0 word1 word2") and "word199" not in turn.answer
    assert turn.stats is not None and turn.stats.done_reason == "stopped"


def test_finished_chat_generation_is_marked_on_the_gpu_timeline() -> None:
    """The GPU monitor draws chat generations too: finishing a turn marks its phases."""
    from rag.llms.telemetry import TIMELINE

    def produce(stop: threading.Event):
        yield StreamEvent("content", "Revenue grew [1].")
        yield StreamEvent(
            "done",
            stats=GenerationStats(
                done_reason="stop",
                load_duration=0.01,
                prompt_eval_duration=0.01,
                eval_count=4,
                eval_duration=0.02,
                total_duration=0.05,
            ),
        )

    runner = Runner(produce)
    for _ in range(100):
        if runner.done:
            break
        runner.wait(0, 0.1)
    before = len(TIMELINE.marks())
    turn = Turn(id="t-mark", question="q", query="q", sources=(), model="ollama:qwen2.5:7b-instruct")
    engine.finish_chat(turn, runner)
    marks = TIMELINE.marks()[before:]
    assert marks and {m.label for m in marks} == {"chat: qwen2.5:7b-instruct"}
    assert "output" in {m.phase for m in marks}


def test_the_timeline_s_output_starts_at_the_first_token_not_at_the_model_s_turn_in_line() -> None:
    """The embedded model's first event is 'queue' (its turn came): marked as the first token, the prompt's
    reading took no time on the GPU page and the output all of it."""
    from rag.llms.telemetry import TIMELINE

    def produce(stop: threading.Event):
        yield StreamEvent("queue", place=0)
        time.sleep(0.3)  # the prompt being read
        yield StreamEvent("content", "Revenue grew [1].")
        yield StreamEvent("done", stats=GenerationStats(done_reason="stop", eval_count=4))

    runner = Runner(produce)
    assert runner.join(5.0)
    before = len(TIMELINE.marks())
    turn = Turn(id="t-queue", question="q", query="q", sources=(), model="local:qwen2.5-coder-1.5b")
    engine.finish_chat(turn, runner)
    marks = {m.phase: m for m in TIMELINE.marks()[before:]}
    output = marks["output"]
    assert output.end - output.start < 0.2, marks  # from the content on, not from the 'queue' event
    assert sum(m.end - m.start for m in marks.values() if m.phase != "output") >= 0.25, marks


def test_the_embedded_models_uncited_answer_is_attributed_with_a_note() -> None:
    from tests.generate.samples import SOURCES

    runner = Runner(
        lambda stop: iter(
            [
                StreamEvent("content", "Revenue rose eleven percent."),
                StreamEvent("done", stats=GenerationStats(done_reason="stop")),
            ]
        )
    )
    assert runner.join(2.0)
    turn = engine.finish_chat(
        Turn(id="t", question="q", query="q", sources=tuple(SOURCES), model="local:gemma3-270m"), runner
    )
    assert turn.answer == "Revenue rose eleven percent [1]." and turn.attributed
    assert turn.notes == (engine.ATTRIBUTED_NOTE,)
    assert turn.as_dict()["citations_attributed"] is True
    assert generate.check_citations(turn.answer, SOURCES).cited == (1,)


def test_ollamas_own_prompt_count_calibrates_the_next_estimate(
    kb: Store, settings: Settings, httpserver: HTTPServer
) -> None:
    """Ollama has no tokenizer endpoint: the budget is a cl100k estimate, corrected with the
    prompt_eval_count Ollama reports after the answer (one count, learnt per model)."""
    reported: list[int] = []

    def answer(request: Request) -> Response:
        final = dict(FINAL, prompt_eval_count=reported[-1])
        return Response(ndjson(chunk("Revenue rose eleven percent [1]."), final), content_type=NDJSON)

    httpserver.expect_request("/api/chat", method="POST").respond_with_handler(answer)
    model = OllamaChatModel(httpserver.url_for("/").rstrip("/"), MODEL, timeout=5)
    request = engine.Request(kbs=("fin",), context=4096, thinks=False)
    first_estimate = generate.pack_prompt(
        QUESTION,
        generate.number_sources(retrieve.search(kb, settings, QUESTION, ["fin"], top_k=8)),
        counter=CL100K,
        limit=4096,
    ).budget.used
    reported.append(round(first_estimate * 1.25))  # the model's tokenizer needs a quarter more
    first = engine.ask(QUESTION, request, model=model, store=kb, settings=settings)
    assert first.budget.counted_with == "cl100k estimate" and first.budget.used == first_estimate
    second = engine.ask(QUESTION, request, model=model, store=kb, settings=settings)
    assert second.budget.counted_with.startswith("cl100k estimate × 1.25")
    assert abs(second.budget.used - reported[0]) <= 3  # what Ollama said this prompt costs
    # A report that cannot be of this prompt (a cached prefix: Ollama counts only what it evaluated) is ignored.
    reported.append(20)
    engine.ask(QUESTION, request, model=model, store=kb, settings=settings)
    third = engine.ask(QUESTION, request, model=model, store=kb, settings=settings)
    assert third.budget.counted_with.startswith("cl100k estimate × 1.25")


def test_the_model_is_asked_the_follow_up_with_what_it_points_back_to(
    kb: Store, settings: Settings, httpserver: HTTPServer
) -> None:
    """A walk: "How heavy is it?" after "How much does Model 4 cost?", "And Model 5?", "What is the warranty?" was
    searched with Model 5 named, and Qwen 1.5B, asked the question as typed, answered "The Model 4 weighs 95 kg."
    with a green badge. The model is asked it with the thing the search named: "How heavy is it? (Model 5)"."""

    def answer(request: Request) -> Response:
        messages = request.get_json()["messages"]
        if "Standalone query:" in messages[-1]["content"]:
            text = "What is the shipping weight of Model 4?"  # "shipping" nobody said: refused
        else:
            text = "Model 5 weighs 110 kg [1]."
        return Response(ndjson(chunk(text), FINAL), content_type=NDJSON)

    httpserver.expect_request("/api/chat", method="POST").respond_with_handler(answer)
    model = OllamaChatModel(httpserver.url_for("/").rstrip("/"), MODEL, timeout=5)
    history = list(MODELS_ASKED)
    turn = engine.ask(
        "How heavy is it?",
        engine.Request(kbs=("fin",), context=4096, thinks=False),
        model=model,
        store=kb,
        settings=settings,
        history=history,
    )
    assert turn.query == "What is the warranty? How heavy is it? (Model 5)" and turn.subject == "Model 5"
    assert turn.question == "How heavy is it?"  # shown and kept as typed
    _rewrite, last = bodies(httpserver, "/api/chat")
    assert last["messages"][-1] == {"role": "user", "content": "How heavy is it? (Model 5)"}
    # A question that names its subject, or a turn without one, is asked as typed.
    assert engine.with_subject("How heavy is Model 5?", "Model 5") == "How heavy is Model 5?"
    assert engine.with_subject("How heavy is it?", "") == "How heavy is it?"


def test_an_answer_stopped_inside_a_citation_marker_keeps_no_half_marker() -> None:
    """A walk's Stop landed as the model wrote "[1": the kept answer ended "… within the UK. [1"."""
    from tests.generate.samples import SOURCES

    def stopped(text: str) -> Turn:
        runner = Runner(
            lambda stop: iter(
                [StreamEvent("content", text), StreamEvent("done", stats=GenerationStats(done_reason="stopped"))]
            )
        )
        runner.stop()
        assert runner.join(2.0)
        return engine.finish_chat(
            Turn(id="t", question="q", query="q", sources=tuple(SOURCES), model="ollama:m"), runner
        )

    cut = stopped("Revenue rose eleven percent [1]. Delivery takes two weeks within the UK. [1")
    assert cut.stopped and cut.answer == "Revenue rose eleven percent [1]. Delivery takes two weeks within the UK."
    assert stopped("Revenue rose eleven percent [1]").answer == "Revenue rose eleven percent [1]"  # whole: kept
