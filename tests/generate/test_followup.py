"""Which questions are rewritten (only follow-ups), which rewrites are refused (the model's guesses), and how
the two searches of a rewritten follow-up are fused."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import replace
from typing import Any

import pytest

from rag.generate.engine import FOUND_BY
from rag.generate.followup import (
    about_another_exchange,
    added_words,
    asks_another_kind,
    depends_on_conversation,
    keeps_question,
    repeats_earlier,
    states_answer,
)
from rag.generate.rewrite import rewrite_query, searched_with_previous, with_previous
from rag.llms.types import Message, StreamEvent
from rag.retrieve.fusion import QUESTION_WEIGHT, fuse_queries
from rag.scripts import language_of
from rag.store import Hit
from tests.generate.test_watch import ScriptedModel

STANDALONE = [
    # Asked in the conversations where rewriting spoiled them (issue 27).
    "Which method must a server support besides GET?",
    "What does status code 414 mean?",
    "How does HTTP handle caching when it is disabled by the client?",
    "What is HNSW?",
    "Who wrote RFC 2616?",
    "林黛玉的父亲是谁？",
    "Is it true that the server must support HEAD in every version?",
    "How long does it take to build an HNSW index?",
    "贾宝玉出生时嘴里衔着什么？",
    "林黛玉的父亲是谁呢？",
    "为什么天空是蓝色的？",
    "怎么安装Python？",
    "应该如何配置服务器？",
    "荣国府在哪座城市？",
    "其他国家的首都有哪些？",
    "什么是HNSW？",
    "2024年的营收是多少？",
    "最后一位守塔人是谁？",  # taken for a follow-up in the Chromium walk (session 15)
    "最早一批移民来自哪里？",
]
FOLLOW_UPS = [
    "And in 2024?",
    "and what about Java?",
    "What about the second one?",
    "How old was she?",
    "When was it built?",
    "What does the server do with it?",
    "Why?",
    "How so?",
    "Tell me more.",
    "Why is that?",
    "In 2024?",
    "Java?",
    "Which of these is faster?",
    "Is that true for HEAD as well?",
    "Where was that race held?",  # missed by the first rules (the conversation bench)
    "最早是谁建造的？",  # the subject left to the conversation
    "最后一次是什么时候？",
    "最后一位是谁？",
    "位于哪个城市？",
    "它是哪一年建成的？",
    "那他的父亲呢？",
    "她的母亲是谁？",
    "贾政呢？",
    "还有呢？",
    "第二个呢？",
    "为什么？",
    "几岁？",
    "其中哪个最大？",
    "该公司成立于哪一年？",
    "这本书的作者是谁？",
    "另外一个是什么？",
    "前者和后者有什么不同？",
]


@pytest.mark.parametrize("question", STANDALONE)
def test_a_standalone_question_is_searched_as_asked(question: str) -> None:
    assert not depends_on_conversation(question)


@pytest.mark.parametrize("question", FOLLOW_UPS)
def test_a_question_that_points_back_or_leaves_out_is_a_follow_up(question: str) -> None:
    assert depends_on_conversation(question)


HISTORY = [
    "Which method must a server support besides GET?",
    "A server must support HEAD as well [1].",
    "林黛玉是谁？",
    "林黛玉是林如海和贾敏的女儿，贾母的外孙女 [2]。",
]


@pytest.mark.parametrize(
    ("rewrite", "question", "guessed"),
    [
        # The model's own answers, as seen in issue 27's conversations.
        ("贾政的长女叫王熙凤。", "贾政的长女叫什么？", ["王熙凤"]),
        ("GET, POST", "Which one is the other?", ["post"]),
        ("http://www.example.com:80", "What is its default port?", ["http", "www", "com", "80"]),
        ("林黛玉的父亲是贾赦", "她的父亲是谁？", ["贾赦"]),
    ],
)
def test_a_rewrite_with_words_nobody_said_is_the_models_guess(rewrite: str, question: str, guessed: list[str]) -> None:
    added = added_words(rewrite, question, HISTORY)
    assert [word for word in guessed if not any(word in a for a in added)] == []


def test_a_new_word_is_named_without_the_said_word_it_touches() -> None:
    """A walk's note said the rewrite added "手机重": 重量 is what 多重 asks for, 手机 the word nobody said."""
    said = ["型号4多少钱？", "型号4售价18,500元 [1]。", "那型号5呢？"]
    assert added_words("型号4和型号5的手机重量是多少？", "它们有多重？", said) == ["手机"]
    assert added_words("型号5的重量手机是多少？", "它有多重？", said) == ["手机"]


