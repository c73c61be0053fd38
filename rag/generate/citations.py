"""Which sources an answer cites: `[n]` markers found, checked against the sources, or added.

An answer is only as trustworthy as its markers: a marker that points at no source is flagged,
and for the embedded base model (which cannot follow the citation instruction) each sentence is
matched to the source its words came from, so it can still be checked.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag.generate.prompt import Source
from rag.llms.choice import cites_by_itself  # the model-name rule lives with the models

# [1], [1, 2], [1][2], and the full-width 【1】 that Chinese answers often use.
_MARKER = re.compile(r"[\[【]\s*(\d+(?:\s*[,，、]\s*\d+)*)\s*[\]】]")
_SENTENCE = re.compile(r"[^.!?。！？]+[.!?。！？]*")
_TERMS = re.compile(r"[^\W_]+", re.UNICODE)


@dataclass(frozen=True)
class CitationCheck:
    cited: tuple[int, ...]
    """Source numbers the answer cites that exist, in order of first use."""
    unknown: tuple[int, ...]
    """Markers that point at no source."""

    @property
    def uncited(self) -> bool:
        return not self.cited and not self.unknown


def _numbers(match: re.Match[str]) -> tuple[int, ...]:
    return tuple(int(part.strip()) for part in re.split(r"[,，、]", match.group(1)))


def citation_numbers(answer: str) -> list[int]:
    return [n for match in _MARKER.finditer(answer) for n in _numbers(match)]


def check_citations(answer: str, sources: Sequence[Source]) -> CitationCheck:
    valid = {s.n for s in sources}
    numbers = list(dict.fromkeys(citation_numbers(answer)))
    return CitationCheck(tuple(n for n in numbers if n in valid), tuple(n for n in numbers if n not in valid))


def marker_spans(answer: str) -> list[tuple[int, int, tuple[int, ...]]]:
    """(start, end, numbers) of each citation marker, for rendering them as badges."""
    return [(match.start(), match.end(), _numbers(match)) for match in _MARKER.finditer(answer)]


def replace_markers(answer: str, sources: Sequence[Source], badge: Callable[[int, bool], str]) -> str:
    """The answer with each marker replaced by `badge(n, points_at_a_source)` per number, space-separated."""
    valid = {s.n for s in sources}
    parts: list[str] = []
    pos = 0
    for start, end, numbers in marker_spans(answer):
        parts.append(answer[pos:start])
        parts.append(" ".join(badge(n, n in valid) for n in numbers))
        pos = end
    parts.append(answer[pos:])
    return "".join(parts)


def _terms(text: str) -> set[str]:
    from rag.retrieve.keywords import search_text

    return {t.lower() for t in _TERMS.findall(search_text(text)) if len(t) > 2 or not t.isascii()}


def attribute_citations(answer: str, sources: Sequence[Source], *, threshold: float = 0.5) -> str:
    """Add `[n]` to each sentence whose words mostly come from one source.

    For models that cannot follow the citation instruction (the embedded base model): the
    marker then names the source the sentence was taken from, so it can still be checked.
    """
    if not sources:
        return answer
    source_terms = [(s.n, _terms(s.hit.content)) for s in sources]

    def cite(match: re.Match[str]) -> str:
        sentence = match.group()
        words = _terms(sentence)
        if not words or _MARKER.search(sentence):
            return sentence
        best_n, best = max(((n, len(words & terms) / len(words)) for n, terms in source_terms),
                           key=lambda pair: pair[1])
        if best < threshold:
            return sentence
        body = sentence.rstrip()
        core = body.rstrip(".!?。！？")
        return f"{core} [{best_n}]{body[len(core):]}{sentence[len(body):]}"

    return _SENTENCE.sub(cite, answer)


def attribute_if_uncited(answer: str, sources: Sequence[Source], model_name: str) -> str:
    """`answer`, with markers added by `attribute_citations` when its model cannot cite and it cites nothing."""
    if cites_by_itself(model_name) or not answer or not check_citations(answer, sources).uncited:
        return answer
    return attribute_citations(answer, sources)
