"""The Chunk Lab's tuner measured against real questions (issue #30, "Measured, not assumed").

For each public set with extractive answers (en_race, zh_cmrc_trial), some of its passages (`SETS`: those
with a question whose answer can be placed in them, evenly spaced through the set) are joined into one long
document. The embedded chat model writes questions about it (rag.tuning.questions, as the Chunk Lab asks
for them); the set's own questions about the same passages are placed in it too, each by its first gold
answer found in its own passage (verbatim, else after `normalise`, the rule generated answers follow), so
both question sets carry an answer span and score every chunking alike. The same sweep
(rag.tuning.sweep.default_grid for the embedder) then runs on both, and the bench reports:

(a) how closely the ranking of the settings by the generated questions agrees with the ranking by the real
    ones: Spearman's rho over the grid points, by MRR (what rag.tuning.recommend ranks by) and by hit@5;
(b) the real questions' hit@5 of the setting recommended from the generated questions, against the best
    setting by the real questions in hindsight;
(c) the share of generated questions kept (and why the others were dropped);
(d) the wall time: writing the questions (recorded when they were written, if they come from the cache)
    and the two sweeps;
(e) (a) and (b) with one thing done otherwise: other recommendation margins (`OTHER_MARGINS`), and the
    questions the keyword filter dropped (rag.tuning.checks.ELSEWHERE) kept as well.

Goals: rho >= 0.7 and the recommended setting within 0.02 hit@5 of the best, in both languages.

Generated questions are kept in `RAG_DATA_DIR/eval-questions/` (rag.tuning.files' JSONL, with a small
`.meta.json` beside it saying how they were made), so a rerun skips the model; vectors in
`RAG_DATA_DIR/eval-vectors/` (benchmarks' `DiskVectors`). The full run sweeps with e5 (the app's default
embedder) on each set's `TuneSet.questions`; --quick with WordLlama on `QUICK_QUESTIONS`. The number of
questions can be set with `RAG_BENCH_TUNE_QUESTIONS`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from benchmarks.report import Report

if TYPE_CHECKING:
    from rag.embeddings import Embedder
    from rag.evaluation.datasets import Passage
    from rag.evaluation.questions import Question
    from rag.evaluation.sets import EvalSet
    from rag.llms import ChatModel
    from rag.settings import Settings
    from rag.tuning.questions import GeneratedQuestion, GeneratedQuestions
    from rag.tuning.recommend import Recommendation
    from rag.tuning.sweep import PointResult, SweepResult


@dataclass(frozen=True)
class TuneSet:
    language: str
    name: str
    """The public set whose questions have gold answers to place in the text."""
    passages: int
    """Its passages joined into the long document."""
    questions: int
    """Passages the model is asked about in the full run (10-60 s each on a 2-core machine)."""


SETS = (TuneSet("en", "en_race", 80, 64), TuneSet("zh", "zh_cmrc_trial", 100, 80))
"""en_race: 80 passages, ~107,000 characters: 50 of them (40 asked, 20 kept) allowed a rho of 0.68 at the median
(as many real questions drawn at random), under the goal of 0.7 whoever writes the questions; 80 (64 asked,
39 kept) allow 0.79. zh_cmrc_trial's passages are shorter: 50 of them (~26,000 characters)
gave the model 39 windows to ask about and kept 17 questions, and 17 of the set's own questions drawn at random
rank the settings at rho 0.71 against all 201 (median; 0.30 at the 10th percentile): too few to tell settings
apart whoever writes them. 100 passages (~53,000 characters, 398 real questions) and 80 questions."""
PASSAGES = 50
"""Passages a set's long document is built from where no set says (the tests' small documents)."""
QUICK_QUESTIONS = 6
QUESTIONS_ENV = "RAG_BENCH_TUNE_QUESTIONS"
SEPARATOR = "\n\n"
RANK_GOAL = 0.7
HIT_GAP_GOAL = 0.02
FOLDER = "eval-questions"


# --- the long document and the real questions ------------------------------------------------------------


@dataclass(frozen=True)
class LongDocument:
    set: str
    text: str
    spans: Mapping[str, tuple[int, int]]
    """Each passage's [start, end) in `text`, by pid."""


