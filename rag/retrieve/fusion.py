"""Hybrid ranking: the vector and the keyword hits fused into one list.

The default adds normalised scores: the vector list's cosines min-max over its candidates (the
weakest 0, the best 1), the keyword list's BM25 scores as a share of its best, the keyword list
weighing 2.5 times the vector list; reciprocal rank fusion (RRF) is the alternative. Chosen on the
public sets (rag/evaluation/data/eval, every question, the candidate lists of the real searches
fused offline) and checked on the 24-question set of the tests, hit@5 (en_race / zh_c3 / zh_cmrc_trial):

| fusion                                   | e5 + BM25           | WordLlama + BM25    | 24-q MRR (WordLlama) |
|------------------------------------------|---------------------|---------------------|----------------------|
| best single mode (keyword), for scale    | 0.938 / 0.976 / 0.993 | the same          | vector 0.916         |
| RRF k=60, equal weights, depth 50        | 0.941 / 0.980 / 0.992 | 0.922 / 0.897 / 0.922 | 0.927             |
| min-max on both lists, keyword x2, 50    | 0.950 / 0.986 / 0.995 | 0.941 / 0.982 / 0.994 | 0.899             |
| default: scores, keyword x2.5, depth 20  | 0.952 / 0.986 / 0.996 | 0.943 / 0.980 / 0.994 | 0.941             |

RRF throws the scores away: a keyword hit far ahead of the rest and one barely ahead count the
same, so a weak ranking (WordLlama in Chinese: hit@5 0.73) drags a strong one (BM25: 0.98) down.
Min-max on the keyword list makes the second of two keyword hits 0 however close its score (the
24-question set's loss). Depth 20 did as well as 50 (0.000 to 0.002 apart) for fewer candidates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag.store import Hit

METHODS = ("scores", "rrf")


@dataclass(frozen=True)
class Fusion:
    """How `fuse` combines the two lists.

    `scores`: sum of weight x normalised score (vector: (cos - lowest) / (highest - lowest) over
    its candidates; keyword: BM25 / highest), divided by the sum of the weights (so 1.0 is first
    in both lists). `rrf`: sum of
    weight / (k + rank).
    """

    method: str = "scores"
    vector_weight: float = 1.0
    keyword_weight: float = 2.5
    depth: int = 20
    """Candidates taken from each list before fusing (at least top_k)."""
    k: int = 60
    """RRF's rank offset (`rrf` only)."""

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"unknown fusion method {self.method!r} (choose one of: {', '.join(METHODS)})")
        if self.vector_weight < 0 or self.keyword_weight < 0 or self.vector_weight + self.keyword_weight <= 0:
            raise ValueError(
                f"fusion weights must be >= 0 and not both 0, got vector {self.vector_weight}, "
                f"keyword {self.keyword_weight}"
            )


DEFAULT_FUSION = Fusion()


def _contributions(hits: Sequence[Hit], fusion: Fusion, keyword: bool) -> list[float]:
    weight = fusion.keyword_weight if keyword else fusion.vector_weight
    if fusion.method == "rrf":
        return [weight / (fusion.k + rank) for rank in range(1, len(hits) + 1)]
    scores = [(h.keyword_score if keyword else h.vector_score) for h in hits]
    values = [h.score if s is None else s for h, s in zip(hits, scores)]
    if not values:
        return []
    # BM25 has a natural zero (no query term): a keyword score is a share of the best one. Cosine
    # has none, so the vector list runs from its weakest candidate (0) to its best (1). Min-max on
    # the keyword list too would make the second of two keyword hits 0 however close its score.
    high, low = max(values), (min(0.0, min(values)) if keyword else min(values))
    total = fusion.vector_weight + fusion.keyword_weight
    return [weight * ((v - low) / (high - low) if high > low else 1.0) / total for v in values]


def fuse(vector_hits: Sequence[Hit], keyword_hits: Sequence[Hit], fusion: Fusion, top_k: int) -> list[Hit]:
    """The `top_k` best fused hits, numbered by `fused_rank`; a hit found by both lists keeps both
    its scores and ranks. Ties keep the vector list's order, then the keyword list's."""
    scores: dict[object, float] = {}
    merged: dict[object, Hit] = {}
    depth = max(top_k, fusion.depth)
    for keyword, hits in ((False, vector_hits[:depth]), (True, keyword_hits[:depth])):
        for hit, value in zip(hits, _contributions(hits, fusion, keyword)):
            scores[hit.id] = scores.get(hit.id, 0.0) + value
            seen = merged.get(hit.id)
            merged[hit.id] = (
                hit
                if seen is None
                else replace(
                    seen,
                    vector_score=seen.vector_score if seen.vector_score is not None else hit.vector_score,
                    keyword_score=seen.keyword_score if seen.keyword_score is not None else hit.keyword_score,
                    vector_rank=seen.vector_rank if seen.vector_rank is not None else hit.vector_rank,
                    keyword_rank=seen.keyword_rank if seen.keyword_rank is not None else hit.keyword_rank,
                )
            )
    ranked = sorted(scores, key=lambda key: scores[key], reverse=True)[:top_k]
    return [replace(merged[key], score=scores[key], fused_rank=rank) for rank, key in enumerate(ranked, 1)]


QUERY_RRF_K = 10
"""RRF's rank offset when fusing the lists of two queries. With k = 10 and the question weighing 0.8,
the question's first hit ranks between the rewrite's third and fourth (1/11 x 0.8 = 0.073 against
1/13 = 0.077 and 1/14 = 0.071): a top-8 prompt holds the rewrite's best five and the question's best
three; k = 60 would interleave them one for one, letting a follow-up's own words ("她的父亲呢")
crowd out half of what the rewrite found."""
QUESTION_WEIGHT = 0.8
"""The question's list against the rewrite's (1.0): the rewrite carries what the question points back to."""


def fuse_queries(
    ranked: Sequence[Sequence[Hit]], weights: Sequence[float], top_k: int, names: Sequence[str] | None = None
) -> list[Hit]:
    """The `top_k` best hits of several queries' ranked lists (a rewrite's and the question's), by
    weighted reciprocal rank (their scores come from different queries and are not comparable); each
    hit is shown as the list that ranked it highest found it (its score and ranks there; the first list on a tie),
    named by `names` (`Hit.found_by`): each list has its own "vector #1", and the walk of a follow-up showed two
    sources ranked "vector #1" with nothing to tell which search put them there. (Shown as the list that gave it the
    most, the question's #1 was shown as the rewrite's #2, numbered [1] above the rewrite's #1: read as out of
    rank.)"""
    if len(ranked) != len(weights) or (names is not None and len(names) != len(ranked)):
        raise ValueError(
            f"{len(ranked)} lists of hits but {len(weights)} weights"
            + ("" if names is None else f" and {len(names)} names")
        )
    scores: dict[object, float] = {}
    best: dict[object, tuple[int, Hit]] = {}
    for i, (hits, weight) in enumerate(zip(ranked, weights)):
        for rank, hit in enumerate(hits, 1):
            scores[hit.id] = scores.get(hit.id, 0.0) + weight / (QUERY_RRF_K + rank)
            if hit.id not in best or rank < best[hit.id][0]:
                best[hit.id] = (rank, hit if names is None else replace(hit, found_by=names[i]))
    ordered = sorted(scores, key=lambda key: scores[key], reverse=True)[:top_k]
    return [best[key][1] for key in ordered]
