"""A sweep over chunk settings (issue #30): every strategy x chunk size x overlap of a `Grid`, optionally x
search mode and hybrid weight, each scored on the same questions and costed.

Each (strategy, size, overlap) is chunked once, from one tokenisation of the text; every distinct chunk
text is embedded once through the `EmbeddingCache` (settings that overlap share most of their chunks), and
the questions once, as queries. A stop lands between two slices of embedding or two grid points and keeps
what was embedded: running the same sweep again with the same cache embeds only the rest (resumable).
Scoring is rag.evaluation.ranking's, as the Chunk Lab's check ranks: hit@1/3/5, MRR, and nDCG@10.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from rag import chunking
from rag.chunking import ChunkSet, ChunkSettings
from rag.chunking.settings import DEFAULT, STRATEGIES, is_spring
from rag.embeddings import CancelSignal, Embedder
from rag.errors import RagError
from rag.evaluation.cache import EmbeddingCache
from rag.evaluation.metrics import hit_rate, mean_ndcg, mean_reciprocal_rank, ndcg_gain
from rag.evaluation.plan import estimate_texts
from rag.evaluation.questions import Question
from rag.evaluation.ranking import evaluate
from rag.retrieve.fusion import Fusion
from rag.retrieve.modes import DEFAULT_MODE, MODES
from rag.text import Text

KS = (1, 3, 5)
NDCG_K = 10
TOP_K = 8
"""Chunks a question's prompt holds: the chat's `top_k` (rag.generate.engine.Request)."""
METRICS = ("mrr", "ndcg@10", "hit@1", "hit@3", "hit@5")

DEFAULT_STRATEGIES = ("spring", "recursive")
"""The app's default splitter and the one that cuts at paragraphs and sentences; token windows (cut
anywhere, mid-sentence) are one click away in the grid."""
DEFAULT_OVERLAPS = (0, 32, 64)
"""Tokens; absolute rather than a share of the size, so that the size x overlap heatmap has one overlap a
column."""
CANDIDATE_SIZES = (128, 192, 256, 320, 384, 512)
E5_TOKENS_PER_TOKEN = 1.58
"""e5 (XLM-R) tokens a cl100k token may average for a chunk to fit e5's 512-token window less its 5
(rag.chunking.settings.DEFAULT_CHUNK_SIZE: 507 / 321; prose needs 1.1-1.25, code 1.4)."""
WINDOW_OVERHEAD = 5
"""Tokens of the window the embedder spends on itself (e5: "passage: " and the special tokens)."""
DEFAULT_KEYWORD_WEIGHT = 2.5
"""The chat's hybrid weight (rag.retrieve.fusion.DEFAULT_FUSION: keyword list x2.5, vector list x1)."""


@dataclass(frozen=True)
class Search:
    """How one grid point searches: a mode, and in hybrid the keyword list's weight against the vector's 1."""

    mode: str
    keyword_weight: float | None = None

    @property
    def fusion(self) -> Fusion | None:
        return Fusion(keyword_weight=self.keyword_weight) if self.keyword_weight is not None else None

    @property
    def label(self) -> str:
        return f"hybrid ×{self.keyword_weight:g}" if self.keyword_weight is not None else self.mode


def typed_numbers(values: Sequence[object], name: str, *, whole: bool = True) -> tuple[float, ...]:
    """Grid values as a user typed or picked them ("200", 256, " 0.5 "): numbers, each once, in order; a
    RagError naming `name` and the value that is not one (a size of "2OO", a weight of "high")."""
    out: dict[float, None] = {}
    for value in values:
        text = str(value).strip()
        try:
            number = int(text) if whole else float(text)
        except ValueError:
            kind = Text("a whole number") if whole else Text("a number")
            raise RagError(Text("{name}: {value} is not {kind}", name=name, value=repr(text), kind=kind)) from None
        out[number] = None
    return tuple(out)


