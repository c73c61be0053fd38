"""How a benchmark prints: sections, lines, and ratios against a peer with their goal."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any, TextIO


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """The fastest of `repeat` runs of `fn` (seconds) and the result of the last one."""
    best = float("inf")
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def best_of_interleaved(
    ours: Callable[[], Any], peer: Callable[[], Any], repeat: int
) -> tuple[tuple[float, Any], tuple[float, Any]]:
    """`best_of` for two functions run in turns (ours, peer, ours, ...), so that both meet the same
    spells of a noisy machine: on a 2-core VM one encode of the same text took 0.16-0.28 s within
    seconds, and five runs of ours followed by five of the peer gave 2.1x to 3.3x from run to run."""
    best = [float("inf"), float("inf")]
    results: list[Any] = [None, None]
    for _ in range(repeat):
        for i, fn in enumerate((ours, peer)):
            took, results[i] = best_of(fn, 1)
            best[i] = min(best[i], took)
    return (best[0], results[0]), (best[1], results[1])


class Report:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def section(self, title: str) -> None:
        print(f"\n## {title}", file=self.out, flush=True)

    def line(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def ratio(self, label: str, ours: float, peer: float, goal: float, unit: str = "s") -> bool:
        ratio = peer / ours if ours > 0 else float("inf")
        met = ratio >= goal
        # Rounded down, so that a ratio just short of its goal never reads as the goal (2.97 was "3.0x").
        shown = f"{math.floor(ratio * 10) / 10:.1f}" if math.isfinite(ratio) else "inf"
        self.line(
            f"{label}: ours {ours:.4f} {unit}, peer {peer:.4f} {unit} -> {shown}x "
            f"(goal >= {goal:g}x: {'met' if met else 'NOT met'})"
        )
        return met
