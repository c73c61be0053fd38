"""The one question -> answer flow: rewrite the follow-up, search, fit the prompt, stream the answer.

The chat page, `rag ask` and the MCP tool `ask_knowledge_base` all run a question through
`start` (and an agent turn too, on the page): it returns either a finished `Turn` (nothing to
generate: the search failed, no model) or a `Live` turn whose answer streams on a `Runner`
thread. `finish` folds what the runner produced into the turn; `ask` does both and waits, for
callers without a page to redraw.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from rag.errors import ModelError, RagError
from rag.generate.agent_turn import finish_agent, start_agent
from rag.generate.citations import attribute_if_uncited
from rag.generate.conversation import Live, Turn
from rag.generate.followup import depends_on_conversation
from rag.generate.memory import Memory
from rag.generate.packing import Packed, exchanges_of, pack_limits, pack_prompt
from rag.generate.prompt import number_sources
from rag.generate.rewrite import rewrite_query, searched_with_previous, subject_of
from rag.llms.counting import calibrate, token_counter
from rag.llms.loops import guard_loops
from rag.llms.stream import Keepalive, Runner, fold
from rag.llms.types import ChatModel, Message
from rag.model_ref import shown_name
from rag.retrieve import DEFAULT_MODE
from rag.scripts import HAN_CHAR
from rag.text import Text, text_of

if TYPE_CHECKING:
    from rag.settings import Settings
    from rag.store import Hit, Store

log = logging.getLogger(__name__)

ATTRIBUTED_NOTE = Text(
    "Citations were added by matching each sentence to the source it came from "
    "(the embedded model does not cite by itself): they show where a sentence's words are "
    "found, not that the model used that source."
)
LOOP_NOTE = Text("The model began repeating itself: the generation was ended there and the repeats were cut.")
STOPPED_BEFORE_NOTE = Text("Stopped before the answer began (while the question was prepared): nothing was answered.")

_OPEN_MARKER = re.compile(r"\s*[\[【][\d,，、\s]*$")
"""A citation marker the answer was stopped in the middle of."""

Busy = Callable[[str], AbstractContextManager[Any]]
"""Shown while a step runs (the page passes `st.spinner`)."""


def _quietly(_text: str) -> AbstractContextManager[None]:
    return contextlib.nullcontext()


@dataclass(frozen=True)
class Request:
    """How to answer: plain values, as the page's widgets, `rag ask`'s options or a tool's arguments give them."""

    kbs: tuple[str, ...]
    top_k: int = 8
    min_score: float | None = None
    filter: str | None = None
    mode: str = DEFAULT_MODE
    rewrite: bool = True
    """Rewrite a follow-up into a standalone query before searching (only a question that depends on the
    conversation before it: rag.generate.followup)."""
    template: str | None = None
    """An edited system prompt; None: the default in the question's language."""
    temperature: float = 0.2
    think: bool | None = None
    num_ctx: int | None = None
    context: int | None = None
    """The model's window for the budget; None: num_ctx, else what the model says."""
    thinks: bool | None = None
    """Whether the model thinks aloud (its thinking is turned off for the rewrite); None: ask it."""
    agent: bool = False
    route: str | None = None
    """Agent mode's route, forced ('default', 'expert', ...); None or 'auto': the router picks."""
    allowed_tools: tuple[str, ...] = ()
    """Agent tools that may change things (not read-only) which the user allowed to run."""


@dataclass(frozen=True)
class Window:
    """A model's context window in tokens, and how it is known (a page says which beside the figure)."""

    tokens: int
    known: Literal["num_ctx", "model", "assumed"]
    """'num_ctx': the caller set it; 'model': the model's own; 'assumed': the model could not say."""
    reason: str = ""
    """Why the model could not say ('assumed' only)."""


def context_window(model: ChatModel, num_ctx: int | None = None) -> Window:
    """The model's context window: num_ctx when set, else the model's own (assumed when unknown)."""
    if num_ctx:
        return Window(num_ctx, "num_ctx")
    try:
        return Window(model.context_length(), "model")
    except ModelError as exc:
        from rag.llms import DEFAULT_OLLAMA_NUM_CTX

        log.info("context window assumed (%s)", exc)
        return Window(DEFAULT_OLLAMA_NUM_CTX, "assumed", str(exc))


def window(model: ChatModel, num_ctx: int | None = None) -> int:
    """Tokens of `context_window`."""
    return context_window(model, num_ctx).tokens


