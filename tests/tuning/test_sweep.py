"""rag.tuning.sweep (the grid, a stoppable and resumable sweep, its costs), rag.tuning.pareto, rag.tuning.recommend
and nDCG (rag.evaluation.metrics).

Sweeps run on the Chunk Lab's sample with the offline WordLlama embedder, counted by a wrapper; costs and ranks
are checked against an independent numpy ranking, nDCG against values worked out by hand.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pytest

from rag.chunking import ChunkSettings, split
from rag.embeddings import LocalEmbedder
from rag.errors import RagError
from rag.evaluation import EmbeddingCache, Question, evaluate, normalise, sample
from rag.evaluation.metrics import mean_ndcg, ndcg_at, ndcg_gain
from rag.retrieve.fusion import Fusion
from rag.tuning.pareto import pareto_front
from rag.tuning.recommend import MARGIN, recommend
from rag.tuning.sweep import (
    Grid,
    PointResult,
    Search,
    SweepProgress,
    SweepResult,
    default_grid,
    run_sweep,
    typed_numbers,
)
from tests.evaluation.test_evaluation import DOC, SMALL, BagOfWords

TEXT = sample().text
QUESTIONS = list(sample().questions)


class Counting:
    """WordLlama, counting every text it is asked to embed (passages and queries apart)."""

    def __init__(self, inner: LocalEmbedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.max_input_tokens = inner.max_input_tokens
        self.passages: list[str] = []
        self.queries: list[str] = []

    def embed(self, texts: Sequence[str], progress=None, *, cancel=None) -> np.ndarray:
        self.passages.extend(texts)
        return self.inner.embed(texts, progress, cancel=cancel)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.queries.extend(texts)
        return self.inner.embed_queries(texts)


class E5Window:
    """Only what `default_grid` reads of e5: its 512-token window."""

    max_input_tokens = 512


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    return LocalEmbedder()


SMALL_GRID = Grid(strategies=("spring", "recursive"), sizes=(96, 160), overlaps=(0, 32), modes=("vector",))


# --- the grid ----------------------------------------------------------------------------------------------


def test_the_default_grid_fits_the_embedders_window_and_skips_invalid_settings(local: LocalEmbedder) -> None:
    e5 = default_grid(E5Window())  # type: ignore[arg-type]
    assert e5.sizes == (128, 192, 256, 320)  # 507 / 1.58 = 320: the largest a chunk of code still fits
    assert default_grid(local).sizes == (128, 192, 256, 320, 384, 512)  # WordLlama reads every token
    assert e5.modes == ("hybrid",) and e5.searches() == (Search("hybrid", 2.5),)  # as the chat searches
    settings = e5.chunkings()
    # Spring has no overlap: once a size; recursive 4 sizes x 3 overlaps.
    assert [(s.strategy, s.chunk_size, s.chunk_overlap) for s in settings[:4]] == [
        ("spring", 128, 0),
        ("spring", 192, 0),
        ("spring", 256, 0),
        ("spring", 320, 0),
    ]
    assert len(settings) == 4 + 12 and e5.size == 16
    grid = Grid(strategies=("token",), sizes=(32, 64), overlaps=(0, 32, 64), modes=("vector", "hybrid"))
    assert [(s.chunk_size, s.chunk_overlap) for s in grid.chunkings()] == [(32, 0), (64, 0), (64, 32)]
    assert grid.searches() == (Search("vector"), Search("hybrid", 2.5))
    assert grid.size == 6


def test_a_grid_names_what_is_wrong() -> None:
    with pytest.raises(RagError, match="unknown chunking strategy 'words'"):
        Grid(strategies=("words",))
    with pytest.raises(RagError, match="unknown search mode 'semantic'"):
        Grid(modes=("semantic",))
    with pytest.raises(RagError, match="the grid has no chunk size"):
        Grid(sizes=())
    with pytest.raises(RagError, match="chunk_size must be at least 1 token, got 0"):
        Grid(sizes=(0, 64))
    with pytest.raises(RagError, match="a hybrid weight must be 0 or more, got -1"):
        Grid(modes=("hybrid",), keyword_weights=(-1.0,))


# --- the sweep ---------------------------------------------------------------------------------------------


def test_a_sweep_embeds_each_distinct_text_once_and_scores_every_point(local: LocalEmbedder) -> None:
    embedder, cache = Counting(local), EmbeddingCache()
    seen: list[SweepProgress] = []
    result = run_sweep(TEXT, QUESTIONS, embedder, cache, SMALL_GRID, progress=seen.append)
    assert not result.stopped and len(result.points) == SMALL_GRID.size == 6
    chunk_texts = {c.text for s in SMALL_GRID.chunkings() for c in split(TEXT, s).chunks}
    assert sorted(embedder.passages) == sorted(chunk_texts)  # shared chunks once
    assert embedder.queries == [q.text for q in QUESTIONS]  # as the chat embeds them
    assert result.texts == result.embedded == len(chunk_texts) + len(QUESTIONS)
    last = seen[-1]
    assert (last.embedded, last.to_embed, last.scored, last.points) == (result.embedded, result.embedded, 6, 6)
    # The points scored so far come with the progress, each as the result has it (its cost aside).
    assert [p.ranks for p in last.done] == [p.ranks for p in result.points]
    assert [len(s.done) for s in seen if s.done] == sorted(len(s.done) for s in seen if s.done)
    assert any(0 < len(s.done) < 6 and s.embedded < s.to_embed for s in seen)  # shown while embedding goes on
    # The same sweep again costs nothing and scores the same.
    again = run_sweep(TEXT, QUESTIONS, embedder, cache, SMALL_GRID)
    assert again.embedded == 0 and [p.ranks for p in again.points] == [p.ranks for p in result.points]
    assert all(p.embed_seconds is not None and p.embed_seconds > 0 for p in result.points)


def test_a_stopped_sweep_resumes_without_embedding_anything_twice(local: LocalEmbedder) -> None:
    embedder, cache, stop = Counting(local), EmbeddingCache(), threading.Event()

    def stop_after_two_slices(p: SweepProgress) -> None:
        if p.embedded >= 2 * EmbeddingCache.SLICE:
            stop.set()

    first = run_sweep(TEXT, QUESTIONS, embedder, cache, SMALL_GRID, progress=stop_after_two_slices, stop=stop)
    assert first.stopped and first.embedded < first.texts
    assert len(first.points) < SMALL_GRID.size
    resumed = run_sweep(TEXT, QUESTIONS, embedder, cache, SMALL_GRID)
    assert not resumed.stopped and len(resumed.points) == SMALL_GRID.size
    assert first.embedded + resumed.embedded == resumed.texts
    counts = Counter(embedder.passages) + Counter(embedder.queries)
    assert max(counts.values()) == 1  # nothing embedded twice
    fresh = run_sweep(TEXT, QUESTIONS, local, EmbeddingCache(), SMALL_GRID)
    assert [(p.label, p.ranks, p.prompt_tokens) for p in resumed.points] == [
        (p.label, p.ranks, p.prompt_tokens) for p in fresh.points
    ]


def test_prompt_tokens_and_ranks_match_an_independent_ranking(local: LocalEmbedder) -> None:
    grid = Grid(strategies=("recursive",), sizes=(96,), overlaps=(16,), modes=("vector",))
    result = run_sweep(TEXT, QUESTIONS, local, EmbeddingCache(), grid, top_k=3)
    (point,) = result.points
    chunks = split(TEXT, grid.chunkings()[0]).chunks
    scores = local.embed_queries([q.text for q in QUESTIONS]) @ local.embed([c.text for c in chunks]).T
    tokens, ranks = [], []
    for i, question in enumerate(QUESTIONS):
        order = list(np.argsort(-scores[i], kind="stable"))
        tokens.append(sum(chunks[j].tokens for j in order[:3]))
        holding = [j for j, c in enumerate(chunks) if normalise(question.expected) in normalise(c.text)]
        ranks.append(min(order.index(j) for j in holding) + 1 if holding else None)
    assert point.prompt_tokens == pytest.approx(sum(tokens) / len(tokens))
    assert list(point.ranks) == ranks
    assert point.chunks == len(chunks)
    assert point.mrr == pytest.approx(sum(1 / r for r in ranks if r) / len(ranks))


def test_keyword_search_puts_no_chunk_without_a_query_term_in_the_prompt() -> None:
    questions = [Question("sky tonight", "red sky tonight"), Question("zebra", "red apple pie")]
    report = evaluate({"small": SMALL}, DOC, questions, BagOfWords(), EmbeddingCache(), mode="keyword", keep=8)
    first, second = report.result("small").questions
    assert first.top[0] == 3 and set(first.top) == {2, 3}  # "sky" in chunks 2 and 3; "tonight" in 3 only
    assert second.top == ()


def test_the_hybrid_weight_reaches_the_fusion(local: LocalEmbedder) -> None:
    chunk_set = split(TEXT, ChunkSettings(strategy="recursive", chunk_size=96, chunk_overlap=0))
    cache = EmbeddingCache()

    def ranks(mode: str, fusion: Fusion | None = None) -> list[int | None]:
        report = evaluate({"A": chunk_set}, TEXT, QUESTIONS, local, cache, mode=mode, fusion=fusion, top_n=20)
        return [q.rank for q in report.result("A").questions]

    # Weight 0 leaves the vector list alone (min-max keeps its order); a large one follows BM25.
    assert ranks("hybrid", Fusion(keyword_weight=0.0)) == ranks("vector")
    assert ranks("hybrid", Fusion(vector_weight=1e-9, keyword_weight=1.0)) == ranks("keyword")


# --- nDCG --------------------------------------------------------------------------------------------------


def test_ndcg_by_hand() -> None:
    # Relevant at 1 and 3 of three: (1 + 1/log2 4) / (1 + 1/log2 3) = 1.5 / 1.6309 = 0.9197.
    assert ndcg_at([1, 0, 1], 3) == pytest.approx(1.5 / (1 + 1 / math.log2(3)))
    assert ndcg_at([1, 0, 1], 3) == pytest.approx(0.91972, abs=1e-5)
    assert ndcg_at([0, 1], 2) == pytest.approx(0.63093, abs=1e-5)  # 1/log2 3 against 1
    assert ndcg_at([0, 0], 2) == 0.0
    # Graded: gains 3, 2 in the wrong order: (2 + 3/log2 3) / (3 + 2/log2 3) = 3.89279 / 4.26186.
    assert ndcg_at([2, 3], 2) == pytest.approx(0.91340, abs=1e-5)
    # One relevant chunk a question: 1 at rank 1, 1/2 at rank 3, 1/3 at rank 7, 0 beyond k or not found.
    assert [ndcg_gain(r, 10) for r in (1, 3, 7, 10, 11, None)] == pytest.approx(
        [1.0, 0.5, 1 / 3, 1 / math.log2(11), 0.0, 0.0]
    )
    assert mean_ndcg([1, 3, None, 7], 10) == pytest.approx((1 + 0.5 + 0 + 1 / 3) / 4)
    point = _point("p", [1, 3, None, 7], 100)
    assert point.ndcg == pytest.approx(mean_ndcg([1, 3, None, 7], 10))
    assert point.score("ndcg@10") == pytest.approx(point.ndcg)
    with pytest.raises(ValueError, match="k must be at least 1"):
        ndcg_at([1], 0)


# --- the Pareto front and the recommendation ------------------------------------------------------------------


def _point(label: str, ranks: Sequence[int | None], tokens: float, chunks: int = 10) -> PointResult:
    size = int(label.rsplit(" ", 1)[-1]) if label[-1].isdigit() else 64
    return PointResult(
        settings=ChunkSettings(strategy="token", chunk_size=size, chunk_overlap=0),
        search=Search("vector"),
        ranks=tuple(ranks),
        chunks=chunks,
        prompt_tokens=tokens,
        embed_seconds=None,
    )


def _result(points: Sequence[PointResult]) -> SweepResult:
    n = len(points[0].ranks)
    return SweepResult(
        grid=Grid(),
        embedder="test",
        questions=tuple(Question(f"q{i}", f"p{i}") for i in range(n)),
        points=tuple(points),
        top_k=8,
        stopped=False,
        texts=0,
        embedded=0,
        seconds=0.0,
    )


def test_the_pareto_front_keeps_the_points_nothing_cheaper_beats() -> None:
    cheap = _point("token 100", [2, 2], 100)  # MRR 0.5
    dear_worse = _point("token 200", [3, 3], 300)  # beaten by cheap: dearer and worse
    middle = _point("token 300", [1, 2], 200)  # 0.75
    best = _point("token 400", [1, 1], 400)  # 1.0
    same_as_middle = _point("token 500", [2, 1], 200)  # equal in both: the first stands for them
    front = pareto_front([best, dear_worse, middle, cheap, same_as_middle])
    assert [p.settings.chunk_size for p in front] == [100, 300, 400]
    assert pareto_front([best, cheap], metric="hit@1") == (cheap, best)  # hit@1: 0 then 1


def test_a_clear_winner_gets_a_lead_interval_above_zero() -> None:
    winner = _point("token 100", [1] * 20, 900)
    loser = _point("token 200", [None] * 10 + [1] * 10, 300)
    worst = _point("token 300", [None] * 20, 100)
    rec = recommend(_result([loser, winner, worst]))
    assert rec.best is winner and rec.recommended is winner and rec.sure
    assert rec.runner_up is loser and rec.lead == pytest.approx(0.5)
    assert rec.lead_interval is not None and rec.lead_interval.low > 0
    assert rec.interval.low == rec.interval.high == 1.0  # every question ranks first: no spread to resample
    # "95% interval 1.000–1.000" read as a certainty: the reason says why there is no interval instead.
    assert rec.reason.startswith(
        "token 100/0 · vector is best: MRR 1.000 (20 questions, all scored alike: no spread to draw an interval "
        "from), ahead of token 200/0 · vector by 0.500"
    )
    assert recommend(_result([loser, winner, worst])) == rec  # seeded: the same every time


def test_identical_settings_are_within_noise_and_the_cheaper_is_recommended() -> None:
    ranks = [1, 2, None, 1, 3] * 4
    dear, cheap = _point("token 200", ranks, 900, chunks=5), _point("token 100", ranks, 400, chunks=9)
    rec = recommend(_result([dear, cheap]))
    assert rec.within_noise and not rec.sure
    assert rec.recommended is cheap and rec.lead == 0.0
    assert rec.lead_interval is not None and rec.lead_interval.low == rec.lead_interval.high == 0.0


def test_a_cheaper_setting_shown_to_lose_at_most_the_margin_is_recommended_and_says_why() -> None:
    leader = _point("token 200", [1] * 200, 900)  # one question better than...
    cheap = _point("token 100", [1] * 199 + [2], 400)  # ...this one, half as dear
    rec = recommend(_result([cheap, leader]))
    assert rec.best is leader and rec.recommended is cheap and rec.within_noise == rec.close == (cheap,)
    assert rec.lead == pytest.approx(0.0025)
    assert rec.lead_interval is not None and rec.lead_interval.low == 0.0 < rec.lead_interval.high <= MARGIN
    assert rec.reason == (
        "token 200/0 · vector scores highest (MRR 1.000, 200 questions, all scored alike: no spread to draw an "
        "interval from), but 1 other setting is within noise of it, and token 100/0 · vector is shown to lose at "
        "most 0.02: take it, the cheapest such (400 prompt tokens against 900)."
    )


def test_within_noise_is_not_enough_for_a_cheaper_setting_with_few_questions() -> None:
    # Six questions: a setting two of them rank lower is within noise of the best (the lead's interval reaches
    # 0), but its loss could be up to 0.33: with few questions, every setting was within noise and the
    # cheapest (the smallest chunks) was always recommended, whatever was measured.
    best = _point("token 300", [1, 1, 1, 1, 1, 2], 2400)
    cheap = _point("token 100", [1, 1, 1, 1, 2, 3], 800)
    rec = recommend(_result([cheap, best]))
    assert rec.within_noise == (cheap,) and rec.close == () and rec.recommended is best and not rec.sure
    assert rec.lead_interval is not None and rec.lead_interval.low <= 0 < MARGIN < rec.lead_interval.high
    assert rec.reason == (
        "token 300/0 · vector scores highest (MRR 0.917, 95% interval 0.750–1.000 over 6 questions); 1 other "
        "setting is within noise of it, but 6 questions cannot show that a cheaper one loses less than 0.02: "
        "keep it, or add questions to narrow the intervals."
    )
    # 400 questions alike but for those two: the same loss is shown to stay under the margin; with 40, not.
    many = recommend(
        _result([_point("token 100", [1] * 398 + [2, 3], 800), _point("token 300", [1] * 399 + [2], 2400)])
    )
    assert many.lead == pytest.approx((0.5 + 2 / 3 - 0.5) / 400) and many.recommended.settings.chunk_size == 100
    fewer = recommend(_result([_point("token 100", [1] * 38 + [2, 3], 800), _point("token 300", [1] * 39 + [2], 2400)]))
    assert fewer.within_noise and fewer.close == () and fewer.recommended.settings.chunk_size == 300


def test_recommend_refuses_a_sweep_that_scored_nothing() -> None:
    empty = SweepResult(Grid(), "test", (), (), 8, True, 10, 2, 0.1)
    with pytest.raises(RagError, match="the sweep scored no setting yet"):
        recommend(empty)


def test_grid_values_typed_by_the_user_are_read_as_numbers_or_refused_by_name() -> None:
    assert typed_numbers([128, "200", " 96 ", 128], "Chunk sizes") == (128, 200, 96)
    assert typed_numbers(["2.5", 1], "Hybrid weight", whole=False) == (2.5, 1.0)
    with pytest.raises(RagError, match=r"^Chunk sizes: '2OO' is not a whole number$"):
        typed_numbers([128, "2OO"], "Chunk sizes")
    with pytest.raises(RagError, match=r"^Overlaps: '1.5' is not a whole number$"):
        typed_numbers(["1.5"], "Overlaps")
    with pytest.raises(RagError, match=r"^Hybrid weight: 'high' is not a number$"):
        typed_numbers(["high"], "Hybrid weight", whole=False)


def test_an_empty_grid_field_is_named_in_the_users_language() -> None:
    """The Chinese UI said "网格中没有 modes": the field's name in English inside the Chinese line."""
    from rag.text import text_of
    from ui.zh import ZH

    for field, words in (("modes", "检索方式"), ("strategies", "切分策略"), ("sizes", "块大小"), ("overlaps", "重叠")):
        with pytest.raises(RagError) as raised:
            Grid(**{field: ()})
        template = text_of(raised.value).template
        assert words in ZH[template] and field not in ZH[template], (field, template)