@pytest.mark.parametrize(
    ("rewrite", "question"),
    [
        ("林黛玉的父亲是谁？", "她的父亲是谁？"),
        ("林黛玉的母亲叫什么名字？", "她的母亲呢？"),  # 名字, 什么: words that ask
        ("Does a server have to support HEAD?", "And HEAD?"),
        ("What is the meaning of HEAD for servers?", "What does it mean?"),
        ("林黛玉母亲是哪一年出生的？", "她母亲是哪一年出生的？"),  # 玉母 joins two said words: a seam, not a word
    ],
)
def test_a_rewrite_from_the_conversations_words_is_kept(rewrite: str, question: str) -> None:
    assert added_words(rewrite, question, HISTORY) == []


def test_a_guessing_rewrite_is_refused_and_the_question_searched_with_the_one_before() -> None:
    history = [Message("user", "林黛玉是谁？"), Message("assistant", "贾母的外孙女 [1]。")]
    guess = ScriptedModel([StreamEvent("content", "林黛玉的父亲是贾赦")])
    result = rewrite_query(guess, history, "她的父亲是谁？")
    assert result.query == "林黛玉是谁？ 她的父亲是谁？" == with_previous(history, "她的父亲是谁？")
    assert "贾赦" in result.note and "guess" in result.note
    kept = rewrite_query(ScriptedModel([StreamEvent("content", "林黛玉的父亲是谁？")]), history, "她的父亲是谁？")
    assert kept.query == "林黛玉的父亲是谁？" and kept.note == ""
    assert with_previous([], "Why?") == "Why?"


def test_a_refused_rewrite_is_searched_after_what_the_question_before_was_searched_with() -> None:
    """A follow-up of a follow-up: "最早是谁建造的？" names nothing; it was searched as "美庐别墅最早是谁建造的？",
    and that is what the next refused rewrite is searched after (the conversation bench searched "最早是谁建造的？
    那它是怎么得名的？" and answered who lived there)."""
    history = [
        Message("user", "美庐别墅在哪里？"),
        Message("assistant", "在牯岭东谷 [1]。"),
        Message("user", "最早是谁建造的？"),
        Message("assistant", "英国人赖有仁 [1]。"),
    ]
    searched = ["美庐别墅在哪里？", "美庐别墅最早是谁建造的？"]
    unchanged = ScriptedModel([StreamEvent("content", "那它是怎么得名的？")])
    result = rewrite_query(unchanged, history, "那它是怎么得名的？", searched=searched)
    assert result.query == "美庐别墅最早是谁建造的？ 那它是怎么得名的？" and "unchanged" in result.note
    # Without what was searched (`rag ask --history` gives messages only): the user's previous words.
    assert with_previous(history, "那它是怎么得名的？") == "最早是谁建造的？ 那它是怎么得名的？"


