"""Conversations on the embedded chat model: follow-ups asked in one conversation, and the same
questions asked alone, through the app's one engine on a real knowledge base.

The sequences (`benchmarks/data/conversations.jsonl`) mix standalone questions drawn from the
public sets (zh_cmrc_trial, en_race) with follow-ups written for them ("它是哪一年建成的？",
"那他的父亲呢？", "why?", "And what about Lysis there?"); each question names its gold passage
and the words a right answer holds, and each follow-up its standalone form. Each conversation
runs against its own knowledge base: its passages and distractors from the same set
(`KB_PASSAGES` in all, one document per passage, named by its pid, as the retrieval bench
ingests them). Its questions are asked through `engine.start` with the `Request` defaults (hybrid,
top_k 8, rewrite on), first in one conversation (the history and memory of the earlier turns built
by `history_messages` and `memory_of`, as `rag ask --conversation` builds them), then each in a new
conversation, a follow-up in its standalone form (asked as written, alone, it names nothing).

Judged per answer: right (it holds a gold answer after `normalise`, the answers bench's rule),
gold cited (a marker the model wrote points at the gold passage), green but wrong (the chat would
badge a wrong answer grounded), right and green (a right one: the others show a true answer as a possible
guess), rewritten (what was searched is not the question as asked: the
engine decides which questions to rewrite, so a standalone question rewritten, or a follow-up not,
shows here), and seconds to the first word (from `engine.start`: the rewrite and the search count).
A wrong answer is traced to the stage that lost it: not retrieved (the gold passage is not among the
top_k hits the turn got; its rank in a deeper search, made as the engine searches, is shown), cut by
packing (found, but left out of the prompt, or given in part without the answer), or misread (the
prompt held it).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.report import Report
from rag.generate.conversation import Turn

if TYPE_CHECKING:
    from rag.embeddings import Embedder
    from rag.evaluation.datasets import Passage
    from rag.generate.engine import Request
    from rag.llms import ChatModel
    from rag.settings import Settings
    from rag.store import Store

DATA = Path(__file__).with_name("data") / "conversations.jsonl"
LANGUAGES = ("zh", "en")
KB_PASSAGES = 30
"""Passages in each conversation's knowledge base: its own and distractors drawn from the same set."""
CONVERSATION, ALONE = "in one conversation", "alone"
CONDITIONS = (CONVERSATION, ALONE)
QUICK_QUESTIONS = 4
"""--quick: the first conversation of each language, cut to its first questions (a standalone and follow-ups)."""
DEEP = 100
"""Hits read when a wrong answer's gold passage is looked for again (rag.retrieve's top-k limit)."""

NOT_RETRIEVED, CUT, MISREAD, NO_ANSWER = "not retrieved", "cut by packing", "misread", "no answer"
STAGES = (NOT_RETRIEVED, CUT, MISREAD, NO_ANSWER)


@dataclass(frozen=True)
class BenchQuestion:
    text: str
    follow_up: bool
    pid: str
    """The gold passage: the pid of the set's passage that answers it."""
    answers: tuple[str, ...]
    """The answer is right when it holds one of them (after `normalise`)."""
    standalone: str
    """How it reads without the conversation (the text itself for a standalone question)."""
    qid: str = ""
    """The set's question it was drawn from, when it was."""

    @property
    def kind(self) -> str:
        return "follow-up" if self.follow_up else "standalone"


@dataclass(frozen=True)
class Conversation:
    id: str
    language: str
    set: str
    questions: tuple[BenchQuestion, ...]

    @property
    def pids(self) -> tuple[str, ...]:
        """Its gold passages, in the order the questions first need them."""
        return tuple(dict.fromkeys(q.pid for q in self.questions))


def load_conversations(path: Path = DATA) -> tuple[Conversation, ...]:
    """The sequences in `path` (one JSON object per line), checked: ValueError names the line and the
    field at fault."""
    from rag.evaluation.sets import SETS, eval_set

    out: list[Conversation] = []
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path.name} line {number}"
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"{where}: not JSON ({exc})") from None
        cid, language, name, items = row.get("id"), row.get("language"), row.get("set"), row.get("questions")
        if not isinstance(cid, str) or not cid or cid in seen:
            raise ValueError(f"{where}: 'id' must be a new non-empty text, got {cid!r}")
        if language not in LANGUAGES:
            raise ValueError(f"{where}: 'language' must be one of {', '.join(LANGUAGES)}, got {language!r}")
        if name not in SETS:
            raise ValueError(f"{where}: 'set' must be one of {', '.join(SETS)}, got {name!r}")
        if not isinstance(items, list) or not items:
            raise ValueError(f"{where}: 'questions' must be a non-empty list")
        pids = {p.key for p in eval_set(name).passages}
        questions = tuple(_question(item, f"{where} question {i}", pids) for i, item in enumerate(items, 1))
        seen.add(cid)
        out.append(Conversation(cid, language, name, questions))
    return tuple(out)


