"""Turns, the history a prompt carries, follow-up rewriting and the Markdown export."""

from __future__ import annotations

import dataclasses

from rag import generate
from rag.generate import Turn
from rag.llms import Message
from tests.generate.samples import MODELS_ASKED, SOURCES


def test_rewrite_prompt_and_cleanup() -> None:
    history = [Message("user", "What is HNSW?"), Message("assistant", "A graph index.")]
    [msg] = generate.rewrite_messages(history, "And how fast is it?")
    assert "User: What is HNSW?" in msg.content and "Last question: And how fast is it?" in msg.content
    assert generate.clean_rewrite('"How fast is HNSW search?"\nextra', "x") == "How fast is HNSW search?"
    assert generate.clean_rewrite("  \n", "fallback") == "fallback"
    assert msg.content.startswith("Rewrite the last question")


def test_a_chinese_follow_up_is_asked_to_be_rewritten_in_chinese() -> None:
    """A walk: asked in English, the embedded model rewrote Chinese follow-ups into English (refused as another
    language) or into another subject. A Chinese question gets the instruction in Chinese; the labels the model
    completes stay as they are."""
    history = [Message("user", "赛里木湖古称什么？"), Message("assistant", "净海 [1]。")]
    [msg] = generate.rewrite_messages(history, "这个名字是哪种语言的音译？")
    assert msg.content.startswith("把这段对话的最后一个问题改写成一个独立的检索问句")
    assert "User: 赛里木湖古称什么？" in msg.content
    assert msg.content.endswith("Last question: 这个名字是哪种语言的音译？\nStandalone query:")


def test_an_answer_in_place_of_a_rewrite_is_searched_with_the_question_before() -> None:
    """Seen on Qwen 1.5B: the rewrite step answered, citations and all, and that was searched."""
    from rag.generate.rewrite import answered_instead, rewrite_query
    from rag.llms.types import StreamEvent
    from tests.generate.test_watch import ScriptedModel

    answer = "Zhen Shiyin's daughter, also known as Yinglian [1], was 20 years old."
    assert answered_instead(answer, "How old was she?")
    assert not answered_instead("How old was Zhen Shiyin's daughter Yinglian?", "How old was she?")
    assert answered_instead("x" * 201, "and in 2023?")
    assert not answered_instead("ACME revenue in 2023 compared with 2022", "and in 2023?")
    assert not answered_instead("What does [1] say about 2023?", "What does [1] say?")
    history = [Message("user", "Who is Yinglian?"), Message("assistant", "Zhen Shiyin's daughter [1].")]
    result = rewrite_query(ScriptedModel([StreamEvent("content", answer)]), history, "How old was she?")
    assert result.query == "Who is Yinglian? How old was she?" and "answered the follow-up" in result.note
    result = rewrite_query(
        ScriptedModel([StreamEvent("content", "How old is Yinglian, Zhen Shiyin's daughter?")]),
        history,
        "How old was she?",
    )
    assert result.query == "How old is Yinglian, Zhen Shiyin's daughter?" and result.note == ""


def test_conversation_markdown_lists_sources() -> None:
    md = generate.conversation_markdown([("Q1?", "A1 [1].", SOURCES)], "ollama:m")
    assert "## 1. Q1?" in md and "A1 [1]." in md and "- [1] report.pdf p. 3 (score 0.500" in md


def test_history_keeps_answered_and_stopped_turns_not_failed_ones() -> None:
    from rag.generate.conversation import STOPPED_ANSWER

    turns = [
        Turn(id="a", question="Q1?", query="Q1?", answer="A1 [1]."),
        Turn(id="b", question="Q2?", query="Q2?", problem="Search failed: x"),
        Turn(id="c", question="Who planned the park?", query="Who planned the park?", stopped=True),
        Turn(id="d", question="Q4?", query="Q4?", error="the model went away"),
    ]
    assert generate.history_messages(turns) == [
        Message("user", "Q1?"),
        Message("assistant", "A1 [1]."),
        Message("user", "Who planned the park?"),
        Message("assistant", STOPPED_ANSWER),
    ]
    assert generate.searched_queries(turns) == ["Q1?", "Who planned the park?"]


