"""The claim check behind the green badge (rag.generate.claims, issue 27): the cited passage must hold
the sentence's claim (names, relation, numbers, negation in one sentence of it), not just its words."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from benchmarks.badges import KNOWN_GREEN_WRONG, badge_cases, measure
from rag import generate
from rag.documents.sections import markdown_table
from rag.generate import claims
from rag.generate.claims import claim_held, holding_sources, list_lines
from rag.generate.judge import ask_model, judge_messages, model_judge, verdict
from rag.generate.support import term_spans
from rag.llms import OllamaChatModel
from tests.generate.samples import hit
from tests.ollama_wire import CREATED, MODEL, NDJSON, chunk, ndjson

# Two sentences in the manner of 红楼梦 chapters 2-3 (written for the test, not quoted): her father
# in one, her uncles in the other.
LIN = (
    "林如海乃前科探花，如今嫡妻贾氏生得一女，乳名黛玉，年方五岁。"
    "林黛玉初到荣国府，先拜见了外祖母贾母，随后去见大舅贾赦，贾赦推说身上不好，没有与她相见。"
)
RFC = (
    "HTTP/1.1 is defined in RFC 2616, which obsoletes RFC 2068. All HTTP/1.1 clients MUST send a Host header "
    "field in every request message. Clients SHOULD NOT pipeline requests using non-idempotent methods."
)
HAWKING = (
    "Stephen Hawking was born in Oxford, England on 8th January, 1942. After leaving school, Hawking went "
    "first to Oxford University where he studied physics, then he went to Cambridge University where he "
    "studied cosmology. When he visited his family at Christmas time, his mother was so worried that she "
    "made him see a doctor. Doctors said they had no way to help him."
)
LIGHTHOUSE = (
    "The Arden lighthouse stands on the northern headland of Kelso Bay. It was built in 1868 by the engineer Mara "
    "Quill, who also designed the harbour walls below it. Its lamp can be seen from 24 miles away on a clear night."
)
"""The first document of the Chromium walk (session 15), where the first answer lost its badge."""


def badge(answer: str, passage: str, **options: Any) -> tuple[str, bool]:
    grounding = generate.check_grounding(answer, generate.number_sources([hit("source.txt", (1,), passage)]), **options)
    (sentence,) = grounding.sentences
    return sentence.status, grounding.grounded


def test_the_issues_answer_shares_the_words_but_not_the_claim() -> None:
    """ "林黛玉的父亲是贾赦" shares 林黛玉 and 贾赦 with the passage ("大舅贾赦"): green by the words alone,
    not supported by the claim check; the passage that names her father supports the right answer."""
    wrong = "林黛玉的父亲是贾赦 [1]。"
    assert badge(wrong, LIN, claims=False) == ("cited", True)  # the bug: shared words
    assert badge(wrong, LIN) == ("not supported", False)
    assert claim_held(wrong, LIN).reason == "relation"  # 贾赦 is her uncle there
    # The right one says it the other way round (父亲 for 生得一女): the roles agree.
    assert badge("黛玉的父亲是林如海 [1]。", LIN) == ("cited", True)
    assert badge("林如海的女儿是黛玉 [1]。", LIN) == ("cited", True)
    assert badge("黛玉的大舅是贾赦 [1]。", LIN) == ("cited", True)


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("林如海是黛玉的女儿 [1]。", "relation"),  # the roles swapped
        ("黛玉的二舅是贾赦 [1]。", "relation"),  # 大舅 is not 二舅
        ("黛玉的外祖母是贾赦 [1]。", "relation"),  # a relative, but not that one
        ("林如海的女儿黛玉年方三岁 [1]。", "numbers"),  # 五岁
        ("贾赦与黛玉相见了 [1]。", "negation"),  # 没有与她相见
        ("贾母生得一女，乳名黛玉 [1]。", "scattered"),  # 贾母 is in the other sentence
    ],
)
def test_wrong_chinese_answers_with_the_passages_words_are_not_supported(answer: str, reason: str) -> None:
    assert badge(answer, LIN) == ("not supported", False)
    assert claim_held(answer, LIN).reason == reason


SCHOOLS = (
    "Sleep experts say teenagers need more rest. The School Watch programme is offered to schools by volunteers. "
    "In a separate study, people in the UK who suffer from short-sightedness were asked about screens."
)


@pytest.mark.parametrize(
    ("answer", "passage", "held"),
    [
        ("RFC 2616 obsoletes RFC 2068 [1].", RFC, True),
        ("RFC 2068 obsoletes RFC 2616 [1].", RFC, False),  # swapped around a word with a direction
        ("Clients should not pipeline requests that use non-idempotent methods [1].", RFC, True),
        ("Clients should pipeline requests using non-idempotent methods [1].", RFC, False),  # negation flipped
        ("Every HTTP/1.1 request from a client must include a Host header field [1].", RFC, True),
        ("Hawking was born in Oxford in 1942 [1].", HAWKING, True),
        ("Stephen Hawking was born in Oxford in 1943 [1].", HAWKING, False),  # a wrong number
        # "he" carries Hawking into the clause that holds the rest; Oxford belongs to another clause.
        ("Hawking went to Cambridge University, where he studied cosmology [1].", HAWKING, True),
        ("Hawking studied cosmology at Oxford University [1].", HAWKING, False),
        ("When Hawking visited his family at Christmas, his mother made him see a doctor [1].", HAWKING, True),
        ("When Hawking visited his family at Christmas, his father made him see a doctor [1].", HAWKING, False),
        ("Doctors said they had a way to help him [1].", HAWKING, False),  # "had no way"
        # "It" stands for the subject the sentence before opens with, "lighthouse" and all (the walk's answer,
        # word for word but for the pronoun, was "not supported").
        (
            "The Arden lighthouse was built in 1868 by the engineer Mara Quill, who also designed the harbour walls "
            "below it. [1]",
            LIGHTHOUSE,
            True,
        ),
        ("The Arden lighthouse was built in 1869 by the engineer Mara Quill [1].", LIGHTHOUSE, False),
        ("The Kelso lighthouse was built in 1868 by Mara Quill [1].", LIGHTHOUSE, False),  # Kelso names the bay
        # Two capitals are a name: the walk's wrong answer took "UK" from another sentence of the passage.
        ("The programme will be offered to schools in the UK [1].", SCHOOLS, False),
        ("The programme will be offered to schools [1].", SCHOOLS, True),
        ("People in the UK who suffer from short-sightedness were asked about screens [1].", SCHOOLS, True),
        # No determiner: a name and its verb ("Edison founded"), for which no pronoun stands.
        ("Edison founded the lab in 1876 [1].", "Edison founded GE. He built the lab in 1876.", False),
    ],
)
def test_english_claims(answer: str, passage: str, held: bool) -> None:
    assert badge(answer, passage) == (("cited", True) if held else ("not supported", False))


def test_a_number_moved_onto_another_word_is_not_the_same_claim() -> None:
    passage = "The project has spread to eight communities in five states. 帕特纳赫峡谷是一座长702米，深80米的峡谷。"
    assert claim_held("The project has spread to eight communities in five states.", passage).held
    assert claim_held("The project has spread to five communities in eight states.", passage).reason == "moved number"
    assert claim_held("帕特纳赫峡谷长702米，深80米。", passage).held
    assert claim_held("帕特纳赫峡谷长80米，深702米。", passage).reason == "moved number"
    # Values, not spellings: 五 is 5, "10,000" is 10000.
    assert claim_held("黛玉年方5岁。", LIN).held
    assert claim_held("Edison failed 10000 times.", "Edison failed 10,000 times.").held


def test_a_sentence_drawn_from_two_sentences_is_held_clause_by_clause() -> None:
    passage = "Mr. Bennet had five daughters and no son. Elizabeth, the second daughter, was her father's favourite."
    assert holding_sources("Mr. Bennet had five daughters, and Elizabeth was her father's favourite.", {1: passage})
    assert holding_sources("Mr. Bennet had a son.", {1: passage}) == ()
    # Across two cited sources, each holding its clause.
    assert holding_sources("黛玉的父亲是林如海，RFC 2616 obsoletes RFC 2068.", {1: LIN, 2: RFC}) == (1, 2)


def test_a_line_break_inside_a_pdf_sentence_does_not_end_it() -> None:
    assert claim_held(
        "Revenue grew by twelve percent in 2023 [1].",
        "Quarterly report. Revenue grew by\ntwelve percent in 2023, driven by subscriptions.",
    ).held
    assert not claim_held(
        "Revenue grew by twelve percent in 2023 [1].", "Revenue grew.\n\nBy twelve percent in 2023 costs fell."
    ).held


PRICE_LIST = """Quarterly price list for industrial pumps. The table below lists each SKU, its model and the list
price in US dollars. Prices of the zephyrite line include installation.

