"""The Chunk Lab's long work in the background: writing questions and running a sweep, each on the app's one
background runner (rag.llms.stream.Runner), so that a page keeps only the job in its session, redraws, and
polls `view()`; a click elsewhere in the app loses nothing, and Stop keeps what was done.

Also the question table's rules, kept out of the page: reading a CSV or JSONL of one's own questions, and
finding each row's answer in the document again (its character span), so that an edited set can be saved
as JSONL (rag.tuning.files).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

from rag import chunking
from rag.embeddings import Embedder
from rag.errors import RagError
from rag.evaluation.cache import EmbeddingCache
from rag.evaluation.normalise import NormalisedText, normalise
from rag.evaluation.plan import CheckPlan, plan_check
from rag.evaluation.questions import Question, parse_questions_csv
from rag.llms.stream import Runner
from rag.llms.types import ChatModel
from rag.scripts import language_of
from rag.text import Text
from rag.tuning import checks
from rag.tuning.files import load_questions
from rag.tuning.questions import GeneratedQuestion, GeneratedQuestions, Rejected, generate_questions
from rag.tuning.sweep import Grid, PointResult, SweepProgress, SweepResult, chunk_grid, run_sweep

if TYPE_CHECKING:
    from rag.store import Store

T = TypeVar("T")


class _Job(Generic[T]):
    """What both jobs share: their runner, stopped (what was done stays), waited for, polled."""

    _runner: Runner[T]

    def stop(self) -> None:
        """Stop after the step in progress (a passage asked about, a slice embedded); what was done stays."""
        self._runner.stop()

    def wait(self, timeout: float) -> bool:
        return self._runner.join(timeout)

    @property
    def running(self) -> bool:
        return not self._runner.done


# --- writing questions --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QuestionsView:
    """How far a question job got: the questions kept so far, in the order they were written."""

    questions: tuple[GeneratedQuestion, ...]
    dropped: dict[str, int]
    """Dropped questions by reason code (every code of `checks.REASONS`, 0 when none)."""
    asked: int
    planned: int
    running: bool
    stop_requested: bool
    error: str
    """The job's failure in one line (a `Text`), "" when none."""
    result: GeneratedQuestions | None
    """The whole outcome once the job has ended without an error."""

    @property
    def stopped(self) -> bool:
        return self.result.stopped if self.result is not None else self.stop_requested


class QuestionsJob(_Job[GeneratedQuestions]):
    """`generate_questions` on a background runner, started on construction; `view()` is safe from any thread."""

    def __init__(self, document: str, model: ChatModel, count: int) -> None:
        self.model = model.name
        self.count = count
        self._lock = threading.Lock()
        self._kept: list[GeneratedQuestion] = []
        self._rejected: list[Rejected] = []
        self._asked = 0
        self._planned = 0

        def found(item: GeneratedQuestion | Rejected) -> None:
            with self._lock:
                (self._kept if isinstance(item, GeneratedQuestion) else self._rejected).append(item)  # type: ignore[arg-type]

        def progress(done: int, total: int) -> None:
            with self._lock:
                self._asked, self._planned = done, total

        def produce(stop: threading.Event) -> Iterable[GeneratedQuestions]:
            return [generate_questions(document, model, count, progress=progress, stop=stop, found=found)]

        self._runner: Runner[GeneratedQuestions] = Runner(produce, name="tuning-questions")

    def view(self) -> QuestionsView:
        running = self.running  # read first: once done, what follows is all there is
        items = self._runner.items()
        result = items[-1] if items else None
        with self._lock:
            kept, rejected, asked, planned = tuple(self._kept), list(self._rejected), self._asked, self._planned
        if result is not None:
            kept, asked, planned = result.questions, result.passages, result.planned
            dropped = result.dropped
        else:
            dropped = {reason: sum(r.reason == reason for r in rejected) for reason in checks.REASONS}
        return QuestionsView(
            questions=kept,
            dropped=dropped,
            asked=asked,
            planned=planned or self.count,
            running=running,
            stop_requested=self._runner.stop_requested,
            error="" if running else self._runner.error,
            result=result,
        )


# --- the sweep ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepView:
    progress: SweepProgress | None
    running: bool
    stop_requested: bool
    error: str
    result: SweepResult | None


class SweepJob(_Job[SweepResult]):
    """`run_sweep` on a background runner, started on construction. A stop keeps the vectors embedded in
    `cache`: a new job on the same inputs embeds only the rest."""

    def __init__(
        self,
        text: str,
        questions: Sequence[Question],
        embedder: Embedder,
        cache: EmbeddingCache,
        grid: Grid,
        *,
        key: object = None,
    ) -> None:
        self.key = key
        """What the sweep was run on (the page's signature), to tell a result of other inputs."""
        self._lock = threading.Lock()
        self._progress: SweepProgress | None = None

        def progress(p: SweepProgress) -> None:
            with self._lock:
                self._progress = p

        def produce(stop: threading.Event) -> Iterable[SweepResult]:
            return [run_sweep(text, questions, embedder, cache, grid, progress=progress, stop=stop)]

        self._runner: Runner[SweepResult] = Runner(produce, name="tuning-sweep")

    def view(self) -> SweepView:
        running = self.running
        items = self._runner.items()
        with self._lock:
            progress = self._progress
        return SweepView(
            progress=progress,
            running=running,
            stop_requested=self._runner.stop_requested,
            error="" if running else self._runner.error,
            result=items[-1] if items else None,
        )