@dataclass(frozen=True)
class RealQuestions:
    questions: tuple[Question, ...]
    verbatim: int
    """Placed by an answer found as it stands in its passage."""
    normalised: int
    """Placed only after `normalise` (case, width, whitespace)."""
    unplaced: int
    """Questions about the document's passages with no gold answer found in their passage (left out)."""


def locate_answer(text: str, span: tuple[int, int], answers: Sequence[str]) -> tuple[tuple[int, int], bool] | None:
    """Where the first of `answers` found inside `text[span[0]:span[1]]` stands in `text`, and whether it was
    found verbatim (True) or only after `normalise` (False); None when none is in the span. Every answer is
    tried verbatim before any is tried normalised."""
    from rag.evaluation.normalise import NormalisedText
    from rag.tuning import checks

    lo, hi = span
    for answer in answers:
        if answer.strip():
            at = text.find(answer, lo, hi)
            if at >= 0:
                return (at, at + len(answer)), True
    doc = NormalisedText.of(text[lo:hi])
    for answer in answers:
        if answer.strip():
            found = checks.locate(doc, answer, (0, hi - lo))
            if found:
                start, end = found[0]
                return (lo + start, lo + end), False
    return None


def placeable(eval_set: EvalSet) -> list[str]:
    """The pids of the passages (in the set's order) that have at least one question placeable in them."""
    texts = {p.key: p.text for p in eval_set.passages}
    found = {
        q.file
        for q, answers in zip(eval_set.questions, eval_set.answers)
        if q.file in texts and locate_answer(texts[q.file], (0, len(texts[q.file])), answers) is not None
    }
    return [p.key for p in eval_set.passages if p.key in found]


def evenly(items: Sequence[str], n: int) -> list[str]:
    """At most `n` of `items`, evenly spaced (all of them when there are no more than `n`)."""
    if n >= len(items):
        return list(items)
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]


def long_document(name: str, passages: Sequence[Passage]) -> LongDocument:
    """The passages joined by blank lines, each one's place kept."""
    parts: list[str] = []
    spans: dict[str, tuple[int, int]] = {}
    at = 0
    for passage in passages:
        if parts:
            parts.append(SEPARATOR)
            at += len(SEPARATOR)
        parts.append(passage.text)
        spans[passage.key] = (at, at + len(passage.text))
        at += len(passage.text)
    return LongDocument(name, "".join(parts), spans)


def real_questions(eval_set: EvalSet, document: LongDocument) -> RealQuestions:
    """The set's questions about the document's passages, each with the span of its first gold answer found
    in its own passage (`locate_answer`); those with none found are counted and left out."""
    from rag.evaluation.questions import Question

    out: list[Question] = []
    verbatim = normalised = unplaced = 0
    for question, answers in zip(eval_set.questions, eval_set.answers):
        span = document.spans.get(question.file or "")
        if span is None:
            continue
        found = locate_answer(document.text, span, answers)
        if found is None:
            unplaced += 1
            continue
        (start, end), exact = found
        verbatim += exact
        normalised += not exact
        out.append(Question(question.text, document.text[start:end], None, (start, end)))
    return RealQuestions(tuple(out), verbatim, normalised, unplaced)


def build(name: str, n: int = PASSAGES) -> tuple[LongDocument, RealQuestions]:
    """Set `name`'s long document of `n` placeable passages, and its real questions."""
    from rag.evaluation.sets import eval_set

    chosen_set = eval_set(name)
    by_key = {p.key: p for p in chosen_set.passages}
    document = long_document(name, [by_key[k] for k in evenly(placeable(chosen_set), n)])
    return document, real_questions(chosen_set, document)