def test_a_follow_up_after_a_stopped_question_is_rewritten_about_it() -> None:
    """A Chromium walk: the user stopped "西施故里旅游区是由谁开始规划兴建的？" before its answer began and asked
    "那它的总面积是多少？": left out of the history, the stopped question could not be what "它" points to, and
    the rewrite named the topic before it ("华西协合大学的总面积是多少？"); a rewrite naming the stopped
    question's subject was refused as words nobody said."""
    from rag.generate.rewrite import rewrite_query, with_previous
    from rag.llms.types import StreamEvent
    from tests.generate.test_watch import ScriptedModel

    turns = [
        Turn(id="a", question="华西医院的前身是什么？", query="华西医院的前身是什么？", answer="仁济、存仁医院 [1]。"),
        Turn(
            id="b",
            question="西施故里旅游区是由谁开始规划兴建的？",
            query="西施故里旅游区是由谁开始规划兴建的？",
            stopped=True,
        ),
    ]
    history, searched = generate.history_messages(turns), generate.searched_queries(turns)
    [prompt] = generate.rewrite_messages(history, "那它的总面积是多少？")
    assert prompt.content.index("西施故里旅游区") > prompt.content.index(
        "华西医院"
    )  # the latest exchange is the stopped one
    result = rewrite_query(
        ScriptedModel([StreamEvent("content", "西施故里旅游区的总面积是多少？")]),
        history,
        "那它的总面积是多少？",
        searched=searched,
    )
    assert (result.query, result.note) == ("西施故里旅游区的总面积是多少？", "")
    # Where no rewrite can be used, the question is searched after the stopped one, not the one before it.
    assert with_previous(history, "那它的总面积是多少？", searched).startswith("西施故里旅游区是由谁开始规划兴建的？")


def test_export_says_how_each_answer_ended_and_what_was_searched() -> None:
    turns = [
        Turn(
            id="a",
            question="And 2023?",
            query="Revenue in 2023?",
            sources=SOURCES,
            answer="Up [1].",
            stopped=True,
            model="ollama:m",
        ),
        Turn(id="b", question="Q2?", query="Q2?", error="Ollama went away", model="ollama:m"),
    ]
    md = generate.export_markdown(turns)
    assert md.startswith("# Conversation\n\nModel: ollama:m\n")
    assert "Up [1].\n\n*(stopped)*\n\n*Searched for: Revenue in 2023? and the question as asked*" in md
    assert "*(no answer)*\n\n*(failed: Ollama went away)*" in md
    # What the badges say and the notes are exported too (a walk: the export had neither).
    checked = Turn(
        id="c",
        question="q",
        query="q",
        sources=tuple(SOURCES),
        answer="Revenue rose eleven percent [1]. Profits doubled [2].",
        notes=("The model gave the follow-up back unchanged.",),
        model="ollama:m",
    )
    md = generate.export_markdown([checked])
    assert (
        "*ℹ️ The model gave the follow-up back unchanged.*\n\n*⚠️ 1 of 2 sentences not supported by the source cited*"
        in md
    )
    grounded = dataclasses.replace(checked, answer="Revenue rose eleven percent [1].", notes=())
    assert "*✅ Every sentence is supported by the source it cites*" in generate.export_markdown([grounded])
    # A sentence left without a marker (the page's ≈ n) is not said to be supported by a citation; an answer
    # citing nothing says so, as the page does (a walk found both missing).
    partly = dataclasses.replace(grounded, answer="The board approved a dividend. Revenue rose eleven percent [1].")
    md = generate.export_markdown([partly])
    assert "*✅ Every sentence citing a source is supported by it*" in md and "the source it cites" not in md
    uncited = dataclasses.replace(grounded, answer="Revenue rose eleven percent.")
    assert "*⚠️ The answer cites no source: check it against the sources before trusting it.*" in (
        generate.export_markdown([uncited])
    )
    # A sentence citing the wrong source says which one holds it, in the reader's language.
    miscited = dataclasses.replace(checked, answer="Revenue rose eleven percent [2]. Profits doubled [2].", notes=())
    md = generate.export_markdown([miscited])
    assert "*⚠️ 1 of 2 sentences not supported by the source cited*" in md
    assert "*⚠️ 1 of 2 sentences cite a source that does not hold them, held by [1]*" in md
    # A sentence in another language than its sources is said to be unchecked, neither supported nor not.
    other = dataclasses.replace(checked, answer="收入增长了百分之十一[1]。", notes=())
    md = generate.export_markdown([other])
    assert "*🌐 1 sentence not checked: in another language than its sources*" in md and "⚠️" not in md