def find(store: Store, settings: Settings, query: str, request: Request) -> list[Hit]:
    """The one search call of a question (the MCP search tool's too); RagError names what is wrong."""
    from rag import retrieve

    return retrieve.search(
        store,
        settings,
        query,
        list(request.kbs),
        top_k=request.top_k,
        min_score=request.min_score,
        filter_expression=request.filter,
        mode=request.mode,
    )


FOUND_BY = ("rewrite", "question")
"""What `Hit.found_by` calls the searches of a rewritten turn: its rewrite and the question as asked."""
WITH_PREVIOUS = "with previous"
"""What `Hit.found_by` calls the first search where no rewrite was used: the question after the one before it
(`rag.generate.rewrite.with_previous`). A walk saw those sources labelled as found by a rewrite the note under the
answer said was refused."""


def find_turn(store: Store, settings: Settings, turn: Turn, request: Request) -> list[Hit]:
    """What a turn searches: its query, and when that is a rewrite the question as asked too, fused (a
    rewrite can miss what the question's own words find)."""
    if not turn.rewritten:
        return find(store, settings, turn.query, request)
    from rag.retrieve import copies
    from rag.retrieve.fusion import QUESTION_WEIGHT, fuse_queries

    lists = [find(store, settings, query, request) for query in (turn.query, turn.question)]
    # One list may hold a copy of a passage the other holds (each list keeps its passages once).
    # A refused rewrite's search holds the question as asked (after the one before it); a model's rewrite says it anew.
    names = (WITH_PREVIOUS, FOUND_BY[1]) if searched_with_previous(turn.query, turn.question) else FOUND_BY
    fused = fuse_queries(lists, (1.0, QUESTION_WEIGHT), request.top_k * copies.ROOM, names)
    return copies.keep_once(fused, request.top_k)


def search(store: Store | None, settings: Settings, turn: Turn, request: Request, *, busy: Busy = _quietly) -> Turn:
    """The turn with the passages found for its query (or the problem that stopped the search)."""
    if store is None:
        return dataclasses.replace(turn, problem=Text("Search failed: the database is not available (see above)."))
    started = time.perf_counter()
    kbs = ", ".join(request.kbs)
    try:
        with busy(Text("Searching {kbs}…", kbs=kbs) if kbs else Text("Searching the knowledge bases…")):
            hits = find_turn(store, settings, turn, request)
    except RagError as exc:
        return dataclasses.replace(turn, problem=Text("Search failed: {error}", error=text_of(exc)))
    return dataclasses.replace(
        turn, sources=tuple(number_sources(hits)), search_ms=(time.perf_counter() - started) * 1000
    )