def _question(item: object, where: str, pids: set[str]) -> BenchQuestion:
    if not isinstance(item, dict):
        raise ValueError(f"{where}: expected an object")
    text, follow_up, pid, answers = item.get("question"), item.get("follow_up"), item.get("pid"), item.get("answers")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{where}: 'question' must be a non-empty text, got {text!r}")
    if not isinstance(follow_up, bool):
        raise ValueError(f"{where}: 'follow_up' must be true or false, got {follow_up!r}")
    if pid not in pids:
        raise ValueError(f"{where}: 'pid' {pid!r} is not a passage of the set")
    if not isinstance(answers, list) or not answers or not all(isinstance(a, str) and a.strip() for a in answers):
        raise ValueError(f"{where}: 'answers' must be a non-empty list of non-empty texts, got {answers!r}")
    standalone = item.get("standalone", text if not follow_up else None)
    if not isinstance(standalone, str) or not standalone.strip():
        raise ValueError(f"{where}: a follow-up needs its 'standalone' form, got {standalone!r}")
    if follow_up and standalone.strip() == text.strip():
        raise ValueError(f"{where}: the 'standalone' form of a follow-up must differ from it: {text!r}")
    qid = item.get("qid", "")
    if not isinstance(qid, str):
        raise ValueError(f"{where}: 'qid' must be a text, got {qid!r}")
    return BenchQuestion(text, follow_up, str(pid), tuple(answers), standalone, qid)


def for_run(conversations: Sequence[Conversation], quick: bool) -> list[Conversation]:
    """All of them; in --quick, the first of each language cut to `QUICK_QUESTIONS` questions."""
    if not quick:
        return list(conversations)
    firsts = [
        next(c for c in conversations if c.language == lang)
        for lang in LANGUAGES
        if any(c.language == lang for c in conversations)
    ]
    return [dataclasses.replace(c, questions=c.questions[:QUICK_QUESTIONS]) for c in firsts]


def knowledge_passages(conversation: Conversation, n: int = KB_PASSAGES) -> list[Passage]:
    """Its gold passages and distractors from the same set, `n` in all, the same ones every run."""
    from rag.evaluation.sets import eval_set

    passages = eval_set(conversation.set).passages
    gold = [p for pid in conversation.pids for p in passages if p.key == pid]
    others = [p for p in passages if p.key not in conversation.pids]
    # A text seed: the same distractors every run, whatever PYTHONHASHSEED.
    return gold + random.Random(conversation.id).sample(others, max(0, min(n - len(gold), len(others))))


# --- judging one answer -------------------------------------------------------------------------


def holds_gold(answer: str, answers: Iterable[str]) -> bool:
    """The answers bench's rule: the normalised answer contains a normalised gold answer (its end
    punctuation dropped: RACE's options end with a full stop an answer's sentence need not share)."""
    from benchmarks.quality import _END_PUNCTUATION
    from rag.evaluation.normalise import normalise

    said = normalise(answer)
    golds = [normalise(a).strip(_END_PUNCTUATION) for a in answers]
    return any(g and g in said for g in golds)


def cites_gold(turn: Turn, pid: str) -> bool:
    """A marker the model wrote points at a source whose passage is `pid` (markers added by matching
    for a model that cannot cite are not the model's)."""
    if turn.attributed:
        return False
    by_n = {s.n: s for s in turn.sources}
    return any(by_n[n].hit.original_filename == pid for n in turn.citations.cited)


def stage_of(turn: Turn, question: BenchQuestion) -> tuple[str, str]:
    """Where a wrong answer was lost, and a few words on it: (stage, detail)."""
    from rag.evaluation.normalise import normalise

    if turn.problem or turn.error or not turn.answer.strip():
        return NO_ANSWER, " ".join(str(turn.problem or turn.error or "empty answer").split())
    found = len(turn.sources) + len(turn.left_out)
    given = next((s for s in turn.sources if s.hit.original_filename == question.pid), None)
    if given is None:
        left = next((s for s in turn.left_out if s.hit.original_filename == question.pid), None)
        if left is not None:
            return CUT, f"found as [{left.n}] of {found}, left out of the prompt"
        return NOT_RETRIEVED, f"not among the {found} found"
    if given.text is not None:
        whole, part = normalise(given.hit.content), normalise(given.text)
        golds = [normalise(a) for a in question.answers]
        if any(g in whole for g in golds) and not any(g in part for g in golds):
            return CUT, f"[{given.n}] given in part, without the answer"
    return MISREAD, f"[{given.n}] in the prompt{' (in part)' if given.text is not None else ''}"


