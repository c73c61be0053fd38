"""The Chunk Lab's check before it starts (rag.evaluation.plan) and its verdict (rag.evaluation.ranking.verdict).

Reuse is checked against a real ingest into the embedded PostgreSQL with the offline WordLlama embedder:
the vectors a knowledge base holds are the ones the check would have embedded, so after an ingest under
the same settings the check embeds only its questions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from rag.chunking import ChunkSet, ChunkSettings, split
from rag.embeddings import LocalEmbedder, batches
from rag.evaluation import EmbeddingCache, EvaluationReport, Question, QuestionResult, SettingResult, evaluate, sample
from rag.evaluation.plan import SAMPLED, plan_check
from rag.evaluation.ranking import NOISE_Z, best_label, verdict
from rag.ingest import ingest_bytes
from rag.store import Store
from rag.store.vector_cache import embedder_key
from tests.evaluation.test_evaluation import DOC, LARGE, QUESTIONS, SMALL


class Refusing:
    """An embedder that fails the test if anything asks it for a vector."""

    name = "test:refusing"
    dimension = 3
    max_input_tokens = None

    def embed(self, texts: Sequence[str], progress=None, *, cancel=None) -> np.ndarray:
        raise AssertionError(f"embedded {list(texts)!r}")

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        raise AssertionError(f"embedded queries {list(texts)!r}")


class Counting:
    """A real embedder, counting the texts it is asked to embed."""

    def __init__(self, inner: LocalEmbedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.max_input_tokens = inner.max_input_tokens
        self.embedded: list[str] = []

    def embed(self, texts: Sequence[str], progress=None, *, cancel=None) -> np.ndarray:
        rows = self.inner.embed(texts, progress, cancel=cancel)
        self.embedded.extend(texts)  # after: a probe stopped by `cancel` embedded nothing
        return rows

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.embedded.extend(texts)
        return self.inner.embed_queries(texts)


# --- keyword: no vectors at all -----------------------------------------------------------------------


def test_keyword_ranking_embeds_nothing_not_even_the_questions() -> None:
    cache = EmbeddingCache()
    plan = plan_check({"small": SMALL, "large": LARGE}, QUESTIONS, Refusing(), cache, "keyword")
    assert plan.to_embed == () and plan.estimate is None
    assert plan.message == "Nothing to embed: keyword ranking (BM25) needs no vectors."
    report = evaluate({"small": SMALL, "large": LARGE}, DOC, QUESTIONS, Refusing(), cache, mode="keyword")
    assert (report.embedded, report.reused, len(cache)) == (0, 0, 0)
    # "sky tonight": BM25 puts "red sky tonight" (both words) first in SMALL.
    assert report.result("small").questions[1].rank == 1


# --- reuse of what the database holds ----------------------------------------------------------------


def _sample_set(settings: ChunkSettings) -> ChunkSet:
    return split(sample().text, settings)


def test_after_an_ingest_under_the_same_settings_the_check_embeds_only_its_questions(store: Store) -> None:
    settings = ChunkSettings(chunk_size=200)
    local = LocalEmbedder()
    result = ingest_bytes(store, local, sample().text.encode(), "guide.md", "plan-kb", settings)
    assert result.status == "stored", result
    chunk_set = _sample_set(settings)
    assert result.chunks == len(chunk_set.chunks)
    questions = list(sample().questions[:3])
    embedder, cache = Counting(local), EmbeddingCache()

    plan = plan_check({"A": chunk_set}, questions, embedder, cache, "vector", store=store)
    assert plan.stored == len({c.text for c in chunk_set.chunks})
    assert plan.to_embed == tuple(q.text for q in questions)
    assert embedder.embedded == []  # the plan looked up, embedded nothing
    assert f"{len(questions)} texts to embed with {local.name}" in plan.message

    report = evaluate({"A": chunk_set}, sample().text, questions, embedder, cache)
    assert embedder.embedded == [q.text for q in questions]
    assert (report.embedded, report.reused) == (len(questions), plan.stored)
    # The stored vectors are the ones the check would have made.
    fresh = EmbeddingCache().embed(local, [c.text for c in chunk_set.chunks])
    assert np.allclose(cache.embed(local, [c.text for c in chunk_set.chunks]), fresh, atol=1e-5)


def test_a_knowledge_base_of_another_embedder_or_other_settings_lends_nothing(store: Store) -> None:
    local = LocalEmbedder()
    ingest_bytes(store, local, sample().text.encode(), "guide.md", "plan-kb", ChunkSettings(chunk_size=200))
    other = _sample_set(ChunkSettings(strategy="token", chunk_size=97, chunk_overlap=11))
    plan = plan_check({"A": other}, sample().questions[:1], Counting(local), EmbeddingCache(), "vector", store=store)
    assert plan.stored == 0

    class Renamed(Counting):
        pass

    renamed = Renamed(local)
    renamed.name = "test:another-embedder"
    same = _sample_set(ChunkSettings(chunk_size=200))
    plan = plan_check({"A": same}, sample().questions[:1], renamed, EmbeddingCache(), "vector", store=store)
    assert plan.stored == 0 and len(plan.to_embed) == 1 + len({c.text for c in same.chunks})


def test_vectors_a_stopped_ingest_kept_are_reused_by_the_ingests_own_key(store: Store) -> None:
    local = LocalEmbedder()
    chunk_set = _sample_set(ChunkSettings(chunk_size=150))
    texts = [c.text for c in chunk_set.chunks][:5]
    rows = local.embed(texts)
    # What a stopped ingest keeps: rows under the hash of what the model read (WordLlama: no prefix).
    keys = [batches.input_key(t[: LocalEmbedder.MAX_CHARS]) for t in texts]
    store.vector_cache.keep(embedder_key(local.name, local.dimension), keys, rows)
    embedder, cache = Counting(local), EmbeddingCache()
    plan = plan_check({"A": chunk_set}, sample().questions[:1], embedder, cache, "vector", store=store)
    assert plan.stored == len(set(texts))
    assert embedder.embedded == []
    assert not set(texts) & set(plan.to_embed)
    assert np.allclose(cache.embed(local, texts), rows, atol=1e-6)


def test_the_plan_counts_what_memory_already_holds_and_says_nothing_is_left() -> None:
    local = LocalEmbedder()
    cache = EmbeddingCache()
    evaluate({"small": SMALL}, DOC, QUESTIONS, local, cache)
    plan = plan_check({"small": SMALL}, QUESTIONS, Refusing(), cache, "vector")
    # Another embedder's name: nothing cached under it.
    assert len(plan.to_embed) == len(QUESTIONS) + len(SMALL.chunks)
    plan = plan_check({"small": SMALL}, QUESTIONS, Counting(local), cache, "hybrid")
    assert plan.to_embed == () and plan.cached == len(QUESTIONS) + len(SMALL.chunks)
    assert plan.message.startswith("Nothing to embed: the vectors of all 7 texts are at hand")


# --- the verdict: no winner within the noise ---------------------------------------------------------


def _report(ranks_by_label: dict[str, list[int | None]], chunks: dict[str, int] | None = None) -> EvaluationReport:
    n = len(next(iter(ranks_by_label.values())))
    questions = tuple(Question(f"q{i}", f"p{i}") for i in range(n))
    results = []
    for label, ranks in ranks_by_label.items():
        per_question = tuple(
            QuestionResult(q, r, None, (), False, 1.0, True, None, None) for q, r in zip(questions, ranks)
        )
        hits = tuple((k, sum(r is not None and r <= k for r in ranks) / n) for k in (1, 3, 5))
        mrr = sum(1 / r for r in ranks if r) / n
        n_chunks = (chunks or {}).get(label, 10)
        results.append(SettingResult(label, ChunkSettings(), n_chunks, hits, mrr, per_question))
    return EvaluationReport((1, 3, 5), "test", tuple(results), questions, 0, 0)


def test_equal_hits_and_a_tiny_mrr_difference_are_a_tie_not_a_best() -> None:
    # 24 questions (the sample set's size); every hit@k equal, MRR 0.002 apart: one question ranked 4th or 5th.
    a = [1] * 18 + [2] * 3 + [4, 6, None]
    b = [1] * 18 + [2] * 3 + [5, 6, None]
    report = _report({"A": a, "B": b, "C": b}, chunks={"A": 40, "B": 30, "C": 30})
    assert [r.hit_at(k) for r in report.results for k in (1, 3, 5)] == [
        report.results[0].hit_at(k) for k in (1, 3, 5)
    ] * 3
    assert report.result("A").mrr - report.result("B").mrr == pytest.approx((1 / 4 - 1 / 5) / 24)
    found = verdict(report)
    assert found.best is None and best_label(report) is None
    assert found.tied == ("A", "B", "C")
    assert found.reason is not None
    assert found.reason.startswith("A, B, C tie: A leads the others by at most 0.002 in MRR, within the noise of 24")
    assert found.reason.endswith("Of them, B has the fewest chunks (30): the cheapest to store and search.")


def test_a_setting_clearly_ahead_is_still_named_best() -> None:
    # A ranks every passage first, B every one second: the same lead on each question, no noise.
    report = _report({"A": [1] * 5, "B": [2] * 5})
    assert verdict(report).best == "A" and verdict(report).reason is None
    # A lead with some spread, above NOISE_Z standard errors: 20 questions, A gains 1/2 on 12 of them.
    a, b = [1] * 20, [2] * 12 + [1] * 8
    diff = np.array([0.5] * 12 + [0.0] * 8)
    assert diff.mean() > NOISE_Z * diff.std(ddof=1) / np.sqrt(20)
    assert best_label(_report({"B": b, "A": a})) == "A"


def test_identical_results_and_one_question_tie_with_their_reason() -> None:
    same = verdict(_report({"A": [1, 2], "B": [1, 2]}, chunks={"A": 4, "B": 4}))
    assert (same.best, same.tied, same.reason) == (
        None,
        ("A", "B"),
        "A, B rank every question's passage alike: they tie.",
    )
    one = verdict(_report({"A": [1], "B": [3]}))
    assert one.best is None and "one question cannot tell settings apart" in str(one.reason)
    nothing = verdict(_report({"A": [None, None], "B": [None, None]}))
    assert (nothing.best, nothing.tied, nothing.reason) == (None, (), None)


# --- the estimate ------------------------------------------------------------------------------------


class Paced(Refusing):
    """An embedder that says its rate (as e5 does): 100 tokens/s, a token every 4 characters."""

    name = "test:paced"
    tokens_per_second = 100.0

    def __init__(self) -> None:
        self.counted: list[int] = []

    def count_tokens(self, texts: Sequence[str]) -> int:
        self.counted.append(len(texts))
        return sum(len(t) // 4 for t in texts)


def test_the_estimate_counts_tokens_of_a_sample_when_the_texts_are_many() -> None:
    chunk_set = _sample_set(ChunkSettings(strategy="token", chunk_size=8, chunk_overlap=0))
    questions = list(sample().questions)
    embedder = Paced()
    plan = plan_check({"A": chunk_set}, questions, embedder, EmbeddingCache(), "vector")
    texts = plan.to_embed
    assert len(texts) > SAMPLED and embedder.counted == [SAMPLED]
    exact = sum(len(t) // 4 for t in texts) / 100.0
    assert plan.estimate is not None and not plan.estimate.measured
    assert plan.estimate.seconds == pytest.approx(exact, rel=0.1)
    assert f"{len(texts)} texts to embed with test:paced (0 reused, 0 of them from the knowledge base): about" in (
        plan.message
    )
    assert "A first guess: nothing was timed here yet." in plan.message
