"""Rank every setting's chunks for every question in memory: hit@k, MRR and the best setting."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from rag.retrieve.fusion import Fusion

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
    top: tuple[int, ...] = ()
    """The indices of the first chunks the search returns, best first, as many as `evaluate`'s `keep`
    (fewer when fewer are found: keyword search returns no chunk without a query term)."""


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
    fusion: Fusion | None = None,
    keep: int = 0,
) -> EvaluationReport:
    """Rank every setting's chunks for every question, in memory, as the chat's search `mode` would:
    by cosine similarity (vector), BM25 over the setting's chunks (keyword), or both fused by
    rag.retrieve.fusion (hybrid, by `fusion`: rag.retrieve.fusion.DEFAULT_FUSION, the chat's, when None).
    The questions are embedded as the chat embeds them, as queries (`embed_queries`: e5's "query: ").

    The rank of a question is that of its best-ranked target chunk (ties in score keep chunk
    order). hit@k is the share of questions ranked within k; MRR the mean of 1/rank, 0 when
    there is no target (or it ranks below `top_n`, when given). Chunks shared by several
    settings, and everything embedded before by `cache`, are embedded once; keyword mode embeds
    nothing, not even the questions (rag.evaluation.plan fills `cache` with stored vectors first).
    `progress(done, total)` counts the texts that had to be embedded. With `keep`, each question's
    result lists the first `keep` chunks returned (`QuestionResult.top`: what a top-k prompt would hold).
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

    if keep < 0:
        raise RagError(Text("keep must not be negative, got {keep}", keep=keep))

    before = cache.stats()
    labels = list(chunk_set_by_label)
    # The questions, then every chunk of every setting, each distinct text once; none for keyword.
    all_texts = texts_to_embed(chunk_set_by_label, questions, mode)
    q_vectors, vectors = embed_check(cache, embedder, all_texts, len(questions), progress)
    after = cache.stats()

    results: list[SettingResult] = []
    offset = 0
    for label in labels:
        chunk_set = chunk_set_by_label[label]
        chunks = chunk_set.chunks
        chunk_vectors = vectors[offset : offset + len(chunks)] if vectors is not None else None
        offset += len(chunks)
        scores = _scores(mode, q_vectors, chunk_vectors, questions, chunk_set, fusion)
        results.append(_rank_setting(label, chunk_set, scores, questions, doc, ks, top_n, (keep, _FLOORS[mode])))
    return EvaluationReport(
        ks=ks,
        embedder=embedder.name,
        results=tuple(results),
        questions=tuple(questions),
        embedded=after.misses - before.misses,
        reused=after.hits - before.hits,
    )


def texts_to_embed(chunk_set_by_label: Mapping[str, ChunkSet], questions: Sequence[Question], mode: str) -> list[str]:
    """What `evaluate` embeds in `mode`: the questions (as queries), then every setting's chunks in order
    (as passages; repeats included: the cache embeds each distinct text once); nothing for keyword, BM25
    needs no vectors."""
    if mode == "keyword":
        return []
    texts = [q.text for q in questions]
    for chunk_set in chunk_set_by_label.values():
        texts.extend(c.text for c in chunk_set.chunks)
    return texts


def embed_check(
    cache: EmbeddingCache,
    embedder: Embedder,
    texts: Sequence[str],
    n_questions: int,
    progress: ProgressCallback | None = None,
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The vectors of `texts_to_embed`'s list: its first `n_questions` embedded as queries, as the chat
    embeds a question, the rest as passages, as the ingest embeds a chunk; (None, None) when it is empty
    (keyword). `progress(done, total)` counts the texts of both kinds that had to be embedded, together."""
    if not texts:
        return None, None
    queries, passages = texts[:n_questions], texts[n_questions:]
    first = len(cache.missing(embedder.name, queries, queries=True))
    total = first + len(cache.missing(embedder.name, passages))

    def counted(offset: int) -> ProgressCallback | None:
        if progress is None:
            return None
        report = progress
        return lambda done, _: report(offset + done, total)

    q_vectors = cache.embed(embedder, queries, counted(0), queries=True)
    return q_vectors, cache.embed(embedder, passages, counted(first))


def _rank_setting(
    label: str,
    chunk_set: ChunkSet,
    scores: np.ndarray,
    questions: Sequence[Question],
    doc: NormalisedText | None,
    ks: tuple[int, ...],
    top_n: int | None,
    keeping: tuple[int, float] = (0, -np.inf),
) -> SettingResult:
    """`keeping`: (how many of the first chunks each question keeps in `top`, the score a returned chunk
    exceeds)."""
    chunks = chunk_set.chunks
    position_of = {c.index: i for i, c in enumerate(chunks)}
    per_question: list[QuestionResult] = []
    normalised: list[str] | None = None
    for qi, question in enumerate(questions):
        needle = normalise(question.expected)
        if normalised is None and (doc is None or not doc.find_all(needle, limit=1)):
            normalised = [normalise(c.text) for c in chunks]  # once per setting, only if needed
        targets = find_targets(chunks, question.expected, doc, normalised_chunks=normalised, span=question.span)
        row = scores[qi]
        top_index = top_score = None
        rank = score = None
        top: tuple[int, ...] = ()
        if len(chunks):
            order = np.argsort(-row, kind="stable")
            top_index, top_score = chunks[int(order[0])].index, float(row[order[0]])
            keep, floor = keeping
            top = tuple(chunks[int(i)].index for i in order[:keep] if row[i] > floor)
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
                top=top,
            )
        )
    question_ranks = [r.rank for r in per_question]
    hits = tuple((k, hit_rate(question_ranks, k)) for k in ks)
    mrr = mean_reciprocal_rank(question_ranks)
    return SettingResult(label, chunk_set.settings, len(chunks), hits, mrr, tuple(per_question))


def _scores(
    mode: str,
    q_vectors: np.ndarray | None,
    chunk_vectors: np.ndarray | None,
    questions: Sequence[Question],
    chunk_set: ChunkSet,
    fusion: Fusion | None = None,
) -> np.ndarray:
    """(questions x chunks) ranking scores of `mode`; in hybrid (fused by `fusion`, the chat's default when
    None), chunks neither list found score -1. The vectors are None in keyword mode (nothing was embedded)."""
    chunks = chunk_set.chunks
    if not len(chunks):
        return np.zeros((len(questions), 0), np.float32)
    from rag.evaluation.keyword import ChunkBM25

    if mode == "keyword":
        bm25 = ChunkBM25([c.text for c in chunks])
        return np.vstack([bm25.scores(q.text) for q in questions])
    if q_vectors is None or chunk_vectors is None:
        raise ValueError(f"the {mode} mode ranks by vectors, and none were given")
    vector: np.ndarray = q_vectors @ chunk_vectors.T
    if mode == "vector":
        return vector
    bm25 = ChunkBM25([c.text for c in chunks])
    keyword = np.vstack([bm25.scores(q.text) for q in questions])
    from rag.retrieve.fusion import DEFAULT_FUSION, fuse
    from rag.store.records import Hit

    fusion = fusion or DEFAULT_FUSION
    fused = np.full((len(questions), len(chunks)), -1.0)
    ids = [uuid.UUID(int=i) for i in range(len(chunks))]
    for qi in range(len(questions)):
        by_vector = np.argsort(-vector[qi], kind="stable")[: fusion.depth]
        by_keyword = [i for i in np.argsort(-keyword[qi], kind="stable")[: fusion.depth] if keyword[qi, i] > 0]
        vector_hits = [Hit(ids[i], "", {}, float(vector[qi, i]), vector_score=float(vector[qi, i])) for i in by_vector]
        keyword_hits = [
            Hit(ids[i], "", {}, float(keyword[qi, i]), keyword_score=float(keyword[qi, i])) for i in by_keyword
        ]
        for hit in fuse(vector_hits, keyword_hits, fusion, len(chunks)):
            fused[qi, hit.id.int] = hit.score
    return fused


_FLOORS = {"vector": -np.inf, "keyword": 0.0, "hybrid": -1.0}
"""The score a chunk the search returns exceeds, by mode: BM25 returns no chunk without a query term (0),
hybrid none that neither list found (-1, see `_scores`), vector search every chunk."""


NOISE_Z = 1.96
"""How many standard errors of the per-question differences a lead in MRR must exceed to name a winner
(a paired 95 % bound): three settings of RFC 2616 with equal hit@k and MRRs 0.005 apart were named
"Best" before, a difference one question ranked one place lower would undo."""


@dataclass(frozen=True)
class Verdict:
    """Which setting the check names best, or which ones it cannot tell apart."""

    best: str | None
    """The setting ahead of every other by more than the noise; None when some tie with it (or none ranked
    anything)."""
    tied: tuple[str, ...]
    """The settings that tie at the top (the leader first), when `best` is None and more than one does."""
    reason: str | None
    """Why they tie, a sentence for the user (a `Text`); None when `best` is named or nothing was ranked."""


def verdict(report: EvaluationReport) -> Verdict:
    """The best setting only when it is clearly ahead: the leader (highest MRR, then highest hit@ the
    smallest k, then fewest chunks) beats another when its mean lead in 1/rank over the questions exceeds
    `NOISE_Z` standard errors of the per-question differences (a paired bound: the same questions rank
    under both). Settings within that bound tie with it, and the verdict says why."""
    if not report.results or all(r.mrr == 0 for r in report.results):
        return Verdict(None, (), None)
    first_k = report.ks[0]

    def key(r: SettingResult) -> tuple[float, float, int]:
        return (round(r.mrr, 9), round(r.hit_at(first_k), 9), -r.n_chunks)

    leader = max(report.results, key=key)
    lead_rr = _reciprocal_ranks(leader)
    n = len(lead_rr)
    tied = [leader]
    largest_lead, largest_bound, alike = 0.0, 0.0, True
    for other in report.results:
        if other is leader:
            continue
        diff = lead_rr - _reciprocal_ranks(other)
        mean = float(diff.mean())
        bound = NOISE_Z * float(diff.std(ddof=1)) / np.sqrt(n) if n > 1 else float("inf")
        if mean > bound or (mean > 0 and bound == 0):  # bound 0: every question gains the same
            continue
        tied.append(other)
        largest_lead, largest_bound = max(largest_lead, mean), max(largest_bound, bound)
        alike = alike and not diff.any()
    if len(tied) == 1:
        return Verdict(leader.label, (), None)
    labels = tuple(r.label for r in tied)
    names = ", ".join(labels)
    if alike:
        reason = Text("{names} rank every question's passage alike: they tie.", names=names)
    elif n < 2:
        reason = Text(
            "{names} tie: one question cannot tell settings apart. Add more questions to compare them.", names=names
        )
    else:
        reason = Text(
            "{names} tie: {leader} leads the others by at most {lead} in MRR, within the noise of {n} questions "
            "(±{bound}, 1.96 standard errors of the per-question differences). More questions may tell them apart.",
            names=names,
            leader=leader.label,
            lead=f"{largest_lead:.3f}",
            n=n,
            bound=f"{largest_bound:.3f}" if np.isfinite(largest_bound) else "∞",
        )
    fewest = min(tied, key=lambda r: r.n_chunks)
    if any(r.n_chunks != fewest.n_chunks for r in tied):
        reason = Text(
            "{first} Of them, {label} has the fewest chunks ({chunks}): the cheapest to store and search.",
            first=reason,
            label=fewest.label,
            chunks=fewest.n_chunks,
        )
    return Verdict(None, labels, reason)


def _reciprocal_ranks(result: SettingResult) -> np.ndarray:
    return np.array([1.0 / q.rank if q.rank else 0.0 for q in result.questions], dtype=np.float64)


def best_label(report: EvaluationReport) -> str | None:
    """The setting clearly ahead of every other (`verdict`); None when some tie at the top."""
    return verdict(report).best


def describe(settings: ChunkSettings) -> str:
    """A short name for a setting, e.g. 'spring 800' or 'token 512/64' (rag.chunking.label)."""
    return chunking.label(settings)
