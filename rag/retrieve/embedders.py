"""One embedder per name per process: the local model loads its weights once.

A knowledge base names the embedder it was built with; search looks that name up here.
`use_embedder` serves another object under a name for a while (benchmarks, tests): a seam,
so that no caller reaches into the cache.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from rag.embeddings import Embedder, embedder_for_name, resolve_embedder
from rag.settings import Settings

_embedders: dict[str, Embedder] = {}
_embedders_lock = threading.Lock()
_DEFAULT = ""
"""The cache key of the configured embedder (RAG_EMBEDDER), whatever its name."""


def embedder_named(name: str, settings: Settings) -> Embedder:
    """The embedder called `name`, built on first use."""
    with _embedders_lock:
        if name not in _embedders:
            _embedders[name] = embedder_for_name(name, settings)
        return _embedders[name]


def embedder_named_or_default(settings: Settings) -> Embedder:
    """The configured embedder (RAG_EMBEDDER), resolved once per process."""
    with _embedders_lock:
        if _DEFAULT not in _embedders:
            _embedders[_DEFAULT] = resolve_embedder(settings)
        chosen = _embedders[_DEFAULT]
    with _embedders_lock:
        return _embedders.setdefault(chosen.name, chosen)


@contextmanager
def use_embedder(embedder: Embedder) -> Iterator[Embedder]:
    """Serve `embedder` for its `name` inside the block, then restore what was served before."""
    with _embedders_lock:
        previous = _embedders.get(embedder.name)
        _embedders[embedder.name] = embedder
    try:
        yield embedder
    finally:
        with _embedders_lock:
            if previous is None:
                _embedders.pop(embedder.name, None)
            else:
                _embedders[embedder.name] = previous
