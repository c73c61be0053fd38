"""Grounded answers of the embedded models: right answer, right citation, and the wait, on the same
numbered sources for every model.

Chinese: questions of `zh_cmrc_trial` (extractive, with gold answers), each with its passage and two
other passages of the set as sources in random order; an answer is right when it contains one of
the gold answers (after `normalise`). English: the 24 paraphrased questions of
rag/evaluation/data/retrieval-set.json (no gold answer text: citation only), passage + two
distractors. "Cites the gold" counts the markers the model wrote itself (nothing matched afterwards);
"wrong markers" counts answers citing a source that does not hold the answer. Greedy decoding;
time to first token and tokens/s as llama.cpp reports them, on this machine's cores.
"""
from __future__ import annotations

import random
import statistics
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from rag.bench.report import Report
from rag.store import Hit


@dataclass(frozen=True)
class Case:
    question: str
    passages: tuple[tuple[str, str], ...]
    """(key, text) in the order they are numbered."""
    gold: str
    answers: tuple[str, ...]
    """Gold answer texts; empty when the set has none."""


@dataclass(frozen=True)
class Outcome:
    right: bool | None
    f1: float | None
    """Character F1 against the best gold answer (CMRC's measure), for sets with answers."""
    cites_gold: bool
    cites_wrong: bool
    ttft: float | None
    tokens_per_second: float | None
    seconds: float


def chinese_cases(n: int, seed: int = 5) -> list[Case]:
    from rag.evaluation.sets import eval_set

    data = eval_set("zh_cmrc_trial")
    texts = {p.key: p.text for p in data.passages}
    rng = random.Random(seed)
    cases = []
    for i in data.sample_indices(n):
        question, answers = data.questions[i], data.answers[i]
        keys = [question.file, *rng.sample([k for k in texts if k != question.file], 2)]
        rng.shuffle(keys)
        cases.append(Case(question.text, tuple((k, texts[k]) for k in keys), question.file, answers))
    return cases


def english_cases(n: int, seed: int = 5) -> list[Case]:
    from rag.evaluation.datasets import retrieval_set

    data = retrieval_set()
    by_key = {p.key: p.text for p in data.passages + data.distractors}
    rng = random.Random(seed)
    questions = [q for q in data.questions if q.question.isascii()][:n]
    cases = []
    for q in questions:
        keys = [q.passage, *rng.sample([k for k in by_key if k != q.passage], 2)]
        rng.shuffle(keys)
        cases.append(Case(q.question, tuple((k, by_key[k]) for k in keys), q.passage, ()))
    return cases


def answer_case(model: object, case: Case) -> Outcome:
    """One question through the model's chat path (the prompt the chat builds), greedy."""
    import time

    from rag import generate
    from rag.evaluation.normalise import normalise
    from rag.llms.stream import fold

    sources = generate.number_sources([
        Hit(id=uuid.uuid4(), content=text, score=1.0,
            metadata={"original_filename": f"{key}.txt", "pages": [1], "knowledge": "bench"})
        for key, text in case.passages])
    gold = next(s.n for s in sources if s.hit.original_filename == f"{case.gold}.txt")
    messages = generate.build_messages(case.question, sources)
    started = time.perf_counter()
    result = fold(list(model.stream(messages, temperature=0.0)))  # type: ignore[attr-defined]
    seconds = time.perf_counter() - started
    check = generate.check_citations(result.text, sources)
    cited = set(check.cited) | set(check.unknown)
    right = f1 = None
    if case.answers:
        said = normalise(result.text)
        golds = [normalise(a) for a in case.answers if a.strip()]
        right = any(g in said for g in golds)
        f1 = max((char_f1(said, g) for g in golds), default=0.0)
    stats = result.stats
    ttft = None
    if stats is not None and stats.prompt_eval_duration is not None:
        ttft = stats.load_duration + stats.prompt_eval_duration
    rate = None
    if stats is not None and stats.eval_duration and stats.eval_count:
        rate = stats.eval_count / stats.eval_duration
    return Outcome(right, f1, gold in cited, bool(cited - {gold}), ttft, rate, seconds)


def char_f1(answer: str, gold: str) -> float:
    """F1 of the characters two texts share (as counted with repeats), spaces ignored."""
    from collections import Counter

    a, g = Counter(answer.replace(" ", "")), Counter(gold.replace(" ", ""))
    same = sum((a & g).values())
    if not same:
        return 0.0
    precision, recall = same / sum(a.values()), same / sum(g.values())
    return 2 * precision * recall / (precision + recall)


def _summary(label: str, outcomes: Sequence[Outcome]) -> str:
    n = len(outcomes)
    parts = [f"{label} ({n})"]
    judged = [o.right for o in outcomes if o.right is not None]
    if judged:
        f1s = [o.f1 for o in outcomes if o.f1 is not None]
        parts.append(f"holds the gold answer {sum(judged)}/{len(judged)}, char F1 {statistics.mean(f1s):.2f}")
    parts.append(f"cites the gold {sum(o.cites_gold for o in outcomes)}/{n}")
    parts.append(f"wrong markers {sum(o.cites_wrong for o in outcomes)}/{n}")
    ttfts = [o.ttft for o in outcomes if o.ttft is not None]
    rates = [o.tokens_per_second for o in outcomes if o.tokens_per_second is not None]
    if ttfts:
        parts.append(f"first token p50 {statistics.median(ttfts):.1f} s")
    if rates:
        parts.append(f"{statistics.median(rates):.1f} tokens/s")
    parts.append(f"{statistics.median(o.seconds for o in outcomes):.1f} s an answer")
    return ", ".join(parts)


def bench_answers(report: Report, quick: bool) -> None:
    from rag.llms import LocalChatModel, QwenChatModel

    zh, en = (4, 4) if quick else (12, 12)
    report.section(f"Embedded models' grounded answers ({zh} Chinese questions of zh_cmrc_trial, {en} English "
                   "of the retrieval set; gold passage + 2 others as sources, greedy)")
    cases = {"zh": chinese_cases(zh), "en": english_cases(en)}
    for cls in (QwenChatModel, LocalChatModel):
        ok, reason = cls.available()
        if not ok:
            report.line(f"{cls.NAME}: skipped ({reason})")
            continue
        model = cls()
        answer_case(model, cases["en"][0])  # loads (and assembles) the weights outside the figures
        figures = {lang: [answer_case(model, c) for c in items] for lang, items in cases.items()}
        report.line(f"{cls.NAME}: " + "; ".join(_summary(lang, outs) for lang, outs in figures.items()))
