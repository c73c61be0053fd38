"""The settings worth choosing between: those no other setting beats on quality for fewer prompt tokens."""

from __future__ import annotations

from collections.abc import Sequence

from rag.tuning.sweep import PointResult


def pareto_front(points: Sequence[PointResult], metric: str = "mrr") -> tuple[PointResult, ...]:
    """The points on the Pareto front of quality (`metric`, higher is better) against prompt tokens (fewer is
    better), cheapest first: a point is on it when every point that costs no more scores less. Of points
    equal in both, the first in `points` stands for them."""
    ordered = sorted(points, key=lambda p: (p.prompt_tokens, -p.score(metric)))
    front: list[PointResult] = []
    for point in ordered:
        if not front or point.score(metric) > front[-1].score(metric):
            front.append(point)
    return tuple(front)