def test_a_question_asking_without_words_of_its_own_is_searched_with_what_the_answer_before_it_cited() -> None:
    """A Chromium walk: "Why?" after a right answer, its rewrite refused as the earlier question again, was searched
    after the two questions before it ("…after finishing all her courses? Why?"); the passages holding the reason
    ranked 5th and 6th and were left out of the prompt. What the answer said with a source is searched too."""
    history = [
        Message("user", "What did Ellen Rema do after finishing all her courses?"),
        Message(
            "assistant", "She chose to continue studying on Englishtown instead of giving up [1]. I hope it helps!"
        ),
    ]
    earlier = "What did Ellen Rema do after finishing all her courses?"
    stated = "She chose to continue studying on Englishtown instead of giving up."
    assert with_previous(history, "Why?") == f"{earlier} {stated} Why?"
    assert with_previous(history, "Why is that?") == f"{earlier} {stated} Why is that?"
    # A question with words of its own, or pointing at someone or something, asks about them, not about the answer.
    assert with_previous(history, "Where does she live?") == f"{earlier} Where does she live?"
    assert with_previous(history, "Where is it?") == f"{earlier} Where is it?"
    assert with_previous(history, "How so?") == f"{earlier} {stated} How so?"
    # An answer that cites nothing said nothing found: the question before it only.
    uncited = [*history[:1], Message("assistant", "The sources do not say.")]
    assert with_previous(uncited, "Why?") == f"{earlier} Why?"
    zh = [
        Message("user", "美庐别墅最早是谁建造的？"),
        Message("assistant", "最早由英国人赖有仁建造【1】。后来几经转手。"),
    ]
    assert with_previous(zh, "为什么？") == "美庐别墅最早是谁建造的？ 最早由英国人赖有仁建造。 为什么？"
    assert with_previous(zh, "为什么会这样？") == "美庐别墅最早是谁建造的？ 最早由英国人赖有仁建造。 为什么会这样？"
    assert with_previous(zh, "它在哪里？") == "美庐别墅最早是谁建造的？ 它在哪里？"
    # Refused (the question before asked again), the note says what was searched.
    again = ScriptedModel([StreamEvent("content", earlier)])
    result = rewrite_query(again, history, "Why?", searched=[earlier])
    assert result.query == f"{earlier} {stated} Why?"
    assert "asks an earlier question again" in result.note and "what that answer cited was searched too" in result.note
    # A rewrite that is used is searched as written.
    whole = "Why did Ellen Rema continue studying on Englishtown?"
    kept = rewrite_query(ScriptedModel([StreamEvent("content", whole)]), history, "Why?", searched=[earlier])
    assert kept.query == whole and kept.note == ""


def test_a_why_rewritten_about_another_exchange_is_refused() -> None:
    """A Chromium walk: "why?" after "What do people do on Red Wednesday in Iran?" came back "Why did Thelma keep
    looking at a gentleman?" (asked two turns before) and was searched; in a new conversation, after an answer that
    ran on uncited into the next passage, "Why is the Quebec Winter Carnival popular?". The Red Wednesday passage was
    left out both times."""
    asked = "What do people do on Red Wednesday in Iran?"
    said = "Red Wednesday in Iran is a fire jumping festival [1]. People jump over the fire [1]."
    history = [
        Message("user", "At her 80th birthday party, why did Thelma keep looking at a gentleman?"),
        Message("assistant", "She could not help looking his way [1]."),
        Message("user", asked),
        Message("assistant", f"{said} They hope that it will take all the bad things away."),
    ]
    searched = ["At her 80th birthday party, why did Thelma keep looking at a gentleman?", asked]
    other = ScriptedModel([StreamEvent("content", "Why did Thelma keep looking at a gentleman?")])
    result = rewrite_query(other, history, "why?", searched=searched)
    assert "asks about something else than the answer before it" in result.note
    assert result.query == f"{asked} {said.replace(' [1]', '')} why?"
    run_on = [
        Message("user", asked),
        Message("assistant", "People jump over the fire. The Quebec Winter Carnival is fun."),
    ]
    quebec = ScriptedModel([StreamEvent("content", "Why is the Quebec Winter Carnival popular?")])
    result = rewrite_query(quebec, run_on, "why?", searched=[asked])
    assert "something else than the answer before it" in result.note and result.query == f"{asked} why?"
    # About the exchange before it, in its words: used.
    whole = "Why do people jump over the fire on Red Wednesday in Iran?"
    kept = rewrite_query(ScriptedModel([StreamEvent("content", whole)]), history, "why?", searched=searched)
    assert kept.query == whole and kept.note == ""
    zh = [
        Message("user", "最早是谁建造的？"),
        Message("assistant", "美庐别墅是英国人西伊勋爵在脂红路12号地皮建造的【1】。"),
    ]
    reason = "为什么英国人西伊勋爵建造了美庐别墅？"
    kept = rewrite_query(
        ScriptedModel([StreamEvent("content", reason)]), zh, "为什么？", searched=["美庐别墅最早是谁建造的？"]
    )
    assert kept.query == reason and kept.note == ""
    # A question with words of its own may be rewritten with what came before the last exchange.
    assert not about_another_exchange("Why did Thelma keep looking?", "Why did she keep looking?", asked)


