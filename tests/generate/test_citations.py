"""Citation markers: found, checked against the sources, rendered, or added (rag.generate.citations)."""
from __future__ import annotations

import pytest

from rag import generate
from rag.generate.citations import attribute_if_uncited
from tests.generate.samples import SOURCES


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


def test_markers_are_replaced_number_by_number_knowing_which_point_at_a_source() -> None:
    shown = generate.replace_markers("Rose [1] and [2, 3].", SOURCES, lambda n, known: f"<{n}{'' if known else '?'}>")
    assert shown == "Rose <1> and <2> <3?>."


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
