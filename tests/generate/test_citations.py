"""Citation markers: found, checked against the sources, rendered, or added (rag.generate.citations)."""

from __future__ import annotations

import pytest

from rag import generate
from rag.generate.citations import attribute_if_uncited
from tests.generate.samples import SOURCES, hit


@pytest.mark.parametrize(
    ("answer", "cited", "unknown", "uncited"),
    [
        ("Revenue rose [1]. A dividend [2].", (1, 2), (), False),
        ("Both [1][2], again [2, 1].", (1, 2), (), False),
        ("收入增长【1】，分红【2、3】。", (1, 2), (3,), False),
        ("It rose [7].", (), (7,), False),
        ("No markers at all.", (), (), True),
    ],
)
def test_citation_check(answer: str, cited: tuple, unknown: tuple, uncited: bool) -> None:
    check = generate.check_citations(answer, SOURCES)
    assert (check.cited, check.unknown, check.uncited) == (cited, unknown, uncited)


def test_marker_spans_cover_the_markers() -> None:
    answer = "Rose [1] and [2, 3]."
    assert [(answer[a:b], n) for a, b, n in generate.marker_spans(answer)] == [("[1]", (1,)), ("[2, 3]", (2, 3))]


def test_attribution_cites_the_source_a_sentence_comes_from() -> None:
    answer = "Revenue rose eleven percent. The board approved a dividend! Something else entirely"
    cited = generate.attribute_citations(answer, SOURCES)
    assert cited == "Revenue rose eleven percent [1]. The board approved a dividend [2]! Something else entirely"
    assert generate.attribute_citations("Already cited [2].", SOURCES) == "Already cited [2]."
    assert generate.attribute_citations(answer, []) == answer


def test_only_the_embedded_model_has_its_uncited_answers_attributed() -> None:
    answer = "Revenue rose eleven percent."
    assert attribute_if_uncited(answer, SOURCES, "local:gemma3-270m") == "Revenue rose eleven percent [1]."
    assert attribute_if_uncited(answer, SOURCES, "ollama:qwen2.5:7b-instruct") == answer
    assert attribute_if_uncited("Rose [2].", SOURCES, "local:gemma3-270m") == "Rose [2]."


# -- sentences, support and the badges ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        (
            "A trace tree (i.e., a tree of traces) is used [3]. See Fig. 3 and Smith et al. for more. Done!",
            ["A trace tree (i.e., a tree of traces) is used [3].", " See Fig. 3 and Smith et al. for more.", " Done!"],
        ),
        (
            "Version 3.5 of e.g. the tool runs at 2.5x. J. Smith wrote it.",
            ["Version 3.5 of e.g. the tool runs at 2.5x.", " J. Smith wrote it."],
        ),
        ("收入增长【1】。分红获批！对吗？“是的。”好", ["收入增长【1】。", "分红获批！", "对吗？", "“是的。”", "好"]),
        (
            "It covers two years. [1] Returns take 30 days [2].\n- one\n- two",
            ["It covers two years. [1]", " Returns take 30 days [2].", "\n- one\n", "- two"],
        ),
        # A marker glued to the full stop, a marker broken over a line, "No." before a word or a number.
        ("It covers benchmarks.[1] It was written in Rust.", ["It covers benchmarks.[1]", " It was written in Rust."]),
        ("The splitter [1,\n2] cuts chunks. Next one.", ["The splitter [1,\n2] cuts chunks.", " Next one."]),
        ("No. The warranty is void. See No. 5 here.", ["No.", " The warranty is void.", " See No. 5 here."]),
        # A PDF's line ending at an initial or an abbreviation goes on (a walk: "O.\nReynolds" ended a sentence).
        (
            "Designed by architect O.\nReynolds in 1890. Dr.\nSmith etc.\n- an item",
            ["Designed by architect O.\nReynolds in 1890.", " Dr.\nSmith etc.\n", "- an item"],
        ),
    ],
)
def test_sentences_split_where_a_reader_would(text: str, sentences: list[str]) -> None:
    from rag.generate.sentences import sentence_spans

    spans = sentence_spans(text)
    assert [text[a:b] for a, b in spans] == sentences
    assert "".join(text[a:b] for a, b in spans) == text


def test_attribution_does_not_break_abbreviations() -> None:
    sources = generate.number_sources(
        [
            hit(
                "paper.pdf",
                (1,),
                "A trace tree is a tree of traces anchored at a loop header, i.e. the start of a hot loop.",
            )
        ]
    )
    cited = generate.attribute_citations("A trace tree is a tree of traces (i.e. anchored at a loop header).", sources)
    assert cited == "A trace tree is a tree of traces (i.e. anchored at a loop header [1])."


