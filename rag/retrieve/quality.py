"""How well a search mode finds the expected document: hit@1, hit@5 and MRR over a question set."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rag.retrieve.fusion import DEFAULT_FUSION, Fusion
from rag.retrieve.searching import search
from rag.settings import Settings
from rag.store import Store


@dataclass(frozen=True)
class ModeQuality:
    mode: str
    hit_at_1: float
    hit_at_5: float
    mrr: float
    ranks: tuple[int | None, ...]
    """1-based rank of the expected document per question (None: not in the top results)."""


def mode_quality(
    store: Store,
    settings: Settings,
    knowledge_base: str,
    questions: Sequence[tuple[str, str]],
    *,
    mode: str,
    fusion: Fusion = DEFAULT_FUSION,
    depth: int = 10,
) -> ModeQuality:
    """Retrieval quality of one search mode: (question, expected original_filename) pairs."""
    ranks: list[int | None] = []
    for question, expected in questions:
        hits = search(store, settings, question, [knowledge_base], top_k=depth, mode=mode, fusion=fusion)
        names = [h.original_filename for h in hits]
        ranks.append(names.index(expected) + 1 if expected in names else None)
    n = max(len(ranks), 1)
    return ModeQuality(
        mode=mode,
        hit_at_1=sum(1 for r in ranks if r is not None and r <= 1) / n,
        hit_at_5=sum(1 for r in ranks if r is not None and r <= 5) / n,
        mrr=sum(1 / r for r in ranks if r is not None) / n,
        ranks=tuple(ranks),
    )
