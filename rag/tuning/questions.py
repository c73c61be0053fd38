"""Questions generated from the user's own document, each with its answer quoted from it: a test set
for the Chunk Lab that nobody has to write.

N passages spread over the document (rag.tuning.passages) are each given to the chat model, which
writes one question and copies its answer from the passage (rag.tuning.replies). A question is kept
only when its answer is found in the document, verbatim after normalisation (rag.evaluation.normalise),
or reworded so slightly that the passage's own words are taken instead (rag.tuning.checks.find_answer):
that span is its ground truth. Questions that give their answer away, that any passage could answer,
that repeat an earlier one, or whose answer is a paragraph are dropped, each reason counted
(rag.tuning.checks).
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag.errors import ModelError, one_line
from rag.evaluation.keyword import ChunkBM25
from rag.evaluation.normalise import NormalisedText
from rag.evaluation.questions import Question
from rag.llms.types import ChatModel, Message
from rag.scripts import language_of
from rag.tuning import checks
from rag.tuning.passages import Window, spread, windows
from rag.tuning.replies import (
    answer_candidates,
    answer_messages,
    bare_question,
    needs_retry,
    parse_answer,
    parse_reply,
    question_messages,
    reply_complete,
    sentence_messages,
    statement_of,
)

log = logging.getLogger(__name__)

DEFAULT_COUNT = 10
"""Passages asked about by default: 8-13 s each with the embedded model on 2 quiet cores, about a minute on
busy ones (rag.tuning.timing)."""
MAX_COUNT = 100
GENERATOR = 8
"""Changes when the same model given the same document writes other questions (a prompt, a second ask, a
check): caches of generated questions (the tune bench's) name it. 2: a reply with no question is asked again;
3: a question without its label before a labelled answer is read; 4: a `Q:` line that asks nothing (a
statement) is no question, and the reply is asked again; 5: a statement is asked about alone, and a yes-or-no
answer gives its question away; 6: a question is dropped as matching elsewhere only when several passages match
it as well as its own (checks.RIVALS); 7: a trial, reverted (an answer not found asked for alone), whose
questions caches may still hold; 8: a quote made unique ends in punctuation it did not have only when nothing
else is unique."""
TEMPERATURE = 0.0
"""Greedy: the same document gives the same questions, so a re-run compares settings on the same set."""

Progress = Callable[[int, int], None]
"""progress(done, total): called after each passage."""


@dataclass(frozen=True)
class GeneratedQuestion:
    text: str
    answer: str
    """`document[start:end]`: the model's quote as it stands in the document (lengthened, if needed, until
    it occurs only there: see rag.tuning.checks.unique_quote)."""
    start: int
    end: int
    passage_start: int
    """Where the passage the model was shown begins in the document."""
    language: str
    """'zh' or 'en': the passage's, in which the model was asked."""


@dataclass(frozen=True)
class Rejected:
    """A question dropped, and why (a `rag.tuning.checks` reason code)."""

    reason: str
    question: str
    answer: str
    passage_start: int
    start: int | None = None
    end: int | None = None
    """The answer's span in the document, for a question dropped after its answer was placed (None before)."""


@dataclass(frozen=True)
class GeneratedQuestions:
    questions: tuple[GeneratedQuestion, ...]
    rejected: tuple[Rejected, ...]
    passages: int
    """Passages the model was asked about (fewer than planned when stopped)."""
    planned: int
    """Passages sampled: `count`, or fewer for a short document."""
    stopped: bool
    seconds: float

    @property
    def dropped(self) -> dict[str, int]:
        """Dropped questions by reason code, every code of `checks.REASONS` present (0 when none)."""
        counts = Counter(r.reason for r in self.rejected)
        return {reason: counts[reason] for reason in checks.REASONS}

    @property
    def kept_share(self) -> float:
        return len(self.questions) / self.passages if self.passages else 0.0


def generate_questions(
    document: str,
    model: ChatModel,
    count: int = DEFAULT_COUNT,
    *,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
    found: Callable[[GeneratedQuestion | Rejected], None] | None = None,
) -> GeneratedQuestions:
    """Up to `count` questions about `document`, one per passage asked about (see the module's docstring).

    `stop` is looked at between passages (and ends the current reply early): the questions kept so far are
    returned, with `stopped` True. A model error on the first passage is raised (the model cannot be used);
    on a later one it is counted (`checks.FAILED`) and the next passage is tried. `found` is told each
    question as it is kept or dropped (a page shows them as they come).
    """
    if not 1 <= count <= MAX_COUNT:
        raise ValueError(f"ask for 1 to {MAX_COUNT} questions, got {count}")
    started = time.perf_counter()
    tiles = windows(document)
    chosen = spread(tiles, count)
    doc = NormalisedText.of(document)
    bm25 = ChunkBM25([w.text for w in tiles])
    starts = [w.start for w in tiles]
    kept: list[GeneratedQuestion] = []
    rejected: list[Rejected] = []
    asked = 0
    stopped = False
    for window in chosen:
        if stop is not None and stop.is_set():
            stopped = True
            break
        language = language_of(window.text)
        try:
            reply = _reply(model, window, language, stop)
        except ModelError as exc:
            if asked == 0:
                raise
            # The reason in one line, no traceback: formatting one in this thread runs `ast.parse` (CPython 3.11's
            # caret anchors), which raced Streamlit compiling a page in its script thread ("SystemError: AST
            # constructor recursion depth mismatch", python/cpython#106905) and failed a test's page once.
            log.warning("question generation failed for the passage at %d: %s", window.start, one_line(exc, None))
            rejected.append(Rejected(checks.FAILED, "", "", window.start))
            if found is not None:
                found(rejected[-1])
        else:
            if stop is not None and stop.is_set():
                stopped = True
                break
            verdict = _judge(reply, document, doc, window, language, tiles, starts, bm25, kept)
            if isinstance(verdict, GeneratedQuestion):
                kept.append(verdict)
            else:
                rejected.append(verdict)
            if found is not None:
                found(verdict)
        asked += 1
        if progress is not None:
            progress(asked, len(chosen))
    return GeneratedQuestions(
        questions=tuple(kept),
        rejected=tuple(rejected),
        passages=asked,
        planned=len(chosen),
        stopped=stopped,
        seconds=time.perf_counter() - started,
    )


