"""The MCP search tool's hits say where each search ranked them (not only the bare fused score)."""

from __future__ import annotations

import uuid

from rag.generate.kb_tools import SearchHit, hit_out
from rag.store import Hit


def test_a_hybrid_hit_carries_its_ranks_and_scores() -> None:
    hit = Hit(
        id=uuid.uuid4(),
        content="text",
        metadata={"original_filename": "a.pdf", "pages": [3]},
        score=0.5123456789,
        vector_score=0.8213,
        keyword_score=7.4,
        fused_rank=2,
        vector_rank=3,
        keyword_rank=1,
    )
    out = hit_out(hit)
    assert (out.fused_rank, out.vector_rank, out.keyword_rank) == (2, 3, 1)
    assert (out.vector_score, out.keyword_score, out.score) == (0.8213, 7.4, 0.512346)
    assert out.ranking == "hybrid #2 · vector #3 (0.82) · keyword #1 (BM25 7.4)"


def test_a_keyword_hit_leaves_the_vector_fields_empty() -> None:
    out = hit_out(Hit(id=uuid.uuid4(), content="t", metadata={}, score=3.0, keyword_score=3.0, keyword_rank=1))
    assert (out.fused_rank, out.vector_rank, out.vector_score) == (None, None, None)
    assert out.ranking == "keyword #1 (BM25 3.0)"
    schema = SearchHit.model_json_schema()
    assert {"ranking", "fused_rank", "vector_rank", "keyword_rank"} <= set(schema["properties"])
    assert all(schema["properties"][name].get("description") for name in schema["properties"])