def test_a_rewrite_stating_an_answer_where_the_question_asks_is_refused() -> None:
    """A walk: "1959年谁在那里住过？" came back "1959年陈布雷住过美庐别墅。" (a name an answer had said: no new
    word) and was searched; the answer named him."""
    history = [
        Message("user", "美庐别墅在哪里？"),
        Message("assistant", "在庐山牯岭东谷 [1]。陈布雷曾在庐山疗养 [2]。"),
    ]
    result = rewrite_query(
        ScriptedModel([StreamEvent("content", "1959年陈布雷住过美庐别墅。")]), history, "1959年谁在那里住过？"
    )
    assert "states something where the question asks" in result.note
    assert result.query == "美庐别墅在哪里？ 1959年谁在那里住过？"
    assert states_answer("The board paid 42 cents.", "What did the board pay?")
    # Asking, or keywords with no full stop, or a question asking with no question word: not a statement.
    assert not states_answer("1959年谁住过美庐别墅？", "1959年谁在那里住过？")
    assert not states_answer("美庐别墅建成年份", "它是哪一年建成的？")
    assert not states_answer("Model 5.", "And Model 5?")


def test_what_a_refused_rewrite_searched_is_told_from_a_rewrite_holding_the_question() -> None:
    assert searched_with_previous("美庐别墅在哪里？ 最早是谁建造的？", "最早是谁建造的？")
    assert searched_with_previous("What is the warranty? How heavy is it? (Model 5)", "How heavy is it?")
    assert not searched_with_previous("美庐别墅最早是谁建造的？", "最早是谁建造的？")
    assert not searched_with_previous("Why?", "Why?")


def test_a_subject_an_earlier_search_named_is_no_guess() -> None:
    """The user never wrote 美庐别墅 after the first question, but an accepted rewrite searched it: naming it
    again is the conversation's word, not the model's."""
    history = [
        Message("user", "它是哪一年建成的？"),
        Message("assistant", "1903年 [1]。"),
    ]
    model = ScriptedModel([StreamEvent("content", "美庐别墅最早是谁建造的？")])
    kept = rewrite_query(model, history, "最早是谁建造的？", searched=["美庐别墅是哪一年建成的？"])
    assert kept.query == "美庐别墅最早是谁建造的？" and kept.note == ""
    model = ScriptedModel([StreamEvent("content", "美庐别墅最早是谁建造的？")])
    assert "美庐" in rewrite_query(model, history, "最早是谁建造的？").note  # nobody said it: refused


@pytest.mark.parametrize(
    ("question", "rewrite", "refused"),
    [
        ("这个名字是哪种语言的音译？", "What language is the name Sayram Lake transliterated from?", True),
        ("它最深处有多深？", "赛里木湖最深处有多深？", False),
        ("它在HTTP/1.1里是什么意思？", "HEAD在HTTP/1.1里是什么意思？", False),  # names in Latin letters
        ("When was it built?", "When was 美庐别墅 built?", False),  # a Chinese name in an English question
        ("When was it built?", "美庐别墅是哪一年建成的？", True),
        ("他哪一年退休？", "Tobias Marrin 哪一年退休？", False),  # a long Latin name outweighs the Chinese words
    ],
)
def test_a_rewrite_in_another_language_than_the_question_is_refused(question: str, rewrite: str, refused: bool) -> None:
    """The conversation before was in the question's language too: the rewrite's is nobody's."""
    said = "说一说赛里木湖、美庐别墅、HEAD、Sayram Lake 和 Tobias Marrin 的情况。"
    if language_of(question) == "en":
        said = "Tell me more about 赛里木湖, 美庐别墅, HEAD, Sayram Lake and Tobias Marrin please."
    assert language_of(said) == language_of(question)
    history = [Message("user", said), Message("assistant", "[1]")]
    result = rewrite_query(ScriptedModel([StreamEvent("content", rewrite)]), history, question)
    assert ("not in the question's language" in result.note) is refused
    assert (result.query == rewrite) is not refused


