"""Retrieval: vector, keyword and hybrid search over the store, and their fusion.

Light on import: the mode names come from `modes`; everything that needs the store (and so
psycopg) or an embedder is imported on first use, so that the CLI can build its options cheaply.
The keyword text and the filter expressions both the store and retrieval use are in `rag.query`;
how well a mode finds the right chunk is measured in `rag.evaluation.quality`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag.lazy import lazy_exports
from rag.retrieve.modes import DEFAULT_MODE, MODES

if TYPE_CHECKING:
    # Explicit re-exports (`x as x`): the names `__getattr__` serves at run time, spelled out for type checkers.
    from rag.retrieve.embedders import embedder_named as embedder_named
    from rag.retrieve.embedders import embedder_named_or_default as embedder_named_or_default
    from rag.retrieve.embedders import use_embedder as use_embedder
    from rag.retrieve.fusion import DEFAULT_FUSION as DEFAULT_FUSION
    from rag.retrieve.fusion import Fusion as Fusion
    from rag.retrieve.fusion import fuse as fuse
    from rag.retrieve.searching import search as search

_LAZY = {
    "search": "rag.retrieve.searching",
    "Fusion": "rag.retrieve.fusion",
    "DEFAULT_FUSION": "rag.retrieve.fusion",
    "fuse": "rag.retrieve.fusion",
    "embedder_named": "rag.retrieve.embedders",
    "embedder_named_or_default": "rag.retrieve.embedders",
    "use_embedder": "rag.retrieve.embedders",
}

__all__ = ["DEFAULT_MODE", "MODES", *_LAZY]


__getattr__ = lazy_exports(__name__, _LAZY)
