"""Grounded answers: numbered sources, the prompt, citation checks and the context budget."""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rag.chunking import count_tokens
from rag.llms import ChatModel, GenerationStats, Message, asks_in_chinese
from rag.store import Hit

SYSTEM_PROMPT_EN = (
    "You are a careful assistant. Answer the user's question using only the numbered sources "
    "below. After every sentence that uses a source, cite it with its number in square brackets, "
    "like [1] or [2][3]. If the sources do not contain the answer, say that you cannot find it in "
    "the knowledge base. Answer in the language of the question.\n\nSources:\n{sources}"
)
SYSTEM_PROMPT_ZH = (
    "你是一个严谨的助手。只根据下面编号的资料回答用户的问题。每句用到资料的话后面用方括号标注资料编号，"
    "例如 [1] 或 [2][3]。如果资料中没有答案，请直接说明在知识库中找不到。用提问的语言回答。\n\n资料：\n{sources}"
)
REWRITE_PROMPT = (
    "Rewrite the last question of this conversation as one standalone search query that can be "
    "understood without the conversation. Keep its language. Reply with the query only.\n\n"
    "{history}\nLast question: {question}\nStandalone query:"
)

# [1], [1, 2], [1][2], and the full-width 【1】 that Chinese answers often use.
_MARKER = re.compile(r"[\[【]\s*(\d+(?:\s*[,，、]\s*\d+)*)\s*[\]】]")


def default_system_prompt(question: str) -> str:
    return SYSTEM_PROMPT_ZH if asks_in_chinese(question) else SYSTEM_PROMPT_EN


@dataclass(frozen=True)
class Source:
    n: int
    hit: Hit

    @property
    def label(self) -> str:
        pages = self.hit.pages
        where = ""
        if pages:
            where = f" p. {pages[0]}" if len(pages) == 1 else f" pp. {pages[0]}-{pages[-1]}"
        return f"[{self.n}] {self.hit.original_filename}{where}"


def number_sources(hits: Sequence[Hit]) -> list[Source]:
    return [Source(i, hit) for i, hit in enumerate(hits, 1)]


def format_sources(sources: Sequence[Source]) -> str:
    if not sources:
        return "(no sources were found)"
    return "\n\n".join(f"{s.label}\n{s.hit.content.strip()}" for s in sources)


def build_messages(
    question: str,
    sources: Sequence[Source],
    *,
    system_template: str | None = None,
    history: Sequence[Message] = (),
) -> list[Message]:
    """System prompt (with the numbered sources) first, then the history, then the question."""
    template = system_template or default_system_prompt(question)
    rendered = template.replace("{sources}", format_sources(sources))
    if "{sources}" not in template:
        rendered = f"{template.rstrip()}\n\nSources:\n{format_sources(sources)}"
    return [Message("system", rendered), *history, Message("user", question)]


@dataclass(frozen=True)
class CitationCheck:
    cited: tuple[int, ...]
    """Source numbers the answer cites that exist, in order of first use."""
    unknown: tuple[int, ...]
    """Markers that point at no source."""

    @property
    def uncited(self) -> bool:
        return not self.cited and not self.unknown


def citation_numbers(answer: str) -> list[int]:
    numbers: list[int] = []
    for match in _MARKER.finditer(answer):
        for part in re.split(r"[,，、]", match.group(1)):
            numbers.append(int(part.strip()))
    return numbers


def check_citations(answer: str, sources: Sequence[Source]) -> CitationCheck:
    valid = {s.n for s in sources}
    numbers = list(dict.fromkeys(citation_numbers(answer)))
    return CitationCheck(tuple(n for n in numbers if n in valid), tuple(n for n in numbers if n not in valid))


def marker_spans(answer: str) -> list[tuple[int, int, tuple[int, ...]]]:
    """(start, end, numbers) of each citation marker, for rendering them as badges."""
    spans = []
    for match in _MARKER.finditer(answer):
        numbers = tuple(int(p.strip()) for p in re.split(r"[,，、]", match.group(1)))
        spans.append((match.start(), match.end(), numbers))
    return spans


_SENTENCE = re.compile(r"[^.!?。！？]+[.!?。！？]*")
_TERMS = re.compile(r"[^\W_]+", re.UNICODE)


def _terms(text: str) -> set[str]:
    from rag.retrieve.keywords import search_text

    return {t.lower() for t in _TERMS.findall(search_text(text)) if len(t) > 2 or not t.isascii()}


def attribute_citations(answer: str, sources: Sequence[Source], *, threshold: float = 0.5) -> str:
    """Add `[n]` to each sentence whose words mostly come from one source.

    For models that cannot follow the citation instruction (the embedded base model): the
    marker then names the source the sentence was taken from, so it can still be checked.
    """
    if not sources:
        return answer
    source_terms = [(s.n, _terms(s.hit.content)) for s in sources]

    def cite(match: re.Match[str]) -> str:
        sentence = match.group()
        words = _terms(sentence)
        if not words or _MARKER.search(sentence):
            return sentence
        best_n, best = max(((n, len(words & terms) / len(words)) for n, terms in source_terms),
                           key=lambda pair: pair[1])
        if best < threshold:
            return sentence
        body = sentence.rstrip()
        core = body.rstrip(".!?。！？")
        return f"{core} [{best_n}]{body[len(core):]}{sentence[len(body):]}"

    return _SENTENCE.sub(cite, answer)


