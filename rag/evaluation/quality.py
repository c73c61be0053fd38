"""How well a search mode finds the right chunk: hit@1/3/5 and MRR over a question set, on the real store.

`rag eval`, the retrieval benchmark and the tests measure with this, through the same `search`
the chat uses. A question names the file that answers it, or a passage the right chunk
contains, or both (`rag.evaluation.Question`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rag.evaluation.metrics import hit_rate, mean_reciprocal_rank
from rag.evaluation.normalise import normalise
from rag.evaluation.questions import Question
from rag.retrieve.fusion import DEFAULT_FUSION, Fusion
from rag.retrieve.searching import search
from rag.settings import Settings
from rag.store import Hit, Store

REPORTED_KS = (1, 3, 5)


@dataclass(frozen=True)
class ModeQuality:
    mode: str
    ranks: tuple[int | None, ...]
    """1-based rank of the first right chunk per question (None: not in the top `depth`)."""
    depth: int
    """Hits read per question: ranks beyond it count as not found."""

    @property
    def n(self) -> int:
        return len(self.ranks)

    def hit_at(self, k: int) -> float:
        return hit_rate(self.ranks, k)

    @property
    def hit_at_1(self) -> float:
        return self.hit_at(1)

    @property
    def hit_at_3(self) -> float:
        return self.hit_at(3)

    @property
    def hit_at_5(self) -> float:
        return self.hit_at(5)

    @property
    def mrr(self) -> float:
        return mean_reciprocal_rank(self.ranks)

    def as_dict(self) -> dict[str, Any]:
        """`{"hit@1", "hit@3", "hit@5", "mrr", "n"}` (the shape of `rag eval --json`)."""
        out: dict[str, Any] = {f"hit@{k}": round(self.hit_at(k), 4) for k in REPORTED_KS}
        out["mrr"] = round(self.mrr, 4)
        out["n"] = self.n
        return out


def rank_of(question: Question, hits: Sequence[Hit]) -> int | None:
    """1-based rank of the first hit that answers `question`, None if none does."""
    for rank, hit in enumerate(hits, 1):
        if question.matches(hit.original_filename, normalise(hit.content) if question.expected else ""):
            return rank
    return None


def as_question(item: Question | tuple[str, str]) -> Question:
    """A `Question`; a (question, file) pair names the file that answers it."""
    return item if isinstance(item, Question) else Question(item[0], "", item[1])


def mode_quality(
    store: Store,
    settings: Settings,
    knowledge_base: str,
    questions: Sequence[Question | tuple[str, str]],
    *,
    mode: str,
    fusion: Fusion = DEFAULT_FUSION,
    depth: int = 10,
    progress: Callable[[int, int], None] | None = None,
) -> ModeQuality:
    """Retrieval quality of one search mode: each question searched for its top `depth` hits."""
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    ranks: list[int | None] = []
    for done, item in enumerate(questions, 1):
        question = as_question(item)
        hits = search(
            store, settings, question.text, [knowledge_base], top_k=depth, mode=mode, fusion=fusion, keep_copies=True
        )
        ranks.append(rank_of(question, hits))
        if progress is not None:
            progress(done, len(questions))
    return ModeQuality(mode=mode, ranks=tuple(ranks), depth=depth)
