"""Packing the prompt into the window (rag.generate.packing) and counting its parts (rag.generate.budget)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag import generate
from rag.errors import RagError
from rag.generate.packing import ELLIPSIS, MIN_PART, PackLimits
from rag.llms import Message
from rag.llms.counting import CL100K
from tests.generate.samples import SOURCES, hit

EN_WORDS = (
    "trace tree loop header compiler speedup benchmark record type guard side exit nested inner "
    "outer native code interpreter hot path"
).split()
ZH_TEXT = (
    "甄士隐有一个女儿乳名英莲年方三岁贾雨村寄居在葫芦庙里卖字作文为生一日中秋佳节士隐邀请雨村到书房饮酒"
    "宝玉黛玉宝钗住在大观园里"
)


def sentences(draw: st.DrawFn, zh: bool, n: int) -> str:
    if zh:
        return "".join(draw(st.text(alphabet=ZH_TEXT, min_size=5, max_size=40)) + "。" for _ in range(n))
    return " ".join(
        " ".join(draw(st.lists(st.sampled_from(EN_WORDS), min_size=4, max_size=25))).capitalize() + "."
        for _ in range(n)
    )


@st.composite
def prompts(draw: st.DrawFn) -> dict:
    zh = draw(st.booleans())
    hits = [
        hit(f"doc{i}.pdf", (i + 1,), sentences(draw, zh, draw(st.integers(1, 40))))
        for i in range(draw(st.integers(0, 10)))
    ]
    history = []
    for _ in range(draw(st.integers(0, 5))):
        history += [
            Message("user", sentences(draw, zh, draw(st.integers(1, 4)))),
            Message("assistant", sentences(draw, zh, draw(st.integers(1, 50)))),
        ]
    return {
        "question": sentences(draw, zh, 1).rstrip("。.") + ("？" if zh else "?"),
        "sources": generate.number_sources(hits),
        "history": history,
        "limit": draw(st.sampled_from([1024, 2048, 4096, 8192])),
        "limits": draw(st.sampled_from([PackLimits(), PackLimits(200, 800), PackLimits(120, None)])),
    }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(prompts())
def test_the_packed_prompt_never_exceeds_the_window(case: dict) -> None:
    packed = generate.pack_prompt(
        case["question"],
        case["sources"],
        counter=CL100K,
        limit=case["limit"],
        history=case["history"],
        limits=case["limits"],
    )
    # Counted whole again, as the model would read it: with the answer's reserve it fits.
    assert CL100K.prompt(packed.messages) + packed.budget.reserve <= case["limit"]
    assert packed.budget.fits
    assert packed.messages[-1] == Message("user", case["question"])
    # The sources given are the first ones found, in rank order; the rest are said to be left out.
    assert [s.n for s in packed.sources] + [s.n for s in packed.left_out] == [s.n for s in case["sources"]]
    if case["sources"]:
        assert packed.sources, "the best passage always gets in (in part at least)"
    limits = case["limits"]
    for source in packed.sources:
        if limits.passage_tokens:
            assert CL100K.text(source.passage) <= limits.passage_tokens
    if limits.source_tokens:
        assert packed.budget.sources <= limits.source_tokens + 8 * len(packed.sources)  # labels, separators
    # History: a contiguous run of the newest exchanges, whole.
    kept = list(packed.messages[1:-1])
    assert kept == case["history"][len(case["history"]) - len(kept) :]
    assert packed.dropped == (len(case["history"]) - len(kept)) // 2


def test_budget_parts_add_up_to_the_whole_prompt() -> None:
    messages = generate.build_messages("How much?", SOURCES, history=[Message("user", "one two three")])
    budget = generate.context_budget(messages, SOURCES, 4096, CL100K)
    assert budget.sources == CL100K.text(generate.format_sources(SOURCES))
    assert budget.history == CL100K.text("one two three") and budget.question == CL100K.text("How much?")
    assert budget.used == CL100K.prompt(messages) and budget.counted_with == "cl100k estimate"
    tight = generate.context_budget(messages, SOURCES, budget.used + 10, CL100K, reserve=512)
    assert not tight.fits and tight.share > 1


def test_whole_passages_first_then_the_best_part_of_the_next_and_the_rest_said() -> None:
    filler = " ".join(f"Sentence {i} is about nothing in particular at all." for i in range(60))
    answer_in_middle = (
        " ".join(f"Line {i} says little of use here." for i in range(30))
        + " The warranty covers parts and labour for two years. "
        + " ".join(f"Line {i} says little of use here." for i in range(30, 60))
    )
    sources = generate.number_sources(
        [
            hit("a.pdf", (1,), filler),
            hit("b.pdf", (2,), answer_in_middle),
            hit("c.pdf", (3,), filler),
            hit("d.pdf", (4,), filler),
        ]
    )
    one = CL100K.text(filler)
    packed = generate.pack_prompt(
        "How long is the warranty?", sources, counter=CL100K, limit=one + 300 + generate.ANSWER_RESERVE
    )
    assert [s.n for s in packed.sources] == [1, 2] and [s.n for s in packed.left_out] == [3, 4]
    assert packed.sources[0].text is None  # whole
    part = packed.sources[1].passage
    assert "The warranty covers parts and labour for two years." in part
    assert part.startswith(ELLIPSIS) and part.endswith(ELLIPSIS)
    notes = " ".join(packed.notes())
    assert "Passages 3–4 of the 4 found were left out" in notes and "in part" in notes and "[2]" in notes
    assert packed.budget.fits


def test_the_embedded_limits_give_each_source_its_best_sentences() -> None:
    text = "前面的句子没有用。" * 40 + "甄士隐有一个女儿，乳名英莲，年方三岁。" + "后面的句子也没有用。" * 40
    sources = generate.number_sources([hit("红楼梦.txt", (1,), text)])
    packed = generate.pack_prompt(
        "甄士隐的女儿叫什么名字？",
        sources,
        counter=CL100K,
        limit=4096,
        limits=PackLimits(passage_tokens=120, source_tokens=800),
    )
    part = packed.sources[0].passage
    assert "乳名英莲" in part and CL100K.text(part) <= 120
    crowded = generate.pack_prompt(
        "甄士隐的女儿叫什么名字？",
        generate.number_sources([hit(f"{i}.txt", (1,), text) for i in range(9)]),
        counter=CL100K,
        limit=4096,
        limits=PackLimits(passage_tokens=120, source_tokens=300),
    )
    assert "this model reads at most 300 tokens of sources" in " ".join(crowded.notes())
    assert generate.best_part(text, "英莲", 10_000, CL100K.text) == text.strip()  # fits: whole


def test_history_newest_exchange_stays_and_the_oldest_go_first() -> None:
    history = [
        Message("user", "first question " * 40),
        Message("assistant", "first answer " * 40),
        Message("user", "second question"),
        Message("assistant", "second answer"),
    ]
    packed = generate.pack_prompt("third?", [], counter=CL100K, limit=700, history=history)
    assert packed.dropped == 1 and packed.budget.fits
    assert [m.content for m in packed.messages[1:]] == ["second question", "second answer", "third?"]
    assert "Left out the 1 oldest exchange" in " ".join(packed.notes())


def test_a_question_larger_than_the_window_is_refused_in_one_line() -> None:
    with pytest.raises(
        RagError,
        match=r"The question and the instructions take [\d,]+ tokens, more than the "
        r"model's 1,024-token window",
    ):
        generate.pack_prompt("word " * 2000, SOURCES, counter=CL100K, limit=1024)


def test_a_source_too_small_to_matter_is_left_out_rather_than_cut_to_nothing() -> None:
    big = hit("big.pdf", (1,), " ".join(f"Fact number {i} is stated here." for i in range(400)))
    sources = generate.number_sources([big])
    base = CL100K.prompt(generate.build_messages("Which fact?", [])) + generate.ANSWER_RESERVE
    packed = generate.pack_prompt("Which fact?", sources, counter=CL100K, limit=base + MIN_PART // 2)
    assert packed.sources == () and [s.n for s in packed.left_out] == [1] and packed.budget.fits


LAKE = (
    "赛里木湖，古称“净海”，位于中国新疆博尔塔拉州博乐市境内的北天山山脉中，是一个风光秀美的高山湖泊。"
    "湖面海拔2071.9米，东西长30公里，南北宽25公里，平均水深46.4米，最深处达106米，蓄水量210亿立方米。"
    "“赛里木”为哈萨克语音译，意为“祝愿”，也有蒙古语“山脊梁上的湖”音译之说。"
    "赛里木湖属于封闭型的断陷湖，是地壳下沉形成洼地，由四周的高山雪水历百万年慢慢汇聚而成。"
    "赛里木湖很早就以其优美的风光而闻名于世，宋代丘处机即有“天池海在山头上，百里镜空含万象”之诗。"
    "湖区还有岩画、乌孙国古墓群、寺庙遗址、鄂博、碑刻、古代驿站遗址等历史遗存。"
    "如今的赛里木湖被誉为“天山的明珠”，已成为一个著名的旅游景点，2004年被列入国家重点风景名胜区。"
)


def test_the_part_answers_the_question_asked_not_the_one_searched_before_it() -> None:
    """After a refused rewrite the search query is the question before and this one: the part must still be
    the one that answers this one (the conversation bench saw the depth sentence given for "如今它被誉为什么？")."""
    query = "赛里木湖湖面海拔多少米，东西长多少公里，最深处有多深？ 如今它被誉为什么？"
    part = generate.best_part(LAKE, query, 60, CL100K.text, question="如今它被誉为什么？")
    assert "天山的明珠" in part and "106米" not in part
    # Without the question, the query's words alone pick the sentence the question before asked about.
    assert "106米" in generate.best_part(LAKE, query, 60, CL100K.text)


def test_words_many_sentences_hold_count_less_than_a_rare_one() -> None:
    """Terms are weighted by their rarity among the passage's sentences: "Lysander" is in all of them and
    "flute" in three, so the one sentence that shares "taught" with the question is the part (counting shared
    terms, the second sentence ties with it on three and came first)."""
    text = (
        "Lysander kept his flute in a leather case that his father had made. "
        "Lysander would play the flute at every wedding in the valley. "
        "Lysander was taught to play by a blind shepherd named Orrin, who lived above the village. "
        "Lysander sold the flute when the harvest failed. "
        "Lysander never played in public again after that winter."
    )
    part = generate.best_part(text, "Who taught Lysander to play the flute?", 22, CL100K.text)
    assert "Orrin" in part and "wedding" not in part