@dataclass(frozen=True)
class Grid:
    """The settings a sweep tries: every valid strategy x size x overlap, each searched every way of
    `modes` (hybrid once per weight of `keyword_weights`). The other chunk settings come from `base`."""

    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    sizes: tuple[int, ...] = (128, 192, 256, 320)
    overlaps: tuple[int, ...] = DEFAULT_OVERLAPS
    modes: tuple[str, ...] = (DEFAULT_MODE,)
    keyword_weights: tuple[float, ...] = (DEFAULT_KEYWORD_WEIGHT,)
    """Hybrid's keyword weight (the vector list weighs 1); unused without hybrid in `modes`."""
    base: ChunkSettings = DEFAULT

    def __post_init__(self) -> None:
        # One message a field, each translated whole: "网格中没有 modes" named the field in English in the Chinese UI.
        for name, empty in (
            ("strategies", Text("the grid has no strategy: choose at least one")),
            ("sizes", Text("the grid has no chunk size: give at least one")),
            ("overlaps", Text("the grid has no overlap: give at least one (0 for none)")),
            ("modes", Text("the grid has no search mode: choose at least one")),
        ):
            if not getattr(self, name):
                raise RagError(empty)
        unknown = [s for s in self.strategies if s not in STRATEGIES]
        if unknown:
            raise RagError(
                Text(
                    "unknown chunking strategy {strategy} (choose one of: {choices})",
                    strategy=repr(unknown[0]),
                    choices=", ".join(STRATEGIES),
                )
            )
        if min(self.sizes) < 1:
            raise RagError(Text("chunk_size must be at least 1 token, got {value}", value=min(self.sizes)))
        if min(self.overlaps) < 0:
            raise RagError(Text("chunk_overlap must not be negative, got {value}", value=min(self.overlaps)))
        wrong = [m for m in self.modes if m not in MODES]
        if wrong:
            raise RagError(
                Text("unknown search mode {mode} (choose one of: {modes})", mode=repr(wrong[0]), modes=", ".join(MODES))
            )
        if "hybrid" in self.modes and (not self.keyword_weights or min(self.keyword_weights) < 0):
            raise RagError(
                Text(
                    "a hybrid weight must be 0 or more, got {weights}",
                    weights=", ".join(f"{w:g}" for w in self.keyword_weights) or "none",
                )
            )

    def chunkings(self) -> tuple[ChunkSettings, ...]:
        """The valid (strategy, size, overlap) settings, each once: an overlap as large as the size is
        skipped (no window would move on), and Spring AI's splitters, which have no overlap, appear once
        a size, with overlap 0."""
        found: dict[ChunkSettings, None] = {}
        for strategy in self.strategies:
            for size in sorted(set(self.sizes)):
                for overlap in sorted(set(self.overlaps)):
                    if is_spring(strategy):
                        overlap = 0
                    elif overlap >= size:
                        continue
                    settings = ChunkSettings(
                        strategy=strategy,
                        chunk_size=size,
                        chunk_overlap=overlap,
                        min_chunk_size_chars=self.base.min_chunk_size_chars,
                        min_chunk_length_to_embed=self.base.min_chunk_length_to_embed,
                        max_num_chunks=self.base.max_num_chunks,
                        keep_separator=self.base.keep_separator,
                    )
                    found[settings] = None
        return tuple(found)

    def searches(self) -> tuple[Search, ...]:
        out: list[Search] = []
        for mode in dict.fromkeys(self.modes):
            if mode == "hybrid":
                out.extend(Search(mode, float(w)) for w in dict.fromkeys(self.keyword_weights))
            else:
                out.append(Search(mode))
        return tuple(out)

    @property
    def size(self) -> int:
        """Grid points: chunkings x searches."""
        return len(self.chunkings()) * len(self.searches())


def default_grid(embedder: Embedder | None = None) -> Grid:
    """The default grid, its sizes those `embedder` reads whole: for e5's 512-token window up to 320 cl100k
    tokens (see `E5_TOKENS_PER_TOKEN`); every candidate for an embedder without a window (WordLlama)."""
    window = embedder.max_input_tokens if embedder is not None else None
    if window is None:
        return Grid(sizes=CANDIDATE_SIZES)
    fits = (window - WINDOW_OVERHEAD) / E5_TOKENS_PER_TOKEN
    sizes = tuple(s for s in CANDIDATE_SIZES if s <= fits) or (min(CANDIDATE_SIZES),)
    return Grid(sizes=sizes)