@dataclass(frozen=True)
class Outcome:
    conversation: str
    language: str
    condition: str
    question: BenchQuestion
    turn: Turn
    right: bool
    cites_gold: bool
    green: bool
    """The chat would show the green "grounded" badge."""
    first_word: float | None
    """Seconds from `engine.start` to the answer's first piece; None when nothing was generated."""
    stage: str = ""
    """Where a wrong answer was lost (`STAGES`); empty for a right one."""
    detail: str = ""
    rank: int | None = None
    """A wrong answer's gold passage: its rank among `DEEP` hits for what was searched (None: absent)."""

    @property
    def rewritten(self) -> bool:
        return self.turn.rewritten


def judge(
    turn: Turn,
    question: BenchQuestion,
    *,
    conversation: str,
    language: str,
    condition: str,
    first_word: float | None,
    rank: Callable[[Turn], int | None],
) -> Outcome:
    """The outcome of one turn; `rank(turn)` gives the gold passage's rank in a deeper search for what the
    turn searched, asked only for a wrong answer."""
    right = holds_gold(turn.answer, question.answers) and not turn.problem
    outcome = Outcome(
        conversation,
        language,
        condition,
        question,
        turn,
        right,
        cites_gold(turn, question.pid),
        turn.grounding.grounded,
        first_word,
    )
    if right:
        return outcome
    stage, detail = stage_of(turn, question)
    return dataclasses.replace(outcome, stage=stage, detail=detail, rank=rank(turn) if stage != NO_ANSWER else None)


# --- counting -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Counts:
    asked: int
    right: int
    cites_gold: int
    green_but_wrong: int
    rewritten: int
    stages: dict[str, int]
    """Wrong answers by the stage that lost them."""
    first_word: tuple[float, ...]
    right_green: int = 0
    """Right answers the chat badges green: the rest show a true answer as a possible guess."""

    def line(self, label: str) -> str:
        n = self.asked
        lost = ", ".join(f"{stage} {self.stages[stage]}" for stage in STAGES if self.stages.get(stage))
        return (
            f"{label} {self.right}/{n} right, gold cited {self.cites_gold}/{n}, green but wrong "
            f"{self.green_but_wrong}, right and green {self.right_green}/{self.right}, rewritten {self.rewritten}/{n}"
            + (f" (wrong: {lost})" if lost else "")
        )


def count(outcomes: Sequence[Outcome]) -> Counts:
    return Counts(
        asked=len(outcomes),
        right=sum(o.right for o in outcomes),
        cites_gold=sum(o.cites_gold for o in outcomes),
        green_but_wrong=sum(o.green and not o.right for o in outcomes),
        rewritten=sum(o.rewritten for o in outcomes),
        stages=dict(Counter(o.stage for o in outcomes if not o.right)),
        first_word=tuple(o.first_word for o in outcomes if o.first_word is not None),
        right_green=sum(o.green and o.right for o in outcomes),
    )


def by_kind(outcomes: Sequence[Outcome], language: str, condition: str) -> dict[str, Counts]:
    """The counts of one language and condition, standalone questions and follow-ups apart."""
    chosen = [o for o in outcomes if o.language == language and o.condition == condition]
    return {kind: count([o for o in chosen if o.question.kind == kind]) for kind in ("standalone", "follow-up")}


def summary_lines(outcomes: Sequence[Outcome]) -> list[str]:
    """One line per language and condition that has outcomes."""
    lines = []
    for language in LANGUAGES:
        for condition in CONDITIONS:
            if not any(o.language == language and o.condition == condition for o in outcomes):
                continue
            kinds = by_kind(outcomes, language, condition)
            follow = "follow-ups" if condition == CONVERSATION else "follow-ups (their standalone form)"
            waits = [w for c in kinds.values() for w in c.first_word]
            wait = (
                f"first word p50 {statistics.median(waits):.1f} s, max {max(waits):.1f} s" if waits else "no first word"
            )
            lines.append(
                f"{language}, {condition}: "
                + "; ".join([kinds["standalone"].line("standalone"), kinds["follow-up"].line(follow), wait])
            )
    return lines