def test_a_turn_as_json_names_the_cited_chunks() -> None:
    turn = Turn(
        id="a",
        question="q",
        query="q",
        sources=tuple(SOURCES),
        answer="Revenue rose eleven percent [1]. Profits doubled [2]. See [9].",
        model="ollama:m",
    )
    out = turn.as_dict()
    assert list(out) == [
        "answer",
        "citations",
        "unknown_citations",
        "citations_attributed",
        "grounded",
        "sentences",
        "unsupported_sentences",
        "figure_missing",
        "off_question",
        "other_subject",
        "looped",
        "left_out",
        "model",
    ]
    assert out["citations"] == [
        {
            "n": 1,
            "original_filename": "report.pdf",
            "pages": [3],
            "location": "p. 3",
            "score": 0.5,
            "chunk_id": str(SOURCES[0].hit.id),
            "supported": True,
        },
        {
            "n": 2,
            "original_filename": "notes.md",
            "pages": [1, 2],
            "location": "pp. 1–2",
            "score": 0.5,
            "chunk_id": str(SOURCES[1].hit.id),
            "supported": False,
        },  # [2] is about a dividend
    ]
    assert [(s["text"], s["status"]) for s in out["sentences"]] == [
        ("Revenue rose eleven percent [1].", "cited"),
        ("Profits doubled [2].", "not supported"),
        ("See [9].", "not supported"),
    ]  # a marker pointing at no source supports nothing
    assert out["grounded"] is False and out["unsupported_sentences"] == 2
    assert out["unknown_citations"] == [9] and out["citations_attributed"] is False


def test_a_rewrite_stating_the_answers_figure_is_searched_with_the_question_before() -> None:
    """Seen in a Chromium walk: "And Model 5?" came back as "Model 5 costs $21,000.00." (the figure of the answer
    before), which `added_words` let pass because the conversation had said it."""
    from rag.generate.followup import states_figure
    from rag.generate.rewrite import rewrite_query
    from rag.llms.types import StreamEvent
    from tests.generate.test_watch import ScriptedModel

    history = [
        Message("user", "How much does Model 4 cost?"),
        Message("assistant", "Model 4 costs $18,500.00 [1]; Model 5 costs $21,000.00 [2]."),
    ]
    stated = "Model 5 costs $21,000.00."
    assert states_figure(stated, "And Model 5?", ["How much does Model 4 cost?"]) == ["21,000.00"]
    result = rewrite_query(ScriptedModel([StreamEvent("content", stated)]), history, "And Model 5?")
    assert result.query == "How much does Model 4 cost? And Model 5?"
    assert "states a figure nobody asked with (21,000.00)" in result.note
    # A rewrite that asks, or names only years and counts, or a figure the user said, is a query.
    assert states_figure("How much does Model 5 cost?", "And Model 5?", []) == []
    assert states_figure("Model 5 price in 2023", "And Model 5?", []) == []
    assert states_figure("Model 5 under $21,000.00", "And Model 5?", ["Which cost under $21,000.00?"]) == []
    assert states_figure("Model 5 的价格为 21000 美元", "Model 5 呢？", []) == ["21000"]
    assert states_figure("毛利率 12.5%", "那毛利率呢？", []) == ["12.5%"]
    result = rewrite_query(
        ScriptedModel([StreamEvent("content", "How much does Model 5 cost?")]), history, "And Model 5?"
    )
    assert result.query == "How much does Model 5 cost?" and result.note == ""