@dataclass(frozen=True)
class PointResult:
    """One grid point: its scores over the questions and what it costs."""

    settings: ChunkSettings
    search: Search
    ranks: tuple[int | None, ...]
    """Per question, the rank of the best-ranked chunk holding its passage (None: not found)."""
    chunks: int
    prompt_tokens: float
    """Mean over the questions of the tokens (cl100k, as the prompt is packed) of the top-k chunks returned."""
    embed_seconds: float | None
    """Time to embed all its chunks at the rate measured in this process (None: no rate known yet)."""

    @property
    def label(self) -> str:
        return f"{chunking.label(self.settings)} · {self.search.label}"

    @property
    def mrr(self) -> float:
        return mean_reciprocal_rank(self.ranks)

    @property
    def ndcg(self) -> float:
        return mean_ndcg(self.ranks, NDCG_K)

    def hit_at(self, k: int) -> float:
        return hit_rate(self.ranks, k)

    def score(self, metric: str = "mrr") -> float:
        return float(self.per_question(metric).mean()) if self.ranks else 0.0

    def per_question(self, metric: str = "mrr") -> np.ndarray:
        """Each question's share of `metric` (its mean is the metric): 1/rank, the nDCG@10 gain, or 1/0
        for hit@k."""
        if metric == "mrr":
            values = [1.0 / r if r else 0.0 for r in self.ranks]
        elif metric == f"ndcg@{NDCG_K}":
            values = [ndcg_gain(r, NDCG_K) for r in self.ranks]
        elif metric.startswith("hit@") and metric[4:].isdigit():
            k = int(metric[4:])
            values = [1.0 if r is not None and r <= k else 0.0 for r in self.ranks]
        else:
            raise RagError(
                Text(
                    "unknown metric {metric} (choose one of: {metrics})",
                    metric=repr(metric),
                    metrics=", ".join(METRICS),
                )
            )
        return np.array(values, dtype=np.float64)


@dataclass(frozen=True)
class SweepProgress:
    """Where a sweep is: texts embedded of those it had to embed, grid points scored of all."""

    embedded: int
    to_embed: int
    scored: int
    points: int
    done: tuple[PointResult, ...] = ()
    """The points scored so far, in grid order: a page shows them while the rest is embedded (each
    chunking's points are scored as soon as its vectors are there). Their `embed_seconds` is None."""


@dataclass(frozen=True)
class SweepResult:
    grid: Grid
    embedder: str
    questions: tuple[Question, ...]
    points: tuple[PointResult, ...]
    """The points scored, in grid order (all of them unless `stopped`)."""
    top_k: int
    stopped: bool
    """Stopped before every point was scored: run the sweep again with the same cache to finish it."""
    texts: int
    """Distinct texts the sweep needs vectors for: its questions (as queries) and chunks."""
    embedded: int
    """Of them, those this run sent to the embedder (the rest came from the cache)."""
    seconds: float
    not_found: tuple[int, ...] = field(default=())
    """Positions of the questions whose passage is not in the text verbatim (a miss under every setting)."""


ProgressCallback = Callable[[SweepProgress], None]


class _Stopped(Exception):
    pass