# --- rank agreement -------------------------------------------------------------------------------------


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties given the mean of the ranks they span."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman's rho (Pearson's r of the tie-averaged ranks, as scipy.stats.spearmanr); None when it is
    undefined: fewer than 2 values, or either side all equal."""
    if len(xs) != len(ys):
        raise ValueError(f"rank correlation of {len(xs)} values against {len(ys)}")
    if len(xs) < 2:
        return None
    rx, ry = ranks([round(x, 12) for x in xs]), ranks([round(y, 12) for y in ys])
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return float(sxy / (sxx * syy) ** 0.5)


# --- the comparison -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    settings: int
    rho_mrr: float | None
    rho_hit5: float | None
    recommended: str
    recommended_hit5: float
    """The real questions' hit@5 at the setting recommended from the generated questions."""
    best: str
    best_hit5: float
    """The best real hit@5 of any setting (hindsight)."""
    sure: bool
    """The recommendation's best point is ahead of every other beyond the noise."""
    within_noise: int
    why: str
    """How the recommendation was picked, in a few words."""
    floor: tuple[float, float, float] | None = None
    """The rho that as many real questions as were generated reach, drawn at random (10th percentile, median,
    90th; `sampled_rho`): what the number of questions alone allows. None: too few real questions."""

    @property
    def gap(self) -> float:
        return self.best_hit5 - self.recommended_hit5


DRAWS = 1000
"""Random draws of real questions for `sampled_rho`: at 200 its median moved by 0.04 between two seeds, at 1,000
by ~0.01."""


def sampled_rho(real: Sequence[PointResult], k: int, draws: int = DRAWS) -> tuple[float, float, float] | None:
    """Spearman's rho of the settings ranked by MRR over `k` of the real questions drawn at random (with
    replacement) against their ranking by all of them: (10th percentile, median, 90th) over `draws` draws. A
    ranking by generated questions cannot be expected to agree better than as many real ones do."""
    import random

    from rag.evaluation.metrics import mean_reciprocal_rank

    n = len(real[0].ranks) if real else 0
    if k < 2 or n < 2:
        return None
    full = [p.mrr for p in real]
    pick = random.Random(30)
    rhos = []
    for _ in range(draws):
        drawn = [pick.randrange(n) for _ in range(k)]
        rho = spearman([mean_reciprocal_rank([p.ranks[i] for i in drawn]) for p in real], full)
        rhos.append(0.0 if rho is None else rho)  # all settings alike on the draw: no ranking at all
    rhos.sort()
    return rhos[draws // 10], rhos[draws // 2], rhos[draws - 1 - draws // 10]


def compare(generated: SweepResult, real: SweepResult, recommendation: Recommendation) -> Comparison:
    """The grid points both sweeps scored, ranked by each; the recommendation (from `generated`) looked up in
    `real`."""
    real_by = {(p.settings, p.search): p for p in real.points}
    pairs = [(g, real_by[(g.settings, g.search)]) for g in generated.points if (g.settings, g.search) in real_by]
    if not pairs:
        raise ValueError("the two sweeps scored no setting in common")
    chosen = real_by.get((recommendation.recommended.settings, recommendation.recommended.search))
    if chosen is None:
        raise ValueError(f"the real questions' sweep did not score {recommendation.recommended.label}")
    best = max((r for _, r in pairs), key=lambda p: (round(p.hit_at(5), 12), round(p.mrr, 12)))
    return Comparison(
        settings=len(pairs),
        rho_mrr=spearman([g.mrr for g, _ in pairs], [r.mrr for _, r in pairs]),
        rho_hit5=spearman([g.hit_at(5) for g, _ in pairs], [r.hit_at(5) for _, r in pairs]),
        recommended=recommendation.recommended.label,
        recommended_hit5=chosen.hit_at(5),
        best=best.label,
        best_hit5=best.hit_at(5),
        sure=recommendation.sure,
        within_noise=len(recommendation.within_noise),
        why=_why(recommendation),
        floor=sampled_rho([r for _, r in pairs], len(generated.questions)),
    )


def _why(r: Recommendation) -> str:
    if r.sure:
        return "ahead beyond noise"
    if r.recommended is not r.best:
        return f"cheapest of {len(r.close) + 1} within {r.margin:g} of the best; {len(r.within_noise)} within noise"
    return f"the best; {len(r.within_noise)} within noise, none cheaper shown within {r.margin:g}"


# --- generated questions, cached ------------------------------------------------------------------------


@dataclass(frozen=True)
class Generation:
    questions: tuple[GeneratedQuestion, ...]
    asked: int
    """Passages the model was asked about."""
    dropped: Mapping[str, int]
    """Questions dropped, by reason (rag.tuning.checks)."""
    seconds: float
    """The time the model took to write them (when they were written)."""
    cached: bool = False
    elsewhere: tuple[GeneratedQuestion, ...] = ()
    """The questions dropped only because their words match another passage as well as their own
    (rag.tuning.checks.ELSEWHERE), with their answer spans: swept beside the kept ones to measure that filter."""

    @property
    def kept_share(self) -> float:
        return len(self.questions) / self.asked if self.asked else 0.0


def cache_path(folder: Path, name: str, text: str, model: str, count: int) -> Path:
    """Where the questions `model` writes about `text` (set `name`, `count` passages) are kept: the name
    says which set, how many, and a digest of the document and model."""
    from rag.tuning.questions import GENERATOR

    digest = hashlib.sha256(f"{model}\0{text}\0generator {GENERATOR}".encode()).hexdigest()[:12]
    return folder / f"{name}-{count}q-{digest}.jsonl"


def save_generation(path: Path, generation: Generation, model: str, count: int) -> None:
    from rag.tuning.files import dump_questions

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_questions(generation.questions), encoding="utf-8")
    _elsewhere_path(path).write_text(dump_questions(generation.elsewhere), encoding="utf-8")
    meta = {
        "model": model,
        "count": count,
        "asked": generation.asked,
        "dropped": dict(generation.dropped),
        "seconds": round(generation.seconds, 1),
    }
    _meta_path(path).write_text(json.dumps(meta, ensure_ascii=False) + "\n", encoding="utf-8")