@dataclass(frozen=True)
class Budget:
    system: int
    sources: int
    history: int
    question: int
    reserve: int
    """Tokens kept free for the answer."""
    limit: int

    @property
    def used(self) -> int:
        return self.system + self.sources + self.history + self.question

    @property
    def fits(self) -> bool:
        return self.used + self.reserve <= self.limit

    @property
    def share(self) -> float:
        return (self.used + self.reserve) / self.limit if self.limit else 1.0


def context_budget(messages: Sequence[Message], sources: Sequence[Source], context_length: int,
                   *, reserve: int = 512, preamble: str | None = None) -> Budget:
    """Token use per part of the prompt, counted with cl100k (an estimate of the model's own).

    `preamble` is text the model puts before the prompt itself (the embedded model's worked
    example, `rag.llms.citation_example`); it counts as system."""
    system_total = count_tokens(messages[0].content) if messages else 0
    system_total += count_tokens(preamble) if preamble else 0
    source_tokens = count_tokens(format_sources(sources)) if sources else 0
    history = sum(count_tokens(m.content) for m in messages[1:-1])
    question = count_tokens(messages[-1].content) if len(messages) > 1 else 0
    return Budget(max(system_total - source_tokens, 0), source_tokens, history, question, reserve,
                  context_length)


def rewrite_messages(history: Sequence[Message], question: str, max_turns: int = 3) -> list[Message]:
    """A prompt asking the model for a standalone retrieval query for a follow-up question."""
    recent = [m for m in history if m.role in ("user", "assistant")][-2 * max_turns:]
    lines = "\n".join(f"{'User' if m.role == 'user' else 'Assistant'}: {m.content.strip()[:600]}" for m in recent)
    return [Message("user", REWRITE_PROMPT.format(history=lines, question=question))]


def clean_rewrite(text: str, fallback: str) -> str:
    line = next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")
    line = line.strip("\"'“”「」 ")
    return line[:500] if line else fallback


def conversation_markdown(turns: Sequence[tuple[str, str, Sequence[Source]]], model: str) -> str:
    """A conversation (question, answer, sources) as Markdown with its sources listed per turn."""
    parts = [f"# Conversation\n\nModel: {model}\n"]
    for i, (question, answer, sources) in enumerate(turns, 1):
        parts.append(f"## {i}. {question}\n\n{answer.strip()}\n")
        if sources:
            parts.append("**Sources**\n")
            for s in sources:
                parts.append(f"- {s.label} (score {s.hit.score:.3f}, chunk {s.hit.id})")
            parts.append("")
    return "\n".join(parts).rstrip() + "\n"


@dataclass(frozen=True)
class Answer:
    question: str
    text: str
    thinking: str
    sources: tuple[Source, ...]
    citations: CitationCheck
    model: str
    stats: GenerationStats | None
    stopped: bool = False
    attributed: bool = False
    """The markers were added by `attribute_citations`, not written by the model."""

    def as_dict(self) -> dict[str, object]:
        by_n = {s.n: s for s in self.sources}
        return {
            "answer": self.text,
            "citations": [
                {"n": n, "original_filename": by_n[n].hit.original_filename, "pages": list(by_n[n].hit.pages),
                 "score": round(by_n[n].hit.score, 6), "chunk_id": str(by_n[n].hit.id)}
                for n in self.citations.cited
            ],
            "unknown_citations": list(self.citations.unknown),
            "citations_attributed": self.attributed,
            "model": self.model,
        }


def collect(question: str, model: ChatModel, messages: Sequence[Message], sources: Sequence[Source],
            *, temperature: float = 0.2, think: bool | None = None) -> Answer:
    """Run a generation to its end and check its citations (the CLI's `ask`)."""
    text: list[str] = []
    thinking: list[str] = []
    stats = None
    for event in model.stream(messages, temperature=temperature, think=think):
        if event.kind == "content":
            text.append(event.text)
        elif event.kind == "thinking":
            thinking.append(event.text)
        elif event.kind == "done":
            stats = event.stats
    answer = "".join(text).strip()
    attributed = False
    if cites_by_itself(model.name) is False and check_citations(answer, sources).uncited:
        answer = attribute_citations(answer, sources)
        attributed = not check_citations(answer, sources).uncited
    return Answer(question, answer, "".join(thinking).strip(), tuple(sources), check_citations(answer, sources),
                  model.name, stats, stopped=bool(stats and stats.done_reason == "stopped"), attributed=attributed)


def cites_by_itself(model_name: str) -> bool:
    """Whether a model can be asked to cite: the embedded base model only completes text."""
    return not model_name.startswith("local:")