| SKU | Model | Price |
|---|---|---|
| SKU-1002 | Zephyrite Pump Z3 | $23,500.00 |
| SKU-1003 | Zephyrite Pump Z4 | $24,750.00 |
| SKU-1004 | Zephyrite Pump Z5 | $26,000.00 |

All prices are subject to change."""


@pytest.mark.parametrize(
    ("answer", "held"),
    [
        ("The pump model for SKU-1003 is Zephyrite Pump Z3 [1].", False),  # the row above's model
        ("SKU-1003 is Zephyrite Pump Z5 [1].", False),  # the row below's
        ("SKU-1003 is the Zephyrite Pump Z4 [1].", True),
        ("The price of SKU-1003 is $24,750.00 [1].", True),  # "price" is the column's name
        ("The price of SKU-1003 is $23,500.00 [1].", False),
        ("Prices of the zephyrite line include installation [1].", True),
    ],
)
def test_a_table_row_holds_what_its_cells_and_column_names_say(answer: str, held: bool) -> None:
    """A table's rows are lines of their own (not a sentence run together, which put one row's model beside
    the next row's key and badged it green), each read with its header's column names."""
    assert claim_held(answer, PRICE_LIST).held is held


@pytest.mark.parametrize(
    ("answer", "held"),
    [
        ("The pump model for SKU-1003 is Zephyrite Pump Z3 [1].", False),  # the first row's model
        ("SKU-1002 costs $24,750.00 [1].", False),  # the first row's SKU, the second's price
        ("SKU-1003 is the Zephyrite Pump Z4 [1].", True),
        ("SKU-1002 is the Zephyrite Pump Z3 [1].", True),
    ],
)
def test_a_table_without_a_header_row_reads_each_row_alone(answer: str, held: bool) -> None:
    """A price list whose first row is an item, as a document's table (rag.documents.sections.markdown_table)
    writes it: that row is not the other rows' column names, so no row is read with its cells."""
    items = ("SKU-1002 | Zephyrite Pump Z3 | $23,500.00", "SKU-1003 | Zephyrite Pump Z4 | $24,750.00")
    rows = [line.split(" | ") for line in (*items, "SKU-1004 | Zephyrite Pump Z5 | $26,000.00")]
    source = "Price list for the zephyrite line.\n\n" + markdown_table(rows) + "\n\nAll prices are subject to change."
    assert claim_held(answer, source).held is held


def test_the_labelled_set_has_no_wrong_answer_green_and_keeps_most_right_ones() -> None:
    """The measure of `python -m rag bench --only badges`, held as a test: a change that lets a wrong
    answer through, or loses right ones, fails here."""
    cases = badge_cases()
    assert sum(c.right for c in cases) >= 60 and sum(not c.right for c in cases) >= 60
    assert {c.lang for c in cases} == {"zh", "en"}
    before = measure(cases, claims=False)
    assert before.wrong_green >= 110  # what the words alone badged green (117 of 139)
    after = measure(cases)
    assert after.green_wrong_ids == KNOWN_GREEN_WRONG
    for lang, kept in (("zh", 0.85), ("en", 0.89)):  # measured: 60/69 (87%) and 50/55 (91%)
        figures = measure([c for c in cases if c.lang == lang])
        assert figures.kept >= kept, (lang, figures.lost_ids)


# -- the optional judge: a chat model asked yes or no -------------------------------------------------

FINAL = {
    "model": MODEL,
    "created_at": CREATED,
    "message": {"role": "assistant", "content": ""},
    "done": True,
    "done_reason": "stop",
    "total_duration": 1,
    "load_duration": 1,
    "prompt_eval_count": 1,
    "prompt_eval_duration": 1,
    "eval_count": 1,
    "eval_duration": 1,
}


def answers(server: HTTPServer, *replies: str) -> None:
    for reply in replies:
        server.expect_ordered_request("/api/chat", method="POST").respond_with_data(
            ndjson(chunk(reply), FINAL), content_type=NDJSON
        )


def bodies(server: HTTPServer) -> list[dict[str, Any]]:
    return [json.loads(request.get_data()) for request, _ in server.log]


def test_the_judge_asks_yes_or_no_with_the_exact_body(httpserver: HTTPServer) -> None:
    answers(httpserver, "否。", "Yes, it does.")
    model = OllamaChatModel(httpserver.url_for("/").rstrip("/"), MODEL, timeout=5)
    assert ask_model(model, "林黛玉的父亲是贾赦 [1]。", LIN) is False
    assert ask_model(model, "RFC 2616 obsoletes RFC 2068 [1].", RFC) is True
    first, second = bodies(httpserver)
    system, user = judge_messages("林黛玉的父亲是贾赦 [1]。", LIN)
    assert first == {
        "model": MODEL,
        "messages": [{"role": "system", "content": system.content}, {"role": "user", "content": user.content}],
        "stream": True,
        "options": {"temperature": 0.0},
        "tools": [],
    }
    # Asked in the sentence's language, the marker left out.
    assert user.content == f"资料：\n{LIN}\n\n句子：\n林黛玉的父亲是贾赦 。\n\n资料是否支持这句话？只回答“是”或“否”。"
    assert second["messages"][1]["content"].startswith("Passage:\nHTTP/1.1 is defined in RFC 2616")
    assert second["messages"][1]["content"].endswith(
        "Sentence:\nRFC 2616 obsoletes RFC 2068 .\n\nDoes the passage support the sentence? Answer yes or no."
    )


@pytest.mark.parametrize(
    ("reply", "said"),
    [("Yes", True), ("**No.**", False), ("是的", True), ("不支持", False), ("否", False), ("Maybe", None), ("", None)],
)
def test_the_judges_reply_is_read_from_its_first_word(reply: str, said: bool | None) -> None:
    assert verdict(reply) is said


