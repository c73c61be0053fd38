"""Which sources an answer cites: `[n]` markers found, checked against the sources, or added.

An answer is only as trustworthy as its markers: a marker that points at no source is flagged, a
marker whose source does not support its sentence is flagged (rag.generate.support), a sentence no
source supports is flagged, and for the embedded base model (which cannot follow the citation
instruction) each sentence is matched to the source its words came from: shown as "matched",
never as cited.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag.generate.prompt import Source
from rag.generate.sentences import sentence_spans
from rag.generate.support import SUPPORTED, best_support, content_terms, support
from rag.llms.choice import cites_by_itself  # the model-name rule lives with the models

# [1], [1, 2], [1][2], and the full-width 【1】 that Chinese answers often use.
_MARKER = re.compile(r"[\[【]\s*(\d+(?:\s*[,，、]\s*\d+)*)\s*[\]】]")


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


class Status:
    """What a sentence of an answer is, as the badges show it."""

    CITED = "cited"
    """The model cited a source and that source supports the sentence."""
    NOT_SUPPORTED = "not supported"
    """The model cited a source (or one that does not exist) that does not support the sentence."""
    MATCHED = "matched"
    """The marker was added afterwards by matching the sentence to a source: never counted as cited."""
    UNSUPPORTED = "unsupported"
    """No marker and no source supports it: possibly invented."""
    UNCITED = "uncited"
    """No marker, but a source supports it."""
    SHORT = "short"
    """Too few content words to judge ("Yes.", a heading)."""


@dataclass(frozen=True)
class SentenceCheck:
    start: int
    end: int
    numbers: tuple[int, ...]
    """The markers in the sentence, as written (including numbers that point at no source)."""
    support: float | None
    """Share of its content terms in the cited sources (in the best source when it cites none)."""
    source: int | None
    """The source that supports it best (the cited ones when it cites some)."""
    status: str

    @property
    def flagged(self) -> bool:
        return self.status in (Status.NOT_SUPPORTED, Status.UNSUPPORTED)


@dataclass(frozen=True)
class Grounding:
    """An answer checked sentence by sentence against its sources: what the badges say."""

    sentences: tuple[SentenceCheck, ...]
    cited: tuple[int, ...]
    """Sources the model cited for a sentence they support, in order of first use."""
    unknown: tuple[int, ...]
    """Markers that point at no source."""
    attributed: bool
    """The markers were added by matching, not written by the model."""

    @property
    def flagged(self) -> tuple[SentenceCheck, ...]:
        return tuple(s for s in self.sentences if s.flagged)

    @property
    def judged(self) -> int:
        return sum(s.status != Status.SHORT for s in self.sentences)

    @property
    def grounded(self) -> bool:
        """The green badge: the model cited sources that support what it said, and nothing is flagged."""
        return bool(self.cited) and not self.flagged and not self.unknown and not self.attributed

    def as_dict(self, answer: str) -> list[dict[str, object]]:
        return [{"text": answer[s.start:s.end].strip(), "citations": list(s.numbers), "status": s.status,
                 "support": None if s.support is None else round(s.support, 3), "supported_by": s.source}
                for s in self.sentences if answer[s.start:s.end].strip()]


def annotate(answer: str, grounding: Grounding, badge: Callable[[int, str], str], flag: str) -> str:
    """The answer with each marker number replaced by `badge(n, kind)` (kind: a `Status` of its
    sentence: cited, not supported, matched; or "unknown" for a number that points at no source),
    and `flag` after each sentence that cites nothing and that no source supports."""
    spans = marker_spans(answer)
    parts: list[str] = []
    for sentence in grounding.sentences:
        pos = sentence.start
        for start, end, numbers in spans:
            if not sentence.start <= start < sentence.end:
                continue
            parts.append(answer[pos:start])
            parts.append(" ".join(badge(n, "unknown" if n in grounding.unknown else sentence.status)
                                  for n in numbers))
            pos = end
        tail = answer[pos:sentence.end]
        if sentence.status == Status.UNSUPPORTED:
            body = tail.rstrip()
            tail = f"{body} {flag}{tail[len(body):]}"
        parts.append(tail)
    covered = grounding.sentences[-1].end if grounding.sentences else 0
    return "".join(parts) + answer[covered:]


def _source_terms(sources: Sequence[Source]) -> dict[int, set[str]]:
    return {s.n: content_terms(s.hit.content) for s in sources}


def check_grounding(answer: str, sources: Sequence[Source], *, attributed: bool = False,
                    threshold: float = SUPPORTED) -> Grounding:
    """Each sentence of `answer` with its markers and how well the sources it cites support it."""
    terms = _source_terms(sources)
    markers = marker_spans(answer)
    checks: list[SentenceCheck] = []
    cited: list[int] = []
    for start, end in sentence_spans(answer):
        sentence = answer[start:end]
        numbers = tuple(n for a, _b, ns in markers if start <= a < end for n in ns)
        valid = [n for n in dict.fromkeys(numbers) if n in terms]
        if numbers:
            union = set().union(*(terms[n] for n in valid)) if valid else set()
            share = support(sentence, union)
            source = max(valid, key=lambda n: support(sentence, terms[n]) or 0.0) if valid else None
        else:
            source, share = best_support(sentence, terms.items())
        if share is None:
            status = Status.SHORT
        elif numbers:
            status = (Status.MATCHED if attributed else Status.CITED) if share >= threshold and valid \
                else Status.NOT_SUPPORTED
        else:
            status = Status.UNCITED if share >= threshold else Status.UNSUPPORTED
        if status == Status.CITED:
            cited += valid
        checks.append(SentenceCheck(start, end, numbers, share, source, status))
    unknown = tuple(dict.fromkeys(n for n in citation_numbers(answer) if n not in terms))
    return Grounding(tuple(checks), tuple(dict.fromkeys(cited)), unknown, attributed)


def attribute_citations(answer: str, sources: Sequence[Source], *, threshold: float = SUPPORTED) -> str:
    """Add `[n]` to each sentence whose words mostly come from one source.

    For models that cannot follow the citation instruction (the embedded base model): the
    marker then names the source the sentence was taken from, so it can still be checked (the
    badges show such markers as "matched", never as cited).
    """
    if not sources:
        return answer
    terms = _source_terms(sources)
    parts: list[str] = []
    for start, end in sentence_spans(answer):
        sentence = answer[start:end]
        n, share = best_support(sentence, terms.items())
        if n is None or share is None or share < threshold or _MARKER.search(sentence):
            parts.append(sentence)
            continue
        body = sentence.rstrip()
        core = body.rstrip(".!?。！？\"'”’」』）)")
        parts.append(f"{core} [{n}]{body[len(core):]}{sentence[len(body):]}")
    return "".join(parts)


def attribute_if_uncited(answer: str, sources: Sequence[Source], model_name: str) -> str:
    """`answer`, with markers added by `attribute_citations` when its model cannot cite and it cites nothing."""
    if cites_by_itself(model_name) or not answer or not check_citations(answer, sources).uncited:
        return answer
    return attribute_citations(answer, sources)
