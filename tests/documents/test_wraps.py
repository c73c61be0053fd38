"""Lines a page wrapped inside Chinese text are joined again; real line ends and English lines are kept."""

from __future__ import annotations

from rag.documents.wraps import _line_widths, join_wrapped_lines

FULL = "基于跑跑卡丁车与泡泡堂上所开发的游戏由韩国开发与发行中国大陆由盛大游"  # a full line, 35 characters
NEXT = "戏运营这是时隔六年再次授予盛大网络其游戏运营权台湾由游戏橘子运营玩家。"  # ends a sentence


def test_a_full_line_ending_inside_a_word_is_joined_to_the_next() -> None:
    text = f"标题\n{FULL}\n{NEXT}\n最后一行。"
    assert join_wrapped_lines(text) == f"标题\n{FULL}{NEXT}\n最后一行。"


def test_a_heading_a_short_last_line_and_a_sentence_end_keep_their_newlines() -> None:
    short = "短的一行"
    ended = FULL[:-1] + "。"
    text = f"{short}\n{FULL}\n{short}\n{ended}\n{NEXT}"
    assert join_wrapped_lines(text) == f"{short}\n{FULL}{short}\n{ended}\n{NEXT}"


def test_a_number_or_latin_word_wrapped_inside_chinese_is_joined() -> None:
    text = f"{FULL[:-3]}天文1\n5年出生{NEXT[4:]}\n{FULL[:-5]}韩国Nex\non开发与发行"
    assert join_wrapped_lines(text) == f"{FULL[:-3]}天文15年出生{NEXT[4:]}\n{FULL[:-5]}韩国Nexon开发与发行"


def test_punctuation_that_never_starts_a_line_is_joined_to_the_line_before() -> None:
    assert join_wrapped_lines("钻石、大师)\n，可选择经典模式") == "钻石、大师)，可选择经典模式"
    assert join_wrapped_lines("玩家以水枪\n、小枪") == "玩家以水枪、小枪"


def test_english_lines_and_spaced_words_keep_their_newlines() -> None:
    english = "Born in 1999\n2000 people came to the town\nthat year."
    assert join_wrapped_lines(english) == english
    mixed = f"{FULL[:-6]}在 Python\n3 里写的程序"  # a space before the number: the newline is a space
    assert join_wrapped_lines(mixed) == mixed


def test_a_wrapped_line_narrowed_by_digits_is_still_full() -> None:
    """Digits and Latin letters are narrower than half a Chinese character: such a wrapped line measured ~0.8 of
    the page's lines in cells, and "男子10\\n0米" stayed cut."""
    dates = "比赛于2008年8月15日至2008年8月16日在北京举行男子10"
    full, line = _line_widths(FULL)[1][0], _line_widths(dates)[1][0]
    assert 0.6 * full <= line < 0.85 * full
    text = f"{FULL}\n{NEXT}\n{dates}\n0米决赛打破世界纪录。"
    assert join_wrapped_lines(text) == f"{FULL}{NEXT}\n{dates}0米决赛打破世界纪录。"


def test_line_widths_count_wide_characters_as_two_cells_in_every_plane() -> None:
    newlines, widths = _line_widths("中a\n😀\n\n𠀀b，x")
    assert newlines.tolist() == [2, 4, 5]
    assert widths.tolist() == [3, 2, 0, 6]  # 𠀀 (U+20000) and 😀 lie past the first plane; "，" is full-width


def test_a_latin_run_before_the_newline_is_wrapped_only_after_unspaced_text_within_its_last_64_characters() -> None:
    short_run = f"{FULL}abc\ndef{NEXT}"
    assert join_wrapped_lines(short_run) == f"{FULL}abcdef{NEXT}"
    long_run = f"{FULL}{'x' * 64}\ndef{NEXT}"  # the unspaced text is 65 characters back: an English line
    assert join_wrapped_lines(long_run) == long_run
    assert join_wrapped_lines(f"{FULL}{'x' * 63}\ndef{NEXT}") == f"{FULL}{'x' * 63}def{NEXT}"
    spaced = f"{FULL} abc\ndef{NEXT}"  # a space before the Latin word: the newline is a space too
    assert join_wrapped_lines(spaced) == spaced