def test_a_rewrite_stating_a_year_or_keeping_its_pronoun_is_searched_with_the_question_before() -> None:
    """A Chromium walk (session 38): "它是哪一年建成的？" after "美庐别墅是怎么得名的？" came back "它建成于1959年。" (a
    year nobody said, its pronoun kept) and was searched; "它建成于哪一年？" asks but says no more than the question."""
    from rag.generate.followup import keeps_pointing, states_figure
    from rag.generate.rewrite import rewrite_query
    from rag.llms.types import StreamEvent
    from tests.generate.test_watch import ScriptedModel

    history = [
        Message("user", "美庐别墅是怎么得名的？"),
        Message("assistant", "因蒋介石题写“美庐”二字而得名 [1]。"),
    ]
    question = "它是哪一年建成的？"
    with_previous = "美庐别墅是怎么得名的？ 它是哪一年建成的？"
    result = rewrite_query(ScriptedModel([StreamEvent("content", "它建成于1959年。")]), history, question)
    assert result.query == with_previous
    assert "（1959）" not in result.note and "states a figure nobody asked with (1959)" in result.note
    result = rewrite_query(ScriptedModel([StreamEvent("content", "它建成于哪一年？")]), history, question)
    assert result.query == with_previous and "does not say what the question points back to" in result.note
    result = rewrite_query(ScriptedModel([StreamEvent("content", "美庐别墅建成于哪一年？")]), history, question)
    assert result.query == "美庐别墅建成于哪一年？" and result.note == ""
    # A year is a figure only where the question asks for a time or an amount; a dummy "it" points at nothing.
    assert states_figure("Model 5 price in 2023", "And Model 5?", []) == []
    assert states_figure("The lighthouse was built in 1890.", "When was it built?", []) == ["1890"]
    assert states_figure("美庐别墅建成年份", question, []) == []
    assert not keeps_pointing("How long does it take to get to Hawaii?", "How long does it take to get there?")
    assert keeps_pointing("When was it built?", "When was it built")
    assert not keeps_pointing("When was the lighthouse built?", "When was it built?")
    assert not keeps_pointing("其他景点有哪些？", "其他的呢？")
    # A refused rewrite's note says what the question before it was searched with where that was not its words:
    # the search chains them, and a note speaking of the one question alone was not what the search line showed.
    history += [Message("user", question), Message("assistant", "1948年 [2]。")]
    searched = ["美庐别墅是怎么得名的？", with_previous]
    unchanged = ScriptedModel([StreamEvent("content", "它在哪里？")])
    result = rewrite_query(unchanged, history, "它在哪里？", searched=searched)
    assert result.query == f"{with_previous} 它在哪里？"
    assert result.note.endswith(f"The question before it was searched as “{with_previous}”.")
    from ui.zh import ZH

    assert ZH[result.note.template].endswith("上一个问题是按“{previous}”检索的。")
    assert result.note.values["reason"].template in ZH
    result = rewrite_query(
        ScriptedModel([StreamEvent("content", "它在哪里？")]), history, "它在哪里？", searched=[*searched[:1], question]
    )
    assert result.query == f"{question} 它在哪里？" and "was searched as" not in result.note


