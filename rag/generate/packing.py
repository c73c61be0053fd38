"""Packing the prompt into the model's window, by construction: no default setting refuses to answer.

What goes in, in this order of claim on the window: the instructions and the question (always), the
room kept for the answer, the newest exchange of the conversation (when it takes at most a quarter
of what is left: a follow-up needs it), then the ranked sources (whole while they fit, then the
best-matching part of the next one), then older exchanges, newest first. What is left out is said
(`Packed.notes`). The embedded models get each source as its best-matching sentences within a few
hundred tokens (`PackLimits`), because their prompt evaluation (~40 tokens/s on 2 cores) is most
of the wait for the first word.

Tokens are counted with the model's own tokenizer where we run it (rag.llms.counting), and the
packed prompt is counted whole once more before it is used.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag.errors import RagError
from rag.generate.budget import ANSWER_RESERVE, Budget, context_budget
from rag.generate.prompt import Source, build_messages, format_sources
from rag.generate.sentences import sentence_spans
from rag.generate.support import content_terms
from rag.llms.counting import MESSAGE_FRAMING, TokenCounter
from rag.llms.types import Message
from rag.text import Text

MIN_PART = 48
"""Below this many tokens a part of a source says too little to be worth its label."""
ELLIPSIS = "…"


@dataclass(frozen=True)
class PackLimits:
    passage_tokens: int | None = None
    """Each source is given as its best-matching part of at most this many tokens; None: whole."""
    source_tokens: int | None = None
    """All sources together take at most this many tokens; None: what the window leaves."""


def pack_limits(model: object) -> PackLimits:
    """The model's limits (the embedded models set PASSAGE_TOKENS and SOURCE_TOKENS); none for Ollama."""
    return PackLimits(getattr(model, "PASSAGE_TOKENS", None), getattr(model, "SOURCE_TOKENS", None))


@dataclass(frozen=True)
class Packed:
    messages: tuple[Message, ...]
    sources: tuple[Source, ...]
    """The sources the prompt holds, numbered as found (the first ones), some given in part."""
    left_out: tuple[Source, ...]
    """Sources found but not given to the model."""
    budget: Budget
    dropped: int
    """Exchanges of the conversation left out (the oldest)."""
    source_limit: int | None = None
    """The model's cap on source tokens (`PackLimits.source_tokens`), when it has one."""

    @property
    def in_part(self) -> tuple[int, ...]:
        return tuple(s.n for s in self.sources if s.text is not None)

    def notes(self) -> list[str]:
        """What a reader should know about what the model was not given, one line each (a `rag.text.Text`)."""
        notes: list[str] = []
        found = len(self.sources) + len(self.left_out)
        if self.left_out:
            numbers = [s.n for s in self.left_out]
            room = (
                Text(
                    "this model reads at most {tokens} tokens of sources, to answer sooner",
                    tokens=f"{self.source_limit:,}",
                )
                if self.source_limit
                else Text("window {tokens} tokens", tokens=f"{self.budget.limit:,}")
            )
            given = f"{self.budget.sources:,}"
            if len(numbers) == 1:
                notes.append(
                    Text(
                        "Passage {which} of the {found} found was left out so that the prompt fits "
                        "({room}; {given} tokens of sources given).",
                        which=numbers[0],
                        found=found,
                        room=room,
                        given=given,
                    )
                )
            else:
                notes.append(
                    Text(
                        "Passages {which} of the {found} found were left out so that the prompt fits "
                        "({room}; {given} tokens of sources given).",
                        which=f"{numbers[0]}–{numbers[-1]}",
                        found=found,
                        room=room,
                        given=given,
                    )
                )
        if self.in_part:
            parts = ", ".join(f"[{n}]" for n in self.in_part)
            notes.append(
                Text("Given to the model in part (the sentences that best match the question): {parts}.", parts=parts)
            )
        if self.dropped > 1:
            notes.append(
                Text(
                    "Left out the {n} oldest exchanges of the conversation so that the prompt fits the model's window.",
                    n=self.dropped,
                )
            )
        elif self.dropped:
            notes.append(
                Text(
                    "Left out the {n} oldest exchange of the conversation so that the prompt fits the model's window.",
                    n=self.dropped,
                )
            )
        return notes


