"""Grounded answers of the embedded models: right answer, right citation, and the wait, on the same
numbered sources for every model, packed as the chat packs them (each model's passage limits).

Chinese: questions of `zh_cmrc_trial` (extractive, with gold answers), each with its passage and two
other passages of the set as sources in random order; an answer is right when it contains one of
the gold answers (after `normalise`). English: questions of `en_race` that end with their right
option ("...? a doctor") and make sense without the options: the option is cut off and is the gold
answer (RACE's options paraphrase the passage, so the character F1 says more than "holds the gold"
there). "Cites the gold" counts
the markers the model wrote itself (nothing matched afterwards); "wrong markers" counts answers
citing a source that does not hold the answer; "green" counts answers the chat would badge as
grounded, and "green but wrong" those of them that do not hold the gold answer. Greedy decoding;
time to first token and tokens/s as llama.cpp reports them, on this machine's cores.

The support threshold (rag.generate.support.SUPPORTED) is measured here too: each sentence citing the
gold passage, in answers that are right (or close: char F1 >= 0.4), scores against that passage (it
should pass) and against the prompt's other passages (they should not support it).
"""

from __future__ import annotations

import random
import re
import statistics
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.report import Report
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
    green: bool
    """The chat would show the green "grounded" badge."""
    pairs: tuple[tuple[float, bool], ...]
    """(support, whether the passage is the gold one) of each sentence citing the gold in an answer that
    cites it and is right (or has a char F1 of at least 0.4: RACE's options paraphrase the passage)."""
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


_END_PUNCTUATION = " .。!！?？,，;；"
# Questions that only make sense with their options in view ("Which of the following is NOT true?",
# "What is the main idea of the passage?"): left out of the English set.
_NEEDS_OPTIONS = re.compile(
    r"\b(following|passage|story|article|text|title|main|mainly|NOT|EXCEPT|best|probably|"
    r"infer|learn|purpose|conclude|opinion|true|agree|suggest|implied)\b",
    re.IGNORECASE,
)


def english_cases(n: int, seed: int = 5) -> list[Case]:
    """Questions of en_race that end with their right option, which is cut off and becomes the gold answer."""
    from rag.evaluation.sets import eval_set

    data = eval_set("en_race")
    texts = {p.key: p.text for p in data.passages}
    rng = random.Random(seed)
    usable = [
        i
        for i, (q, answers) in enumerate(zip(data.questions, data.answers))
        if answers
        and q.text.endswith(answers[0])
        and q.text[: -len(answers[0])].rstrip().endswith("?")
        and not _NEEDS_OPTIONS.search(q.text[: -len(answers[0])])
    ]
    picked = [usable[round(k * len(usable) / n)] for k in range(n)] if n < len(usable) else usable
    cases = []
    for i in picked:
        question, answers = data.questions[i], data.answers[i]
        keys = [question.file, *rng.sample([k for k in texts if k != question.file], 2)]
        rng.shuffle(keys)
        cases.append(
            Case(question.text[: -len(answers[0])].rstrip(), tuple((k, texts[k]) for k in keys), question.file, answers)
        )
    return cases