def test_the_judge_can_take_a_green_badge_away_but_is_not_asked_when_there_is_none(httpserver: HTTPServer) -> None:
    answers(httpserver, "No")
    judge = model_judge(OllamaChatModel(httpserver.url_for("/").rstrip("/"), MODEL, timeout=5))
    sources = generate.number_sources([hit("source.txt", (1,), LIN)])
    # The claim check already refuses this one: the model is not asked.
    assert not generate.check_grounding("林黛玉的父亲是贾赦 [1]。", sources, judge=judge).grounded
    assert bodies(httpserver) == []
    # This one passes the check; the model's "No" takes the badge away.
    grounding = generate.check_grounding("黛玉的父亲是林如海 [1]。", sources, judge=judge)
    assert [s.status for s in grounding.sentences] == ["not supported"] and not grounding.grounded
    assert len(bodies(httpserver)) == 1
    # Off by default: no judge, no request.
    assert generate.check_grounding("黛玉的父亲是林如海 [1]。", sources).grounded
    assert len(bodies(httpserver)) == 1


def test_an_opposite_the_source_says_and_a_swap_around_an_exception_are_not_supported() -> None:
    """The two wrong answers the first rules let through (held-out batches of the labelled set)."""
    from rag.generate.citations import check_grounding
    from rag.generate.prompt import number_sources
    from rag.store import Hit

    def green(answer: str, passage: str) -> bool:
        sources = number_sources([Hit(id=uuid.uuid4(), content=passage, metadata={}, score=1.0)])
        return check_grounding(answer, sources).grounded

    shi = "史湘云是贾母娘家的侄孙女，自幼父母双亡，由叔叔婶婶抚养长大。"
    assert not green("史湘云的父母都还健在 [1]。", shi)
    assert green("史湘云自幼父母双亡 [1]。", shi)
    rfc = "The HEAD method is identical to GET except that the server MUST NOT return a message-body in the response."
    assert not green("GET is identical to HEAD except that the server must not return a message-body [1].", rfc)
    assert green("HEAD is identical to GET except that the server must not return a message-body [1].", rfc)


def test_a_time_of_a_series_keeps_the_word_before_the_series() -> None:
    """A walk's right answer was badged not supported: "08:00" was read as 8 and 0, and "at 08:00" took
    "weekdays" as its word, where "opens" is the series' ("opens at 06:30 on weekdays and at 08:00 on
    Saturdays"); the wrong "06:30 on Saturdays" was held."""
    passage = (
        "Harbour Freight runs two depots. The depot in Leeds opens at 06:30 on weekdays and at 08:00 on "
        "Saturdays. The depot in York is closed at weekends."
    )
    assert claim_held("The depot in Leeds opens at 08:00 on Saturdays.", passage).held
    assert claim_held("The Leeds depot opens at 6.30 on weekdays.", passage).held
    assert claim_held("The depot in Leeds opens at 06:30 on Saturdays.", passage).reason == "moved number"
    assert claim_held("The depot in Leeds opens at 08:00 on weekdays.", passage).reason == "moved number"
    assert not claim_held("The depot in Leeds opens at 06:00 on weekdays.", passage).held
    # A verb before its object is no series: "weighs" is the 80's word, not the 3's.
    assert claim_held("Model 3 weighs 80 kg.", "Model 3 weighs 80 kg and costs $15,000.").held


def test_each_line_of_a_list_is_read_with_its_title_and_alone() -> None:
    """A list's lines read as one sentence held "The price of Model 4 is $21,000.00" (Model 4 in one line, the
    price in another); read alone, the right "The price of Model 4 is $18,500.00" lost "price", which only
    the title says."""
    passage = (
        "Our catalogue.\nPrice list of the Model series\nModel 3: $15,000.00, 80 kg\nModel 4: $18,500.00, 95 kg\n"
        "Model 5: $21,000.00, 110 kg\nAll prices exclude VAT."
    )
    assert claim_held("The price of Model 4 is $18,500.00.", passage).held
    assert claim_held("Model 4 is priced at $18,500.00 and weighs 95 kg.", passage).held
    assert not claim_held("The price of Model 4 is $21,000.00.", passage).held
    assert not claim_held("Model 4 weighs 110 kg.", passage).held
    sheet = "Model 4\nPrice: $18,500.00\nWeight: 95 kg\nWarranty: 3 years"
    assert claim_held("Model 4 has a 3-year warranty.", sheet).held
    assert claim_held("Model 4 weighs 95 kg.", sheet).held
    assert claim_held("Model 4 weighs 3 kg.", sheet).reason == "moved number"  # the 3 is of years
    # Prose a PDF wrapped is no list: its lines begin each their own way.
    wrapped = (
        "whose daily fish consumption averages more than\n3 ounces. For 20 years, the Dutch study followed\n"
        "852 middle-aged men, 20 percent of whom ate no\nfish at all."
    )
    assert list_lines(wrapped) == []
    assert claim_held("The Dutch study followed 852 middle-aged men for 20 years.", wrapped).held
    assert [len(rows) for _title, rows in list_lines(passage)] == [3]
    # A bulleted list too: read as one sentence it held "Revenue was $1.2 million" (the profit's figure).
    bullets = "Results for 2023:\n- Revenue: $4.5 million\n- Profit: $1.2 million\n- Staff: 120 people\nThe board met."
    assert not claim_held("Revenue was $1.2 million in 2023.", bullets).held
    assert claim_held("Revenue was $4.5 million in 2023.", bullets).held


def test_what_a_window_says_of_every_one_of_a_kind_holds_of_each_one() -> None:
    """A walk: "The warranty for Model 4 is three years covering parts and labour." was badged not supported
    by "Every model comes with a three-year warranty covering parts and labour." (4 was in the price list only)."""
    passage = (
        "Price list of the Model series\nModel 3: $15,500.00, 80 kg\nModel 4: $18,500.00, 95 kg\n\n"
        "Warranty. Every model comes with a three-year warranty covering parts and labour."
    )
    assert claim_held("The warranty for Model 4 is three years covering parts and labour.", passage).held
    assert claim_held("Model 4 comes with a three-year warranty.", passage).held
    assert claim_held("Model 4 comes with a five-year warranty.", passage).reason == "numbers"
    assert not claim_held("Model 4 comes with free delivery.", passage + " Delivery costs $90.").held
    # Said of one of them, the rules are those of any figure.
    assert not claim_held(
        "Model 4 comes with a three-year warranty.", "Every model but Model 4 comes with a two-year warranty."
    ).held
    # In Chinese: "所有型号" / "每款型号" hold of "型号5" (the walk's "型号5提供两年保修" was red).
    zh = (
        "型号3：售价12,800元，重量80公斤。\n型号5：售价21,000元，重量110公斤。\n\n"
        "所有型号均提供两年保修。每款型号都支持远程监控。"
    )
    assert claim_held("型号5提供两年保修。", zh).held
    assert claim_held("型号3的保修期是两年。", zh).held
    assert claim_held("型号5支持远程监控。", zh).held
    assert claim_held("型号5提供三年保修。", zh).reason == "numbers"
    assert not claim_held("型号5重80公斤。", zh).held  # what the window writes of one is still its own
    assert not claim_held("型号5提供两年保修。", "每年提供两年保修。").held  # 每年 is no kind named by a number