PAPER = generate.number_sources(
    [
        hit(
            "tracemonkey.pdf",
            (1,),
            "TraceMonkey is between 2x and 20x faster than SpiderMonkey on the SunSpider "
            "benchmarks. A trace tree is a tree of traces anchored at a loop header.",
        ),
        hit("红楼梦.txt", (3,), "甄士隐有一个女儿，乳名英莲，年方三岁。"),
    ]
)


@pytest.mark.parametrize(
    ("answer", "statuses", "grounded"),
    [
        # Copied from the source: supported, green.
        ("A trace tree is a tree of traces anchored at a loop header [1].", ["cited"], True),
        ("英莲 [2]", ["cited"], True),
        ("甄士隐的女儿叫英莲 [2]。", ["cited"], True),
        # The invented answers: a wrong number, invented browsers, a wrong name.
        (
            "TraceMonkey is faster than SpiderMonkey by a factor of 10 [1]. We have run the tests on Firefox, "
            "Chrome, Safari, Opera, and Edge.",
            ["not supported", "unsupported"],
            False,
        ),
        ("甄士隐的女儿叫'太虚幻境' [2]。", ["not supported"], False),
        # Cited the wrong source.
        ("A trace tree is a tree of traces anchored at a loop header [2].", ["not supported"], False),
        # No marker: supported by a source, but not cited by the model.
        ("A trace tree is a tree of traces.", ["uncited"], False),
        # Glued to the full stop: still its own sentence, so the invented one after it is flagged.
        (
            "TraceMonkey is between 2x and 20x faster than SpiderMonkey on the SunSpider benchmarks.[1] It was "
            "written in Rust by a team in Paris.",
            ["cited", "unsupported"],
            False,
        ),
        # Pleasantries are not claims: not judged, and they do not spoil a grounded answer.
        (
            "A trace tree is a tree of traces anchored at a loop header [1]. I hope this helps!",
            ["cited", "short"],
            True,
        ),
    ],
)
def test_the_support_check_tells_copied_from_invented(answer: str, statuses: list[str], grounded: bool) -> None:
    grounding = generate.check_grounding(answer, PAPER)
    assert [s.status for s in grounding.sentences] == statuses
    assert grounding.grounded is grounded


def test_matched_markers_are_shown_as_matched_and_never_count_as_cited() -> None:
    answer = generate.attribute_citations("A trace tree is a tree of traces anchored at a loop header.", PAPER)
    grounding = generate.check_grounding(answer, PAPER, attributed=True)
    assert [s.status for s in grounding.sentences] == ["matched"]
    assert grounding.cited == () and not grounding.grounded
    shown = generate.annotate(answer, grounding, lambda n, kind: f"<{n} {kind}>", "<no source>")
    assert shown == "A trace tree is a tree of traces anchored at a loop header <1 matched>."


def test_a_sentence_that_cites_nothing_shows_the_source_holding_its_claim_as_matched() -> None:
    """A right sentence copied from [1] without its marker had no badge, though the legend promises "≈ n";
    one whose words come from a source but not its claim is flagged beside that source, "≈ n ?" (it had no badge: a
    walk's "The railway carriage was built by a local woman … from 1930." before a cited sentence), and neither
    counts as cited."""
    answer = "A trace tree is a tree of traces anchored at a loop header. 甄士隐有一个女儿，乳名英莲，年方五岁。"
    grounding = generate.check_grounding(answer, PAPER)
    assert [(s.status, s.backing) for s in grounding.sentences] == [("uncited", (1,)), ("unheld", ())]
    assert grounding.cited == () and not grounding.grounded and grounding.unheld == grounding.sentences[1:]
    shown = generate.annotate(answer, grounding, lambda n, kind: f"<{n} {kind}>", "<no source>")
    copied, wrong = answer.split(". ")
    held_by = grounding.sentences[1].source
    assert shown == f"{copied} <1 matched>. {wrong[:-1]} <{held_by} unheld>。"
    right = generate.check_grounding("甄士隐有一个女儿，乳名英莲，年方三岁。", PAPER)
    assert [s.status for s in right.sentences] == ["uncited"]


def test_badges_follow_each_sentence_and_flag_the_unsupported_one() -> None:
    answer = (
        "TraceMonkey is between 2x and 20x faster than SpiderMonkey [1]. It was written in Rust. "
        "A trace tree is anchored at a loop header [2][7]."
    )
    grounding = generate.check_grounding(answer, PAPER)
    shown = generate.annotate(answer, grounding, lambda n, kind: f"<{n} {kind}>", "<no source>")
    assert shown == (
        "TraceMonkey is between 2x and 20x faster than SpiderMonkey <1 cited>. It was written in Rust. "
        "<no source> A trace tree is anchored at a loop header <2 not supported><7 unknown> <1 matched>."
    )
    assert grounding.unknown == (7,) and grounding.cited == (1,) and len(grounding.flagged) == 2
    # The last sentence cites the wrong sources; [1], which it does not cite, holds it: shown, still flagged.
    assert grounding.miscited == (grounding.sentences[-1],) and not grounding.grounded


