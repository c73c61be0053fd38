"""hit@k and mean reciprocal rank from 1-based ranks (None: the right passage was not retrieved)."""

from __future__ import annotations

from collections.abc import Sequence


def hit_rate(ranks: Sequence[int | None], k: int) -> float:
    """Share of questions whose right passage ranks within the top `k` (0.0 for no questions)."""
    return sum(1 for r in ranks if r is not None and r <= k) / len(ranks) if ranks else 0.0


def mean_reciprocal_rank(ranks: Sequence[int | None]) -> float:
    """Mean of 1/rank, a question not retrieved counting 0 (0.0 for no questions)."""
    return sum(1.0 / r for r in ranks if r) / len(ranks) if ranks else 0.0