def load_generation(path: Path, text: str, model: str, count: int) -> Generation | None:
    """The questions kept at `path` for this document, model and count; None when there are none (or the
    files are unreadable, or were made otherwise): write them again."""
    from rag.errors import RagError
    from rag.tuning.files import load_questions

    try:
        meta = json.loads(_meta_path(path).read_text(encoding="utf-8"))
        data = path.read_bytes()
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("model") != model or meta.get("count") != count:
        return None
    try:
        questions = load_questions(data, str(path), document=text)
        dropped = {str(k): int(v) for k, v in dict(meta["dropped"]).items()}
        elsewhere_path = _elsewhere_path(path)
        elsewhere = (
            load_questions(elsewhere_path.read_bytes(), str(elsewhere_path), document=text)
            if elsewhere_path.is_file() and elsewhere_path.stat().st_size
            else []
        )
        return Generation(tuple(questions), int(meta["asked"]), dropped, float(meta["seconds"]), True, tuple(elsewhere))
    except (OSError, RagError, KeyError, TypeError, ValueError):
        return None


def _meta_path(path: Path) -> Path:
    return path.with_suffix(".meta.json")


def _elsewhere_path(path: Path) -> Path:
    return path.with_suffix(".elsewhere.jsonl")


def elsewhere_questions(result: GeneratedQuestions, document: str) -> tuple[GeneratedQuestion, ...]:
    """The questions `result` dropped only as matching other passages as well as their own, as kept questions
    (their answer spans were placed before that check), each answer span once and none a kept one's."""
    from rag.scripts import language_of
    from rag.tuning import checks
    from rag.tuning.questions import GeneratedQuestion

    spans = {(q.start, q.end) for q in result.questions}
    out: list[GeneratedQuestion] = []
    for r in result.rejected:
        if r.reason != checks.ELSEWHERE or r.start is None or r.end is None or (r.start, r.end) in spans:
            continue
        spans.add((r.start, r.end))
        language = language_of(document[r.passage_start : r.passage_start + 400])
        out.append(GeneratedQuestion(r.question, document[r.start : r.end], r.start, r.end, r.passage_start, language))
    return tuple(out)