@pytest.mark.parametrize(
    ("asked", "answered", "question", "rewrite", "note"),
    [
        # The conversation's language and words: searched as written (it was refused, and the follow-up searched as
        # "How much does Model 4 cost? 那型号5呢？").
        ("How much does Model 4 cost?", "$18,500.00 [1].", "那型号5呢？", "How much does Model 5 cost?", ""),
        ("型号4多少钱？", "18,500元[1]。", "And Model 5?", "型号5多少钱？", ""),
        # A translation putting in what nobody said is a guess still, in either language.
        (
            "How much does Model 4 cost?",
            "$18,500.00 [1].",
            "那型号5呢？",
            "What is the warranty of Model 5?",
            "warranty",
        ),
        # The conversation's language is that of its questions before, not only of the last one (a walk: "它有多重？"
        # after two English questions and "那型号5呢？" was told its English rewrite was in neither).
        (
            "How much does Model 5 cost?|$21,000.00 [1].|那型号5呢？",
            "Model 5 costs $21,000.00 [1].",
            "它有多重？",
            "Model 5 weight?",
            "",
        ),
        # Neither the question's language nor the conversation's.
        ("How much does Model 4 cost?", "$18,500.00 [1].", "And Model 5?", "型号5多少钱？", "not in the question's"),
    ],
)
def test_a_follow_up_in_another_language_may_be_rewritten_in_the_conversations(
    asked: str, answered: str, question: str, rewrite: str, note: str
) -> None:
    *before, asked = asked.split("|")
    history = [Message(role, text) for role, text in zip(["user", "assistant"] * 2, before)]
    history += [Message("user", asked), Message("assistant", answered)]
    result = rewrite_query(ScriptedModel([StreamEvent("content", rewrite)]), history, question)
    if note:
        assert note in result.note and result.query != rewrite, result
    else:
        assert result.query == rewrite and result.note == "", result


def _hit(name: str, score: float) -> Hit:
    return Hit(id=uuid.uuid5(uuid.NAMESPACE_URL, name), content=name, metadata={}, score=score)


def test_fused_queries_lead_with_the_rewrite_and_keep_the_questions_best() -> None:
    rewrite = [_hit(f"r{i}", 1.0 - i / 10) for i in range(1, 9)]
    question = [_hit(f"q{i}", 0.9 - i / 10) for i in range(1, 9)]
    fused = fuse_queries([rewrite, question], (1.0, QUESTION_WEIGHT), 8)
    assert [h.content for h in fused] == ["r1", "r2", "r3", "q1", "r4", "r5", "q2", "r6"]
    # Found by both: ahead of what either found alone, shown as the list that ranked it highest found it (the
    # question's first against the rewrite's fourth).
    both = [_hit("shared", 0.3)]
    fused = fuse_queries([rewrite[:3] + both, [_hit("shared", 0.95), *question[:3]]], (1.0, QUESTION_WEIGHT), 3)
    assert fused[0].content == "shared" and fused[0].score == 0.95
    # A walk: the question's #1 (the rewrite's #2) numbered [1] was shown as "rewrite: hybrid #2", above [2], the
    # rewrite's #1, which read as out of rank; it is shown as the question's #1.
    price, company = _hit("price", 0.5), _hit("company", 0.4)
    fused = fuse_queries([[price, company], [_hit("company", 0.9), price]], (1.0, QUESTION_WEIGHT), 2, FOUND_BY)
    assert {(h.content, h.found_by, h.score) for h in fused} == {
        ("company", "question", 0.9),
        ("price", "rewrite", 0.5),
    }
    with pytest.raises(ValueError, match="2 lists of hits but 1 weights"):
        fuse_queries([rewrite, question], (1.0,), 8)
    with pytest.raises(ValueError, match="2 lists of hits but 2 weights and 1 names"):
        fuse_queries([rewrite, question], (1.0, QUESTION_WEIGHT), 8, ("rewrite",))