def run_sweep(
    text: str,
    questions: Sequence[Question],
    embedder: Embedder,
    cache: EmbeddingCache,
    grid: Grid | None = None,
    *,
    top_k: int = TOP_K,
    progress: ProgressCallback | None = None,
    stop: CancelSignal | None = None,
) -> SweepResult:
    """Score every point of `grid` (`default_grid(embedder)` when None) on `questions` over `text`.

    Chunks each setting once, embeds what the cache lacks one chunking at a time (its points are scored
    as soon as its vectors are there, so a stopped sweep has results for the chunkings done), and checks
    `stop` after every slice of the cache (`EmbeddingCache.SLICE` texts) and every point. Nothing is
    embedded when every mode is keyword."""
    started = time.perf_counter()
    grid = grid if grid is not None else default_grid(embedder)
    if not questions:
        raise RagError(Text("no questions to check: type at least one question with its expected passage"))
    if top_k < 1:
        raise RagError(Text("top_k must be at least 1, got {top_k}", top_k=top_k))
    searches = grid.searches()
    chunk_sets = chunk_grid(text, grid)
    settings = tuple(chunk_sets)
    vectors_needed = any(s.mode != "keyword" for s in searches)
    query_texts = [q.text for q in questions]
    passages = list(dict.fromkeys(c.text for cs in chunk_sets.values() for c in cs.chunks))
    texts = len(set(query_texts)) + len(passages) if vectors_needed else 0
    to_embed = (
        len(cache.missing(embedder.name, query_texts, queries=True)) + len(cache.missing(embedder.name, passages))
        if vectors_needed
        else 0
    )
    total_points = len(settings) * len(searches)
    state = {"embedded": 0, "scored": 0}
    points: list[PointResult] = []

    def tell() -> None:
        if progress is not None:
            progress(SweepProgress(state["embedded"], to_embed, state["scored"], total_points, tuple(points)))

    def stopped() -> bool:
        return stop is not None and stop.is_set()

    def embed(batch: Sequence[str], *, queries: bool = False) -> None:
        done_before = state["embedded"]

        def counted(done: int, _total: int) -> None:
            state["embedded"] = done_before + done
            tell()
            if stopped():
                raise _Stopped

        cache.embed(embedder, batch, counted, queries=queries)

    not_found: tuple[int, ...] = ()
    was_stopped = False
    before = cache.stats()
    try:
        if vectors_needed:
            embed(query_texts, queries=True)
        for chunk_set in chunk_sets.values():
            if stopped():
                raise _Stopped
            if vectors_needed:
                embed([c.text for c in chunk_set.chunks])
            for search in searches:
                if stopped():
                    raise _Stopped
                point, missing = _score(text, questions, embedder, cache, chunk_set, search, top_k)
                points.append(point)
                not_found = missing
                state["scored"] += 1
                tell()
    except _Stopped:
        was_stopped = True
    embedded = cache.stats().misses - before.misses
    if vectors_needed:
        seconds = {s: _embed_seconds(embedder, chunk_sets[s]) for s in dict.fromkeys(p.settings for p in points)}
        points = [replace(p, embed_seconds=seconds[p.settings]) for p in points]
    return SweepResult(
        grid=grid,
        embedder=embedder.name,
        questions=tuple(questions),
        points=tuple(points),
        top_k=top_k,
        stopped=was_stopped,
        texts=texts,
        embedded=embedded,
        seconds=time.perf_counter() - started,
        not_found=not_found,
    )


def chunk_grid(text: str, grid: Grid) -> dict[ChunkSettings, ChunkSet]:
    """`text` cut by every chunking of `grid`, from one tokenisation. Before a sweep starts, pass these to
    rag.evaluation.plan.plan_check (by label) to say what is left to embed and how long that takes, and to
    fill the cache with the vectors a knowledge base already holds."""
    settings = grid.chunkings()
    source = chunking.tokens_for_split(text, settings[0])
    return {s: chunking.split(source, s) for s in settings}


def _score(
    text: str,
    questions: Sequence[Question],
    embedder: Embedder,
    cache: EmbeddingCache,
    chunk_set: ChunkSet,
    search: Search,
    top_k: int,
) -> tuple[PointResult, tuple[int, ...]]:
    """One point, ranked by rag.evaluation.ranking.evaluate from vectors the cache holds already."""
    report = evaluate(
        {"point": chunk_set},
        text,
        questions,
        embedder,
        cache,
        KS,
        mode=search.mode,
        fusion=search.fusion,
        keep=top_k,
    )
    result = report.results[0]
    tokens = {c.index: c.tokens for c in chunk_set.chunks}
    prompt = [sum(tokens[i] for i in q.top) for q in result.questions]
    point = PointResult(
        settings=chunk_set.settings,
        search=search,
        ranks=tuple(q.rank for q in result.questions),
        chunks=len(chunk_set.chunks),
        prompt_tokens=float(np.mean(prompt)) if prompt else 0.0,
        embed_seconds=None,
    )
    return point, report.not_found


def _embed_seconds(embedder: Embedder, chunk_set: ChunkSet) -> float | None:
    """The time a setting's chunks take to embed, at this process's measured rate (rag.evaluation.plan's
    estimate): the sweep embeds a chunk shared by several settings once, so the time it spent is no one
    setting's cost."""
    if not chunk_set.chunks:
        return 0.0
    found = estimate_texts(embedder, [c.text for c in chunk_set.chunks])
    return found.seconds if found is not None else None
