"""benchmarks/ocr.py: the character error rate (hand-made strings) and one real Chinese and English page
rendered as a 200-dpi scan and read by Tesseract, as `bench --only documents` does (issue #33)."""

from __future__ import annotations

import pytest

from benchmarks import ocr as bench
from rag.documents import ocr


def test_levenshtein_counts_insertions_deletions_and_substitutions() -> None:
    assert bench.levenshtein("", "abc") == 3
    assert bench.levenshtein("kitten", "sitting") == 3
    assert bench.levenshtein("泡封会减少生命", "泡封会碱少生命") == 1


def test_cer_ignores_spacing_in_chinese_and_width_of_punctuation_but_not_in_english() -> None:
    assert bench.cer(["减少生命，玩家"], ["减少 生命,\n玩家"], chinese=True) == 0.0
    assert bench.cer(["two  words"], ["two words"], chinese=False) == 0.0
    assert bench.cer(["two words"], ["twowords"], chinese=False) == pytest.approx(1 / 9)
    assert bench.cer(["abcd", "ef"], ["abcd", "xf"], chinese=False) == pytest.approx(1 / 6)


def test_english_is_set_in_forms_the_built_in_font_can_draw() -> None:
    assert bench.settable("\u201cYes\u2019\u2026\u201d \u2014 she", chinese=False) == '"Yes\'..." - she'
    assert bench.settable("Zoë paid \u20ac5", chinese=False) is None  # the euro sign is beyond Latin-1
    assert bench.settable("“泡泡”", chinese=True) == "“泡泡”"


def test_a_rendered_scan_is_read_back_with_a_low_error_rate_in_both_languages() -> None:
    assert ocr.available(), ocr.ENABLE_HINT
    chinese = bench.scan(bench.passages("zh_cmrc_trial", 1)[0], "china-s", 200)
    english = bench.scan(bench.passages("en_race", 1)[0], "helv", 200)
    # Measured on these pages: Chinese 1-3%, English under 0.5%.
    assert bench.cer([chinese.text], [bench.app_reading(chinese).text], chinese=True) < 0.06
    assert bench.cer([english.text], [bench.app_reading(english).text], chinese=False) < 0.02
