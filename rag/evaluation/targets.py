"""Where is the expected passage? The chunks that overlap its answer span, or, for a passage typed without
one, the chunks that hold it, whole, split or approximately."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

import numpy as np

from rag.chunking import Chunk
from rag.evaluation.normalise import NormalisedText, normalise

_APPROXIMATE_MIN_SHARE = 0.5
"""A passage not found verbatim matches a chunk approximately if that chunk holds an
unbroken run of at least this share of the passage's words."""


@dataclass(frozen=True)
class Targets:
    """The chunks that hold a question's expected passage.

    With the answer's span (a generated question's character offsets in the document), every chunk whose
    span overlaps it is a target (AutoRAG's rule): one question set then scores every chunking of the
    document alike, and a chunk holding part of the answer counts as retrieving it. The span is trusted
    when the document is not given or holds the passage at an occurrence overlapping it; otherwise (the
    span came from another text) the passage is looked up as below.

    Without a span (text is compared after `normalise`: NFKC, case-folded, every run of whitespace one
    space, soft hyphens removed):

    1. The passage is looked up in the document text, and each occurrence mapped back to a
       character span. Every chunk whose span covers a whole occurrence is a target.
    2. If none does, the passage was cut by a chunk boundary: the chunk(s) covering the
       largest share of an occurrence are the targets, and `split` is True.
    3. Without the document, or when the passage is not in it verbatim, each chunk's own text
       is searched; failing that, the chunk(s) with the longest unbroken run of the passage's
       words (at least half of them) are targets, with `found` False (an approximate match).
    """

    indices: frozenset[int]
    """Chunk indices (`Chunk.index`)."""
    split: bool
    """No single chunk holds the whole passage."""
    coverage: float
    """Share of the passage inside the best target chunk (1.0 unless split)."""
    found: bool
    """The passage occurs verbatim (after normalisation) in the document or a chunk."""


_NO_TARGETS = Targets(frozenset(), False, 0.0, False)


def target_chunks(chunks: Sequence[Chunk], expected_text: str, document_text: str | None = None) -> set[int]:
    """Indices of the chunks that contain the expected passage (see `Targets` for the rules)."""
    return set(find_targets(chunks, expected_text, document_text).indices)


def find_targets(
    chunks: Sequence[Chunk],
    expected_text: str,
    document: str | NormalisedText | None = None,
    *,
    normalised_chunks: Sequence[str] | None = None,
    span: tuple[int, int] | None = None,
) -> Targets:
    """Which chunks hold `expected_text` (overlap `span`, when given), and whether it was split (see
    `Targets`).

    `normalised_chunks` (`normalise` of each chunk's text) saves recomputing them when many
    passages are looked up in the same chunks.
    """
    needle = normalise(expected_text)
    if not chunks or (not needle and span is None):
        return _NO_TARGETS
    doc = None
    if document is not None:
        doc = document if isinstance(document, NormalisedText) else NormalisedText.of(document)
    if span is not None and (doc is None or not needle or _holds_at(doc, needle, span)):
        return _targets_overlapping(chunks, span)
    if not needle:
        return _NO_TARGETS
    if doc is not None:
        spans = doc.find_all(needle)
        if spans:
            return _targets_from_spans(chunks, spans)
    normalised = normalised_chunks if normalised_chunks is not None else [normalise(c.text) for c in chunks]
    holding = frozenset(c.index for c, text in zip(chunks, normalised) if needle in text)
    if holding:
        return Targets(holding, False, 1.0, True)
    return _approximate(chunks, normalised, needle)


def _holds_at(doc: NormalisedText, needle: str, span: tuple[int, int]) -> bool:
    """Does the document hold the passage at an occurrence overlapping `span`? (A span saved with a question
    from one text, checked against another, points at the wrong words.)"""
    start, end = span
    return any(lo < end and hi > start for lo, hi in doc.find_all(needle))


def _targets_overlapping(chunks: Sequence[Chunk], span: tuple[int, int]) -> Targets:
    """Every chunk overlapping `span`; split when none holds it whole, coverage the best chunk's share."""
    start, end = span
    length = max(end - start, 1)
    shares = {
        c.index: (min(c.end, end) - max(c.start, start)) / length for c in chunks if c.start < end and c.end > start
    }
    if not shares:
        # The answer lies only in text no chunk kept (dropped as too short, or past the end).
        return Targets(frozenset(), False, 0.0, True)
    best = min(max(shares.values()), 1.0)
    return Targets(frozenset(shares), best < 1.0, best, True)


def _targets_from_spans(chunks: Sequence[Chunk], spans: Sequence[tuple[int, int]]) -> Targets:
    starts = np.fromiter((c.start for c in chunks), dtype=np.int64, count=len(chunks))
    ends = np.fromiter((c.end for c in chunks), dtype=np.int64, count=len(chunks))
    indices = np.fromiter((c.index for c in chunks), dtype=np.int64, count=len(chunks))
    whole: set[int] = set()
    best_share = 0.0
    best: set[int] = set()
    for start, end in spans:
        length = max(end - start, 1)
        covers = (starts <= start) & (ends >= end)
        whole.update(int(i) for i in indices[covers])
        overlap = np.clip(np.minimum(ends, end) - np.maximum(starts, start), 0, None)
        share = overlap / length
        top = float(share.max()) if len(share) else 0.0
        if top <= 0:
            continue
        chosen = {int(i) for i in indices[np.isclose(share, top, rtol=0, atol=1e-12)]}
        if top > best_share + 1e-12:
            best_share, best = top, chosen
        elif abs(top - best_share) <= 1e-12:
            best |= chosen
    if whole:
        return Targets(frozenset(whole), False, 1.0, True)
    if best:
        return Targets(frozenset(best), True, best_share, True)
    # The passage lies only in text no chunk kept (dropped as too short, or past the end).
    return Targets(frozenset(), False, 0.0, True)


def _approximate(chunks: Sequence[Chunk], normalised: Sequence[str], needle: str) -> Targets:
    words = needle.split(" ")
    wanted = set(words)
    least = max(1, math.ceil(len(words) * _APPROXIMATE_MIN_SHARE))
    # Any run long enough to count holds at least this many distinct passage words: chunks
    # with fewer in common are skipped without running the matcher.
    needed = min(len(set(words[i : i + least])) for i in range(len(words) - least + 1))
    best_run = 0
    best: set[int] = set()
    for chunk, text in zip(chunks, normalised):
        chunk_words = text.split(" ")
        if len(wanted.intersection(chunk_words)) < needed:
            continue
        matcher = SequenceMatcher(None, chunk_words, words, autojunk=False)
        run = matcher.find_longest_match(0, len(chunk_words), 0, len(words)).size
        if run > best_run:
            best_run, best = run, {chunk.index}
        elif run == best_run and run:
            best.add(chunk.index)
    share = best_run / len(words)
    if best_run and share >= _APPROXIMATE_MIN_SHARE:
        return Targets(frozenset(best), share < 1.0, share, False)
    return _NO_TARGETS