def test_a_figure_cited_by_the_wrong_number_shows_the_source_that_holds_it() -> None:
    """The embedded model answered "型号4多少钱？" with "18,500元[2]", where [1] is the price list and [2] another
    company's page: the badge said "not supported" and nothing said where the figure stands."""
    sources = generate.number_sources(
        [
            hit("价目表.txt", (1,), "型号3：售价12,800元，重量80公斤。型号4：售价18,500元，重量95公斤。"),
            hit("公司.txt", (1,), "青山科技成立于2012年，创始人是李明。云账本售价299元，守望者售价899元。"),
        ]
    )
    grounding = generate.check_grounding("18,500元[2]", sources)
    (sentence,) = grounding.sentences
    assert sentence.status == "not supported" and sentence.backing == (1,) and grounding.miscited == (sentence,)
    shown = generate.annotate("18,500元[2]", grounding, lambda n, kind: f"<{n} {kind}>", "<no source>")
    assert shown == "18,500元<2 not supported> <1 matched>"
    assert not grounding.grounded and grounding.cited == ()
    # A figure no source says is shown with no other source; neither is one the claim check refuses there.
    for wrong in ("19,000元[2]", "型号3售价18,500元[2]"):
        (sentence,) = generate.check_grounding(wrong, sources).sentences
        assert sentence.status == "not supported" and sentence.backing == (), wrong


def test_a_padding_citation_is_marked_and_blocks_the_green_badge() -> None:
    answer = "A trace tree is a tree of traces anchored at a loop header [1][2]."
    grounding = generate.check_grounding(answer, PAPER)
    (sentence,) = grounding.sentences
    assert sentence.status == "cited" and sentence.backing == (1,)
    assert grounding.cited == (1,) and grounding.padding == (2,) and not grounding.grounded
    shown = generate.annotate(answer, grounding, lambda n, kind: f"<{n} {kind}>", "<no source>")
    assert shown == "A trace tree is a tree of traces anchored at a loop header <1 cited><2 padding>."
    # A sentence drawn from two sources cites both rightly.
    both = "TraceMonkey is between 2x and 20x faster than SpiderMonkey; 甄士隐有一个女儿，乳名英莲 [1][2]."
    assert generate.check_grounding(both, PAPER).sentences[0].backing == (1, 2)


def test_a_marker_on_a_sentence_too_short_to_judge_is_unchecked_and_text_is_never_repeated() -> None:
    answer = "Sources: [1]\nThe splitter [1,\n2] cuts chunks."
    grounding = generate.check_grounding(answer, PAPER)
    assert grounding.sentences[0].status == "short" and grounding.sentences[0].kind(1) == "unchecked"
    shown = generate.annotate(answer, grounding, lambda n, kind: f"<{n}>", "<no source>")
    assert shown == "Sources: <1>\nThe splitter <1> <2> cuts chunks."


def test_the_page_shown_first_is_the_one_the_citing_sentences_draw_on() -> None:
    from rag.documents import load_bytes
    from rag.generate import cited_page
    from tests.docgen import make_pdf

    doc = load_bytes(
        make_pdf(
            ["The harbour opened in 1887 for the grain trade.", "黛玉的父亲是林如海，任巡盐御史。"], fontname="china-s"
        ),
        "two.pdf",
    )
    parts = doc.page_parts(0, len(doc.text))
    assert parts == [(1, doc.pages[0].text), (2, doc.pages[1].text)]
    assert doc.page_parts(doc.page_starts[1] + 2, len(doc.text)) == [(2, doc.pages[1].text[2:])]
    assert cited_page(["林如海是巡盐御史 [1]。"], parts) == 2  # Chinese, by its bigrams
    assert cited_page(["It opened in 1887 [1]."], parts) == 1
    assert cited_page([], parts) == 1 and cited_page(["Nothing shared [1]."], parts) == 1  # a tie: the first
    assert cited_page(["x"], []) is None