def test_a_figure_said_alike_of_two_things_belongs_to_the_one_written_before_it() -> None:
    """ "The York depot has 40 staff." was held by "The Leeds depot has 40 staff and the York depot has 25 staff."
    (one window, 40 and 25 each after "has"), and "云账本售价899元" by "云账本售价299元，守望者售价899元"."""
    depots = "The Leeds depot has 40 staff and the York depot has 25 staff."
    assert claim_held("The York depot has 40 staff.", depots).reason == "moved number"
    assert claim_held("The Leeds depot has 40 staff.", depots).held
    assert claim_held("The York depot has 25 staff.", depots).held
    prices = "公司成立于2012年，员工120人。产品云账本售价299元，守望者售价899元。"
    assert claim_held("云账本售价899元。", prices).reason == "moved number"
    assert claim_held("守望者售价899元。", prices).held and claim_held("云账本售价299元。", prices).held
    # The word once for the series, or a verb both share, is no such series.
    assert claim_held(
        "The depot in Leeds opens at 08:00 on Saturdays.",
        "The depot in Leeds opens at 06:30 on weekdays and at 08:00 on Saturdays.",
    ).held
    assert claim_held("RFC 2616 obsoletes RFC 2068.", "HTTP/1.1 is defined in RFC 2616, which obsoletes RFC 2068.").held


def test_a_letter_naming_one_of_a_kind_is_a_term() -> None:
    """ "Plan A includes support." was held by "Plan B costs $25 per month and includes support." (one-letter words
    were no terms), and "Plan B costs $10 per month." by "Plan A costs $10 per month."."""
    plans = "Plan A costs $10 per month. Plan B costs $25 per month and includes support."
    assert not claim_held("Plan A includes support.", plans).held
    assert not claim_held("Plan B costs $10 per month.", plans).held
    assert claim_held("Plan B includes support.", plans).held and claim_held("Plan A costs $10 per month.", plans).held
    assert [t for t, _a, _b in term_spans("Then I saw Vitamin C. A plan.")] == ["saw", "vitam", "c", "plan"]


HLJ = (
    "2012年，黑龙江省博物馆被国家文物局核定为第二批国家一级博物馆。馆舍面积近1万平方米，藏品11万余件。"
    "黑龙江省博物馆是一座古典巴洛克建筑，毗邻圣·尼古拉教堂。"
)
VICTOIRES = (
    "胜利广场（Place des Victoires）是巴黎的一个圆形广场，位于巴黎皇家宫殿东北方不远处。在广场中心，是国王路易十四的"
    "宏伟的骑马雕像，最终在1792年被毁。"
)
SHI = "史湘云是贾母娘家的侄孙女。她常到荣国府来住，与宝玉、黛玉一同玩耍。史湘云性情豪爽，醉卧芍药裀一回最为人称道。"


@pytest.mark.parametrize(
    ("answer", "source", "held"),
    [
        ("黑龙江省博物馆藏品11万余件。", HLJ, True),  # the subject left out: the sentence before's
        ("黑龙江省博物馆的馆舍面积近1万平方米。", HLJ, True),
        ("故宫博物院藏品11万余件。", HLJ, False),  # another subject than the sentence before's
        ("黑龙江省博物馆藏品1万余件。", HLJ, False),  # the floor area's number
        ("胜利广场的中心是国王路易十四的宏伟的骑马雕像。", VICTOIRES, True),  # named by its head noun
        ("黛玉醉卧芍药裀一回最为人称道。", SHI, False),  # the sentence says its own subject, another one
    ],
)
def test_a_chinese_sentence_may_leave_out_the_subject_named_before(answer: str, source: str, held: bool) -> None:
    """A Chromium walk: answers copied from their source were flagged where the source's sentence left its subject
    to the sentence before ("…藏品11万余件") or named it by its head noun ("在广场中心，是…")."""
    assert claim_held(answer, source).held is held


def test_a_word_put_in_the_windows_place_is_not_held_and_a_name_written_in_part_is() -> None:
    """A Chromium walk: "赛里木湖的名称是哈萨克语音译…[1]", copied from "“赛里木”为哈萨克语音译…", was flagged a guess
    (the window writes the name without 湖; the passage's first sentence opens with 赛里木湖). And the share of held
    words let a claim that puts a word the passage never writes in the window's place pass (0.57)."""
    from rag.evaluation.sets import eval_set

    lake = next(p.text for p in eval_set("zh_cmrc_trial").passages if p.key == "TRIAL_839")
    assert claim_held("赛里木湖的名称是哈萨克语音译，意为“祝愿（丝绸之路行人平安）”。", lake).held
    assert claim_held("赛里木湖是哈萨克语音译。", lake).held
    assert claim_held("赛里木是维吾尔语音译。", lake) == claims.Verdict(False, "replaced")
    assert not claim_held("新疆赛里木湖是哈萨克语音译。", lake).held  # two names' worth, not one character
    # Synonyms sharing a character with the window's words, and a pronoun in the window, are not put in its place.
    passage = "史湘云是贾母的侄孙女。她常到荣国府来住，与宝玉、黛玉一同玩耍。"
    assert claim_held("史湘云常到荣国府来住，和宝玉、黛玉一起玩耍。", passage).held
    # One held by a passage where the name is written in part only where it is the subject: "毛利家" is not 毛利元就.
    battle = "毛利元就以有田城若失陷，则郡山城亦将不保。武田元繁在混乱中遇袭身亡，决定了毛利家的胜利。"
    assert not claim_held("毛利元就在混乱中遇袭身亡。", battle).held


def test_a_word_put_in_place_of_the_windows_at_the_end_of_its_clause_is_not_held() -> None:
    """On zh_cmrc_trial's gold sentences with their answer replaced by another passage's, a replaced run that ends
    its clause ("…总部位于伴随算子，") was held: its clause alone passed, no held word after it to place it by. What the
    window writes there is compared as between two held words; a verb of one character ("崩" for "去世") is not."""
    bank = "西贡商信银行是越南的一家商业银行。该银行的总部位于胡志明市，成立时最初的注册资本为30亿越南盾。"
    assert holding_sources("该银行的总部位于胡志明市，成立时最初的注册资本为30亿越南盾。", {1: bank}) == (1,)
    assert holding_sources("该银行的总部位于伴随算子，成立时最初的注册资本为30亿越南盾。", {1: bank}) == ()
    assert claim_held("该银行的总部位于伴随算子。", bank) == claims.Verdict(False, "replaced")
    reign = "皇建元年（560年），孝昭帝即位，十一月立为皇后。皇建二年（561年），孝昭帝崩，梓宫之邺。"
    assert holding_sources("皇建二年（561年），孝昭帝去世。", {1: reign}) == (1,)