def test_a_rewrite_naming_what_was_spoken_of_before_the_last_is_set_to_the_last() -> None:
    """Two walks: "How much does Model 4 cost?", "And Model 5?", "What is the warranty?", "How heavy is it?" was
    rewritten "What is the weight of Model 4?" and answered for Model 4; "it" is the model spoken of last."""
    from rag.generate.followup import latest_numbered
    from rag.generate.rewrite import rewrite_query
    from rag.llms.types import StreamEvent
    from tests.generate.test_watch import ScriptedModel

    history = [
        Message("user", "How much does Model 4 cost?"),
        Message("assistant", "Model 4 costs $18,500.00 and weighs 95 kg [1]."),
        Message("user", "And Model 5?"),
        Message("assistant", "Model 5 costs $21,000.00 and weighs 110 kg [1]."),
        Message("user", "What is the warranty?"),
        Message("assistant", "Every model comes with a three-year warranty [1]."),
    ]
    rewritten = "What is the weight of Model 4?"
    result = rewrite_query(ScriptedModel([StreamEvent("content", rewritten)]), history, "How heavy is it?")
    assert result.query == "What is the weight of Model 5?"
    assert "named what the conversation spoke of before the last" in result.note
    texts = [m.content for m in history]
    # The question names its own, or an order ("the first"), or the last message names both: left as written.
    assert latest_numbered(rewritten, "How heavy was the first one?", texts) == rewritten
    assert latest_numbered(rewritten, "How heavy is Model 4?", texts) == rewritten
    assert (
        latest_numbered(rewritten, "How heavy is it?", [*texts, "Model 4 and Model 5 differ in weight."]) == rewritten
    )
    assert (
        latest_numbered("Revenue in 2023?", "Why?", ["Revenue in 2022?", "It fell in 2022 [1]."]) == "Revenue in 2023?"
    )
    result = rewrite_query(
        ScriptedModel([StreamEvent("content", "What is the weight of Model 5?")]), history, "How heavy is it?"
    )
    assert result.query == "What is the weight of Model 5?" and result.note == ""


def test_a_refused_rewrite_is_searched_with_the_thing_the_conversation_named_last() -> None:
    """The third walk: "How heavy is it?" after "How much does Model 4 cost?", "And Model 5?", "What is the
    warranty?" was rewritten "What is the weight of Model 4?", refused for "weight" (no answer had said it), and
    searched "What is the warranty? How heavy is it?": answered "Model 3 weighs 80 kg." with a green badge."""
    from rag.generate.followup import last_named
    from rag.generate.rewrite import rewrite_query, with_previous
    from rag.llms.types import StreamEvent
    from tests.generate.test_watch import ScriptedModel

    history = list(MODELS_ASKED)
    searched = ["How much does Model 4 cost?", "How much does Model 4 cost? And Model 5?", "What is the warranty?"]
    model = ScriptedModel([StreamEvent("content", "What is the shipping weight of Model 4?")])
    result = rewrite_query(model, history, "How heavy is it?", searched=searched)
    assert "named what the conversation spoke of before the last and added words nobody said (shipping)" in result.note
    assert result.query == "What is the warranty? How heavy is it? (Model 5)"
    # "weight" is what "How heavy" asks for, not the model's guess (a walk saw the right rewrite refused for it).
    model = ScriptedModel([StreamEvent("content", "What is the weight of Model 4?")])
    result = rewrite_query(model, history, "How heavy is it?", searched=searched)
    assert result.query == "What is the weight of Model 5?" and "added words" not in result.note
    # Without the searches (`rag ask --history`): the user's words alone say it too.
    assert with_previous(history, "How heavy is it?") == "What is the warranty? How heavy is it? (Model 5)"
    # A search that names it alone needs it not again; one naming it beside another does.
    assert with_previous(history[:4], "How heavy is it?", ["Model 5 price?"]) == "Model 5 price? How heavy is it?"
    assert with_previous(history[:4], "How heavy is it?", searched[:2]).endswith("How heavy is it? (Model 5)")
    # Words asked count before the search; the search where they name nothing; an amount is no name.
    earlier = [("How much does Model 4 cost?", ""), ("And the next one?", "How much does Model 5 cost?")]
    assert last_named("How heavy is it?", earlier) == "Model 5"
    assert last_named("How heavy is it?", [("Which costs 18,500?", "")]) == ""
    # The question names its own, or an order, or the latest question naming one names two: nothing is added.
    assert last_named("How heavy is Model 3?", earlier) == ""
    assert last_named("How heavy was the first one?", earlier) == ""
    assert last_named("How heavy are they?", [("Compare Model 4 and Model 5.", "")]) == ""
    assert with_previous(history[:2], "How heavy is it?") == "How much does Model 4 cost? How heavy is it?"


