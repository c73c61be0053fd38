"""A finished `Turn` as a JSON record and back: what a stored conversation keeps of each turn.

Everything a reopened turn needs to render as it did is kept: the question and the query
searched, the route, each source with the chunk's id, text, metadata, score and ranks (so the
citation badges check the same text again), the answer, the agent's steps, web sources, the
model, its timings and the budget, and how the turn ended. `VERSION` is written with each record;
a record of a later version than this code knows is refused rather than half-read.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from rag.errors import RagError
from rag.generate.budget import Budget
from rag.generate.conversation import Turn
from rag.generate.prompt import Source
from rag.llms.types import GenerationStats
from rag.store.records import Copy, Hit
from rag.text import Text

VERSION = 1
_PLAIN = (
    "id",
    "question",
    "query",
    "subject",
    "mode",
    "search_ms",
    "problem",
    "model",
    "agent",
    "answer",
    "thinking",
    "stopped",
    "error",
    "agent_summary",
    "route",
    "route_reason",
    "route_budget",
    "web_warning",
    "attributed",
    "looped",
    "summary",
    "summary_covers",
)


_TEXTS = ("problem", "error", "agent_summary", "route_reason", "web_warning")
"""Fields that may hold a `rag.text.Text`: kept with their template under "texts" too, so that a reopened
turn's messages are translated as they were when it was asked (the plain fields stay for older readers)."""


def _text_out(value: Any) -> Any:
    if isinstance(value, Text):
        return {"template": value.template, "values": {k: _text_out(v) for k, v in value.values.items()}}
    return value


def _text_in(value: Any) -> Any:
    if isinstance(value, dict) and isinstance(value.get("template"), str):
        return Text(value["template"], **{k: _text_in(v) for k, v in (value.get("values") or {}).items()})
    return value


def _hit(hit: Hit) -> dict[str, Any]:
    return {
        "id": str(hit.id),
        "content": hit.content,
        "metadata": hit.metadata,
        "score": hit.score,
        "vector_score": hit.vector_score,
        "keyword_score": hit.keyword_score,
        "fused_rank": hit.fused_rank,
        "vector_rank": hit.vector_rank,
        "keyword_rank": hit.keyword_rank,
        "found_by": hit.found_by,
        "copies": [c.as_dict() for c in hit.copies],
    }


def _source(source: Source) -> dict[str, Any]:
    return {"n": source.n, "hit": _hit(source.hit), "text": source.text}


def turn_record(turn: Turn) -> dict[str, Any]:
    """The turn as JSON-ready data."""
    record: dict[str, Any] = {"version": VERSION}
    for name in _PLAIN:
        record[name] = getattr(turn, name)
    record["kbs"] = list(turn.kbs)
    record["notes"] = list(turn.notes)
    record["sources"] = [_source(s) for s in turn.sources]
    record["left_out"] = [_source(s) for s in turn.left_out]
    record["route_tools"] = list(turn.route_tools)
    record["stats"] = dataclasses.asdict(turn.stats) if turn.stats is not None else None
    record["budget"] = dataclasses.asdict(turn.budget) if turn.budget is not None else None
    record["steps"] = [
        dataclasses.asdict(s) | {"arguments": dict(s.arguments), "data": dict(s.data) if s.data is not None else None}
        for s in turn.steps
    ]
    record["web_sources"] = [dataclasses.asdict(w) for w in turn.web_sources]
    texts = {name: _text_out(getattr(turn, name)) for name in _TEXTS if isinstance(getattr(turn, name), Text)}
    if any(isinstance(n, Text) for n in turn.notes):
        texts["notes"] = [_text_out(n) if isinstance(n, Text) else None for n in turn.notes]
    if texts:
        record["texts"] = texts
    return record


def _hit_from(data: dict[str, Any]) -> Hit:
    return Hit(
        id=uuid.UUID(data["id"]),
        content=data["content"],
        metadata=dict(data.get("metadata") or {}),
        score=float(data.get("score") or 0.0),
        vector_score=data.get("vector_score"),
        keyword_score=data.get("keyword_score"),
        fused_rank=data.get("fused_rank"),
        vector_rank=data.get("vector_rank"),
        keyword_rank=data.get("keyword_rank"),
        found_by=data.get("found_by"),
        copies=tuple(Copy.from_dict(c) for c in data.get("copies") or () if isinstance(c, dict)),
    )


def _source_from(data: dict[str, Any]) -> Source:
    return Source(int(data["n"]), _hit_from(data["hit"]), data.get("text"))


def turn_from_record(record: dict[str, Any]) -> Turn:
    """The turn a record was made from; RagError for a record this code cannot read."""
    from rag.agent import Step
    from rag.agent.websearch import WebItem

    version = record.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise RagError(
            Text(
                "a stored turn has record version {version}; this version of the app reads up to "
                "{supported}: update the app",
                version=repr(version),
                supported=VERSION,
            )
        )
    try:
        values: dict[str, Any] = {name: record[name] for name in _PLAIN if name in record}
        values.update(
            kbs=tuple(record.get("kbs") or ()),
            notes=tuple(record.get("notes") or ()),
            sources=tuple(_source_from(s) for s in record.get("sources") or ()),
            left_out=tuple(_source_from(s) for s in record.get("left_out") or ()),
            route_tools=tuple(record.get("route_tools") or ()),
            stats=GenerationStats(**record["stats"]) if record.get("stats") else None,
            budget=Budget(**record["budget"]) if record.get("budget") else None,
            steps=tuple(Step(**s) for s in record.get("steps") or ()),
            web_sources=tuple(WebItem(**w) for w in record.get("web_sources") or ()),
        )
        texts = record.get("texts") or {}
        for name in _TEXTS:
            if name in texts:
                values[name] = _text_in(texts[name])
        if isinstance(texts.get("notes"), list) and len(texts["notes"]) == len(values["notes"]):
            values["notes"] = tuple(
                _text_in(t) if t is not None else n for t, n in zip(texts["notes"], values["notes"])
            )
        return Turn(**values)
    except (KeyError, TypeError, ValueError) as exc:
        raise RagError(
            Text("a stored turn cannot be read ({error}: {detail})", error=type(exc).__name__, detail=str(exc))
        ) from None
