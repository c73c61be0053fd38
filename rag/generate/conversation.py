"""A conversation: its turns, the history a prompt carries, and the conversation as Markdown.

A `Turn` is everything one question led to (what was searched, the sources, the budget, the
answer and how it ended), so that the page, `rag ask` and the MCP tool render, print or return
the same record.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag.errors import RagError
from rag.generate.budget import Budget
from rag.generate.citations import CitationCheck, Grounding, Status, check_citations, check_grounding
from rag.generate.prompt import Source
from rag.llms.stream import Runner
from rag.llms.types import GenerationStats, Message
from rag.retrieve import DEFAULT_MODE
from rag.text import Text

if TYPE_CHECKING:
    from rag.agent import Step
    from rag.agent.websearch import WebItem
    from rag.generate.memory import Memory


@dataclass(frozen=True)
class Turn:
    """One question and what came of it."""

    id: str
    question: str
    query: str
    """What was searched: the question, or its standalone rewrite."""
    subject: str = ""
    """What a follow-up points back to, named by a number ("Model 5" of "How heavy is it?";
    `rag.generate.rewrite.subject_of`): told to the model with the question."""
    kbs: tuple[str, ...] = ()
    mode: str = DEFAULT_MODE
    sources: tuple[Source, ...] = ()
    search_ms: float | None = None
    notes: tuple[str, ...] = ()
    """Things to know about how the answer was made (history left out, rewrite failed, ...)."""
    problem: str = ""
    """Why no answer was generated (search failed, no model): one line with what to do."""
    model: str = ""
    budget: Budget | None = None
    agent: bool = False
    answer: str = ""
    thinking: str = ""
    stopped: bool = False
    error: str = ""
    """The generation failed; `answer` keeps what had arrived."""
    stats: GenerationStats | None = None
    steps: tuple[Step, ...] = ()
    agent_summary: str = ""
    route: str = ""
    """The agent's route for this turn ('default', 'chit-chat', ...); empty outside agent mode."""
    route_reason: str = ""
    route_tools: tuple[str, ...] = ()
    """The tools the route offered."""
    route_budget: int | None = None
    web_sources: tuple[WebItem, ...] = ()
    """Web pages the agent's web searches returned, in the order found."""
    web_warning: str = ""
    """Why a web search gave nothing to cite (the endpoint failed): one line, no secret."""
    attributed: bool = False
    """The markers were added by `attribute_citations`, not written by the model."""
    looped: bool = False
    """The model began repeating itself; the repeats were cut (rag.llms.loops)."""
    left_out: tuple[Source, ...] = ()
    """Passages found but not given to the model (they did not fit its window)."""
    summary: str = ""
    """The summary of the older exchanges this turn's prompt carried (rag.generate.memory)."""
    summary_covers: int = 0
    """How many of the conversation's first exchanges that summary stands for."""
    gone: tuple[int, ...] = ()
    """Sources (by number) whose chunk is no longer stored: its document was deleted or replaced after
    this turn (a reopened conversation); the turn keeps the text the answer was written from."""

    @property
    def citations(self) -> CitationCheck:
        return check_citations(self.answer, self.sources)

    @functools.cached_property
    def grounding(self) -> Grounding:
        """The answer checked sentence by sentence against the sources it cites (what the badges say)."""
        return check_grounding(
            self.answer, self.sources, attributed=self.attributed, question=self.question, searched=self.query
        )

    @property
    def rewritten(self) -> bool:
        return self.query.strip() != self.question.strip()

    def as_dict(self) -> dict[str, Any]:
        """The answer with its citations, as `rag ask --json` prints it (keys documented in the README)."""
        by_n = {s.n: s for s in self.sources}
        check = self.citations
        grounding = self.grounding
        return {
            "answer": self.answer,
            "citations": [
                {
                    "n": n,
                    "original_filename": by_n[n].hit.original_filename,
                    "pages": list(by_n[n].hit.pages),
                    "location": by_n[n].hit.location,
                    "score": round(by_n[n].hit.score, 6),
                    "chunk_id": str(by_n[n].hit.id),
                    "supported": n in grounding.cited,
                }
                for n in check.cited
            ],
            "unknown_citations": list(check.unknown),
            "citations_attributed": self.attributed,
            "grounded": grounding.grounded,
            "sentences": grounding.as_dict(self.answer),
            "unsupported_sentences": len(grounding.flagged),
            "figure_missing": grounding.figure_missing,
            "off_question": grounding.off_question,
            "other_subject": grounding.other_subject,
            "looped": self.looped,
            "left_out": [s.n for s in self.left_out],
            "model": self.model,
        }