def _ask(model: ChatModel, messages: list[Message], stop: threading.Event | None, done: Callable[[str], bool]) -> str:
    """The model's reply, ended as soon as `done` says it holds what was asked for (a small model goes on
    with a second question)."""
    parts: list[str] = []
    halt = threading.Event()
    for event in model.stream(messages, temperature=TEMPERATURE, stop_event=halt):
        if event.kind == "content":
            parts.append(event.text)
            if done("".join(parts)):
                halt.set()
        if stop is not None and stop.is_set():
            halt.set()
    return "".join(parts)


def _reply(model: ChatModel, window: Window, language: str, stop: threading.Event | None) -> str:
    """The model's question and answer about `window`. A statement written instead of a question
    (`needs_retry`) is asked about alone (`sentence_messages`), and a question written alone is asked for
    its answer from the passage (`bare_question`)."""
    reply = _ask(model, question_messages(window.text, language), stop, reply_complete)
    statement = statement_of(reply) if needs_retry(reply) else None
    if statement is not None and not (stop is not None and stop.is_set()):
        asked = _ask(model, sentence_messages(statement, language), stop, _line_ended)
        question = statement_of(asked)
        if question is not None and bare_question(question) is not None:
            reply = question
    question = bare_question(reply)
    if question is not None and (answered := _answer(model, window, question, language, stop)):
        reply = f"Q: {question}\nA: {answered}"
    return reply


def _answer(model: ChatModel, window: Window, question: str, language: str, stop: threading.Event | None) -> str | None:
    """The answer to `question` asked for alone (`answer_messages`), None when stopped or empty."""
    if stop is not None and stop.is_set():
        return None
    return parse_answer(_ask(model, answer_messages(window.text, question, language), stop, _line_ended))


def _line_ended(text: str) -> bool:
    """Whether a reply holds a line of text that has ended (the answer asked for alone)."""
    return "\n" in text.lstrip()


def _judge(
    reply_text: str,
    document: str,
    doc: NormalisedText,
    window: Window,
    language: str,
    tiles: Sequence[Window],
    starts: Sequence[int],
    bm25: ChunkBM25,
    kept: Sequence[GeneratedQuestion],
) -> GeneratedQuestion | Rejected:
    reply = parse_reply(reply_text)
    if reply is None:
        return Rejected(checks.NO_REPLY, reply_text.strip()[:200], "", window.start)

    def drop(reason: str, span: tuple[int, int] | None = None) -> Rejected:
        start, end = span if span is not None else (None, None)
        return Rejected(reason, reply.question, reply.answer, window.start, start, end)

    if checks.yes_or_no(reply.answer):
        return drop(checks.GIVES_AWAY)
    span, reason = checks.find_answer(doc, document, answer_candidates(reply.answer), (window.start, window.end))
    if span is None:
        return drop(reason or checks.NOT_FOUND)
    if checks.gives_away(reply.question, document[span[0] : span[1]]):
        trimmed = checks.trim_echo(document, span, reply.question)
        if trimmed is None or checks.gives_away(reply.question, document[trimmed[0] : trimmed[1]]):
            return drop(checks.GIVES_AWAY, span)
        span = trimmed
    unique = checks.unique_quote(doc, document, span)
    if unique is None:
        return drop(checks.AMBIGUOUS, span)
    answer = document[unique[0] : unique[1]]
    home = window.index if window.start <= span[0] < window.end else bisect.bisect_right(starts, span[0]) - 1
    if checks.too_generic(reply.question, answer):
        return drop(checks.GENERIC, unique)
    if checks.duplicate_of(reply.question, unique, [(q.text, (q.start, q.end)) for q in kept]):
        return drop(checks.DUPLICATE, unique)
    if checks.matches_elsewhere(reply.question, bm25, max(home, 0)):
        return drop(checks.ELSEWHERE, unique)
    return GeneratedQuestion(reply.question, answer, unique[0], unique[1], window.start, language)


def to_questions(generated: Sequence[GeneratedQuestion], filename: str | None = None) -> list[Question]:
    """The questions as the retrieval check takes them (rag.evaluation.questions.Question): the quoted
    answer is the expected passage, and its [start, end) the answer span.

    The check (rag.evaluation.targets.find_targets) then takes every chunk overlapping the span as a target
    (`overlapping_chunks`): the same ground truth under every chunking of the document.
    """
    return [Question(q.text, q.answer, filename, (q.start, q.end)) for q in generated]


def overlapping_chunks(chunks: Sequence[tuple[int, int]], start: int, end: int) -> list[int]:
    """Positions of the chunks (start, end) whose span overlaps [start, end): a generated question's targets
    (`to_questions`). The rule they replaced (the chunks holding the quote whole, else the largest piece)
    differed from it where a chunk only touches the answer while another holds it whole (overlapping
    settings), or a boundary cuts it and only the larger piece counted: for quotes of ~60 characters all
    over 40 en_race and 40 zh_cmrc_trial passages (766 of them), in 3.5 % (Spring AI default) to 16 %
    (Recursive 400 / 40) of them under the presets, 41 % under 128/64-token windows; for ~20 characters,
    1-6 % and 14 %."""
    return [i for i, (lo, hi) in enumerate(chunks) if lo < end and hi > start]
