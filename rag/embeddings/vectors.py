"""What every embedder does to its output and input: unit-length float32 rows, a list of texts.

Unit rows make cosine similarity a plain dot product and keep vectors of different runs of one
embedder comparable.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

log = logging.getLogger(__name__)


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    # A text with no tokens pools to the zero vector; dividing would turn it into NaNs that poison
    # every similarity they touch, so it stays zero (it matches nothing).
    if np.any(norms == 0):
        log.warning("%d text(s) embedded to the zero vector (empty input?)", int(np.sum(norms == 0)))
    normalised: np.ndarray = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return normalised


def check_texts(texts: Sequence[str]) -> list[str]:
    # A bare string is a Sequence[str] too; embedding it character by character is never intended.
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of texts, not a single string")
    return list(texts)