def generate(document: LongDocument, model: ChatModel, count: int, folder: Path) -> Generation:
    """`count` questions about the document from `model`, read from `folder` when written before."""
    from rag.tuning.questions import GeneratedQuestion, Rejected, generate_questions

    path = cache_path(folder, document.set, document.text, model.name, count)
    cached = load_generation(path, document.text, model.name, count)
    if cached is not None:
        return cached

    def progress(done: int, total: int) -> None:
        print(f"  {document.set}: passage {done}/{total}", file=sys.stderr, flush=True)

    def found(item: GeneratedQuestion | Rejected) -> None:
        if isinstance(item, GeneratedQuestion):
            print(f"    kept: {item.text} -> {item.answer}", file=sys.stderr, flush=True)
        else:
            print(f"    dropped ({item.reason}): {item.question}", file=sys.stderr, flush=True)

    result = generate_questions(document.text, model, count, progress=progress, found=found)
    generation = Generation(
        result.questions,
        result.passages,
        result.dropped,
        result.seconds,
        elsewhere=elsewhere_questions(result, document.text),
    )
    if not result.stopped:
        save_generation(path, generation, model.name, count)
        # What was dropped, for reading why (not read back).
        rejected = (json.dumps(asdict(r), ensure_ascii=False) + "\n" for r in result.rejected)
        path.with_suffix(".rejected.jsonl").write_text("".join(rejected), encoding="utf-8")
    return generation


# --- the report -----------------------------------------------------------------------------------------


OTHER_MARGINS = (0.0, 0.05)
"""Recommendation margins tried besides the app's (rag.tuning.recommend.MARGIN, the goal's own tolerance): 0
always takes the best point, 0.05 was the app's before."""


@dataclass(frozen=True)
class Variant:
    """The comparison with one thing done otherwise than the app does it."""

    name: str
    questions: int
    comparison: Comparison


@dataclass(frozen=True)
class Outcome:
    language: str
    set: str
    passages: int
    chars: int
    real: RealQuestions
    generation: Generation
    comparison: Comparison | None
    """None when no generated question was kept (nothing to sweep on)."""
    sweep_seconds: float
    variants: tuple[Variant, ...] = ()


def _rho(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.2f}"


def _met(ok: bool) -> str:
    return "met" if ok else "NOT met"


def rank_met(c: Comparison) -> bool:
    return c.rho_mrr is not None and c.rho_mrr >= RANK_GOAL


def gap_met(c: Comparison) -> bool:
    return round(c.gap, 9) <= HIT_GAP_GOAL


