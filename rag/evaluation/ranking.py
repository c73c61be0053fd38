"""Rank every setting's chunks for every question in memory: hit@k, MRR and the best setting."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rag import chunking
from rag.chunking import ChunkSet, ChunkSettings
from rag.embeddings import Embedder, ProgressCallback
from rag.errors import RagError
from rag.evaluation.cache import EmbeddingCache
from rag.evaluation.metrics import hit_rate, mean_reciprocal_rank
from rag.evaluation.normalise import NormalisedText, normalise
from rag.evaluation.questions import Question
from rag.evaluation.targets import find_targets
from rag.retrieve.modes import MODES
from rag.text import Text

DEFAULT_KS: tuple[int, ...] = (1, 3, 5)


@dataclass(frozen=True)
class QuestionResult:
    question: Question
    rank: int | None
    """1-based rank of the best-ranked target chunk; None if there is none (or beyond `top_n`)."""
    score: float | None
    """Cosine similarity of that chunk to the question."""
    targets: tuple[int, ...]
    split: bool
    coverage: float
    found: bool
    """The expected passage was found verbatim; False means no or only an approximate match."""
    top_index: int | None
    top_score: float | None


@dataclass(frozen=True)
class SettingResult:
    label: str
    settings: ChunkSettings
    n_chunks: int
    hits: tuple[tuple[int, float], ...]
    """(k, share of questions whose target ranks within the top k), for each k."""
    mrr: float
    questions: tuple[QuestionResult, ...]

    def hit_at(self, k: int) -> float:
        for kk, value in self.hits:
            if kk == k:
                return value
        raise KeyError(f"hit@{k} was not computed (computed: {', '.join(str(kk) for kk, _ in self.hits)})")


@dataclass(frozen=True)
class EvaluationReport:
    ks: tuple[int, ...]
    embedder: str
    results: tuple[SettingResult, ...]
    questions: tuple[Question, ...]
    embedded: int
    """Texts sent to the embedder by this evaluation (the rest came from the cache)."""
    reused: int
    """Texts whose vectors came from the cache."""

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(r.label for r in self.results)

    def result(self, label: str) -> SettingResult:
        for r in self.results:
            if r.label == label:
                return r
        raise KeyError(f"no setting labelled {label!r} (labels: {', '.join(self.labels)})")

    @property
    def not_found(self) -> tuple[int, ...]:
        """Positions of questions whose passage is not in the document verbatim (under any setting)."""
        if not self.results:
            return ()
        return tuple(i for i in range(len(self.questions)) if not any(r.questions[i].found for r in self.results))


def evaluate(
    chunk_set_by_label: Mapping[str, ChunkSet],
    document_text: str | None,
    questions: Sequence[Question],
    embedder: Embedder,
    cache: EmbeddingCache,
    ks: Sequence[int] = DEFAULT_KS,
    *,
    progress: ProgressCallback | None = None,
    top_n: int | None = None,
    mode: str = "vector",
) -> EvaluationReport:
    """Rank every setting's chunks for every question, in memory, as the chat's search `mode` would:
    by cosine similarity (vector), BM25 over the setting's chunks (keyword), or both fused by
    rag.retrieve.fusion (hybrid).

    The rank of a question is that of its best-ranked target chunk (ties in score keep chunk
    order). hit@k is the share of questions ranked within k; MRR the mean of 1/rank, 0 when
    there is no target (or it ranks below `top_n`, when given). Chunks shared by several
    settings, and everything embedded before by `cache`, are embedded once.
    `progress(done, total)` counts the texts that had to be embedded.
    """
    if not chunk_set_by_label:
        raise RagError(Text("no chunk settings to compare: add at least one"))
    if not questions:
        raise RagError(Text("no questions to check: type at least one question with its expected passage"))
    ks = tuple(sorted(set(int(k) for k in ks)))
    if not ks or ks[0] < 1:
        raise RagError(
            Text("k must be at least 1, got {ks}", ks=", ".join(str(k) for k in ks))
            if ks
            else Text("k must be at least 1, got none")
        )
    if top_n is not None and top_n < 1:
        raise RagError(Text("top_n must be at least 1, got {top_n}", top_n=top_n))
    if mode not in MODES:
        raise RagError(
            Text("unknown search mode {mode} (choose one of: {modes})", mode=repr(mode), modes=", ".join(MODES))
        )
    doc = NormalisedText.of(document_text) if document_text is not None else None

    before = cache.stats()
    labels = list(chunk_set_by_label)
    all_texts: list[str] = [q.text for q in questions]
    for label in labels:
        all_texts.extend(c.text for c in chunk_set_by_label[label].chunks)
    # One call: the question and every chunk of every setting, each distinct text once.
    vectors = cache.embed(embedder, all_texts, progress)
    after = cache.stats()
    q_vectors = vectors[: len(questions)]

    results: list[SettingResult] = []
    offset = len(questions)
    for label in labels:
        chunk_set = chunk_set_by_label[label]
        chunks = chunk_set.chunks
        chunk_vectors = vectors[offset : offset + len(chunks)]
        offset += len(chunks)
        scores = _scores(mode, q_vectors, chunk_vectors, questions, chunk_set)
        results.append(_rank_setting(label, chunk_set, scores, questions, doc, ks, top_n))
    return EvaluationReport(
        ks=ks,
        embedder=embedder.name,
        results=tuple(results),
        questions=tuple(questions),
        embedded=after.misses - before.misses,
        reused=after.hits - before.hits,
    )


def _rank_setting(
    label: str,
    chunk_set: ChunkSet,
    scores: np.ndarray,
    questions: Sequence[Question],
    doc: NormalisedText | None,
    ks: tuple[int, ...],
    top_n: int | None,
) -> SettingResult:
    chunks = chunk_set.chunks
    position_of = {c.index: i for i, c in enumerate(chunks)}
    per_question: list[QuestionResult] = []
    normalised: list[str] | None = None
    for qi, question in enumerate(questions):
        needle = normalise(question.expected)
        if normalised is None and (doc is None or not doc.find_all(needle, limit=1)):
            normalised = [normalise(c.text) for c in chunks]  # once per setting, only if needed
        targets = find_targets(chunks, question.expected, doc, normalised_chunks=normalised)
        row = scores[qi]
        top_index = top_score = None
        rank = score = None
        if len(chunks):
            order = np.argsort(-row, kind="stable")
            top_index, top_score = chunks[int(order[0])].index, float(row[order[0]])
            if targets.indices:
                ranks = np.empty(len(chunks), dtype=np.int64)
                ranks[order] = np.arange(1, len(chunks) + 1)
                best_pos = min((position_of[i] for i in targets.indices), key=lambda p: ranks[p])
                rank, score = int(ranks[best_pos]), float(row[best_pos])
                if top_n is not None and rank > top_n:
                    rank = None
        per_question.append(
            QuestionResult(
                question=question,
                rank=rank,
                score=score,
                targets=tuple(sorted(targets.indices)),
                split=targets.split,
                coverage=targets.coverage,
                found=targets.found,
                top_index=top_index,
                top_score=top_score,
            )
        )
    question_ranks = [r.rank for r in per_question]
    hits = tuple((k, hit_rate(question_ranks, k)) for k in ks)
    mrr = mean_reciprocal_rank(question_ranks)
    return SettingResult(label, chunk_set.settings, len(chunks), hits, mrr, tuple(per_question))


def _scores(
    mode: str, q_vectors: np.ndarray, chunk_vectors: np.ndarray, questions: Sequence[Question], chunk_set: ChunkSet
) -> np.ndarray:
    """(questions x chunks) ranking scores of `mode`; in hybrid, chunks neither list found score -1."""
    chunks = chunk_set.chunks
    if not len(chunks):
        return np.zeros((len(questions), 0), np.float32)
    vector: np.ndarray = q_vectors @ chunk_vectors.T
    if mode == "vector":
        return vector
    from rag.evaluation.keyword import ChunkBM25

    bm25 = ChunkBM25([c.text for c in chunks])
    keyword = np.vstack([bm25.scores(q.text) for q in questions])
    if mode == "keyword":
        return keyword
    from rag.retrieve.fusion import DEFAULT_FUSION, fuse
    from rag.store.records import Hit

    fused = np.full((len(questions), len(chunks)), -1.0)
    ids = [uuid.UUID(int=i) for i in range(len(chunks))]
    for qi in range(len(questions)):
        by_vector = np.argsort(-vector[qi], kind="stable")[: DEFAULT_FUSION.depth]
        by_keyword = [i for i in np.argsort(-keyword[qi], kind="stable")[: DEFAULT_FUSION.depth] if keyword[qi, i] > 0]
        vector_hits = [Hit(ids[i], "", {}, float(vector[qi, i]), vector_score=float(vector[qi, i])) for i in by_vector]
        keyword_hits = [
            Hit(ids[i], "", {}, float(keyword[qi, i]), keyword_score=float(keyword[qi, i])) for i in by_keyword
        ]
        for hit in fuse(vector_hits, keyword_hits, DEFAULT_FUSION, len(chunks)):
            fused[qi, hit.id.int] = hit.score
    return fused


def best_label(report: EvaluationReport) -> str | None:
    """The winning setting: highest MRR, then highest hit@1 (smallest k), then fewest chunks."""
    if not report.results:
        return None
    first_k = report.ks[0]

    def key(r: SettingResult) -> tuple[float, float, int]:
        return (round(r.mrr, 9), round(r.hit_at(first_k), 9), -r.n_chunks)

    return max(report.results, key=key).label


def describe(settings: ChunkSettings) -> str:
    """A short name for a setting, e.g. 'spring 800' or 'token 512/64' (rag.chunking.label)."""
    return chunking.label(settings)
