"""Ending a generation that loops: the same run of words a third time ends it, and the repeats are cut.

Small models at low temperature fall into loops ("A trace tree is a sequence of nested traces…"
over and over until the token limit); a repeat penalty makes it rarer, not impossible. The guard
wraps any model's stream (the embedded one and Ollama's alike): when the latest `N` tokens (words,
numbers, or single CJK characters) have occurred twice before at the same distance (the text runs
in a cycle: a name said in three sentences of different lengths is no loop), it closes the model's
stream (which stops the generation), emits a 'loop' event that keeps the text up to where the
first repeat began, and a final 'done' whose reason is "loop".
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from rag.llms.types import GenerationStats, StreamEvent
from rag.scripts import CJK

N = 10
"""Tokens in the repeated run: a legitimate answer rarely says the same 10 words three times."""
TIMES = 3
# Each CJK character, then words and numbers; punctuation is not counted (a Markdown table's
# "| --- | --- |" repeats it legitimately).
_TOKEN = re.compile(f"[{CJK}]|[^\\W_{CJK}]+")
_WORD_AT_END = re.compile(f"[^\\W_{CJK}]+$")


class LoopGuard:
    """Fed the content as it streams; `feed` returns where to cut once a run of N tokens repeats TIMES times."""

    def __init__(self, n: int = N, times: int = TIMES) -> None:
        self.n, self.times = n, times
        self.text = ""
        self._tokens: list[tuple[str, int]] = []
        """(token, start offset) of each complete token so far."""
        self._seen: dict[tuple[str, ...], list[int]] = {}
        self._scanned = 0

    def feed(self, piece: str) -> int | None:
        self.text += piece
        # A word at the very end may still grow with the next piece: scan up to its start.
        tail = _WORD_AT_END.search(self.text, self._scanned)
        upto = tail.start() if tail else len(self.text)
        if upto <= self._scanned:
            return None
        for match in _TOKEN.finditer(self.text, self._scanned, upto):
            self._tokens.append((match.group(), match.start()))
            if len(self._tokens) < self.n:
                continue
            run = tuple(t for t, _ in self._tokens[-self.n :])
            starts = self._seen.setdefault(run, [])
            starts.append(len(self._tokens) - self.n)
            last = starts[-self.times :]
            if len(last) == self.times and len({b - a for a, b in zip(last, last[1:])}) == 1:
                self._scanned = upto
                return self._tokens[last[1]][1]
        self._scanned = upto
        return None


def guard_loops(events: Iterator[StreamEvent]) -> Iterator[StreamEvent]:
    """`events` until the content loops: then a 'loop' event and a 'done' with reason "loop"."""
    guard = LoopGuard()
    for event in events:
        yield event
        cut = guard.feed(event.text) if event.kind == "content" and event.text else None
        if cut is not None:
            close = getattr(events, "close", None)
            if close is not None:
                close()  # the model's stream ends its generation (llama.cpp, the HTTP response)
            yield StreamEvent("loop", keep=cut)
            # Cut before the model's own 'done': there are no statistics to pass on.
            yield StreamEvent("done", stats=GenerationStats(done_reason="loop"))
            return