def test_each_fused_source_names_the_search_whose_ranks_it_shows() -> None:
    """Both lists have a first hit: the sources of a follow-up showed "vector #1" twice, with nothing to tell
    which search ranked them."""
    ranked = [
        replace(_hit(f"r{rank}", 0.9 - rank / 10), vector_rank=rank, vector_score=0.9 - rank / 10)
        for rank in range(1, 5)
    ]
    asked = [replace(ranked[3], vector_rank=1, vector_score=0.75), replace(_hit("q1", 0.7), vector_rank=2)]
    fused = fuse_queries([ranked, asked], (1.0, QUESTION_WEIGHT), 5, ("rewrite", "question"))
    assert [(h.content, h.found_by, h.vector_rank) for h in fused] == [
        ("r4", "question", 1),  # fourth in the rewrite's list (1 / 14), first in the question's (0.8 / 11)
        ("r1", "rewrite", 1),
        ("r2", "rewrite", 2),
        ("r3", "rewrite", 3),
        ("q1", "question", 2),
    ]
    assert [h.ranking for h in fused[:2]] == ["question: vector #1 (0.75)", "rewrite: vector #1 (0.80)"]
    assert fused[1].as_dict()["found_by"] == "rewrite"  # the MCP search tool's field
    single = fuse_queries([ranked], (1.0,), 3)
    assert single[0].found_by is None and single[0].ranking == "vector #1 (0.80)"


@pytest.mark.parametrize(
    ("rewrite", "question", "kept"),
    [
        ("HEAD", "What does it return?", False),  # Qwen 1.5B's answer in place of a query
        ("贾母", "她的母亲是谁？", False),  # the same, and a wrong answer
        ("故宫建成年份", "它是哪一年建成的？", True),
        ("Why does a server return status code 414?", "Why would a server return that?", True),
        ("How many hours do teenagers need?", "How many hours do they need?", True),
        ("Revenue growth in 2024?", "And in 2024?", True),
        ("Anything at all", "Why?", True),  # nothing of its own to lose
        ("美庐别墅的名称由何而来？", "它是怎么得名的？", True),  # other words, still a question
    ],
)
def test_a_rewrite_must_still_ask_what_the_question_asks(rewrite: str, question: str, kept: bool) -> None:
    assert keeps_question(rewrite, question) is kept


@pytest.mark.parametrize(
    ("rewrite", "question", "other"),
    [
        ("华西协合大学的前身是什么？", "它是什么时候建的？", True),  # a walk: the question before, of its answer
        ("the American mansion", "它是什么时候建的？", False),  # asks nothing: a guess, refused as one
        ("美庐别墅是什么时候建的？", "它是什么时候建的？", False),
        ("故宫建成年份", "它是哪一年建成的？", False),  # the time asked by a noun
        ("美庐别墅的名称由何而来？", "它是怎么得名的？", False),  # no kind asked: other words may ask it
        ("Where was the Sydney Opera House built?", "Who built it?", True),
        ("Who built the Harbour Lighthouse?", "Who built it?", False),
        ("西施故里旅游区的总面积是多少？", "那它的总面积是多少？", False),
        ("What is the number of rooms in the palace?", "How many rooms does it have?", False),
    ],
)
def test_a_rewrite_must_ask_for_the_kind_of_thing_the_question_asks_for(
    rewrite: str, question: str, other: bool
) -> None:
    assert asks_another_kind(rewrite, question) is other


def test_an_asking_word_said_in_other_words_is_no_added_word() -> None:
    """A walk: "华西医院何时建？" for "它是什么时候建的？" was refused as adding "何时建"."""
    history = ["华西医院的前身是什么？", "华西协合大学[1]"]
    assert added_words("华西医院何时建？", "它是什么时候建的？", history) == []
    assert added_words("华西医院何时扩建？", "它是什么时候建的？", history) == ["扩建"]


def test_a_rewrite_asking_the_question_before_of_its_answer_is_refused() -> None:
    history = [Message("user", "华西医院的前身是什么？"), Message("assistant", "华西协合大学[1]")]
    model = ScriptedModel([StreamEvent("content", "华西协合大学的前身是什么？")])
    result = rewrite_query(model, history, "它是什么时候建的？")
    assert result.query == "华西医院的前身是什么？ 它是什么时候建的？"
    assert "asks for something else than the question does" in result.note


def test_an_answer_word_in_place_of_the_rewrite_is_refused() -> None:
    history = [
        Message("user", "Which method must a server support besides GET?"),
        Message("assistant", "A server must support HEAD as well as GET [1]."),
    ]
    result = rewrite_query(ScriptedModel([StreamEvent("content", "HEAD")]), history, "What does it return?")
    assert result.query == "Which method must a server support besides GET? What does it return?"
    assert "leaves out what the question asks" in result.note