QUESTION_WEIGHT = 10.0
"""How much more a term of the question as asked counts than one only the search query adds: after a
refused rewrite the query is the question before it and this one, and its words picked the sentence
that answered the question before ("如今它被誉为什么？" searched with "它最深处有多深？ 如今它被誉为什么？"
was given the depth sentence). Measured on the public sets' questions whose passage is longer than the
embedded models' 200-token part, each searched after the set's question before it on the same passage:
the part held the answer for 468/744 of zh_cmrc_trial by the query's shared terms (58/66 of en_race), for
582/744 (62/66) with the question's terms ten times the query's and rarity weighted (twice: 540; a
hundred times: 588, the query then only breaking ties)."""


def sentence_scores(sentences: Sequence[str], query: str, question: str | None = None) -> list[float]:
    """How well each sentence matches: the terms it shares with `query` and `question`, each weighted by its
    rarity among the sentences (a name that every sentence holds says nothing of which one answers: asked
    alone, zh_cmrc_trial's part held the answer for 804/1000 by counting shared terms, 830 weighted) and
    by QUESTION_WEIGHT when the question as asked holds it."""
    wanted = content_terms(query)
    asked = content_terms(question) if question is not None else wanted
    wanted |= asked
    terms = [content_terms(s) & wanted for s in sentences]
    frequency: dict[str, int] = {}
    for found in terms:
        for term in found:
            frequency[term] = frequency.get(term, 0) + 1
    n = len(sentences)
    weight = {t: math.log(1 + n / f) * (QUESTION_WEIGHT if t in asked else 1.0) for t, f in frequency.items()}
    return [sum(weight[t] for t in found) for found in terms]


def best_part(
    text: str, query: str, max_tokens: int, count: Callable[[str], int], *, question: str | None = None
) -> str:
    """The sentences of `text` around the one that best matches `query` (and `question`, the question as asked,
    when the query is more than it: see `sentence_scores`), within `max_tokens` (the whole text when it fits;
    an ellipsis marks each cut)."""
    text = text.strip()
    if count(text) <= max_tokens:
        return text
    spans = sentence_spans(text)
    if not spans:
        return ""
    scores = sentence_scores([text[a:b] for a, b in spans], query, question)
    best = max(range(len(spans)), key=lambda i: (scores[i], -i))
    costs = [count(text[a:b]) for a, b in spans]
    lo = hi = best
    used = costs[best]
    if used > max_tokens:
        return _head(text[spans[best][0] : spans[best][1]].strip(), max_tokens - 2, count) + ELLIPSIS
    while True:
        # Grow towards the neighbour that matches more (the following one on a tie: an answer
        # tends to come after the words that name its subject).
        after = hi + 1 if hi + 1 < len(spans) and used + costs[hi + 1] <= max_tokens else None
        before = lo - 1 if lo > 0 and used + costs[lo - 1] <= max_tokens else None
        if after is None and before is None:
            break
        if after is not None and (before is None or scores[after] >= scores[before]):
            hi, used = after, used + costs[after]
        else:
            assert before is not None, "after was not taken, so before is the neighbour to take"
            lo, used = before, used + costs[before]
    while True:
        part = text[spans[lo][0] : spans[hi][1]].strip()
        part = f"{ELLIPSIS if lo > 0 else ''}{part}{ELLIPSIS if hi < len(spans) - 1 else ''}"
        if count(part) <= max_tokens:
            return part
        if lo == hi:
            return _head(part, max_tokens, count)
        # The ellipses (and joins) cost a token or two more than the sentences did alone.
        if hi > best and (lo == best or scores[hi] <= scores[lo]):
            hi -= 1
        else:
            lo += 1


def _head(text: str, max_tokens: int, count: Callable[[str], int]) -> str:
    """The longest start of `text` within `max_tokens` (binary search on characters)."""
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(text[:mid]) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]


