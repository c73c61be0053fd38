"""Synthetic inputs for the benchmarks: prose-like text, Zipf-distributed sentences, clustered vectors."""

from __future__ import annotations

import functools
import itertools
import random

import numpy as np

_WORDS = (
    "the of and to in is was for on that with as by at from it an be this are which or has had not "
    "but were their its also been more revenue growth index vector search model chunk document page "
    "database query answer source token embedding retrieval budget report quarter market"
).split()
STOPWORDS = "the of and to in is was for on that with as by at from it an be this are which or".split()


def synthetic_text(tokens_wanted: int, seed: int = 0) -> str:
    """Paragraphs of sentences; about 5 characters per cl100k token (measured)."""
    rng = random.Random(seed)
    paragraphs: list[str] = []
    chars = 0
    target_chars = int(tokens_wanted * 4.96)
    while chars < target_chars:
        sentences = []
        for _ in range(rng.randint(2, 6)):
            words = [rng.choice(_WORDS) for _ in range(rng.randint(5, 22))]
            sentences.append(" ".join(words).capitalize() + rng.choice(".?!."))
        paragraph = " ".join(sentences)
        paragraphs.append(paragraph)
        chars += len(paragraph) + 2
    return "\n\n".join(paragraphs)


@functools.cache
def _vocabulary(size: int = 20_000) -> tuple[list[str], list[float]]:
    """Pseudo-words with Zipf frequencies, as in real text (a tiny vocabulary would make every
    keyword match every chunk, which no real corpus does), and their cumulative weights: given
    those, `random.choices` draws the same words without summing 20,000 weights per call (1.4 ms
    a sentence before, what made a million rows take 23 minutes to make)."""
    rng = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = list(dict.fromkeys("".join(rng.choice(letters) for _ in range(rng.randint(4, 10))) for _ in range(size)))
    return words, list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(words))))


def sentences(n: int, seed: int) -> list[str]:
    """`n` chunk texts of 40-120 Zipf-distributed pseudo-words with stop words between them."""
    rng = random.Random(seed)
    words, cumulative = _vocabulary()
    out = []
    for _ in range(n):
        length = rng.randint(40, 120)
        content = rng.choices(words, cum_weights=cumulative, k=length)
        text = [w if rng.random() > 0.4 else f"{rng.choice(STOPWORDS)} {w}" for w in content]
        out.append(" ".join(text).capitalize() + ".")
    return out


def question_about(rng: random.Random, passage: str) -> str:
    """A question about one passage: a few of its words among stop words."""
    words = [w for w in passage.rstrip(".").split() if w.lower() not in STOPWORDS]
    picked = rng.sample(words, k=min(5, len(words)))
    return "what is the " + " of ".join(picked)


def clustered(n: int, dim: int, rng: np.random.Generator, centers: np.ndarray) -> np.ndarray:
    """Vectors around topic centres, as real embeddings cluster (uniform noise is a worst case)."""
    picks = rng.integers(0, len(centers), size=n)
    v = centers[picks] + rng.normal(scale=0.35, size=(n, dim)).astype(np.float32)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
