"""Follow-up rewriting: "and in 2023?" becomes a standalone query before it is searched.

A follow-up searched as asked finds passages about nothing; the model that answers is asked for
one line that can be understood without the conversation. Only a question that depends on the
conversation is rewritten (rag.generate.followup); a standalone one is searched as asked. The
rewrite is searched together with the question (rag.retrieve.fusion.fuse_queries), and a rewrite
that answers instead of asking, or adds words nobody said (the model's guess), is refused: then
the question is searched with the one before it. A failure is never fatal, and a note says why.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag.errors import ModelError
from rag.generate.followup import (
    about_another_exchange,
    added_words,
    asks_another_kind,
    asks_only,
    keeps_pointing,
    keeps_question,
    last_named,
    latest_numbered,
    named_things,
    repeats_earlier,
    states_answer,
    states_figure,
)
from rag.generate.sentences import MARKER, sentence_spans
from rag.llms.stream import collect
from rag.llms.types import ChatModel, Message
from rag.scripts import HAN_CHAR, language_of
from rag.text import Text, text_of

REWRITE_PROMPT = (
    "Rewrite the last question of this conversation as one standalone search query that can be "
    "understood without the conversation. Keep its words and its language; put in what words such as "
    "it, she, that, 它, 她, 那 refer to. Do not answer it. Reply with the query only.\n\n"
    "Example:\nUser: Who wrote Hamlet?\nAssistant: Shakespeare [1].\nLast question: When was he born?\n"
    "Standalone query: When was Shakespeare born?\n\n"
    "Example:\nUser: 故宫是什么？\nAssistant: 明清两代的皇宫 [1]。\nLast question: 它有多少间房？\n"
    "Standalone query: 故宫有多少间房？\n\n"
    "{history}\nLast question: {question}\nStandalone query:"
)
ZH_REWRITE_PROMPT = (
    "把这段对话的最后一个问题改写成一个独立的检索问句，不看对话也能看懂。用中文写，保留问题原来的词语；"
    "把“它、她、他、这、那”等词指的是什么写进去。不要回答它。只回复改写后的问句。\n\n"
    "Example:\nUser: 故宫是什么？\nAssistant: 明清两代的皇宫 [1]。\nLast question: 它有多少间房？\n"
    "Standalone query: 故宫有多少间房？\n\n"
    "Example:\nUser: 鲁迅的原名是什么？\nAssistant: 周树人 [1]。\nLast question: 他出生在哪里？\n"
    "Standalone query: 鲁迅出生在哪里？\n\n"
    "{history}\nLast question: {question}\nStandalone query:"
)
"""The same asked in Chinese, of a Chinese question: the embedded 1.5B model, asked in English, rewrote Chinese
follow-ups into English ("What language is the name “赛里木湖” transliterated into?", refused) or into another
subject ("What is the deepest part of Lake Baikal?"; a Chromium walk, session 38)."""


@dataclass(frozen=True)
class Rewrite:
    query: str
    """What to search: the rewrite, or the question when rewriting failed."""
    note: str = ""
    """Why the question was not searched as the model rewrote it (empty when the rewrite worked as written)."""


MAX_TURNS = 3
"""Exchanges of the conversation the rewrite prompt shows."""
MESSAGE_CHARS = 600
"""Characters of each message the rewrite prompt shows."""


def _recent(history: Sequence[Message], max_turns: int = MAX_TURNS) -> list[Message]:
    """The messages the rewrite prompt shows: the last `max_turns` exchanges, each cut to MESSAGE_CHARS."""
    return [
        Message(m.role, m.content.strip()[:MESSAGE_CHARS])
        for m in [m for m in history if m.role in ("user", "assistant")][-2 * max_turns :]
    ]


def rewrite_messages(history: Sequence[Message], question: str, max_turns: int = MAX_TURNS) -> list[Message]:
    """A prompt asking the model for a standalone retrieval query for a follow-up question."""
    lines = "\n".join(
        f"{'User' if m.role == 'user' else 'Assistant'}: {m.content}" for m in _recent(history, max_turns)
    )
    prompt = ZH_REWRITE_PROMPT if language_of(question) == "zh" else REWRITE_PROMPT
    return [Message("user", prompt.format(history=lines, question=question))]


def with_previous(history: Sequence[Message], question: str, searched: Sequence[str] = ()) -> str:
    """The question after the previous one: what is searched when no rewrite can be used ("林黛玉是谁？
    她的父亲是谁？" still names whose father), or the question alone when there is none.

    The previous one is what it was searched with when `searched` (the queries of the earlier questions, oldest
    first) says so: a follow-up of a follow-up was searched after "最早是谁建造的？", which names nothing, where
    the question before had been searched as "美庐别墅最早是谁建造的？". A thing an earlier question named by a
    number ("Model 5") that the previous one does not name alone is added (`followup.last_named`): "What is the
    warranty? How heavy is it? (Model 5)". A question asking without words of its own ("Why?") is searched with
    what the answer before it said with a source too (`answer_stated`)."""
    return _with_previous(history, question, searched)[0]


def _with_previous(history: Sequence[Message], question: str, searched: Sequence[str]) -> tuple[str, bool]:
    """`with_previous`'s query, and whether it holds what the answer before it said (`answer_stated`)."""
    earlier = _earlier(history, searched)
    previous = _last_search(searched) or (earlier[-1][0] if earlier else "")
    if not previous:
        return question, False
    stated = answer_stated(history) if asks_only(question) else ""
    query = " ".join(filter(None, (previous[-MESSAGE_CHARS:], stated, question)))
    thing = last_named(question, earlier)
    # Added where the previous search names it not, or not alone ("How much does Model 4 cost? And Model 5?").
    if thing and list(named_things(previous).values()) != [thing]:
        query += f" ({thing})"
    return query, bool(stated)


STATED_CHARS = 300
"""Characters of the answer before it a follow-up asking without words of its own is searched with."""


def answer_stated(history: Sequence[Message], limit: int | None = STATED_CHARS) -> str:
    """What the answer that ends `history` said with a source (its sentences that cite one, markers out, up to
    `limit` characters), "" where it cites none. "Why?" asks about that: searched only after the questions before
    it, which a walk's chain of two refused rewrites made "…after finishing all her courses? … Why?", the passages
    holding the reason ranked 5th and 6th and were left out of the model's prompt; the answer's own sentence is
    close to the passage it came from."""
    if not history or history[-1].role != "assistant":
        return ""
    answer = history[-1].content
    cited = (answer[a:b] for a, b in sentence_spans(answer) if MARKER.search(answer, a, b))
    said = " ".join(" ".join(MARKER.sub(" ", sentence).split()) for sentence in cited)
    return _BEFORE_MARK.sub(r"\1", said)[:limit].strip()


_BEFORE_MARK = re.compile(r"\s+([.,;:!?。，；：！？、])")
"""The space a marker left before the punctuation after it ("giving up [1]." -> "giving up .")."""


def _last_exchange(history: Sequence[Message], searched: Sequence[str]) -> str:
    """The exchange before the question: the last question, what it was searched with and what its answer said with
    a source (`answer_stated`, whole)."""
    earlier = _earlier(history, searched)
    asked = earlier[-1] if earlier else ("", "")
    return "\n".join((*asked, answer_stated(history, limit=None)))


def searched_with_previous(query: str, question: str) -> bool:
    """Whether `query` is `with_previous`'s for `question` (the question after what came before it, a space between,
    the thing it points back to after it): a model's rewrite may hold the question whole too ("美庐别墅最早是谁建造
    的？" for "最早是谁建造的？", whose sources a walk saw labelled "with previous")."""
    asked = question.strip()
    return query != asked and (query.endswith(f" {asked}") or f" {asked} (" in query)


def _last_search(searched: Sequence[str]) -> str:
    """What the question before was searched with (`searched`: oldest first), "" where nothing was."""
    return next((q.strip() for q in reversed(searched) if q.strip()), "")


def _earlier(history: Sequence[Message], searched: Sequence[str]) -> list[tuple[str, str]]:
    """Each earlier question beside what it was searched with, matched from the newest (`rag ask --history` has
    no searches: "")."""
    asked = [m.content.strip() for m in history if m.role == "user" and m.content.strip()]
    queries = [q.strip() for q in searched]
    offset = len(queries) - len(asked)
    return [(a, queries[i + offset] if i + offset >= 0 else "") for i, a in enumerate(asked)]


def subject_of(question: str, query: str, history: Sequence[Message], searched: Sequence[str] = ()) -> str:
    """The thing named by a number that `question` points back to (`followup.last_named`), where `query`, what it
    is searched with, names it ("Model 5" of "How heavy is it?"); "" otherwise: the answer's prompt says it too."""
    thing = last_named(question, _earlier(history, searched))
    return thing if thing and thing.lower() in {t.lower() for t in named_things(query).values()} else ""


ANSWER_CHARS = 200
"""A rewrite longer than this and four times the question is an answer, not a query: Qwen 1.5B
once replied "Zhen Shiyin's daughter, also known as Yinglian [1], was 20 years old." to "how old
was she?"; a standalone query adds a name or a year, not a paragraph."""


def clean_rewrite(text: str, fallback: str) -> str:
    line = next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")
    line = line.strip("\"'“”「」 ")
    return line[:500] if line else fallback


def answered_instead(rewrite: str, question: str) -> bool:
    """Whether the model answered the follow-up instead of rewriting it: the line cites a source
    (a query has no [1]) or is far longer than the question."""
    if MARKER.search(rewrite) and not MARKER.search(question):
        return True
    return len(rewrite) > max(ANSWER_CHARS, 4 * len(question))


def other_script(rewrite: str, question: str, earlier: Sequence[str] = ()) -> bool:
    """Whether `rewrite` is written in another language than `question` and than each of the `earlier` questions:
    Qwen 1.5B rewrote a Chinese follow-up in English, which the Chinese passages' keywords do not match. A
    follow-up asked in another language than the conversation ("那型号5呢？" after "How much does Model 4 cost?")
    may be rewritten in the conversation's ("Model 5 cost?"): its words are those the conversation used, which the
    passages it was answered from match (refused, it was searched as "How much does Model 4 cost? 那型号5呢？");
    a translation adding words nobody said is refused after this (`added_words`)."""
    return not any(_same_language(rewrite, asked) for asked in (question, *earlier[-MAX_TURNS:]))


def _same_language(rewrite: str, asked: str) -> bool:
    """A Chinese question's rewrite is Chinese where it holds Chinese words at all: by `rag.scripts.language_of`
    alone, "Tobias Marrin 哪一年退休？" (a name in Latin letters outweighing the Chinese) was refused as English."""
    if language_of(asked) == "zh":
        return len(HAN_CHAR.findall(rewrite)) >= 2
    return language_of(rewrite) == "en"


def rewrite_query(
    model: ChatModel,
    history: Sequence[Message],
    question: str,
    *,
    thinks: bool = False,
    searched: Sequence[str] = (),
    on_place: Callable[[int], None] | None = None,
    tick: Callable[[], None] | None = None,
) -> Rewrite:
    """The follow-up rewritten for retrieval by `model`; `thinks`: turn its thinking off for this; `searched`:
    the queries the earlier questions were searched with, oldest first (see `with_previous`); `on_place`: told
    the rewrite's place in line for a model that answers one question at a time (0: its turn); `tick`: called
    while the model works (rag.llms.stream.collect: a page's Stop raises from it, the model is stopped and the
    exception goes on). What the query names that the question points back to is `subject_of`'s."""

    def refused(note: str) -> Rewrite:
        """No rewrite can be used: the follow-up is searched after the question before it, and `note` says why,
        and what that question was searched with where it was not its own words (a walk saw the search line chain
        two earlier questions under a note that spoke of one)."""
        previous, earlier = _last_search(searched), _earlier(history, searched)
        if previous and earlier and previous != earlier[-1][0]:
            note = Text(
                "{reason} The question before it was searched as “{previous}”.",
                reason=note,
                previous=previous[-MESSAGE_CHARS:],
            )
        query, stated = _with_previous(history, question, searched)
        if stated:
            note = Text(
                "{reason} It asks about the answer before it: what that answer cited was searched too.", reason=note
            )
        return Rewrite(query, note)

    messages = rewrite_messages(history, question)
    try:
        written = collect(
            lambda stop: model.stream(messages, temperature=0.0, think=False if thinks else None, stop_event=stop),
            enough=lambda text: "\n" in text.strip(),  # one line is all clean_rewrite keeps: a base model would go on
            on_place=on_place,
            tick=tick,
            name="chat-rewrite",
        )
    except ModelError as exc:
        return refused(
            Text(
                "Rewriting the follow-up failed ({error}); searched for it with the question before it.",
                error=text_of(exc),
            ),
        )
    query = clean_rewrite(written, question)
    if answered_instead(query, question):
        return refused(
            Text(
                "The model answered the follow-up instead of rewriting it; searched for it with the question before it."
            ),
        )
    if query.strip() == question.strip():
        return refused(
            Text("The model gave the follow-up back unchanged; searched for it with the question before it."),
        )
    asked_before = [m.content for m in history if m.role == "user"]
    if other_script(query, question, asked_before):
        return refused(
            Text(
                "The model's rewrite ({rewrite}) is not in the question's language nor in the conversation's; "
                "searched for it with the question before it.",
                rewrite=query,
            ),
        )
    if repeats_earlier(query, question, asked_before):
        return refused(
            Text(
                "The model's rewrite ({rewrite}) asks an earlier question again, not this one; searched for it with "
                "the question before it.",
                rewrite=query,
            ),
        )
    # The exchange before it is read only for a question asking without words of its own (the rule's own test).
    if asks_only(question) and about_another_exchange(query, question, _last_exchange(history, searched)):
        return refused(
            Text(
                "The model's rewrite ({rewrite}) asks about something else than the answer before it; searched for it "
                "with the question before it.",
                rewrite=query,
            ),
        )
    if asks_another_kind(query, question):
        return refused(
            Text(
                "The model's rewrite ({rewrite}) asks for something else than the question does; searched for it with "
                "the question before it.",
                rewrite=query,
            ),
        )
    if not keeps_question(query, question):
        return refused(
            Text(
                "The model's rewrite ({rewrite}) leaves out what the question asks: an answer, not a query; searched "
                "for it with the question before it.",
                rewrite=query,
            ),
        )
    figures = states_figure(query, question, [*asked_before, *searched])
    if figures:
        return refused(
            Text(
                "The model's rewrite ({rewrite}) states a figure nobody asked with ({figures}): an answer, not a "
                "query; searched for it with the question before it.",
                rewrite=query,
                figures=", ".join(figures[:5]),
            ),
        )
    if states_answer(query, question):
        return refused(
            Text(
                "The model's rewrite ({rewrite}) states something where the question asks: an answer, not a query; "
                "searched for it with the question before it.",
                rewrite=query,
            ),
        )
    if keeps_pointing(query, question):
        return refused(
            Text(
                "The model's rewrite ({rewrite}) does not say what the question points back to; searched for it with "
                "the question before it.",
                rewrite=query,
            ),
        )
    # The queries searched before are said too: "美庐别墅" named by an earlier rewrite is no guess of this one.
    guessed = added_words(query, question, [*(m.content for m in _recent(history)), *searched[-MAX_TURNS:]])
    latest = latest_numbered(query, question, [m.content for m in _recent(history)])
    if guessed and latest != query:
        # Both said: a walk read "added words nobody said" alone as blaming the words, where the rewrite's fault was
        # (also) the model it named.
        return refused(
            Text(
                "The model's rewrite ({rewrite}) named what the conversation spoke of before the last and added "
                "words nobody said ({words}); searched for it with the question before it.",
                rewrite=query,
                words=", ".join(guessed[:5]),
            ),
        )
    if guessed:
        return refused(
            Text(
                "The model's rewrite ({rewrite}) added words nobody said ({words}): its guess, not the question; "
                "searched for it with the question before it.",
                rewrite=query,
                words=", ".join(guessed[:5]),
            ),
        )
    if latest != query:
        return Rewrite(
            latest,
            Text(
                "The model's rewrite ({rewrite}) named what the conversation spoke of before the last: searched for "
                "{query} instead.",
                rewrite=query,
                query=latest,
            ),
        )
    return Rewrite(query)
