"""Hybrid ranking: weighted reciprocal rank fusion of the vector and the keyword hits."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag.store import Hit


@dataclass(frozen=True)
class Fusion:
    """Weighted reciprocal rank fusion: score = sum of weight / (k + rank) over the two lists."""

    k: int = 60
    vector_weight: float = 1.0
    keyword_weight: float = 1.0
    depth: int = 50
    """Candidates taken from each list before fusing (at least top_k)."""


DEFAULT_FUSION = Fusion()


def fuse(vector_hits: Sequence[Hit], keyword_hits: Sequence[Hit], fusion: Fusion, top_k: int) -> list[Hit]:
    """The `top_k` best fused hits; a hit found by both lists keeps both its scores."""
    scores: dict[object, float] = {}
    merged: dict[object, Hit] = {}
    for weight, hits in ((fusion.vector_weight, vector_hits), (fusion.keyword_weight, keyword_hits)):
        for rank, hit in enumerate(hits, 1):
            scores[hit.id] = scores.get(hit.id, 0.0) + weight / (fusion.k + rank)
            seen = merged.get(hit.id)
            merged[hit.id] = hit if seen is None else replace(
                seen,
                vector_score=seen.vector_score if seen.vector_score is not None else hit.vector_score,
                keyword_score=seen.keyword_score if seen.keyword_score is not None else hit.keyword_score,
            )
    ranked = sorted(scores, key=lambda key: scores[key], reverse=True)[:top_k]
    return [replace(merged[key], score=scores[key]) for key in ranked]