@dataclass(frozen=True)
class Live:
    """A turn being answered and the runner answering it (the page keeps it between its runs)."""

    turn: Turn
    runner: Runner[Any]


def memory_of(turns: Sequence[Turn]) -> Memory | None:
    """The running summary the next turn starts from: the latest turn's that has one."""
    from rag.generate.memory import Memory

    for t in reversed(turns):
        if t.summary:
            return Memory(t.summary, t.summary_covers)
    return None


STOPPED_ANSWER = "(no answer: the user stopped it)"
"""What a question stopped before its answer began is answered with in the history (`history_messages`)."""


def _in_history(turn: Turn) -> bool:
    """A turn with an answer, or one the user stopped before it answered: its question is what the next one may
    point back to (a Chromium walk: "那它的总面积是多少？" after a stopped "西施故里旅游区是由谁开始规划兴建的？"
    was rewritten as about the topic before it). A turn that failed (its search, its model) is left out."""
    return bool(turn.answer.strip()) or turn.stopped


def history_messages(turns: Sequence[Turn]) -> list[Message]:
    """The earlier questions and answers, for the prompt (`_in_history`)."""
    out: list[Message] = []
    for t in turns:
        if _in_history(t):
            out += [Message("user", t.question), Message("assistant", t.answer if t.answer.strip() else STOPPED_ANSWER)]
    return out


def searched_queries(turns: Sequence[Turn]) -> list[str]:
    """What the earlier questions of `history_messages` were searched with (the rewrite, or the question as
    asked), oldest first: a follow-up whose rewrite is refused is searched after the one before it."""
    return [t.query for t in turns if _in_history(t)]


def history_from_json(data: Any, where: str = "the history") -> list[Message]:
    """Messages from a JSON list of {"role": "user"|"assistant", "content": str} (the chat format
    of Ollama and OpenAI), refused with the position of the first bad entry."""
    if not isinstance(data, list):
        raise RagError(f'{where}: expected a JSON list of {{"role", "content"}} messages')
    out: list[Message] = []
    for i, item in enumerate(data):
        role = item.get("role") if isinstance(item, dict) else None
        content = item.get("content") if isinstance(item, dict) else None
        if role not in ("user", "assistant") or not isinstance(content, str):
            raise RagError(f"{where}: message {i + 1} needs a role 'user' or 'assistant' and a text content")
        out.append(Message(role, content))
    return out


