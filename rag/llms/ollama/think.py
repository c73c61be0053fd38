"""Thinking that a model writes into its content between `<think>` tags, split out as it streams.

Models such as deepseek-r1 on an Ollama without the `thinking` field (or with think unset) put their
reasoning inline; a UI wants it apart from the answer, also when a tag arrives cut across chunks.
"""

from __future__ import annotations


class ThinkSplitter:
    """Splits `<think>...</think>` out of streamed content, also when a tag is cut across chunks."""

    OPEN, CLOSE = "<think>", "</think>"

    def __init__(self) -> None:
        self._in_think = False
        self._pending = ""
        self._lstrip = False

    def feed(self, text: str) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        self._pending += text
        while self._pending:
            tag = self.CLOSE if self._in_think else self.OPEN
            at = self._pending.find(tag)
            if at >= 0:
                self._emit(out, self._pending[:at])
                self._pending = self._pending[at + len(tag) :]
                self._in_think = not self._in_think
                self._lstrip = True  # the newlines models put after either tag are layout only
                continue
            keep = _partial_tag_length(self._pending, tag)
            ready = self._pending[: len(self._pending) - keep]
            self._emit(out, ready)
            self._pending = self._pending[len(ready) :]
            break
        return out

    def flush(self) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        self._emit(out, self._pending)
        self._pending = ""
        return out

    def _emit(self, out: list[tuple[str, str]], text: str) -> None:
        if self._lstrip:
            text = text.lstrip()
            if text:
                self._lstrip = False
        if text:
            out.append(("thinking" if self._in_think else "content", text))


def _partial_tag_length(text: str, tag: str) -> int:
    """Length of the longest end of `text` that could be the start of `tag`."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:n]):
            return n
    return 0