def plan_sweep(
    text: str,
    questions: Sequence[Question],
    grid: Grid,
    embedder: Embedder,
    cache: EmbeddingCache,
    *,
    store: Store | None = None,
) -> CheckPlan:
    """What a sweep of `grid` has left to embed and about how long that takes (rag.evaluation.plan), the
    vectors a knowledge base already holds put in `cache` first."""
    chunk_sets = chunk_grid(text, grid)
    by_label = {chunking.label(s): cs for s, cs in chunk_sets.items()}
    mode = "keyword" if all(s.mode == "keyword" for s in grid.searches()) else "vector"
    return plan_check(by_label, questions, embedder, cache, mode, store=store if mode != "keyword" else None)


@dataclass(frozen=True)
class Heatmap:
    """One strategy's `metric` for each chunk size (rows) x overlap (columns); None where not in the grid."""

    strategy: str
    sizes: tuple[int, ...]
    overlaps: tuple[int, ...]
    values: tuple[tuple[float | None, ...], ...]


def heatmaps(points: Sequence[PointResult], search_label: str, metric: str = "mrr") -> list[Heatmap]:
    """A size x overlap grid of `metric` per strategy, of the points searched by `search_label`."""
    chosen = [p for p in points if p.search.label == search_label]
    out: list[Heatmap] = []
    for strategy in dict.fromkeys(p.settings.strategy for p in chosen):
        mine = [p for p in chosen if p.settings.strategy == strategy]
        sizes = tuple(sorted({p.settings.chunk_size for p in mine}))
        overlaps = tuple(sorted({p.settings.chunk_overlap for p in mine}))
        score = {(p.settings.chunk_size, p.settings.chunk_overlap): p.score(metric) for p in mine}
        values = tuple(tuple(score.get((s, o)) for o in overlaps) for s in sizes)
        out.append(Heatmap(strategy, sizes, overlaps, values))
    return out


# --- the question table -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Located:
    """Table rows as a question set with offsets: those whose answer was found, and the rows (1-based) not."""

    questions: tuple[GeneratedQuestion, ...]
    not_found: tuple[int, ...] = field(default=())

    def with_spans(self, questions: Sequence[Question]) -> list[Question]:
        """The table's `questions`, each whose answer was found in the document with its span (any chunk
        overlapping it answers the question under every chunking, and the span is what a saved set keeps); a
        row not found stays as it is (a miss)."""
        by_text: dict[str, list[GeneratedQuestion]] = {}
        for g in self.questions:
            by_text.setdefault(g.text.strip(), []).append(g)
        out: list[Question] = []
        for question in questions:
            match = by_text.get(question.text.strip())
            found = match.pop(0) if match else None
            out.append(
                question if found is None else Question(question.text, found.answer, None, (found.start, found.end))
            )
        return out


def locate_rows(rows: Iterable[tuple[str, str]], document: str, known: Sequence[GeneratedQuestion] = ()) -> Located:
    """Each (question, answer) row with its answer's span in `document`: a row as it was generated keeps its
    span; another's answer is looked up (normalised, as the retrieval check looks it up; the first place)."""
    spans = {(q.text, q.answer): q for q in known}
    doc: NormalisedText | None = None
    found: list[GeneratedQuestion] = []
    missing: list[int] = []
    for number, (question, answer) in enumerate(rows, start=1):
        if not question.strip() or not answer.strip():
            continue
        same = spans.get((question, answer))
        if same is not None:
            found.append(same)
            continue
        doc = doc if doc is not None else NormalisedText.of(document)
        places = doc.find_all(normalise(answer), limit=1)
        if not places:
            missing.append(number)
            continue
        start, end = places[0]
        found.append(GeneratedQuestion(question.strip(), document[start:end], start, end, start, language_of(answer)))
    return Located(tuple(found), tuple(missing))


def read_question_file(
    filename: str, data: bytes, document: str
) -> tuple[list[tuple[str, str]], list[GeneratedQuestion]]:
    """The (question, answer) rows of one's own questions file: a JSONL as `rag.tuning.files` writes it (its
    answers checked against `document`), or a CSV with the header question,expected. Also the JSONL's
    questions with their spans (none for a CSV)."""
    name = filename.lower()
    if name.endswith((".jsonl", ".json", ".ndjson")):
        loaded = load_questions(data, filename, document=document)
        return [(q.text, q.answer) for q in loaded], loaded
    if name.endswith(".csv"):
        return [(q.text, q.expected) for q in parse_questions_csv(data)], []
    raise RagError(Text("{name}: expected a .csv or .jsonl file", name=filename))
