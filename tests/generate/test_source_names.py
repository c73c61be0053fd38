"""A file name in a source's label (issue 33): a U+202E in it must not reverse the rest of the label, and a
right-to-left name is isolated from the text after it."""

from __future__ import annotations

from rag import generate
from rag.text import shown_name
from tests.generate.samples import hit


def test_bidi_controls_in_a_file_name_are_dropped_from_the_source_label() -> None:
    (source,) = generate.number_sources([hit("invoice\u202efdp.exe", (4,), "Total due: 420 euros.")])
    assert source.label == "[1] invoicefdp.exe p. 4"
    assert shown_name("a\u2066b\u2069\u200fc\u202ad\u202c.pdf") == "abcd.pdf"


def test_a_right_to_left_name_is_isolated_and_a_left_to_right_one_is_left_as_it_is() -> None:
    (hebrew,) = generate.number_sources([hit("דוח.pdf", (2,), "x")])
    assert hebrew.label == "[1] \u2068דוח.pdf\u2069 p. 2"
    assert shown_name("年度报告.pdf") == "年度报告.pdf" and shown_name("report.pdf") == "report.pdf"


def test_the_apps_label_drops_them_too() -> None:
    from ui import i18n

    (source,) = generate.number_sources([hit("a\u202eb.pdf", (1,), "x")])
    assert i18n.source_label(source) == "[1] ab.pdf p. 1"