def test_a_bare_answer_put_into_its_question_is_not_replaced_by_the_questions_own_words() -> None:
    """A bare answer is read as the claim it makes of its question ("牛车水是位于新加坡国家。" for "新加坡" to
    "牛车水是位于哪个国家？"): the question's word after it (国家) is no word of the answer's put in the window's
    place ("…是新加坡的唐人街"), as it would be in a sentence of the answer's own."""
    passage = "牛车水是新加坡的唐人街，是新加坡历史上重要的华人聚集地。"
    question = "牛车水是位于哪个国家？"
    assert holding_sources("牛车水是位于新加坡国家。", {1: passage}, question) == (1,)
    assert holding_sources("牛车水是位于新加坡国家。", {1: passage}) == ()
    sources = generate.number_sources([hit("source.txt", (1,), passage)])
    assert generate.check_grounding("新加坡 [1]", sources, question=question).grounded


def test_a_sentence_opening_with_the_questions_words_restates_the_question() -> None:
    """A conversation bench's right answer "最早建造美庐别墅的是英国人西伊勋爵（…）。[1]" to "最早是谁建造的？" was
    flagged as a guess: its opening "最早" is no word of the passage ("始建于"), and was read as put in the place of
    what the passage writes before 建造 ("地皮建造"). An opening of the question's words alone restates the question;
    what follows is judged as before (the wrong builder stays unheld), and a bare answer's claim, put together from
    the question, is not excused so (it opens with the question's words whatever the answer)."""
    villa = (
        "美庐别墅始建于1903年，由英国人西伊勋爵（Lord See O. Reynolds）在脂红路12号、13号地皮建造，"
        "当时称为“脂红路12号别墅”。1903年出售给美国传教士巴利夫妇。1933年8月8日，蒋中正和宋美龄夫妇入住，1934年正式由宋美龄购买。"
    )
    question = "最早是谁建造的？"
    right = "最早建造美庐别墅的是英国人西伊勋爵（Lord See O. Reynolds）。"
    assert holding_sources(right, {1: villa}) == ()
    assert holding_sources(right, {1: villa}, question) == ()  # a bare answer's claim: not excused at its opening
    assert holding_sources(right, {1: villa}, question, restated=True) == (1,)
    for wrong in (
        "最早建造美庐别墅的是美国传教士巴利夫妇。",
        "最早建造美庐别墅的是宋美龄。",
        "最后建造美庐别墅的是英国人西伊勋爵。",
    ):
        assert holding_sources(wrong, {1: villa}, question, restated=True) == ()
    sources = generate.number_sources([hit("source.txt", (1,), villa)])
    assert generate.check_grounding(f"{right}[1]", sources, question=question).grounded
    assert not generate.check_grounding(f"{right}[1]", sources).grounded


def test_an_articles_topic_left_out_after_a_clause_of_time_is_the_claims_subject_there() -> None:
    """zh_cmrc_trial's right bare answer "王光宇" to "2001年，叶盛茂接替谁担任调查局局长？" makes the claim
    "2001年，叶盛茂接替王光宇担任调查局局长", which an article on 叶盛茂 holds as "2001年8月，接替王光宇担任
    调查局局长" (its topic left out after the clause of time): it was scattered, the topic standing only for a
    claim's opening. There, only the topic: not a name the sentence before writes (陈水扁), nor the names swapped."""
    article = (
        "叶盛茂（），中华民国法务部调查局前局长。毕业于国立中兴大学法商学院(今国立台北大学)法律系，调查班第4期毕业，"
        "在陈水扁担任台北市长时期，叶盛茂是台北市政府政风处处长。2001年8月，接替王光宇担任调查局局长，总计在位8年。"
    )
    assert claim_held("2001年，叶盛茂接替王光宇担任调查局局长。", article).held
    assert claim_held("叶盛茂接替王光宇担任调查局局长。", article).held
    assert not claim_held("2001年，王光宇接替叶盛茂担任调查局局长。", article).held
    assert not claim_held("2001年，陈水扁接替王光宇担任调查局局长。", article).held
    assert not claim_held("2001年叶盛茂接替王光宇担任调查局局长。", article).held  # no clause of its own: as before
    # The sentence before stands for the subject left out by its own subject, not by any name it writes: 陈水扁 there
    # is in its opening clause of time ("在陈水扁担任台北市长时期，叶盛茂是…"), and this wrong claim was held by it.
    assert not claim_held("陈水扁接替王光宇担任调查局局长。", article).held
    assert claims._subject(claims.analyse(article), 1) == {"毕业"}
    museum = "2012年，黑龙江省博物馆被核定为国家一级博物馆。馆舍面积近1万平方米，藏品11万余件。"
    assert claims._subject(claims.analyse(museum), 0) >= {"黑龙", "龙江", "博物", "物馆"}
    assert claim_held("黑龙江省博物馆藏品11万余件。", museum).held
    sources = generate.number_sources([hit("source.txt", (1,), article)])
    assert generate.check_grounding("王光宇 [1]", sources, question="2001年，叶盛茂接替谁担任调查局局长？").grounded


def test_a_number_with_a_thousands_separator_is_one_clause_and_hearsay_says_no_more_than_the_source() -> None:
    """A conversation bench's source: "People say a big monster lives in its dark, cold waters. It weighs more than
    1,000 kilos…". Its comma cut "1,000" into two clauses, and "It weighs more than 1,000 kilos" was held by no window;
    the answer "Some people say it weighs more than 1,000 kilos" says less than the source (what unnamed people say)."""
    loch = (
        "In northern Scotland there is a long, deep lake called Loch Ness. People say a big monster lives in its dark, "
        "cold waters. It weighs more than 1,000 kilos and is at least ten meters long. Some people say it has a head "
        "like a horse."
    )
    assert claim_held("It weighs more than 1,000 kilos.", loch).held
    assert claim_held("It weighs more than 2,000 kilos.", loch) == claims.Verdict(False, "numbers")
    assert holding_sources("Some people say it weighs more than 1,000 kilos.", {1: loch}) == (1,)
    assert holding_sources("Some people say it weighs more than 2,000 kilos.", {1: loch}) == ()
    assert claim_held(
        "The museum opens at 10:30 every day.", "The museum opens at 10:30 every day, except Mondays."
    ).held


def test_what_someone_said_is_held_only_by_a_window_reporting_speech() -> None:
    """ "said" is no term: "Edison said that he had failed 10,000 times" read as "Edison failed 10,000 times", which the
    passage writes, while what he said was that he hadn't (the labelled set's en-race-edison-3, wrong, kept orange
    only by "10,000" cut in two before the number was one clause)."""
    passage = (
        "Consider this: Edison failed 10,000 times before he invented the light bulb. When he was asked how he felt to "
        "fail that many times, he said that he hadn't failed 10,000 times, but rather had learned 10,000 things that "
        "didn't work."
    )
    assert claim_held("Edison failed 10,000 times before he invented the light bulb.", passage).held
    assert not claim_held("Edison said that he had failed 10,000 times.", passage).held
    # A source saying it is where the answer read it, no speech of anyone's.
    assert claim_held("The passage says Edison failed 10,000 times before he invented the light bulb.", passage).held