def test_a_follow_up_given_back_unchanged_is_searched_with_the_question_before() -> None:
    history = [Message("user", "How much did revenue grow in 2023?"), Message("assistant", "11 percent [1].")]
    result = rewrite_query(ScriptedModel([StreamEvent("content", "And in 2024?")]), history, "And in 2024?")
    assert result.query == "How much did revenue grow in 2023? And in 2024?" and "unchanged" in result.note


@pytest.mark.parametrize(
    ("rewrite", "question", "repeats"),
    [
        # Seen on the conversation bench: the earlier question asked again in place of the follow-up.
        ("When did the first people come to Hawaii?", "How did they get there?", True),  # asked "…come there?"
        ("When did the first people come to Hawaii?", "Back to the hurdler: what stopped him from finishing?", True),
        ("元皇后是哪位帝王的皇后？", "那她的父亲呢？", True),
        ("How did the first people get to Hawaii?", "How did they get there?", False),
        ("林黛玉的父亲是谁？", "她的父亲是谁？", False),
        ("What stopped Liu Xiang from finishing?", "Back to the hurdler: what stopped him from finishing?", False),
        # The earlier question's words, asked another way: the follow-up made whole (seen in a Chromium walk).
        ("Who built the Harbour Lighthouse?", "Who built it?", False),
        ("When was the Harbour Lighthouse built?", "Who built it?", True),
        ("港口灯塔是谁建造的？", "它是谁建造的？", False),
        # Asked another way, adding nothing and leaving out what the follow-up adds ("heavy"): a walk's rewrite.
        ("How much does the Model 3 cost?", "How heavy is it?", True),
        ("How heavy is the Model 3?", "How heavy is it?", False),
    ],
)
def test_a_rewrite_that_asks_an_earlier_question_again_is_refused(rewrite: str, question: str, repeats: bool) -> None:
    earlier = [
        "When did the first people come there?",
        "Who is Liu Xiang?",
        "元皇后是哪位帝王的皇后？",
        "林黛玉是谁？",
        "When was the Harbour Lighthouse built?",
        "港口灯塔是哪一年建造的？",
        "What does Model 3 cost?",
    ]
    assert repeats_earlier(rewrite, question, earlier) is repeats
    history = [Message("user", earlier[0]), Message("assistant", "About 1,500 years ago [1].")]
    result = rewrite_query(ScriptedModel([StreamEvent("content", rewrite)]), history, question)
    assert ("asks an earlier question again" in result.note) is (repeats and "Hawaii" in rewrite)


def test_the_rewrite_and_the_summary_tell_their_place_in_line() -> None:
    """Issue 33: a follow-up's rewrite (and the summary of a long conversation) waited for the embedded model
    with only a spinner, while the answer after them said its place; they are told the places too."""
    from rag.generate.memory import summarize

    history = [Message("user", "林黛玉是谁？"), Message("assistant", "林黛玉是《红楼梦》的女主角之一。")]
    line = [StreamEvent("queue", place=2), StreamEvent("queue", place=1), StreamEvent("queue", place=0)]
    places: list[int] = []
    model = ScriptedModel([*line, StreamEvent("content", "林黛玉的父亲是谁？")])
    kept = rewrite_query(model, history, "她的父亲是谁？", on_place=places.append)
    assert kept.query == "林黛玉的父亲是谁？" and places == [2, 1, 0]
    places.clear()
    summary = summarize(ScriptedModel([*line, StreamEvent("content", "问了林黛玉。")]), history, on_place=places.append)
    assert summary == "问了林黛玉。" and places == [2, 1, 0]


def test_an_answer_in_the_questions_language_is_refused_as_an_answer_not_as_another_language() -> None:
    """The walk's "那他哪一年退休？" got "Tobias Marrin 在 1906 年退休。" (an invented answer), which the app called
    a rewrite "not in the question's language"."""
    history = [Message("user", "Tobias Marrin 是哪一年被任命的？"), Message("assistant", "1901 年 [1]。")]
    model = ScriptedModel([StreamEvent("content", "Tobias Marrin 在 1906 年退休。")])
    result = rewrite_query(model, history, "那他哪一年退休？")
    assert result.query != "Tobias Marrin 在 1906 年退休。" and result.note
    assert "language" not in result.note and ("answer" in result.note or "1906" in result.note), result.note


