"""Conversations kept in the real PostgreSQL: a turn as a record and back, saved, listed, renamed,
reopened with its sources (a deleted document's chunk marked gone), exported and deleted."""

from __future__ import annotations

import dataclasses
import json

import pytest

from rag import generate, ingest
from rag.agent import Step
from rag.agent.websearch import WebItem
from rag.chunking import SPRING_DEFAULT
from rag.errors import RagError
from rag.generate import Budget, Turn
from rag.llms.types import GenerationStats
from rag.settings import Settings
from rag.store import Copy, Store
from tests.generate.samples import SOURCES


def full_turn() -> Turn:
    return Turn(
        id="t1",
        question="How much did revenue rise?",
        query="revenue rise 2023",
        subject="Model 5",
        kbs=("fin",),
        sources=tuple(SOURCES),
        search_ms=12.5,
        notes=("history left out",),
        model="ollama:m",
        budget=Budget(system=200, sources=120, history=0, question=9, reserve=512, limit=4096, counted_with="cl100k"),
        answer="Revenue rose eleven percent [1].",
        stopped=True,
        stats=GenerationStats(done_reason="stop", total_duration=1.5, eval_count=12, eval_duration=0.8),
        steps=(Step(1, 1, "web_search", {"query": "x"}, "[]", 0.2, "ok", "web", {"items": []}),),
        route="default",
        route_reason="the default route",
        route_tools=("web_search",),
        route_budget=6,
        web_sources=(WebItem("https://www.gov.cn/a.htm", "Revised.", "gov.cn", "2024-07-01"),),
        left_out=(SOURCES[1],),
    )


def test_a_turn_survives_its_json_record() -> None:
    turn = full_turn()
    back = generate.turn_from_record(json.loads(json.dumps(generate.turn_record(turn))))
    assert back == turn
    assert back.grounding.cited == turn.grounding.cited == (1,)  # the badges check the same text again
    # a follow-up's source keeps which of its two searches ranked it
    found = dataclasses.replace(SOURCES[0].hit, vector_rank=1, vector_score=0.8, found_by="question")
    fused = dataclasses.replace(turn, sources=(dataclasses.replace(SOURCES[0], hit=found), SOURCES[1]))
    back = generate.turn_from_record(json.loads(json.dumps(generate.turn_record(fused))))
    assert back == fused and back.sources[0].hit.ranking == "question: vector #1 (0.80)"
    # a source keeps where else its passage stands (rag.retrieve.copies)
    copied = dataclasses.replace(SOURCES[0].hit, copies=(Copy("b.pdf", (8, 9)), Copy("c.pptx", (3,), "slide 3")))
    with_copies = dataclasses.replace(turn, sources=(dataclasses.replace(SOURCES[0], hit=copied), SOURCES[1]))
    back = generate.turn_from_record(json.loads(json.dumps(generate.turn_record(with_copies))))
    assert back == with_copies and [c.label for c in back.sources[0].hit.copies] == ["b.pdf pp. 8–9", "c.pptx slide 3"]
    with pytest.raises(RagError, match="record version 99"):
        generate.turn_from_record({**generate.turn_record(turn), "version": 99})
    with pytest.raises(RagError, match="cannot be read"):
        generate.turn_from_record({"version": 1, "id": "x"})


def test_a_reopened_turn_keeps_its_messages_translatable() -> None:
    """The notes and problems of a turn are `Text`; reopened, they are again (the page then shows them in the
    user's language instead of the English they were stored as)."""
    from rag.text import Text

    folded = Text(
        "The {n} oldest exchanges were folded into the summary of the earlier conversation, so that "
        "the prompt fits the model's window.",
        n=2,
    )
    turn = dataclasses.replace(
        full_turn(),
        notes=("a plain note", folded),
        web_warning=Text(
            "Web search was unavailable ({reason}): the answer uses the local knowledge only.", reason=Text("timed out")
        ),
    )
    back = generate.turn_from_record(json.loads(json.dumps(generate.turn_record(turn))))
    assert back == turn
    assert isinstance(back.notes[1], Text) and back.notes[1].template == folded.template
    assert back.notes[1].values == {"n": 2} and not isinstance(back.notes[0], Text)
    assert isinstance(back.web_warning.values["reason"], Text)
    older = {k: v for k, v in generate.turn_record(turn).items() if k != "texts"}  # a record from before
    assert generate.turn_from_record(older).notes == turn.notes  # the same English, as plain text


def test_conversations_are_saved_listed_renamed_reopened_and_deleted(store: Store, settings: Settings) -> None:
    conversations = store.conversations
    assert conversations.list() == []
    embedder = ingest.embedder_for_kb(store, settings, "fin")
    assert ingest.ingest_bytes(
        store, embedder, b"Revenue rose eleven percent in 2023.", "report.txt", "fin", SPRING_DEFAULT
    ).ok
    (chunk,) = store.keyword_search("revenue", ["fin"], top_k=1)
    live_source = generate.number_sources([chunk])[0]
    first = dataclasses.replace(full_turn(), sources=(live_source,), left_out=())
    cid = generate.save_turn(conversations, None, first)
    second = Turn(
        id="t2",
        question="And the dividend?",
        query="dividend",
        kbs=("fin", "board"),
        answer="No idea.",
        model="ollama:m",
    )
    assert generate.save_turn(conversations, cid, second) == cid
    (info,) = conversations.list()
    assert (info.title, info.knowledge_bases, info.turns, info.model) == (
        "How much did revenue rise?",
        ("fin", "board"),
        2,
        "ollama:m",
    )
    conversations.rename(cid, "  Revenue   questions ")
    info, turns = generate.load_conversation(conversations, cid)
    assert info.title == "Revenue questions" and [t.question for t in turns] == [first.question, second.question]
    assert turns[0] == first and turns[0].gone == ()
    # The document is deleted: the reopened turn keeps its text and says the chunk is gone.
    assert store.delete_document("fin", "report.txt")
    _, turns = generate.load_conversation(conversations, cid)
    assert turns[0].gone == (1,) and turns[0].sources[0].hit.content == chunk.content
    exported = json.loads(generate.conversation_json(info, turns))
    assert exported["title"] == "Revenue questions" and len(exported["turns"]) == 2
    assert generate.conversation_markdown_export(info, turns).startswith("# Revenue questions\n")
    with pytest.raises(RagError, match="the title is empty"):
        conversations.rename(cid, "   ")
    with pytest.raises(RagError, match="is not a conversation id"):
        conversations.get("not-a-uuid")
    assert conversations.delete(cid) and conversations.list() == [] and not conversations.delete(cid)
    with pytest.raises(RagError, match="it was deleted"):
        conversations.append(cid, generate.turn_record(second))


def test_a_tool_result_holding_a_date_is_saved_as_text(store: Store) -> None:
    """An MCP tool's structured result may hold values JSON has no type for: the turn is still saved."""
    from datetime import date

    turn = Turn(
        id="t3",
        question="When?",
        query="When?",
        answer="Tomorrow.",
        agent=True,
        steps=(Step(1, 1, "calendar", {"q": "x"}, "ok", 0.1, "ok", "cal", {"when": date(2026, 12, 2)}),),
    )
    cid = generate.save_turn(store.conversations, None, turn)
    _, (back,) = generate.load_conversation(store.conversations, cid)
    assert back.steps[0].data == {"when": "2026-12-02"} and back.answer == "Tomorrow."