def test_a_chinese_follow_up_is_searched_and_asked_with_the_model_the_conversation_named_last() -> None:
    """The same walk in Chinese: "它有多重？" after "型号4多少钱？", "那型号5呢？", "保修期多久？" was rewritten
    "型号4和型号5的重量是多少？" (refused: it asks the earlier questions again), searched "保修期多久？ 它有多重？" and
    answered "80公斤[1]" (型号3's weight) with a green badge: Chinese names no thing with a capital letter."""
    from rag.generate.engine import with_subject
    from rag.generate.followup import last_named, latest_numbered, named_things
    from rag.generate.rewrite import subject_of, with_previous

    history = [
        Message("user", "型号4多少钱？"),
        Message("assistant", "18,500元[1]"),
        Message("user", "那型号5呢？"),
        Message("assistant", "21,000元[1]"),
        Message("user", "保修期多久？"),
        Message("assistant", "两年保修[1]"),
    ]
    searched = ["型号4多少钱？", "型号5多少钱？", "保修期多久？"]
    query = with_previous(history, "它有多重？", searched)
    assert query == "保修期多久？ 它有多重？ (型号5)"
    assert subject_of("它有多重？", query, history, searched) == "型号5"
    assert with_subject("它有多重？", "型号5") == "它有多重？（型号5）"
    # An amount or a weight names nothing; "它们", "另一款", "第二个" ask of more than one, or of another.
    assert named_things("型号4：售价18,500元，重量95公斤，成立于2012年") == {("型号", "4"): "型号4"}
    earlier = [("型号4多少钱？", ""), ("那型号5呢？", "")]
    assert last_named("它有多重？", earlier) == "型号5"
    for question in ("它们有什么区别？", "另一款有多重？", "那第二个呢？", "型号3有多重？"):
        assert last_named(question, earlier) == "", question
    # A rewrite naming the model asked of before the last is set to the last one, as in English.
    texts = [m.content for m in history]
    assert latest_numbered("型号4的重量是多少？", "它有多重？", texts) == "型号5的重量是多少？"
    assert latest_numbered("型号4的重量是多少？", "型号4有多重？", texts) == "型号4的重量是多少？"
    # The walk's rewrite "型号4和型号5的手机重量是多少？" was taken for the questions before asked again: 重量 is what
    # 多重 asks for. Its 手机 (phones) is the model's own word, and said so.
    from rag.generate.followup import added_words, repeats_earlier

    asked = [m.content for m in history if m.role == "user"]
    assert not repeats_earlier("型号4和型号5的手机重量是多少？", "它有多重？", asked)
    assert repeats_earlier("型号4和型号5多少钱？", "它有多重？", asked)
    assert added_words("型号5的重量是多少？", "它有多重？", texts) == []
    assert added_words("型号5的手机重量是多少？", "它有多重？", texts) == ["手机"]


def test_a_rewrite_naming_whom_its_pronoun_points_to_is_searched() -> None:
    """A Chromium walk (session 47): "What did Ellen Rema do after finishing all her courses?" for "And what did she do
    after that?" was refused as keeping the question's pronoun: its "her" comes after the name it puts in."""
    from rag.generate.followup import keeps_pointing
    from rag.generate.rewrite import rewrite_query
    from rag.llms.types import StreamEvent
    from tests.generate.test_watch import ScriptedModel

    history = [
        Message("user", "How long did it take Ellen Rema to finish all her courses?"),
        Message("assistant", "Ellen finished all her courses after 2 years [1]."),
    ]
    question = "And what did she do after that?"
    rewrite = "What did Ellen Rema do after finishing all her courses?"
    result = rewrite_query(ScriptedModel([StreamEvent("content", rewrite)]), history, question)
    assert result.query == rewrite and result.note == ""
    # Without the name the pronoun is still the question's.
    assert keeps_pointing("What did she do after finishing all her courses?", question)