def wrong_rows(outcomes: Sequence[Outcome], width: int = 60) -> list[str]:
    """The wrong answers as a Markdown table: the question, what was searched, the stage, the gold rank and whether
    the chat badged it green (a wrong answer with the green badge is the worst: it reads as checked)."""
    from rag.errors import one_line

    rows = [
        "| lang | condition | kind | question | searched for | stage | gold rank | detail | badge | answer |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        if o.right:
            continue
        searched = "(as asked)" if not o.rewritten else one_line(o.turn.query, width).replace("|", "/")
        rank = "-" if o.stage == NO_ANSWER else str(o.rank) if o.rank is not None else f"absent (> {DEEP})"
        cells = [
            o.language,
            o.condition,
            o.question.kind,
            one_line(o.turn.question, width),
            searched,
            o.stage,
            rank,
            o.detail,
            "green" if o.green else "-",
            one_line(o.turn.answer, width) or "-",
        ]
        rows.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return rows if len(rows) > 2 else []


# --- running ------------------------------------------------------------------------------------


def build_knowledge_base(store: Store, uri: str, conversation: Conversation, embedder: Embedder) -> str:
    """Its passages ingested into a knowledge base of their own (one document per passage); the name."""
    from benchmarks.retrieval import _ingest
    from rag.evaluation.sets import EvalSet

    name = f"conversation-{conversation.id}"
    _ingest(store, uri, name, EvalSet(conversation.set, tuple(knowledge_passages(conversation)), ()), embedder)
    return name


def ask_all(
    conversation: Conversation, condition: str, request: Request, *, model: ChatModel, store: Store, settings: Settings
) -> list[Outcome]:
    """Its questions through `engine.start`: in one conversation (each with the turns before it as its
    history and memory), or each alone (a follow-up in its standalone form)."""
    from rag.generate import engine
    from rag.generate.conversation import history_messages, memory_of, searched_queries
    from rag.llms.stream import fold

    turns: list[Turn] = []
    outcomes = []
    for question in conversation.questions:
        together = condition == CONVERSATION
        started = time.monotonic()
        live = engine.start(
            question.text if together else question.standalone,
            request,
            model=model,
            store=store,
            settings=settings,
            history=history_messages(turns) if together else (),
            searched=searched_queries(turns) if together else (),
            memory=memory_of(turns) if together else None,
        )
        if isinstance(live, Turn):
            turn, first_word = live, None
        else:
            turn = engine.wait(live)
            # The first answer text, not the runner's first item (the embedded model's 'queue' event
            # at its turn, which made every first word ~0 s).
            first = fold(live.runner.items(), live.runner.arrivals()).first_content_at
            first_word = first - started if first is not None else None
        turns.append(turn)
        outcomes.append(
            judge(
                turn,
                question,
                conversation=conversation.id,
                language=conversation.language,
                condition=condition,
                first_word=first_word,
                rank=functools.partial(gold_rank, store, settings, request, pid=question.pid),
            )
        )
    return outcomes


def gold_rank(store: Store, settings: Settings, request: Request, turn: Turn, *, pid: str) -> int | None:
    """The rank of passage `pid` among `DEEP` hits for what `turn` searched (None: not among them), searched
    as the engine searched it (a rewrite together with the question as asked)."""
    from rag.generate import engine

    hits = engine.find_turn(store, settings, turn, dataclasses.replace(request, top_k=DEEP))
    return next((i for i, h in enumerate(hits, 1) if h.original_filename == pid), None)


def embedded_model(settings: Settings, report: Report) -> ChatModel | None:
    """The embedded chat model with its weights loaded (outside the figures), or None with a "skipped" line."""
    from rag import llms

    try:
        model = llms.resolve_chat_model(settings, "local")
    except llms.ModelError as exc:
        report.line(f"skipped: {exc}")
        return None
    preload = getattr(model, "preload", None)
    loading = preload() if callable(preload) else None
    if loading is not None:
        loading.join()
    return model


def _embedder(settings: Settings, quick: bool) -> tuple[Embedder, str]:
    """e5 (the embedded default); WordLlama, the fast one, in --quick or where e5 cannot run."""
    from rag.embeddings import E5_NAME, WORDLLAMA_NAME, embedder_for_name, local_fallback_reason

    if quick:
        return embedder_for_name(WORDLLAMA_NAME, settings), "the fast one, in --quick"
    reason = local_fallback_reason()
    if reason is None:
        return embedder_for_name(E5_NAME, settings), "the embedded default"
    return embedder_for_name(WORDLLAMA_NAME, settings), f"e5 cannot run here: {reason}"


def bench_conversation(
    report: Report,
    uri: str,
    settings: Settings,
    quick: bool = False,
    *,
    model: ChatModel | None = None,
    conversations: Sequence[Conversation] | None = None,
) -> list[Outcome]:
    """The conversations on the embedded chat model (or `model`), in the scratch database at `uri`."""
    from rag import retrieve
    from rag.evaluation.vectors import CachedEmbedder, DiskVectors
    from rag.generate.engine import Request
    from rag.store import Store

    chosen = list(conversations) if conversations is not None else for_run(load_conversations(), quick)
    questions = sum(len(c.questions) for c in chosen)
    report.section(
        f"Conversations: {len(chosen)} sequences, {questions} questions, asked in one conversation and "
        f"each alone, through the chat engine (hybrid, top_k 8, rewrite on) on {KB_PASSAGES} passages each"
    )
    if model is None:
        model = embedded_model(settings, report)
        if model is None:
            return []
    local = dataclasses.replace(settings, database_url=uri)
    embedder, why = _embedder(local, quick)
    cache = DiskVectors(local.data_dir / "eval-vectors", embedder)
    report.line(f"model {model.name}, embedder {embedder.name} ({why}), vectors cached in {cache.path}")
    request = Request(kbs=())
    outcomes: list[Outcome] = []
    started = time.perf_counter()
    store = Store(uri)
    try:
        with retrieve.use_embedder(CachedEmbedder(cache)) as cached:
            for conversation in chosen:
                kb = build_knowledge_base(store, uri, conversation, cached)
                asking = dataclasses.replace(request, kbs=(kb,))
                for condition in CONDITIONS:
                    outcomes += ask_all(conversation, condition, asking, model=model, store=store, settings=local)
    finally:
        store.close()
    for line in summary_lines(outcomes):
        report.line(line)
    rows = wrong_rows(outcomes)
    if rows:
        report.line("")
        report.line(f"Wrong answers ({len(rows) - 2}):")
        for row in rows:
            report.line(row)
    report.line(f"({time.perf_counter() - started:.0f} s, {cache.embedded} texts embedded this run)")
    if conversations is None:
        kept = save_answers(outcomes, local.data_dir / "bench" / ANSWERS_FILE)
        report.line(f"answers kept in {kept} (`bench --only badges` reads them again with today's checks)")
    return outcomes


ANSWERS_FILE = "conversation-answers.jsonl"
"""The last full run's answers with what they cite, under the data folder's `bench/`: the model's real answers, read
again by `bench --only badges` in seconds where a change to the checks would otherwise need the model's 30 minutes."""


def save_answers(outcomes: Sequence[Outcome], path: Path) -> Path:
    """Each outcome's turn (question, what was searched, the answer, each source's whole content and the part of it
    the prompt gave) and whether the answer is right, one JSON line each, written whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps(
            {
                "language": o.language,
                "condition": o.condition,
                "question": o.turn.question,
                "query": o.turn.query,
                "answer": o.turn.answer,
                "attributed": o.turn.attributed,
                "right": o.right,
                "green": o.green,
                "sources": [
                    {"n": s.n, "file": s.hit.original_filename, "content": s.hit.content, "text": s.text}
                    for s in o.turn.sources
                ],
            },
            ensure_ascii=False,
        )
        for o in outcomes
    ]
    partial = path.with_suffix(".partial")
    partial.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    partial.replace(path)
    return path


def load_answers(path: Path) -> list[tuple[str, Turn, bool]]:
    """The turns `save_answers` kept, each with its language and whether its answer is right."""
    import uuid

    from rag.generate.prompt import Source
    from rag.store import Hit

    turns = []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        # The hit's whole content (what the checks read) and the part of it the prompt gave (`Source.text`).
        sources = tuple(
            Source(
                s["n"],
                Hit(uuid.uuid4(), s.get("content", s.get("passage", "")), {"original_filename": s["file"]}, 1.0),
                s.get("text"),
            )
            for s in row["sources"]
        )
        turn = Turn(
            "",
            row["question"],
            row["query"],
            sources=sources,
            answer=row["answer"],
            attributed=row["attributed"],
        )
        turns.append((row["language"], turn, bool(row["right"])))
    return turns
