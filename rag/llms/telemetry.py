"""The generation timeline: the phases of generations (model load, prompt evaluation, thinking,
output) as marks on the wall clock of the GPU samples.

`TIMELINE` is the process-wide one: whatever streams a generation (the chat, the GPU page's watched
generation) marks it there with `mark_generation`, and the GPU page draws the marks over its charts.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from dataclasses import dataclass

from rag.llms.types import GenerationStats
from rag.text import Text

PHASES = ("load", "prompt", "thinking", "output")
"""The phases of a generation, in the order they happen."""
PHASE_TITLES = {
    "load": Text("model load"),
    "prompt": Text("prompt evaluation"),
    "thinking": Text("thinking"),
    "output": Text("output"),
}


@dataclass(frozen=True)
class Mark:
    """One phase of one generation, on the samples' clock."""

    phase: str
    start: float
    """Epoch seconds, like Sample.t."""
    end: float
    label: str = ""
    """What generated: e.g. 'gpu page: qwen2.5:7b-instruct' or 'chat: qwen2.5:7b-instruct'."""

    @property
    def seconds(self) -> float:
        return self.end - self.start


class Timeline:
    """Marks of generation phases, bounded, thread-safe."""

    def __init__(self, maxlen: int = 2000) -> None:
        self._marks: deque[Mark] = deque(maxlen=maxlen)
        self._lock = threading.Lock()

    def mark(self, phase: str, start: float, end: float, label: str = "") -> Mark:
        if not isinstance(phase, str) or not phase.strip():
            raise ValueError(f"a mark needs a phase name, got {phase!r}")
        if not (math.isfinite(start) and math.isfinite(end)):
            raise ValueError(f"mark {phase!r} needs finite times, got start={start!r}, end={end!r}")
        if end < start:
            raise ValueError(f"mark {phase!r} ends before it starts: start={start!r}, end={end!r}")
        made = Mark(phase, float(start), float(end), label)
        with self._lock:
            self._marks.append(made)
        return made

    def marks(self, since: float | None = None) -> list[Mark]:
        """Marks that end at or after `since`, in the order they were made."""
        with self._lock:
            items = list(self._marks)
        return items if since is None else [m for m in items if m.end >= since]

    def mark_generation(
        self,
        label: str,
        started: float,
        finished: float,
        stats: GenerationStats | None,
        *,
        first_token_at: float | None = None,
        first_content_at: float | None = None,
    ) -> list[Mark]:
        """Mark the phases of one generation (see `generation_phases`); returns the marks made.

        `started` is when the request was sent, `finished` when the last event arrived, both
        time.time(); `first_token_at` the first thinking or answer text, `first_content_at` the first
        answer text."""
        return [
            self.mark(phase, a, b, label)
            for phase, a, b in generation_phases(
                started, finished, stats, first_token_at=first_token_at, first_content_at=first_content_at
            )
        ]

    def clear(self) -> None:
        with self._lock:
            self._marks.clear()


TIMELINE = Timeline()
"""The process-wide timeline: every page that streams a generation marks it here."""


def generation_phases(
    started: float,
    finished: float,
    stats: GenerationStats | None,
    *,
    first_token_at: float | None = None,
    first_content_at: float | None = None,
) -> list[tuple[str, float, float]]:
    """(phase, start, end) spans of a generation, within [started, finished].

    From Ollama's statistics: the generation began `total_duration` before it finished; the model
    load (`load_duration`) and the prompt evaluation (`prompt_eval_duration`) follow each other from
    there, and the output takes the last `eval_duration` (all scaled down in proportion should they
    add up to more than the client waited). When thinking came first (`first_content_at`,
    the first answer text, is later than `first_token_at`), the output is split into thinking and
    output. A stopped
    generation has no server timings: it is split at the first token instead, into 'prompt' (load
    and prompt evaluation together) and the output.
    """
    if finished < started:
        raise ValueError(f"a generation cannot finish ({finished!r}) before it started ({started!r})")

    def clamp(t: float) -> float:
        return min(max(t, started), finished)

    s = stats or GenerationStats()
    spans: list[tuple[str, float, float]] = []
    timed = any(v is not None for v in (s.load_duration, s.prompt_eval_duration, s.eval_duration))
    if timed and s.done_reason != "stopped":
        parts = sum(v or 0.0 for v in (s.load_duration, s.prompt_eval_duration, s.eval_duration))
        total = max(s.total_duration or 0.0, parts)
        elapsed = finished - started
        # The server's durations fit in what the client waited; when they do not (a replayed stream,
        # a skewed clock) they are scaled down so that the phases keep their proportions.
        scale = elapsed / total if total > elapsed and total > 0 else 1.0
        cursor = clamp(finished - total * scale) if s.total_duration else started
        for phase, seconds in (("load", s.load_duration), ("prompt", s.prompt_eval_duration)):
            if seconds:
                spans.append((phase, cursor, clamp(cursor + seconds * scale)))
                cursor = clamp(cursor + seconds * scale)
        if s.eval_duration:
            out_start = max(cursor, clamp(finished - s.eval_duration * scale))
        elif first_token_at is not None:
            out_start = max(cursor, clamp(first_token_at))
        else:
            out_start = finished
    elif first_token_at is not None:
        out_start = clamp(first_token_at)
        if out_start > started:
            spans.append(("prompt", started, out_start))
    else:
        return [("prompt", started, finished)] if finished > started else []
    if out_start < finished:
        # thinking came first when the first content token followed the first (thinking) token
        if first_token_at is not None and first_content_at is not None and first_content_at > first_token_at:
            split = max(out_start, clamp(first_content_at))
            if split > out_start:
                spans.append(("thinking", out_start, split))
            if finished > split:
                spans.append(("output", split, finished))
        else:
            spans.append(("output", out_start, finished))
    return spans