def answer_case(model: object, case: Case) -> Outcome:
    """One question through the model's chat path (the packed prompt the chat builds, the loop
    guard, the grounding check), greedy."""
    import time

    from rag import generate
    from rag.evaluation.normalise import normalise
    from rag.generate.citations import Status, check_grounding, source_terms
    from rag.generate.support import content_terms, support
    from rag.llms.counting import token_counter
    from rag.llms.loops import guard_loops
    from rag.llms.stream import fold

    sources = generate.number_sources(
        [
            Hit(
                id=uuid.uuid4(),
                content=text,
                score=1.0,
                metadata={"original_filename": f"{key}.txt", "pages": [1], "knowledge": "bench"},
            )
            for key, text in case.passages
        ]
    )
    gold = next(s.n for s in sources if s.hit.original_filename == f"{case.gold}.txt")
    packed = generate.pack_prompt(
        case.question,
        sources,
        counter=token_counter(model),
        limit=model.context_length(),
        limits=generate.pack_limits(model),
    )  # type: ignore[attr-defined]
    started = time.perf_counter()
    result = fold(list(guard_loops(model.stream(list(packed.messages), temperature=0.0))))  # type: ignore[attr-defined]
    seconds = time.perf_counter() - started
    check = generate.check_citations(result.text, packed.sources)
    cited = set(check.cited) | set(check.unknown)
    right = f1 = None
    if case.answers:
        said = normalise(result.text)
        # RACE's options end with a full stop ("Knives."), which an answer's sentence need not share there.
        golds = [normalise(a).strip(_END_PUNCTUATION) for a in case.answers if a.strip()]
        right = any(g in said for g in golds)
        f1 = max((char_f1(said, g) for g in golds), default=0.0)
    grounding = check_grounding(result.text, packed.sources)
    pairs: list[tuple[float, bool]] = []
    if gold in cited and (right or (f1 or 0.0) >= 0.4):
        terms = source_terms(sources)
        for sentence in grounding.sentences:
            if gold in sentence.numbers and sentence.status != Status.SHORT:
                said = content_terms(result.text[sentence.start : sentence.end])
                pairs += [(support(said, terms[n]) or 0.0, n == gold) for n in terms]
    stats = result.stats
    ttft = None
    if stats is not None and stats.prompt_eval_duration is not None:
        ttft = stats.load_duration + stats.prompt_eval_duration
    rate = None
    if stats is not None and stats.eval_duration and stats.eval_count:
        rate = stats.eval_count / stats.eval_duration
    return Outcome(
        right, f1, gold in cited, bool(cited - {gold}), grounding.grounded, tuple(pairs), ttft, rate, seconds
    )


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
    parts.append(f"green {sum(o.green for o in outcomes)}/{n}")
    if judged:
        parts.append(f"green but wrong {sum(o.green and o.right is False for o in outcomes)}")
    ttfts = [o.ttft for o in outcomes if o.ttft is not None]
    rates = [o.tokens_per_second for o in outcomes if o.tokens_per_second is not None]
    if ttfts:
        parts.append(f"first token p50 {statistics.median(ttfts):.1f} s")
    if rates:
        parts.append(f"{statistics.median(rates):.1f} tokens/s")
    parts.append(f"{statistics.median(o.seconds for o in outcomes):.1f} s an answer")
    return ", ".join(parts)


def support_separation(outcomes: Sequence[Outcome], thresholds: Sequence[float] = (0.3, 0.4, 0.5, 0.6, 0.7)) -> str:
    """How each threshold splits the cited sentences' support for their gold passage from the others'."""
    pairs = [p for o in outcomes for p in o.pairs]
    gold = [share for share, is_gold in pairs if is_gold]
    other = [share for share, is_gold in pairs if not is_gold]
    if not gold or not other:
        return "support threshold: no cited sentence of a right answer to measure it on"
    cells = [
        f"{t:.1f}: gold passes {sum(g >= t for g in gold) / len(gold):.0%}, others refused "
        f"{sum(o < t for o in other) / len(other):.0%}"
        for t in thresholds
    ]
    return f"support threshold ({len(gold)} sentences): " + "; ".join(cells)


def bench_answers(report: Report, quick: bool) -> None:
    from rag.llms import LocalChatModel, QwenChatModel

    zh, en = (4, 4) if quick else (12, 12)
    report.section(
        f"Embedded models' grounded answers ({zh} Chinese questions of zh_cmrc_trial, {en} English "
        "of en_race; gold passage + 2 others as sources, packed as the chat packs them, greedy)"
    )
    cases = {"zh": chinese_cases(zh), "en": english_cases(en)}
    everything: list[Outcome] = []
    for cls in (QwenChatModel, LocalChatModel):
        ok, reason = cls.available()
        if not ok:
            report.line(f"{cls.NAME}: skipped ({reason})")
            continue
        model = cls()
        answer_case(model, cases["en"][0])  # loads (and assembles) the weights outside the figures
        figures = {lang: [answer_case(model, c) for c in items] for lang, items in cases.items()}
        # A follow-up on the same sources comes after another prompt (the rewrite's): the prompt
        # cache brings the earlier state back instead of evaluating the prompt again.
        again = answer_case(model, cases["zh"][0])
        report.line(f"{cls.NAME}: " + "; ".join(_summary(lang, outs) for lang, outs in figures.items()))
        first = figures["zh"][0].ttft
        if again.ttft is not None and first is not None:
            report.line(
                f"{cls.NAME}: the first Chinese question again after the others (llama.cpp's prompt cache): "
                f"first token {again.ttft:.1f} s (the first time {first:.1f} s)"
            )
        everything += [o for outs in figures.values() for o in outs]
    report.line(support_separation(everything))
