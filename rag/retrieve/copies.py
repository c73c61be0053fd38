"""Copies of one passage in several documents, kept once in a search's results.

A knowledge base that holds versions of a document, or a passage quoted in several, gave the model the same
passage four times over (a walk: one irrelevant "School Watch" passage from four PDFs filled all four sources of
an answer, the passage that answered the question left out). Chunks of such copies are rarely equal word for
word (their documents cut them at other places), so a hit is a copy of a better one when most of its
five-word runs (five characters in Chinese) are in it. The copy is dropped from the results and named on the
kept hit (`Hit.copies`): the sources say where else the passage stands. Comparing 16 hits of 600 words takes
~5 ms (the runs built with zip; a comprehension took ~4x that).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from rag.scripts import CJK
from rag.store import Copy, Hit

SHINGLE = 5
"""Words (Chinese characters) in one run compared."""
SHARED = 0.8
"""The share of the shorter text's runs the other must hold for the two to be one passage: chunks of the same
passage cut at other places share their middle; two passages on one topic share a few set phrases."""
ROOM = 2
"""How many times `top_k` hits a search reads so that copies dropped leave `top_k` others."""
DEEPER = 8
"""How many times `top_k` it reads once more where copies filled the first reading (rag.retrieve.searching)."""

_TOKENS = re.compile(f"[{CJK}]|[^\\W_]+")


def _runs(text: str) -> set[tuple[str, ...]]:
    tokens = _TOKENS.findall(text.lower())
    if len(tokens) < SHINGLE:
        return {tuple(tokens)} if tokens else set()
    return set(zip(*(tokens[i:] for i in range(SHINGLE))))  # each run of SHINGLE tokens (zip: ~4x a comprehension)


def same_passage(a: str, b: str) -> bool:
    """Whether `a` and `b` are one passage (see `SHARED`)."""
    return _same(_runs(a), _runs(b))


def _same(a: set[tuple[str, ...]], b: set[tuple[str, ...]]) -> bool:
    return bool(a and b) and len(a & b) >= SHARED * min(len(a), len(b))


def copy_of(hit: Hit) -> Copy:
    """Where `hit` stands, as the hit kept in its place names it."""
    return Copy(hit.original_filename, hit.pages, str(hit.metadata.get("location") or ""))


def keep_once(hits: Sequence[Hit], top_k: int) -> list[Hit]:
    """The first `top_k` of `hits` (best first) that are no copy of a better one; each kept hit names its
    copies' documents in `copies`."""
    kept: list[Hit] = []
    runs: list[set[tuple[str, ...]]] = []
    for hit in hits:  # all of them: one past the top_k may still be a copy to name
        own = _runs(hit.content)
        for i, other in enumerate(runs):
            if _same(own, other):
                kept[i] = replace(kept[i], copies=(*kept[i].copies, copy_of(hit)))
                break
        else:
            if len(kept) < top_k:
                kept.append(hit)
                runs.append(own)
    return kept