def outcome_lines(o: Outcome) -> list[str]:
    """The figures of one language: the document, (c) questions kept, (a) agreement, (b) hit@5, (d) time."""
    g, r = o.generation, o.real
    dropped = ", ".join(f"{reason} {n}" for reason, n in g.dropped.items() if n)
    written = (f"{g.seconds:.0f} s when written (cached, not rerun)" if g.cached else f"{g.seconds:.0f} s") + (
        f", {g.seconds / g.asked:.0f} s a question" if g.asked else ""
    )
    lines = [
        f"{o.language} ({o.set}): {o.passages} passages as one document of {o.chars:,} characters; "
        f"{len(r.questions)} real questions placed by their answer ({r.verbatim} verbatim, {r.normalised} after "
        f"normalising; {r.unplaced} with no answer in their passage left out)",
        f"{o.language} (c) generated: {len(g.questions)} kept of {g.asked} asked ({g.kept_share:.0%})"
        + (f"; dropped: {dropped}" if dropped else ""),
    ]
    c = o.comparison
    if c is None:
        lines.append(f"{o.language}: no generated question kept: nothing to sweep on")
    else:
        lines += [
            f"{o.language} (a) rank agreement over {c.settings} settings, Spearman rho: by MRR {_rho(c.rho_mrr)} "
            f"(goal >= {RANK_GOAL:g}: {_met(rank_met(c))}), by hit@5 {_rho(c.rho_hit5)}"
            + (
                f"; {len(g.questions)} real questions drawn at random reach {c.floor[1]:.2f} by MRR (median of "
                f"{DRAWS:,} draws; {c.floor[0]:.2f}-{c.floor[2]:.2f} from the 10th to the 90th percentile)"
                if c.floor
                else ""
            ),
            f"{o.language} (b) recommended {c.recommended} "
            f"({c.why}): real hit@5 "
            f"{c.recommended_hit5:.3f}; best in hindsight {c.best} {c.best_hit5:.3f}; gap {c.gap:.3f} "
            f"(goal <= {HIT_GAP_GOAL:g}: {_met(gap_met(c))})",
        ]
    lines += [variant_line(o.language, v) for v in o.variants]
    lines.append(f"{o.language} (d) wall time: questions {written}; sweeps (generated + real) {o.sweep_seconds:.0f} s")
    return lines


def variant_line(language: str, v: Variant) -> str:
    c = v.comparison
    bound = f" (as many real questions at random: {c.floor[1]:.2f})" if c.floor else ""
    return (
        f"{language} (e) {v.name}, {v.questions} questions: rho by MRR {_rho(c.rho_mrr)}{bound}; recommended "
        f"{c.recommended} ({c.why}): real hit@5 {c.recommended_hit5:.3f}, gap {c.gap:.3f}"
    )


def variants(
    generation: Generation,
    by_generated: SweepResult,
    by_real: SweepResult,
    sweep: Callable[[Sequence[GeneratedQuestion]], SweepResult],
) -> tuple[Variant, ...]:
    """The comparison under the other recommendation margins (`OTHER_MARGINS`), and with the questions the
    keyword filter dropped (`Generation.elsewhere`) added, under every margin; `sweep` scores a question set."""
    from rag.tuning.recommend import MARGIN, recommend

    n = len(by_generated.questions)
    out = [
        Variant(f"recommendation margin {m:g}", n, compare(by_generated, by_real, recommend(by_generated, margin=m)))
        for m in OTHER_MARGINS
    ]
    if generation.elsewhere:
        loose = sweep(generation.questions + generation.elsewhere)
        out += [
            Variant(
                f"with the {len(generation.elsewhere)} matching other passages too, margin {m:g}",
                len(loose.questions),
                compare(loose, by_real, recommend(loose, margin=m)),
            )
            for m in (MARGIN, *OTHER_MARGINS)
        ]
    return tuple(out)


def summary_line(outcomes: Sequence[Outcome]) -> str:
    """Whether both goals were met in every language."""
    scored = [o for o in outcomes if o.comparison is not None]
    if not scored:
        return "goals: nothing scored"
    parts = []
    for o in outcomes:
        c = o.comparison
        if c is None:
            parts.append(f"{o.language} not scored")
        else:
            parts.append(f"{o.language} rho {_met(rank_met(c))}, hit@5 gap {_met(gap_met(c))}")
    comparisons = [o.comparison for o in scored if o.comparison is not None]
    every = len(scored) == len(outcomes) and all(rank_met(c) and gap_met(c) for c in comparisons)
    return (
        f"goals (rho >= {RANK_GOAL:g}, gap <= {HIT_GAP_GOAL:g}, in both languages): "
        + "; ".join(parts)
        + (" -> met" if every else " -> NOT met")
    )