def start(
    question: str,
    request: Request,
    *,
    model: ChatModel | None,
    store: Store | None,
    settings: Settings,
    history: Sequence[Message] = (),
    searched: Sequence[str] = (),
    memory: Memory | None = None,
    model_problem: str = "",
    busy: Busy = _quietly,
    warn: Callable[[str], None] = log.warning,
    keepalive: Keepalive | None = None,
    on_place: Callable[[int], None] | None = None,
    tick: Callable[[], None] | None = None,
) -> Turn | Live:
    """A new turn for `question`: finished already (a problem, nothing to generate) or live.

    `searched` is what the questions of `history` were searched with (`searched_queries(turns)`), oldest first;
    `memory` is the running summary of the conversation's first exchanges (`memory_of(turns)`);
    `model_problem` says why there is no model (with what to do); `warn` is told what goes wrong
    on the side (an MCP server that cannot start) without stopping the turn; `keepalive`: how the
    answer's runner is stopped once nobody follows it (a page's closed tab; `rag.llms.stream.Watchdog`);
    `on_place` is told the place in line of the rewrite and the summary made before the answer starts, for a
    model that answers one question at a time (the answer's own place comes in its stream); `tick` is called
    every fraction of a second while the follow-up is rewritten or the conversation summarised (a page's Stop
    raises from it)."""
    turn = _new_turn(question, request, model.name if model is not None else "", request.agent and model is not None)
    if turn.agent and store is not None and model is not None:
        return start_agent(turn, request, model, settings, store, history, warn, keepalive)
    notes: list[str] = []
    if (
        request.rewrite
        and history
        and model is not None
        and depends_on_conversation(question, [m.content for m in history])
    ):
        thinks = request.thinks if request.thinks is not None else _thinks(model)
        with busy(Text("Rewriting the follow-up into a standalone query…")):
            rewritten = rewrite_query(
                model, history, question, thinks=thinks, searched=searched, on_place=on_place, tick=tick
            )
        subject = subject_of(question, rewritten.query, history, searched)
        turn = dataclasses.replace(turn, query=rewritten.query, subject=subject)
        notes += [rewritten.note] if rewritten.note else []
    turn = search(store, settings, turn, request, busy=busy)
    if model is None and not turn.problem:
        turn = dataclasses.replace(
            turn, problem=Text("No answer: no chat model is available. {problem}", problem=model_problem)
        )
    if turn.problem or model is None:
        return dataclasses.replace(turn, notes=tuple(notes))
    limit = request.context or window(model, request.num_ctx)
    try:
        packed, memory, folded = _pack_with_memory(
            with_subject(question, turn.subject), turn, request, model, limit, history, memory, busy, on_place, tick
        )
    except RagError as exc:
        return dataclasses.replace(turn, problem=text_of(exc), notes=tuple(notes))
    notes += packed.notes()
    if folded > 1:
        notes.append(
            Text(
                "The {n} oldest exchanges were folded into the summary of the earlier conversation, "
                "so that the prompt fits the model's window.",
                n=folded,
            )
        )
    elif folded:
        notes.append(
            Text(
                "The {n} oldest exchange was folded into the summary of the earlier conversation, "
                "so that the prompt fits the model's window.",
                n=folded,
            )
        )
    if memory is not None:
        turn = dataclasses.replace(turn, summary=memory.summary, summary_covers=memory.covers)
    messages = list(packed.messages)
    temperature, num_ctx, think = request.temperature, request.num_ctx, request.think
    runner = Runner(
        lambda stop: guard_loops(
            model.stream(messages, temperature=temperature, num_ctx=num_ctx, think=think, stop_event=stop)
        ),
        name="chat-answer",
        keepalive=keepalive,
    )
    return Live(
        dataclasses.replace(
            turn, sources=packed.sources, left_out=packed.left_out, budget=packed.budget, notes=tuple(notes)
        ),
        runner,
    )


def with_subject(question: str, subject: str) -> str:
    """The question as the model is asked it: with what it points back to where the rewrite found that ("How
    heavy is it? (Model 5)"). Asked "How heavy is it?" after "How much does Model 4 cost?", "And Model 5?",
    "What is the warranty?", Qwen 1.5B answered "The Model 4 weighs 95 kg." though the search named Model 5."""
    if not subject or subject.lower() in question.lower():
        return question
    return f"{question}（{subject}）" if HAN_CHAR.search(question) else f"{question} ({subject})"


def _pack_with_memory(
    question: str,
    turn: Turn,
    request: Request,
    model: ChatModel,
    limit: int,
    history: Sequence[Message],
    memory: Memory | None,
    busy: Busy,
    on_place: Callable[[int], None] | None = None,
    tick: Callable[[], None] | None = None,
) -> tuple[Packed, Memory | None, int]:
    """The packed prompt, the memory it carries, and how many exchanges were folded into it now.

    The history after the exchanges `memory` covers is packed with the summary in front; when the
    oldest of them must be left out, the model folds them into the summary and the prompt is packed
    again (a failed summary keeps the old one, and those exchanges stay out, as without memory)."""
    from rag.generate.memory import Memory, language_of, summarize, summary_exchange

    exchanges = exchanges_of(history)
    covered = min(memory.covers, len(exchanges)) if memory is not None else 0
    rest = [m for ex in exchanges[covered:] for m in ex]
    language = language_of([*history, Message("user", question)])
    counter = token_counter(model)

    def pack(current: Memory | None, recent: list[Message]) -> Packed:
        return pack_prompt(
            question,
            turn.sources,
            counter=counter,
            limit=limit,
            template=request.template,
            history=recent,
            query=turn.query,
            limits=pack_limits(model),
            summary=summary_exchange(current, language),
        )

    packed = pack(memory, rest)
    if not packed.dropped:
        return packed, memory, 0
    recent = exchanges_of(rest)
    left_out, kept = recent[: packed.dropped], recent[packed.dropped :]
    try:
        with busy(Text("Summarising the earlier conversation to fit the model's window…")):
            summary = summarize(
                model,
                [m for ex in left_out for m in ex],
                memory.summary if memory else "",
                language=language,
                on_place=on_place,
                tick=tick,
            )
    except ModelError as exc:
        log.warning("summarising the conversation failed: %s", exc)
        return packed, memory, 0
    memory = Memory(summary, covered + len(left_out))
    return pack(memory, [m for ex in kept for m in ex]), memory, len(left_out)