def test_a_name_sharing_one_character_with_the_windows_is_no_synonym(monkeypatch: pytest.MonkeyPatch) -> None:
    """Words sharing a character were taken for synonyms however long: "湖广右布政使史朝宜" in the place of
    "江苏省扬州市广陵区" (a 广 each) was held. A quarter of the shorter one's characters at least now
    (`claims.SYNONYM_SHARE`); "儿子叫" for "有一子" still is one."""
    street = "东关街是中国江苏省扬州市广陵区的一条东西向街道，全长1122米，宽约5米。"
    assert claim_held("东关街是中国江苏省扬州市广陵区的一条东西向街道。", street).held
    assert not claim_held("东关街是中国湖广右布政使史朝宜的一条东西向街道。", street).held
    # Compared with the window's words, as a shorter stretch would be (`claims.UNKNOWN_RUN` finds this one too).
    monkeypatch.setattr(claims, "_unknown_clause", lambda *_: False)
    assert claim_held("东关街是中国湖广右布政使史朝宜的一条东西向街道。", street) == claims.Verdict(False, "replaced")
    queen = "元氏初为常山王妃，有一子乐陵王高百年。"
    sources = generate.number_sources([hit("source.txt", (1,), queen)])
    assert generate.check_grounding("高百年 [1]", sources, question="元皇后的儿子叫什么？").grounded


def test_a_clause_of_words_no_source_writes_is_not_held() -> None:
    """On zh_cmrc_trial's gold sentences with their answer replaced by another passage's, a replaced clause of its
    own ("研究人员认为狐蝠科是它们主要授粉者，南开大学…") passed on the share of the words the rest holds."""
    passage = "罗保铭，1952年生，天津人。1977年毕业于天津师范专科学校中文系，后在南开大学明清史专业学习，获硕士学位。"
    replaced = "研究人员认为狐蝠科是它们主要授粉者，后在南开大学明清史专业学习。"
    assert claim_held(replaced, passage) == claims.Verdict(False, "unknown clause")
    assert claim_held("1977年毕业于天津师范专科学校中文系，后在南开大学明清史专业学习。", passage).held
    # A clause in other words that keeps some of the window's is a paraphrase, judged as before.
    assert claim_held("他后来到南开大学读明清史专业，拿到硕士学位。", passage).reason != "unknown clause"


BANK = (
    "# Saigon Merchant Bank\n\n"
    "Saigon Merchant Bank is a fictional commercial bank headquartered in Ho Chi Minh City, Vietnam.\n"
    "The bank was founded in 1991 with an initial capital of 3 billion dong.\n"
    "Today Saigon Merchant Bank operates 120 branches across the country.\n"
    "Its current chief executive officer (CEO) is Tran Minh Duc.\n"
    "Its head office is located on Nguyen Hue Boulevard in District 1.\n"
    "In 2020 the bank launched a mobile banking app called SMB Go.\n"
)


@pytest.mark.parametrize(
    "answer",
    [
        "Its CEO is Tran Minh Hoa.",  # the name's end replaced: every other word is held
        "The CEO is Tran Van Hoa.",
        "Its current chief executive officer is John Smith.",
        "The bank was founded in 1991 by John Smith.",  # a name added that the source never writes
        "The head office is located on Nguyen Trai Boulevard in District 1.",
        "In 2020 the bank launched a mobile banking app called SMB Pay.",
        "The CEO is **Tran Van Hoa**.",
        "The CFO is Tran Minh Duc.",  # an acronym of nothing the source writes
        "Today Mr. Jones operates 120 branches across the country.",  # a title's stop opens no sentence
    ],
)
def test_a_name_the_source_never_writes_is_not_held(answer: str) -> None:
    """The share of words held (0.5-0.9) and a window holding every word the passage writes badged these green
    (a walk's source; "Tran Van Hoa" is what a small model put for its CEO)."""
    assert claim_held(answer, BANK) == claims.Verdict(False, "unknown name")
    sources = generate.number_sources([hit("bank.md", (1,), BANK)])
    assert not generate.check_grounding(f"{answer} [1]", sources).grounded


@pytest.mark.parametrize(
    "answer",
    [
        "Its CEO is Tran Minh Duc.",
        "Today Saigon Merchant Bank operates 120 branches across the country.",
        "Yes, the bank employs 120 branches.",  # an opening's capital says nothing (held or not on other grounds)
        "**Founding Year:** The bank was founded in 1991.",  # a line's label in title case
        "- Launch Date: the bank launched SMB Go in 2020.",
        "The CEO is Tran Minh Duc.",  # "chief executive officer (CEO)"; an acronym of words the source writes
        "The bank's chief is Tran Minh Duc, based in HCMC.",  # Ho Chi Minh City
        "According to Document 1, the CEO is Tran Minh Duc.",  # a word naming the source
    ],
)
def test_capitals_that_open_a_sentence_or_label_a_line_are_no_names(answer: str) -> None:
    assert claim_held(answer, BANK).reason != "unknown name"


def test_a_name_is_the_sources_without_its_accents_and_an_acronym_of_its_words() -> None:
    source = "Ms. Bédat and a business partner started a company called Zady. The chief executive officer is Ms. Bédat."
    assert claim_held("Ms. Bedat and a business partner started a company called Zady.", source).held
    assert (
        claim_held("Ms. Bedit and a business partner started a company called Zady.", source).reason == "unknown name"
    )
    assert claim_held("The CEO is Ms. Bédat.", source).held


def test_a_name_the_window_writes_by_its_last_word_is_held() -> None:
    """A walk's right answer, "Saigon Merchant Bank was founded in 1991 …" where the window writes "The bank was
    founded in 1991 …", was flagged a guess: the name's other words were left out of the window, and the
    passage's sentence "Today Saigon Merchant Bank operates…" made "Today" part of the name."""
    assert claim_held("Saigon Merchant Bank was founded in 1991 with an initial capital of 3 billion dong.", BANK).held
    assert claim_held("**Founding Year:** Saigon Merchant Bank was founded in 1991.", BANK).held
    assert claim_held("Its CEO is Tran Minh Duc.", BANK).held
    # Another bank's name is no part of it.
    assert not claim_held("Saigon Commercial Bank was founded in 1991.", BANK).held


def test_a_colour_the_source_never_says_is_another_colour() -> None:
    """ "…on a red background" where the source says "on a white background" was held: "red", a word the passage
    never writes, was no term to miss, and the rest is the window's."""
    logo = "Its logo is a green lotus flower on a white background."
    assert claim_held("Its logo is a green lotus flower on a red background.", logo) == claims.Verdict(
        False, "exclusive"
    )
    assert claim_held("The logo is a green lotus flower on a white background.", logo).held
    assert claim_held("Its logo is green and white.", "Its logo is green and white, designed in 1991.").held
    flag = "该行的标志是白色背景上的一朵绿色莲花。"
    assert not claim_held("该行的标志是红色背景上的一朵绿色莲花。", flag).held
    assert claim_held("该行的标志是白色背景上的一朵绿色莲花。", flag).held


def test_a_long_stretch_of_words_no_source_writes_is_not_held_whatever_surrounds_it() -> None:
    """zh_cmrc_trial's club sentence with its place replaced by another passage's words: the stretch has no held word
    beside it to be compared at, and the club's name, written twice, outweighed it in its clause."""
    passage = "摩尔甘比足球俱乐部（）是位于英格兰西北兰开夏郡渡假小镇莫克姆（Morecambe）的足球俱乐部。"
    replaced = "摩尔甘比足球俱乐部（）是位于牠们主要的食粮是海里的虫类及鱼类（Morecambe）的足球俱乐部。"
    assert claim_held(replaced, passage) == claims.Verdict(False, "unknown clause")
    assert claim_held(passage, passage).held
    # A bare answer put into its question: the question's words are not the answer's.
    tower = "塔身为直立火箭形，高23.5米，暗示北回归线的纬度值，塔身连塔基共高30.4米。"
    sources = generate.number_sources([hit("source.txt", (1,), tower)])
    assert generate.check_grounding("暗示北回归线的纬度值 [1]", sources, question="塔身高23.5米象征着什么？").grounded


