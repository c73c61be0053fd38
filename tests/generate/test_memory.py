"""Memory that fits the window: a conversation longer than the model's window keeps its first turn's
facts through a running summary, on the Ollama stand-in (exact requests) and on the embedded model."""

from __future__ import annotations

from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from rag import generate
from rag.generate import Memory, Turn, engine
from rag.generate.memory import ACK, OPENING, PROMPT, summary_exchange
from rag.llms import Message, OllamaChatModel
from rag.llms.counting import CL100K
from rag.settings import Settings
from rag.store import Store
from tests.generate.standin import FINAL, MODEL, NDJSON, bodies, chunk, ndjson
from tests.generate.test_engine import kb  # noqa: F401 - a fixture

FACT = "My project code is FALCON-7 and the launch is on 14 March."
FILLER = (
    "Tell me more about the quarterly figures and what the board discussed about the subscriptions, "
    "the costs, the hiring plans and the dividend, in detail. "
) * 6


def long_history(exchanges: int) -> list[Message]:
    history = [Message("user", FACT), Message("assistant", "Noted: FALCON-7, launching on 14 March.")]
    for i in range(exchanges - 1):
        history += [Message("user", f"Question {i}: {FILLER}"), Message("assistant", f"Answer {i}: {FILLER}")]
    return history


def test_older_turns_are_folded_into_a_summary_and_the_prompt_never_exceeds_the_window(
    kb: Store,  # noqa: F811 - the fixture imported above
    settings: Settings,
    httpserver: HTTPServer,
) -> None:
    summary_text = "The user's project code is FALCON-7; the launch is on 14 March. They asked about the figures."

    def answer(request: Request) -> Response:
        last = request.get_json()["messages"][-1]["content"]
        text = summary_text if last.endswith("Summary:") else "Your project code is FALCON-7 [1]."
        return Response(ndjson(chunk(text), FINAL), content_type=NDJSON)

    httpserver.expect_request("/api/chat", method="POST").respond_with_handler(answer)
    model = OllamaChatModel(httpserver.url_for("/").rstrip("/"), MODEL, timeout=5)
    window = 2048
    history = long_history(8)
    assert CL100K.prompt(history) > window  # the whole conversation would not fit
    request = engine.Request(kbs=("fin",), context=window, thinks=False, rewrite=False)

    turn = engine.ask("What is my project code?", request, model=model, store=kb, settings=settings, history=history)

    assert turn.summary == summary_text and 1 <= turn.summary_covers < 8
    assert any(n.startswith(f"The {turn.summary_covers} oldest exchange") for n in turn.notes)
    summarise, final = bodies(httpserver, "/api/chat")
    (ask_for_summary,) = summarise["messages"]
    assert ask_for_summary["content"].startswith(PROMPT["en"].split("{previous}")[0])
    assert f"User: {FACT}" in ask_for_summary["content"] and summarise["options"] == {"temperature": 0.0}
    sent = final["messages"]
    assert sent[1] == {"role": "user", "content": OPENING["en"] + summary_text}
    assert sent[2] == {"role": "assistant", "content": ACK["en"]}
    assert FACT not in " ".join(m["content"] for m in sent)  # the first turn is there as its summary
    assert turn.budget is not None and turn.budget.fits and turn.budget.summary > 0
    assert CL100K.prompt([Message(m["role"], m["content"]) for m in sent]) + turn.budget.reserve <= window

    # The next turn starts from the summary: only exchanges after those it covers are sent or folded.
    later = [*history, Message("user", "What is my project code?"), Message("assistant", turn.answer)]
    nxt = engine.ask(
        "And the launch date?",
        request,
        model=model,
        store=kb,
        settings=settings,
        history=later,
        memory=Memory(turn.summary, turn.summary_covers),
    )
    assert nxt.summary_covers >= turn.summary_covers
    requests = bodies(httpserver, "/api/chat")[2:]
    if len(requests) == 2:  # folded again: the previous summary is given to the summariser
        assert f"Summary of what came before: {summary_text}" in requests[0]["messages"][0]["content"]
    assert requests[-1]["messages"][1]["content"].startswith(OPENING["en"])


def test_memory_of_the_turns_and_the_summary_exchange_in_chinese() -> None:
    turns = [
        Turn(id="a", question="q", query="q", answer="a", summary="用户的项目编号是 FALCON-7。", summary_covers=3),
        Turn(id="b", question="q2", query="q2", answer="b"),
    ]
    assert generate.memory_of(turns) == Memory("用户的项目编号是 FALCON-7。", 3)
    assert generate.memory_of(turns[1:]) is None
    assert summary_exchange(Memory("用户的项目编号是 FALCON-7。", 3), "zh") == [
        Message("user", "此前对话的摘要：用户的项目编号是 FALCON-7。"),
        Message("assistant", "好的，我会记住这些。"),
    ]
    assert summary_exchange(None, "en") == []


def test_the_embedded_model_keeps_the_first_turns_fact_past_its_window(kb: Store, settings: Settings) -> None:  # noqa: F811
    """The real default model (Qwen2.5-Coder-1.5B) writes the summary; its window is made small."""
    from rag.llms.local import QwenChatModel

    model = QwenChatModel()
    history = long_history(6)
    request = engine.Request(kbs=("fin",), context=2048, rewrite=False, temperature=0.0)
    turn = engine.ask("What is my project code?", request, model=model, store=kb, settings=settings, history=history)
    assert turn.summary_covers >= 1, turn.notes
    assert "FALCON-7" in turn.summary, turn.summary
    assert turn.budget is not None and turn.budget.fits
    assert "FALCON" in turn.answer, turn.answer