class _Reading:
    """A model that reads its prompt for a long time, watching its stop event as the real ones do."""

    name = "ollama:reading"
    supports_tools = False
    supports_thinking = False

    def __init__(self) -> None:
        self.stopped = threading.Event()

    def stream(
        self, messages: Any, *, temperature: float = 0.2, num_ctx: Any = None, think: Any = None, stop_event: Any = None
    ) -> Any:
        for _ in range(400):  # 20 s at most
            if stop_event is not None and stop_event.wait(0.05):
                self.stopped.set()
                return
        yield StreamEvent("content", "never")


def test_a_stop_raised_while_the_model_reads_the_rewrite_prompt_stops_the_model() -> None:
    """A walk: no Stop for 14-22 s while the embedded model rewrote a follow-up. The rewrite calls `tick` while the
    model reads its prompt; what `tick` raises (a page's Stop ends its run so) stops the model and goes on."""

    class Stopped(Exception):
        pass

    ticks: list[float] = []

    def tick() -> None:
        ticks.append(time.monotonic())
        if len(ticks) == 3:
            raise Stopped

    model = _Reading()
    history = [Message("user", "How much does Model 4 cost?"), Message("assistant", "$18,500.00 [1].")]
    started = time.monotonic()
    with pytest.raises(Stopped):
        rewrite_query(model, history, "How heavy is it?", tick=tick)  # type: ignore[arg-type]
    assert model.stopped.wait(2.0) and time.monotonic() - started < 5.0
    assert len(ticks) == 3 and ticks[1] - ticks[0] >= 0.2  # every TICK_SECONDS, not in a busy loop


def test_a_stop_raised_while_the_model_reads_the_summary_prompt_stops_the_model() -> None:
    """The summary of a long conversation is the other model call made before an answer: stoppable the same way."""
    from rag.generate.memory import summarize

    class Stopped(Exception):
        pass

    def tick() -> None:
        raise Stopped

    model = _Reading()
    with pytest.raises(Stopped):
        summarize(model, [Message("user", "Who is Lin Daiyu?"), Message("assistant", "A heroine [1].")], tick=tick)  # type: ignore[arg-type]
    assert model.stopped.wait(2.0)


_ELLEN = [
    "How long did it take Ellen Rema to finish all her courses?",
    "Ellen finished all her courses after 2 years [1].",
    "And what did she do after that?",
    "She chose to study for two more years [2].",
]


@pytest.mark.parametrize(
    ("question", "follows"),
    [
        # Its opening phrase's pronouns point to the name after it, which the conversation never wrote: a new topic,
        # searched as asked (a Chromium walk's question was searched with the questions about Ellen before it).
        (
            "At her 80th birthday party, why did Thelma keep looking at a gentleman, "
            "and how many times had she been married?",
            False,
        ),
        ("When she was young, where did Thelma live?", False),
        # The pronoun is someone the conversation named, or the name is not after the phrase holding it.
        ("At her party, why did Ellen cry?", True),
        ("Why did she choose Englishtown?", True),
        ("When did she meet Thelma?", True),
    ],
)
def test_a_question_naming_whom_its_pronouns_point_to_stands_alone(question: str, follows: bool) -> None:
    assert depends_on_conversation(question, _ELLEN) is follows


def test_a_pronoun_after_the_name_points_elsewhere_and_a_rewrite_names_its_subject() -> None:
    """A review of session 47's rules: "…, what did Mary say to her?" speaks of someone before Mary; "After Englishtown,
    what did she do…?" puts a place in, not whom "she" is."""
    from rag.generate.followup import keeps_pointing

    assert depends_on_conversation("After she finished all her courses, what did Mary say to her?", _ELLEN)
    question = "And what did she do after that?"
    assert keeps_pointing("After Englishtown, what did she do after that?", question)
    assert not keeps_pointing("What did Ellen Rema do after finishing all her courses?", question)