def load_history(path: str | Path) -> list[Message]:
    """The conversation so far from a JSON file (see `history_from_json`)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except OSError as exc:
        raise RagError(f"{path}: cannot read the file ({exc.strerror or exc})") from exc
    except ValueError as exc:
        raise RagError(f"{path}: not JSON ({exc})") from exc
    return history_from_json(data, str(path))


Say = Callable[[str], str]
"""How the export's words are written: `str` (English), or a UI's translation of a `rag.text.Text`."""


def conversation_markdown(
    turns: Sequence[tuple[str, str, Sequence[Source]]],
    model: str,
    *,
    say: Say = str,
    source_line: Callable[[Source], str] | None = None,
) -> str:
    """A conversation (question, answer, sources) as Markdown with its sources listed per turn; `say` writes its
    words in the reader's language, `source_line` each source (by default its label, where each search ranked
    it, and its chunk: the scores the page shows, not the fused one, which read 1.000 for every first source)."""
    line = source_line or (lambda s: f"{s.label} ({s.hit.ranking}, chunk {s.hit.id})")
    parts = [f"# {say(Text('Conversation'))}\n\n{say(Text('Model: {model}', model=model))}\n"]
    for i, (question, answer, sources) in enumerate(turns, 1):
        parts.append(f"## {i}. {question}\n\n{answer.strip()}\n")
        if sources:
            parts.append(f"**{say(Text('Sources'))}**\n")
            parts.extend(f"- {line(s)}" for s in sources)
            parts.append("")
    return "\n".join(parts).rstrip() + "\n"


def cites_none(turn: Turn) -> str:
    """What an answer that cites no source is told, shown under it and in the export: a stopped one may have stopped
    before its first marker (a walk saw it badged "uncited")."""
    if turn.stopped:
        return Text("Stopped before it cited a source: check what it says against the sources.")
    return Text("The answer cites no source: check it against the sources before trusting it.")


def export_markdown(
    turns: Sequence[Turn], *, say: Say = str, source_line: Callable[[Source], str] | None = None
) -> str:
    """The turns as Markdown, each answer with how it ended (stopped, failed) and what was searched (`say`,
    `source_line`: as `conversation_markdown`'s)."""
    rows = []
    for t in turns:
        answer = t.answer or f"*{say(Text('(no answer)'))}*"
        if t.stopped:
            answer += f"\n\n*{say(Text('(stopped)'))}*"
        if t.problem:
            answer += f"\n\n*{say(t.problem)}*"
        elif t.error:
            answer += f"\n\n*{say(Text('(failed: {error})', error=t.error))}*"
        if t.rewritten:
            answer += f"\n\n*{say(Text('Searched for: {query} and the question as asked', query=t.query))}*"
        answer += "".join(f"\n\n*ℹ️ {say(note)}*" for note in t.notes)
        if t.answer and not t.agent:
            # What the page's badges say: an exported answer whose sentences no source holds said so too.
            grounding = t.grounding
            n = grounding.judged
            k, nowhere = len(grounding.not_supported), len(grounding.found_in_none)
            if k:
                flagged = (
                    Text("{k} of {n} sentence not supported by the source cited", k=k, n=n)
                    if n == 1
                    else Text("{k} of {n} sentences not supported by the source cited", k=k, n=n)
                )
                answer += f"\n\n*⚠️ {say(flagged)}*"
            if nowhere:
                found_in_none = (
                    Text("{k} of {n} sentence citing no source, found in none", k=nowhere, n=n)
                    if n == 1
                    else Text("{k} of {n} sentences citing no source, found in none", k=nowhere, n=n)
                )
                answer += f"\n\n*⚠️ {say(found_in_none)}*"
            if grounding.miscited:
                k = len(grounding.miscited)
                held = ", ".join(f"[{m}]" for m in dict.fromkeys(s.backing[0] for s in grounding.miscited))
                miscited = (
                    Text(
                        "{k} of {n} sentence cites a source that does not hold it, held by {held}", k=k, n=n, held=held
                    )
                    if n == 1
                    else Text(
                        "{k} of {n} sentences cite a source that does not hold them, held by {held}",
                        k=k,
                        n=n,
                        held=held,
                    )
                )
                answer += f"\n\n*⚠️ {say(miscited)}*"
            if grounding.other_language:
                k = len(grounding.other_language)
                other = (
                    Text("{k} sentence not checked: in another language than its sources", k=k)
                    if k == 1
                    else Text("{k} sentences not checked: in another language than their sources", k=k)
                )
                answer += f"\n\n*🌐 {say(other)}*"
            if grounding.grounded:
                # A sentence the model left without a marker (shown ≈ n) is supported by no citation of its own.
                every = not any(s.status == Status.UNCITED for s in grounding.sentences)
                supported = (
                    Text("Every sentence is supported by the source it cites")
                    if every
                    else Text("Every sentence citing a source is supported by it")
                )
                answer += f"\n\n*✅ {say(supported)}*"
            elif t.citations.uncited:
                answer += f"\n\n*⚠️ {say(cites_none(t))}*"
        rows.append((t.question, answer, t.sources))
    used = ", ".join(dict.fromkeys(t.model for t in turns if t.model)) or say(Text("none"))
    return conversation_markdown(rows, used, say=say, source_line=source_line)