def test_a_pronoun_stands_for_a_titled_subject_before_an_auxiliary_and_after_a_glued_stop() -> None:
    """A conversation bench's right answer, "The Stockholm Subway is called the longest art gallery in the world.",
    was flagged: the window's "It" stood for nothing, as the subject's verb ("is") is no term, and "1950.The" (no
    space after the stop, as the eval passages write) made one sentence of two."""
    passage = (
        "Stockholm, Sweden The first subway line for Stockholm was opened in 1950.The Stockholm Subway is well-known "
        "for its decoration of the stations. It is called the longest art gallery in the world."
    )
    assert claim_held("The Stockholm Subway is called the longest art gallery in the world.", passage).held
    assert not claim_held("The London Subway is called the longest art gallery in the world.", passage).held
    assert [passage[a:b].strip()[:9] for a, b in claims.analyse(passage).sentences] == [
        "Stockholm",
        "The Stock",
        "It is cal",
    ]


def test_it_stands_for_the_thing_a_sentence_opens_with() -> None:
    """A walk's right answer, "The company's customer tracking app is called Tide Tracker. [1]" against "The company
    was founded in 1987. … Its customer tracking app is called Tide Tracker.", was flagged as a guess: a pronoun
    stood only for a name. "It" and "its" stand for a thing a sentence opens with ("The company"); "his" does not."""
    firm = (
        "Blue Heron Harborline Shipping is a container shipping firm based in Portugal.\n"
        "The company was founded in 1987.\n"
        "The current chief executive officer is Isabela Moreno Duarte.\n"
        "Its customer tracking app is called Tide Tracker.\n"
    )
    assert claim_held("The company's customer tracking app is called Tide Tracker.", firm).held
    assert not claim_held("The company's customer tracking app is called Wave Tracker.", firm).held
    hired = "The company was founded in 1987. It hired Tom Baker in 2001. His own app is called Tide Tracker."
    assert not claim_held("The company's own app is called Tide Tracker.", hired).held


def test_a_sentence_opening_with_a_label_is_read_with_the_one_before() -> None:
    """A conversation bench's right answer was flagged: the item and its price were two sentences of an ad."""
    ads = (
        "JAZZ. The John Bennet Big Band at The Bull's Head, Barnes. Admission: 80 pence THE DERBY ARMS, Upper "
        "Richmond Road West, give you Joe on the electric accordion. Tel: 789-4536 Sunday DISCO. Satin Sounds Disco, "
        "free at The Lord Napier, Mortlake High Street. FOLK at The Derby Arms. Admission: 70 pence."
    )
    assert claim_held("The John Bennet Big Band at The Bull's Head in Barnes costs 80 pence.", ads).held
    assert not claim_held("The John Bennet Big Band at The Bull's Head in Barnes costs 70 pence.", ads).held
    assert not claim_held("Satin Sounds Disco at The Lord Napier costs 80 pence.", ads).held


def test_an_articles_topic_is_the_subject_its_later_sentences_leave_out() -> None:
    """A conversation bench's right answers ("松平康忠是德川氏的家臣。[1]") were flagged: the passage names its topic
    once, in its first sentence, and the sentence holding the claim (a fragment: "德川氏的家臣。") names no subject."""
    passage = (
        "松平康忠（1546年－1618年9月28日）是日本战国时代至安土桃山时代的武将。长泽松平家第8代当主。德川氏的家臣。"
        "德川家康的从弟。父亲是松平政忠。"
    )
    assert claim_held("松平康忠是德川氏的家臣。", passage).held
    assert not claim_held("德川家康是德川氏的家臣。", passage).held


_FESTIVAL = (
    "Red Wednesday in Iran is a fire jumping festival. It is on the eve of the last Wednesday of the year. "
    "People jump over the fire. They hope that it will take all the bad things away."
)


@pytest.mark.parametrize(
    ("claim", "held"),
    [
        # The reason in the sentence after the effect's, which points back to it: held (was not: no one window).
        ("People jump over the fire because they hope that it will take all the bad things away.", True),
        ("People jump over the fire, because they hope that it will take all the bad things away.", True),
        # Each part held somewhere, but the reason before the effect, or in a sentence not pointing back to it.
        ("People jump over the fire, because it is on the eve of the last Wednesday of the year.", False),
        ("People jump over the fire because it is on the eve of the last Wednesday of the year.", False),
        ("It is on the eve of the last Wednesday of the year because people jump over the fire.", False),
        ("Red Wednesday in Iran is a fire jumping festival because people jump over the fire.", False),
        # A reason whose words the source does not write.
        ("People jump over the fire because they hope it will bring money.", False),
    ],
)
def test_a_reason_is_held_where_it_follows_its_effect(claim: str, held: bool) -> None:
    assert bool(holding_sources(claim, {1: _FESTIVAL})) is held


_FESTIVAL_ZH = (
    "每年最后一个星期三的前夜，伊朗人会在街上点起篝火。人们从火上跳过去。他们希望火能带走所有不好的东西。"
    "这一天也是新年前的最后一个星期三。"
)


@pytest.mark.parametrize(
    ("claim", "held"),
    [
        # The reason in the sentence after the effect's, which points back to it ("他们…"), said either way round.
        ("人们从火上跳过去，因为他们希望火能带走所有不好的东西。", True),
        ("人们从火上跳过去是因为他们希望火能带走所有不好的东西。", True),
        ("因为希望火能带走所有不好的东西，所以人们从火上跳过去。", True),
        ("由于他们希望火能带走所有不好的东西，人们从火上跳过去。", True),
        # Each part held somewhere, the reason in a sentence that does not give it: green before, clause by clause.
        ("人们从火上跳过去，因为这一天是新年前的最后一个星期三。", False),
        ("人们从火上跳过去是因为这一天是新年前的最后一个星期三。", False),
        ("因为这一天是新年前的最后一个星期三，所以人们从火上跳过去。", False),
    ],
)
def test_a_chinese_reason_is_held_where_its_source_gives_it(claim: str, held: bool) -> None:
    assert bool(holding_sources(claim, {1: _FESTIVAL_ZH})) is held


@pytest.mark.parametrize(
    ("claim", "source", "held"),
    [
        # A sentence opening as a consequence ("So…", "所以…") gives the sentence before it as its reason.
        ("The match was cancelled because it rained all day.", "It rained all day. So the match was cancelled.", True),
        ("The match was cancelled because it rained all day.", "It rained all day. The match was cancelled.", False),
        ("比赛取消了，因为整天都在下雨。", "整天都在下雨。所以比赛取消了。球迷们回家了。", True),
        ("比赛取消了，因为整天都在下雨。", "整天都在下雨。比赛取消了。球迷们回家了。", False),
        ("球迷们回家了，因为整天都在下雨。", "整天都在下雨。所以比赛取消了。球迷们回家了。", False),
    ],
)
def test_a_consequence_has_its_reason_in_the_sentence_before(claim: str, source: str, held: bool) -> None:
    assert bool(holding_sources(claim, {1: source})) is held


