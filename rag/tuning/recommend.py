"""Which setting a sweep recommends, and how sure it is: a paired bootstrap over the questions.

The best point is the one with the highest MRR. MRR rather than hit@5: each question adds 1/rank, so a
passage moved from rank 2 to 1 counts, where hit@5 sees a question only cross the line at 5 and calls most
settings of a sweep equal (a handful of questions gives hit@5 a few distinct values); and it is what the
Chunk Lab's verdict (rag.evaluation.ranking.verdict) names its best by, so the two agree.

The questions are resampled with replacement (the same resamples for every point: paired, as every point
ranks the same questions), giving a 95 % interval for the best point's score and for its lead over every
other. A point whose lead interval includes 0 is within noise of the best. A cheaper one is recommended
instead of the best only when its lead interval also ends below `MARGIN` (it is shown to lose at most that):
among the best and those, the one with the fewest prompt tokens. "Within noise" alone is not enough: with a
handful of questions every setting is within noise of the best, and taking the cheapest then meant always
the smallest chunks, whatever was measured (the tune bench, 8 and 6 generated questions: 128-token chunks
recommended in both languages, real hit@5 0.029 and 0.040 below the best, 320-token chunks).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from rag.errors import RagError
from rag.text import Text
from rag.tuning.sweep import PointResult, SweepResult

RESAMPLES = 1000
SEED = 30
"""Fixed, so that the same sweep gives the same interval every time it is shown (issue #30)."""
CONFIDENCE = 0.95
MARGIN = 0.02
"""The loss of the metric (MRR: one question in fifty moving from rank 1 to beyond it) that a cheaper setting
may be shown to stay under, to be recommended in the best one's place: the tolerance the tune bench's goal
allows the recommendation (0.02 of hit@5 from the best). At 0.05, on 80 en_race passages (39 generated
questions), the cheaper recursive 256/64 was recommended and lost 0.025 of the real questions' hit@5; at 0.02
spring 320 was, 0.012 below the best; in every other run of the bench (both languages) the two margins
recommended the same setting."""


@dataclass(frozen=True)
class Interval:
    low: float
    high: float

    def includes(self, value: float) -> bool:
        return self.low <= value <= self.high


@dataclass(frozen=True)
class Recommendation:
    metric: str
    questions: int
    best: PointResult
    """The highest `metric` (ties: fewer prompt tokens, then fewer chunks)."""
    score: float
    interval: Interval
    """The bootstrap interval of the best point's score over the questions."""
    runner_up: PointResult | None
    lead: float
    """The best point's score minus the runner-up's (0 when there is none)."""
    lead_interval: Interval | None
    within_noise: tuple[PointResult, ...]
    """The other points whose paired interval of the best point's lead includes 0, best first."""
    close: tuple[PointResult, ...]
    """Those of `within_noise` whose lead interval also ends at or below `margin`: shown to lose at most that."""
    margin: float
    recommended: PointResult
    """The one with the fewest prompt tokens among the best point and `close`."""
    reason: str
    """One line for the user (a `Text`)."""

    @property
    def sure(self) -> bool:
        """The best point is ahead of every other by more than the noise."""
        return not self.within_noise


def recommend(
    result: SweepResult,
    metric: str = "mrr",
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
    margin: float = MARGIN,
) -> Recommendation:
    """The best point of `result` by `metric`, with a paired bootstrap interval (`resamples` resamples of
    the questions, seeded) for its score and its lead over the others, and the cheapest point within noise
    of it."""
    points = result.points
    if not points:
        raise RagError(Text("the sweep scored no setting yet: run it (again) to score them"))
    if resamples < 1:
        raise RagError(Text("resamples must be at least 1, got {n}", n=resamples))
    if not 0 < confidence < 1:
        raise RagError(Text("confidence must be between 0 and 1, got {value}", value=confidence))
    scores = np.vstack([p.per_question(metric) for p in points])  # points x questions
    n = scores.shape[1]
    means = scores.mean(axis=1)
    order = sorted(range(len(points)), key=lambda i: (-round(means[i], 12), points[i].prompt_tokens, points[i].chunks))
    best_i = order[0]
    # Every resample draws n questions with replacement; as counts, one matrix product gives every point's
    # mean in every resample (points x resamples), the same draws for all: paired.
    draws = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    counts = np.zeros((resamples, n))
    np.add.at(counts, (np.repeat(np.arange(resamples), n), draws.ravel()), 1.0)
    boot = scores @ counts.T / n
    tail = (1 - confidence) / 2 * 100

    def interval(values: np.ndarray) -> Interval:
        low, high = np.percentile(values, [tail, 100 - tail])
        return Interval(float(low), float(high))

    best = points[best_i]
    noisy: list[PointResult] = []
    close: list[PointResult] = []
    lead_interval: Interval | None = None
    runner_up: PointResult | None = None
    for i in order[1:]:
        gap = interval(boot[best_i] - boot[i])
        if runner_up is None:
            runner_up, lead_interval = points[i], gap
        if gap.low <= 0 or n < 2:  # one question has no spread to resample: it cannot tell settings apart
            noisy.append(points[i])
            if n >= 2 and gap.high <= margin + 1e-12:
                close.append(points[i])
    lead = float(means[best_i] - means[order[1]]) if runner_up is not None else 0.0
    recommended = min([best, *close], key=lambda p: (p.prompt_tokens, p.chunks))
    recommendation = Recommendation(
        metric=metric,
        questions=n,
        best=best,
        score=float(means[best_i]),
        interval=interval(boot[best_i]),
        runner_up=runner_up,
        lead=lead,
        lead_interval=lead_interval,
        within_noise=tuple(noisy),
        close=tuple(close),
        margin=margin,
        recommended=recommended,
        reason="",
    )
    return _with_reason(recommendation)


def _with_reason(r: Recommendation) -> Recommendation:
    values = {
        "best": r.best.label,
        "metric": _metric_name(r.metric),
        "score": f"{r.score:.3f}",
        "spread": _spread(r.interval, r.questions),
    }
    if r.runner_up is None or r.lead_interval is None:
        reason = Text("{best} is the only setting scored: {metric} {score} ({spread}).", **values)
        return replace(r, reason=reason)
    values |= {
        "runner": r.runner_up.label,
        "lead": f"{r.lead:.3f}",
        "lead_low": f"{r.lead_interval.low:.3f}",
        "lead_high": f"{r.lead_interval.high:.3f}",
    }
    if r.sure:
        reason = Text(
            "{best} is best: {metric} {score} ({spread}), ahead of {runner} by {lead} "
            "(95% interval {lead_low} to {lead_high}).",
            **values,
        )
    elif r.recommended is not r.best:
        reason = Text(
            "{best} scores highest ({metric} {score}, {spread}), but {others} within noise of it, and {cheap} "
            "is shown to lose at most {margin}: take it, the cheapest such ({tokens} prompt tokens against "
            "{best_tokens}).",
            others=_others(len(r.within_noise)),
            cheap=r.recommended.label,
            margin=f"{r.margin:.2f}",
            tokens=round(r.recommended.prompt_tokens),
            best_tokens=round(r.best.prompt_tokens),
            **values,
        )
    elif all(p.prompt_tokens >= r.best.prompt_tokens for p in r.within_noise):
        reason = Text(
            "{best} scores highest ({metric} {score}, {spread}), but {others} within noise of it (its lead over "
            "{runner}: {lead}, 95% interval {lead_low} to {lead_high}); it is also the cheapest of them.",
            others=_others(len(r.within_noise)),
            **values,
        )
    else:
        reason = Text(
            "{best} scores highest ({metric} {score}, {spread}); {others} within noise of it, but {n} questions "
            "cannot show that a cheaper one loses less than {margin}: keep it, or add questions to narrow the "
            "intervals.",
            others=_others(len(r.within_noise)),
            n=r.questions,
            margin=f"{r.margin:.2f}",
            **values,
        )
    return replace(r, reason=reason)


def _spread(interval: Interval, questions: int) -> str:
    """The score's interval, or why there is none: every resample of questions that all score the same gives
    the same mean, and "1.000–1.000" read as a certainty that a handful of questions cannot give."""
    if interval.low == interval.high:
        return Text("{n} questions, all scored alike: no spread to draw an interval from", n=questions)
    return Text(
        "95% interval {low}–{high} over {n} questions",
        low=f"{interval.low:.3f}",
        high=f"{interval.high:.3f}",
        n=questions,
    )


def _others(count: int) -> str:
    return Text("1 other setting is") if count == 1 else Text("{count} other settings are", count=count)


def _metric_name(metric: str) -> str:
    return "MRR" if metric == "mrr" else metric