def exchanges_of(history: Sequence[Message]) -> list[list[Message]]:
    """The history as exchanges (a question and what answered it), oldest first."""
    out: list[list[Message]] = []
    for m in history:
        if m.role == "user" or not out:
            out.append([m])
        else:
            out[-1].append(m)
    return out


def pack_prompt(
    question: str,
    sources: Sequence[Source],
    *,
    counter: TokenCounter,
    limit: int,
    template: str | None = None,
    history: Sequence[Message] = (),
    query: str | None = None,
    reserve: int = ANSWER_RESERVE,
    limits: PackLimits = PackLimits(),
    summary: Sequence[Message] = (),
) -> Packed:
    """The prompt for `question` that fits `limit` tokens with `reserve` left for the answer.

    `query` is what the sources were searched with (the rewritten follow-up), which picks the
    best part of a source; RagError when the question and the instructions alone do not fit.
    `summary` (rag.generate.memory.summary_exchange) stands for the exchanges before `history`: it
    is always kept, first, and counted apart."""
    query = query or question
    room = limit - reserve
    # Counted with the first source in place: the embedded models' prompts add text only when there
    # are numbered sources (Gemma's worked example, Qwen's citation reminder).
    probe = list(sources[:1])
    fixed = counter.prompt(build_messages(question, probe, system_template=template)) - counter.text(
        format_sources(probe)
    )
    if fixed > room:
        raise RagError(
            Text(
                "The question and the instructions take {tokens} tokens, more than the model's "
                "{limit}-token window leaves with {reserve} kept for the answer: shorten the question "
                "or the system prompt, or use a model with a larger window",
                tokens=f"{fixed:,}",
                limit=f"{limit:,}",
                reserve=f"{reserve:,}",
            )
        )
    exchanges = exchanges_of(history)
    cost = [sum(counter.text(m.content) + MESSAGE_FRAMING for m in ex) for ex in exchanges]
    summary = list(summary)
    fixed += sum(counter.text(m.content) + MESSAGE_FRAMING for m in summary)
    newest = len(exchanges) - 1 if exchanges and cost[-1] <= (room - fixed) // 4 else None
    left = room - fixed - (cost[newest] if newest is not None else 0)
    source_room = min(left, limits.source_tokens) if limits.source_tokens else left
    packed: list[Source] = []
    for source in sources:
        label = counter.text(source.label) + MESSAGE_FRAMING  # and the blank lines around it
        whole = source.hit.content.strip()
        text = (
            best_part(whole, query, limits.passage_tokens, counter.text, question=question)
            if limits.passage_tokens
            else whole
        )
        price = label + counter.text(text)
        if price > source_room:
            if source_room - label < MIN_PART:
                break
            text = best_part(whole, query, source_room - label, counter.text, question=question)
            if not text:
                break
            price = label + counter.text(text)
        packed.append(dataclasses.replace(source, text=None if text == whole else text))
        source_room -= price
        left -= price
        if source_room < label:
            break
    kept = {newest} if newest is not None else set()
    for i in range(len(exchanges) - 1, -1, -1):
        if i not in kept and cost[i] <= left:
            kept.add(i)
            left -= cost[i]
        elif i not in kept:
            break  # keep the history contiguous: nothing older than a left-out exchange
    while True:
        kept_history = summary + [m for i in sorted(kept) for m in exchanges[i]]
        messages = build_messages(question, packed, system_template=template, history=kept_history)
        budget = context_budget(messages, packed, limit, counter, reserve=reserve, summary=len(summary))
        if budget.fits:
            break
        # Counted part by part, a prompt can come out a few tokens over (tokens merge across the
        # joins): give up what is cheapest to lose.
        if len(kept) > (1 if newest is not None else 0):
            kept.discard(min(kept))
        elif packed:
            packed.pop()
        elif kept:
            kept.clear()
        else:
            break
    dropped = len(exchanges) - len(kept)
    left_out = tuple(sources[len(packed) :])
    return Packed(tuple(messages), tuple(packed), left_out, budget, dropped, limits.source_tokens)