def test_a_long_sentence_giving_a_reason_is_held_by_its_own_sentence() -> None:
    """A passage's own sentence, cited: its reason and its effect are each more than a window, so `_with_reason` holds
    neither; one sentence holding every clause holds it (zh_cmrc_trial's sentences, green before the reason check)."""
    sentence = (
        "佐敦谷邨于1996年开始清拆，由于佐敦谷南道位于邨中心，加上已计划在原址兴建佐敦谷游泳池，佐敦谷南道必须停用。"
    )
    passage = "佐敦谷南道是香港九龙的一条道路。" + sentence + "现址为佐敦谷游泳池。"
    assert holding_sources(sentence, {1: passage}) == (1,)
    # The same clauses from two sentences that do not give the one as the reason of the other.
    scattered = "佐敦谷南道位于邨中心。佐敦谷邨于1996年开始清拆。原址计划兴建佐敦谷游泳池。后来佐敦谷南道必须停用。"
    assert holding_sources("佐敦谷南道必须停用，因为佐敦谷南道位于邨中心。", {1: scattered}) == ()


@pytest.mark.parametrize(
    "source",
    [
        "王磊在比赛中受伤了，所以退出了决赛。观众很失望。",  # the subject left out after the sentence's first clause
        "王磊在比赛中受伤了。于是退出了决赛。",  # left out of a whole sentence: the one before names it
        "王磊在比赛中受伤了，他退出了决赛。",
        "2008年，王磊在比赛中受伤了，并退出了决赛。",
    ],
)
def test_a_name_put_in_place_of_a_left_out_subject_is_not_held(source: str) -> None:
    """A small model's slip: a name the passage never writes, where its clause leaves the subject out. The window
    "所以退出了决赛" writes nothing before the verb, so nothing stood against "刘洋" (the first two were green)."""
    assert holding_sources("刘洋退出了决赛。", {1: source}) == ()
    assert holding_sources("刘洋退出了决赛。", {1: source + "刘洋退出了决赛。"}) == (1,)


_KARST = (
    "天生三桥位于乌江支流羊水河畔，核心保护区约22平方公里，包括天龙桥、青龙桥、黑龙桥、青龙天坑、神鹰天坑、"
    "羊水河喀斯特峡谷、龙水峡地缝、中石院天坑、下石院天坑、七十二岔洞、龙泉洞、仙人洞和白果伏流。"
)


@pytest.mark.parametrize(
    ("claim", "held"),
    [
        # The conversation bench's one wrong answer green: "天龙天坑" is no name of the passage, though each of its
        # pairs of characters is (天龙桥, 青龙天坑).
        ("天龙天坑、神鹰天坑、羊水河喀斯特峡谷、龙水峡地缝、中石院天坑和下石院天坑。", False),
        ("青龙天坑、神鹰天坑、羊水河喀斯特峡谷、龙水峡地缝、中石院天坑和下石院天坑。", True),
        # The last name runs on into the sentence's own words: not judged as a name.
        ("保护区包括天龙桥、青龙桥、黑龙桥和青龙天坑。", True),
    ],
)
def test_an_enumeration_writes_the_passages_names(claim: str, held: bool) -> None:
    assert bool(holding_sources(claim, {1: _KARST})) is held


_KANGAROO = (
    "尤金袋鼠最初是于1628年船难的生还者在西澳发现的。尤金袋鼠共有三个亚种：尤金袋鼠很细小，约只有8公斤重，适合饲养。"
)


@pytest.mark.parametrize(
    ("claim", "held"),
    [
        # A Chromium walk's right answer, flagged: "三个亚种" on the same word is another measure than "8公斤", and
        # 体重 names what the source leaves to its unit.
        ("尤金袋鼠约只有8公斤重。", True),
        ("尤金袋鼠的体重大约只有8公斤重。", True),
        ("尤金袋鼠的体重大约只有3公斤重。", False),
        ("尤金袋鼠的身高大约只有8公斤重。", False),
        ("尤金袋鼠共有八个亚种。", False),
    ],
)
def test_a_measure_is_read_with_its_unit(claim: str, held: bool) -> None:
    assert bool(holding_sources(claim, {1: _KANGAROO})) is held


_ENGLISHTOWN = (
    "Ellen began to learn English at the age of fifty. Ellen began with the first level of Englishtown and quickly "
    "progressed. “I spent hours and hours studying,” she said. “Maybe I wanted too much in a short time. I finished "
    "all my courses after 2 years, but I still had grammar difficulties.” Instead of giving up, she chose to continue."
)


@pytest.mark.parametrize(
    ("claim", "held"),
    [
        # The "I" of a quotation she said stands for her, as "she" would (a Chromium walk's right answer, flagged).
        ("Ellen finished all her courses after 2 years, but she still had grammar difficulties.", True),
        ("Thelma finished all her courses after 2 years, but she still had grammar difficulties.", False),
        # A name opening the sentence is judged as one inside it: "Thelma" was green, its capital said nothing.
        ("Ellen began with the first level of Englishtown.", True),
        ("Thelma began with the first level of Englishtown.", False),
        ("She chose to continue.", True),
    ],
)
def test_a_quotations_speaker_and_an_opening_name(claim: str, held: bool) -> None:
    assert bool(holding_sources(claim, {1: _ENGLISHTOWN})) is held


@pytest.mark.parametrize(
    ("claim", "source"),
    [
        # A review of session 47's rules: each held where the source does not say it.
        ("The river flooded, because the bridge was closed.", "The river flooded, so the bridge was closed."),
        (
            "Ellen was tired after the long trip, because she went to bed early.",
            "Ellen was tired after the long trip, and she went to bed early.",
        ),
        (
            "Ellen finished all her courses after 2 years.",
            "Ellen began with the first level. “I finished all my courses after 2 years,” her teacher Mary said.",
        ),
        ("这条隧道的深度为800米。", "这条隧道全长800米，是当地最长的隧道。"),
        ("小明有5公斤大米。", "小明有3个苹果，小红有5公斤大米。"),
        ("尤金袋鼠约有50公斤重。", "尤金袋鼠共有三个亚种，灰袋鼠的体重约有50公斤。"),
        ("李明总是因为迟到被老师批评。", "李明总是很准时。这一天王强因为迟到被老师批评。"),
    ],
)
def test_the_rules_of_session_47_hold_nothing_their_source_does_not_say(claim: str, source: str) -> None:
    assert holding_sources(claim, {1: source}) == ()


@pytest.mark.parametrize(
    "claim",
    [
        "Eventually, she chose to continue.",
        "Undeterred, she chose to continue.",
        "Afterwards she chose to continue.",
        "Rather than giving up, she chose to continue.",
        "Initially, Ellen began with the first level of Englishtown.",
    ],
)
def test_a_word_saying_when_or_how_opens_a_sentence_and_names_no_one(claim: str) -> None:
    assert holding_sources(claim, {1: _ENGLISHTOWN}) == (1,)