def test_a_sentence_in_another_language_than_its_sources_is_not_checked_neither_cited_nor_flagged() -> None:
    """A Chinese question over an English price list: "保修三年[2]" (right: "a three-year warranty") was called not
    supported by the sources, its words compared with English ones."""
    sources = generate.number_sources(
        [
            hit("company.txt", (1,), "Harbour Freight runs two depots, in Leeds and in York."),
            hit("prices.txt", (1,), "Model 5: $21,000.00, 110 kg. Every model comes with a three-year warranty."),
            hit("公司.txt", (1,), "青山科技成立于2012年，创始人是李明。云账本售价299元，守望者售价899元。"),
        ]
    )
    grounding = generate.check_grounding("保修三年[2]。型号5重110公斤[2]。", sources)
    assert [s.status for s in grounding.sentences] == ["other language", "other language"]
    assert grounding.other_language == grounding.sentences and grounding.judged == 0
    assert not grounding.flagged and not grounding.grounded and grounding.cited == ()
    shown = generate.annotate("保修三年[2]。", grounding, lambda n, kind: f"<{n} {kind}>", "<no source>")
    assert shown == "保修三年<2 other language>。"
    # Checked as before: a figure the source does not hold (digits compare across languages), a source in the
    # sentence's language among those cited, figures alone, the same language.
    for answer, status in (
        ("型号5售价25,000美元[2]。", "not supported"),
        ("保修三年[2][3]。", "not supported"),
        ("$21,000.00 [2].", "cited"),
        ("Model 5 costs $21,000.00 [2].", "cited"),
        ("Model 5 costs $25,000.00 [2].", "not supported"),
        ("云账本售价299元[3]。", "cited"),
    ):
        assert [s.status for s in generate.check_grounding(answer, sources).sentences] == [status], answer
    # Citing nothing, in another language than every source: not flagged as said by none.
    (sentence,) = generate.check_grounding("The company sells two products.", sources[2:]).sentences
    assert sentence.status == "other language" and not sentence.flagged


def test_a_figure_held_by_a_source_in_another_language_is_not_called_a_guess() -> None:
    """A Chromium walk: "The depth of Sayram Lake is 106 meters. [3]" cited an English passage that does not hold it
    while [1], Chinese, holds 最深处达106米; the red "not in the sources: the model may have guessed" was not true.
    The sentence stays flagged (what it cites does not say it)."""
    sources = generate.number_sources(
        [
            hit("赛里木湖.txt", (1,), "赛里木湖，古称“净海”，是一个高山湖泊。平均水深46.4米，最深处达106米。"),
            hit("homes.docx", (1,), "When it comes to building homes, people in many countries use wood and stone."),
        ]
    )
    cited_wrong = generate.check_grounding("The depth of Sayram Lake is 106 meters. [2]", sources)
    (sentence,) = cited_wrong.sentences
    assert sentence.status == "not supported" and sentence.figures_elsewhere == (1,)
    assert sentence.flagged and not cited_wrong.grounded and not cited_wrong.nothing_held
    for guessed in ("The depth of Sayram Lake is 205 meters. [2]", "The lake is deep and very blue. [2]"):
        grounding = generate.check_grounding(guessed, sources)
        assert grounding.nothing_held and grounding.sentences[0].figures_elsewhere == (), guessed


PRICE_LIST = "Price list of the Model series\nModel 3: $15,500.00, 80 kg\nModel 5: $21,000.00, 110 kg"


def test_an_amount_in_another_currency_than_the_sources_is_not_held() -> None:
    """A walk: "型号3多重？" over an English price list was answered "15,500.00元，80 kg" (Model 3's price in dollars
    turned into yuan), shown matched to the list; "21,000.00元[1]" for "$21,000.00" would have been left unchecked."""
    sources = generate.number_sources([hit("prices.txt", (1,), PRICE_LIST)])
    for answer, status in (
        ("Model 3 costs 15,500.00 yuan [1].", "not supported"),
        ("Model 3 costs $15,500.00 [1].", "cited"),
        ("型号5的价格是21,000.00元[1]。", "not supported"),
        ("型号5的价格是21,000.00美元[1]。", "other language"),
    ):
        assert [s.status for s in generate.check_grounding(answer, sources).sentences] == [status], answer
    (sentence,) = generate.check_grounding("Model 3 costs 15,500.00 yuan and weighs 80 kg.", sources).sentences
    assert sentence.status == "unheld" and sentence.backing == ()  # not matched to the price list (≈ 1)


@pytest.mark.parametrize(
    "answer",
    [
        "Its favorite color was red. [1]",  # the passage: "Its favourite colour was red."
        "The hall was painted gray and is 12 meters long. [1]",
    ],
)
def test_a_word_spelled_the_other_way_is_the_same_word(answer: str) -> None:
    from rag.generate.support import content_terms, spelled

    passage = "The old hall was painted grey and is 12 metres long. Its favourite colour was red."
    numbered = tuple(generate.number_sources([hit("hall.txt", (1,), passage)]))
    assert generate.check_grounding(answer, numbered).grounded
    assert content_terms("1,000 kilograms of colours") == content_terms("1,000 kilos of colors")
    # A word that only begins like one is left as it is.
    assert [spelled(w) for w in ("laboratory", "metropolis", "colonel", "kilometre")] == [
        "laboratory",
        "metropolis",
        "colonel",
        "kilometre",
    ]