def _thinks(model: ChatModel) -> bool:
    try:
        return model.supports_thinking
    except ModelError:
        return False  # unknown: the rewrite runs with the model's own default


def finish_chat(turn: Turn, runner: Runner[Any]) -> Turn:
    """The turn with what the runner produced (the partial answer too, if it was stopped or failed)."""
    from rag.llms.telemetry import TIMELINE

    # Dated by arrival: the runner's first item is the embedded model's 'queue' event (its turn in line),
    # not a token, so the first text is looked for among them.
    folded = fold(runner.items(), runner.arrivals(), stop_requested=runner.stop_requested)
    if runner.finished is not None:
        # The GPU page draws every generation's phases on its timeline (epoch seconds).
        to_epoch = time.time() - time.monotonic()
        TIMELINE.mark_generation(
            Text("chat: {model}", model=shown_name(turn.model)),
            runner.started + to_epoch,
            runner.finished + to_epoch,
            folded.stats,
            first_token_at=folded.first_token_at + to_epoch if folded.first_token_at is not None else None,
        )
    if turn.budget is not None and turn.budget.scale is not None and folded.stats is not None:
        # Ollama counted the prompt itself: the next estimates for this model learn from it.
        calibrate(turn.model, round(turn.budget.used / turn.budget.scale), folded.stats.prompt_eval_count)
    # A Stop in the middle of a citation marker left its opening ("… within the UK. [1"): cut, as no marker.
    text = _OPEN_MARKER.sub("", folded.text) if folded.stopped else folded.text
    answer = attribute_if_uncited(text, turn.sources, turn.model)
    attributed = answer != folded.text
    notes = (*turn.notes, *([ATTRIBUTED_NOTE] if attributed else []), *([LOOP_NOTE] if folded.looped else []))
    return dataclasses.replace(
        turn,
        answer=answer,
        thinking=folded.thinking,
        stats=folded.stats,
        stopped=folded.stopped,
        error=runner.error,
        notes=notes,
        attributed=attributed,
        looped=folded.looped,
    )


def finish(live: Live, lookup: Callable[[str], Hit | None] | None = None) -> Turn:
    """The finished turn (`lookup` finds an agent's passages by chunk id)."""
    if live.turn.agent:
        return finish_agent(live.turn, live.runner, lookup)
    return finish_chat(live.turn, live.runner)


def wait(live: Live, poll: float = 0.1, stop: threading.Event | None = None) -> Turn:
    """Wait for the live turn to end and finish it; an interrupt (Ctrl-C) or `stop` (set when nobody waits for
    the answer any more: an MCP client that went away) stops the generation first."""
    try:
        while not live.runner.join(poll):
            if stop is not None and stop.is_set() and not live.runner.stop_requested:
                live.runner.stop()
    except KeyboardInterrupt:
        live.runner.stop()
        live.runner.join(2.0)
        raise
    return finish(live)


def _new_turn(question: str, request: Request, model: str, agent: bool = False) -> Turn:
    """A turn for `question` as asked, nothing searched or answered yet."""
    return Turn(
        id=uuid.uuid4().hex[:8],
        question=question,
        query=question,
        kbs=request.kbs,
        mode=request.mode,
        model=model,
        agent=agent,
    )


def stopped_before_answer(question: str, request: Request, model: str) -> Turn:
    """A question stopped before its answer began (its follow-up being rewritten, its sources searched): kept in
    the conversation as asked, with nothing answered."""
    return dataclasses.replace(_new_turn(question, request, model), stopped=True, notes=(STOPPED_BEFORE_NOTE,))


def ask(
    question: str,
    request: Request,
    *,
    model: ChatModel,
    store: Store,
    settings: Settings,
    history: Sequence[Message] = (),
    searched: Sequence[str] = (),
    memory: Memory | None = None,
    stop: threading.Event | None = None,
) -> Turn:
    """`start` and `wait`: the finished turn, for callers that print or return it whole (`stop`: see `wait`)."""
    started = start(
        question,
        request,
        model=model,
        store=store,
        settings=settings,
        history=history,
        searched=searched,
        memory=memory,
    )
    return started if isinstance(started, Turn) else wait(started, stop=stop)
