"""hit@k, mean reciprocal rank and nDCG@k from 1-based ranks (None: the right passage was not retrieved)."""

from __future__ import annotations

import math
from collections.abc import Sequence


def hit_rate(ranks: Sequence[int | None], k: int) -> float:
    """Share of questions whose right passage ranks within the top `k` (0.0 for no questions)."""
    return sum(1 for r in ranks if r is not None and r <= k) / len(ranks) if ranks else 0.0


def mean_reciprocal_rank(ranks: Sequence[int | None]) -> float:
    """Mean of 1/rank, a question not retrieved counting 0 (0.0 for no questions)."""
    return sum(1.0 / r for r in ranks if r) / len(ranks) if ranks else 0.0


def ndcg_at(relevance: Sequence[float], k: int) -> float:
    """nDCG@k of one ranked list: `relevance` holds each returned item's gain, best-ranked first (and, for
    the ideal order, every relevant item the list could have returned). DCG sums gain / log2(1 + rank) over
    the first `k`; the ideal DCG is that of the gains sorted best first. 0.0 when nothing is relevant."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    ideal = sorted(relevance, reverse=True)[:k]
    best = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal, 1))
    if best <= 0:
        return 0.0
    return sum(g / math.log2(rank + 1) for rank, g in enumerate(relevance[:k], 1)) / best


def ndcg_gain(rank: int | None, k: int) -> float:
    """One question's nDCG@k when one chunk counts as relevant, the best-ranked chunk holding its passage:
    1 / log2(1 + rank) within the first `k`, else 0 (the ideal is that chunk first, DCG 1).

    Only the best-ranked one counts, not every chunk holding the passage: with overlap the passage is often
    in two chunks, and the second copy tells the reader nothing new; counting it would ask an ideal list to
    hold both, and mark overlapping settings down for a redundancy they cannot avoid."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return 1.0 / math.log2(rank + 1) if rank is not None and 1 <= rank <= k else 0.0


def mean_ndcg(ranks: Sequence[int | None], k: int) -> float:
    """Mean over questions of `ndcg_gain` (0.0 for no questions)."""
    return sum(ndcg_gain(r, k) for r in ranks) / len(ranks) if ranks else 0.0