def questions_for_run(quick: bool, env: Mapping[str, str] | None = None) -> int | None:
    """`RAG_BENCH_TUNE_QUESTIONS` when set, else `QUICK_QUESTIONS` in --quick and None (each set's own number,
    `TuneSet.questions`) otherwise."""
    from rag.tuning.questions import MAX_COUNT

    raw = (os.environ if env is None else env).get(QUESTIONS_ENV, "").strip()
    if not raw:
        return QUICK_QUESTIONS if quick else None
    if not re.fullmatch(r"\d+", raw) or not 1 <= int(raw) <= MAX_COUNT:
        raise ValueError(f"{QUESTIONS_ENV} must be a whole number from 1 to {MAX_COUNT}, got {raw!r}")
    return int(raw)


# --- running --------------------------------------------------------------------------------------------


def bench_tune(
    report: Report,
    settings: Settings,
    quick: bool = False,
    *,
    model: ChatModel | None = None,
    questions: int | None = None,
    passages: int | None = None,
) -> list[Outcome]:
    """The measurement, in both languages, on the embedded chat model (or `model`); `questions` and `passages`
    for every set instead of each one's (`SETS`)."""
    from benchmarks.conversation import _embedder, embedded_model
    from rag.evaluation.cache import EmbeddingCache
    from rag.evaluation.vectors import CachedEmbedder, DiskVectors
    from rag.tuning.questions import to_questions
    from rag.tuning.recommend import recommend
    from rag.tuning.sweep import default_grid, run_sweep

    count = questions if questions is not None else questions_for_run(quick)
    asked = " and ".join(f"{count or s.questions} {s.language}" for s in SETS)
    sizes = " and ".join(f"{passages or s.passages} {s.language}" for s in SETS)
    started = time.perf_counter()
    embedder, why = _embedder(settings, quick)
    grid = default_grid(embedder)
    report.section(
        f"Tuning measured: {asked} generated questions against the sets' real ones, "
        f"{sizes} passages a set as one document, {grid.size} settings swept"
    )
    loaded = 0.0
    if model is None:
        model = embedded_model(settings, report)
        if model is None:
            return []
        loaded = time.perf_counter() - started
    vectors = DiskVectors(settings.data_dir / "eval-vectors", embedder)
    cached_embedder = cast("Embedder", CachedEmbedder(vectors))  # the Embedder protocol, but for `cancel`
    folder = settings.data_dir / FOLDER
    report.line(
        f"model {model.name}, embedder {embedder.name} ({why}); questions cached in {folder}, vectors in {vectors.path}"
    )
    outcomes: list[Outcome] = []
    for tune_set in SETS:
        language, name = tune_set.language, tune_set.name
        document, real = build(name, passages or tune_set.passages)
        generation = generate(document, model, count or tune_set.questions, folder)
        comparison = None
        tried: tuple[Variant, ...] = ()
        sweep_started = time.perf_counter()
        if generation.questions and real.questions:
            cache = EmbeddingCache()
            by_generated = run_sweep(document.text, to_questions(generation.questions), cached_embedder, cache, grid)
            by_real = run_sweep(document.text, real.questions, cached_embedder, cache, grid)
            comparison = compare(by_generated, by_real, recommend(by_generated))
            tried = variants(
                generation,
                by_generated,
                by_real,
                lambda qs, text=document.text, cache=cache: run_sweep(
                    text, to_questions(qs), cached_embedder, cache, grid
                ),
            )
        outcome = Outcome(
            language,
            name,
            len(document.spans),
            len(document.text),
            real,
            generation,
            comparison,
            time.perf_counter() - sweep_started,
            tried,
        )
        for line in outcome_lines(outcome):
            report.line(line)
        outcomes.append(outcome)
    report.line(summary_line(outcomes))
    per_question = [o.generation.seconds / o.generation.asked for o in outcomes if o.generation.asked]
    if per_question:
        mean = sum(per_question) / len(per_question)
        full = sum(s.questions for s in SETS)
        report.line(
            f"a full run asks {full} questions: at {mean:.0f} s a question, about "
            f"{full * mean / 60:.0f} min of writing, cached for later runs"
        )
    report.line(
        f"({time.perf_counter() - started:.0f} s in all, {loaded:.0f} s of it loading the model; "
        f"{vectors.embedded} texts embedded this run)"
    )
    return outcomes
