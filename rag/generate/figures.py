"""The numbers a text states, as values, with the words they count: "30km", "二十岁", "five communities".

A number is the most checkable part of a claim, and the commonest slip: "1943" for 1942, "年方三岁" for
五岁, "30个目标" where the passage says 30km and 20个目标. Values are compared, not spellings, so "三岁"
meets "3岁", "10,000" meets "10000" and "12万" meets "120000". Each number keeps its labels, the word
just before and just after it ("长" in "长702米", "communities" in "eight communities"), so that a
number moved onto another word ("长80米，深702米") is told from a paraphrase.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from rag.generate.support import STOP_WORDS
from rag.scripts import CJK


@dataclass(frozen=True)
class Figure:
    value: Decimal
    start: int
    end: int
    before: str
    """The content word or character just before it ("" when none: a range's second end, a line start)."""
    after: str
    """Its unit or the word it counts ("km", "个", "commu"; "" when none)."""


_DIGITS = re.compile(r"\d+(?:,\d{3})+(?![\d])(?:\.\d+)?|\d+(?:\.\d+)?")
_HAN_DIGITS = "零〇一二两三四五六七八九"
_HAN_NUMERAL = re.compile(f"[{_HAN_DIGITS}十百千万亿]+")
_HAN_VALUE = {c: i for i, c in enumerate("零一二三四五六七八九")} | {"〇": 0, "两": 2}
_HAN_UNIT = {"十": 10, "百": 100, "千": 1000}
# A lone Chinese numeral counts only before a measure word ("一女", "五岁", "三倍") or after 第: 一些,
# 统一, 一落胎胞 and 五彩 are not numbers.
_CLASSIFIERS = frozenset(
    "个位名岁年月日天次倍人种只头匹条张本部座所家层届场卷首阕胎子女块元米分秒克斤里口间项门件双对颗周代"
)
_NOT_NUMBERS = frozenset(
    {"十分", "万分", "万一", "千万", "一一", "一度", "一时", "一致", "一般", "一直", "一定", "一切"}
)
_SCALE = {"万": Decimal(10_000), "亿": Decimal(100_000_000)}
_EN_NUMBERS = {
    w: i
    for i, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty",
        ]
    )
} | {
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
    "hundred": 100,
    "thousand": 1000,
    "million": 1_000_000,
    "dozen": 12,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
}
_EN_WORD = re.compile(
    r"\b(?:"
    + "|".join(sorted(_EN_NUMBERS, key=len, reverse=True))
    + r")(?:-(?:"
    + "|".join(w for w, v in _EN_NUMBERS.items() if 0 < v < 10)
    + r"))?\b",
    re.IGNORECASE,
)
_ORDINAL_SUFFIX = frozenset({"st", "nd", "rd", "th", "s"})
_UNIT_LETTERS = re.compile(r"[A-Za-z]+")
_FILLER = frozenset("约为是在于有达共近超过了至到逾将仅只")
_FILLER_WORDS = frozenset(
    {"about", "around", "nearly", "almost", "over", "under", "than", "only", "just", "some", "approximately", "roughly"}
)
_WORD = re.compile(f"[A-Za-z]+|[{CJK}]")


def _han_value(run: str) -> Decimal | None:
    """The value of a run of Chinese numerals ("十四" 14, "二十" 20, "一百二十三" 123), None when it is
    not one number ("三四", "两三")."""
    total, section, digit = 0, 0, None
    for ch in run:
        if ch in _HAN_VALUE:
            if digit is not None:
                return None  # two digits in a row: "三四" (three or four)
            digit = _HAN_VALUE[ch]
        elif ch in _HAN_UNIT:
            section += (1 if digit is None else digit) * _HAN_UNIT[ch]
            digit = None
        elif ch in _SCALE:
            total += (section + (digit or 0)) * int(_SCALE[ch])
            section, digit = 0, None
    return Decimal(total + section + (digit or 0))


def _label_before(text: str, start: int) -> str:
    i = start
    while i > 0:
        ch = text[i - 1]
        if ch.isspace() or ch in _FILLER or ch in "~～-—":
            i -= 1
            continue
        if ch.isdigit() or not (ch.isalpha()):
            return ""  # a range's second end, a list, the start of a clause
        word = re.search(r"[A-Za-z]+$", text[:i])
        if word:
            stem = word.group().lower()
            if stem in _FILLER_WORDS or stem in STOP_WORDS:
                i = word.start()
                continue
            return stem[:5]
        return ch
    return ""


def _label_after(text: str, end: int) -> str:
    unit = _UNIT_LETTERS.match(text, end)
    if unit:
        letters = unit.group().lower()
        return "" if letters in _ORDINAL_SUFFIX else letters
    rest = text[end : end + 40]
    for match in _WORD.finditer(rest):
        word = match.group().lower()
        if rest[: match.start()].strip(" %％"):
            return ""
        if len(word) == 1 and not word.isascii():
            return word
        if word in STOP_WORDS:
            return ""
        return word[:5]
    return ""


def figures(text: str) -> list[Figure]:
    """Every number `text` states, in order."""
    found: list[Figure] = []
    for match in _DIGITS.finditer(text):
        value = Decimal(match.group().replace(",", ""))
        end = match.end()
        if text[end : end + 1] in _SCALE:
            value *= _SCALE[text[end]]
            end += 1
        found.append(Figure(value, match.start(), end, _label_before(text, match.start()), _label_after(text, end)))
    for match in _HAN_NUMERAL.finditer(text):
        run, start, end = match.group(), match.start(), match.end()
        after = text[end : end + 1]
        if run in _NOT_NUMBERS or (len(run) == 1 and after not in _CLASSIFIERS and text[start - 1 : start] != "第"):
            continue
        han_value = _han_value(run)
        # "第一" and "first" are paraphrased at will ("首次", "for the first time"): not a figure to check.
        if han_value is not None and not (han_value == 1 and text[start - 1 : start] == "第"):
            found.append(Figure(han_value, start, end, _label_before(text, start), after))
    for match in _EN_WORD.finditer(text):
        head, _, tail = match.group().lower().partition("-")
        try:
            value = Decimal(_EN_NUMBERS[head] + (_EN_NUMBERS[tail] if tail else 0))
        except (KeyError, InvalidOperation):
            continue
        found.append(
            Figure(
                value, match.start(), match.end(), _label_before(text, match.start()), _label_after(text, match.end())
            )
        )
    found.sort(key=lambda f: f.start)
    return found


def moved(claimed: list[Figure], held: list[Figure]) -> Figure | None:
    """A number of `claimed` that sits on a word where `held` has another number, while `held` never
    has it on that word ("five communities" where the source says "eight communities" and "five
    states"); None when there is none."""
    for figure in claimed:
        for side in ("before", "after"):
            label = getattr(figure, side)
            if not label:
                continue
            same = [g for g in held if getattr(g, side) == label]
            if same and all(g.value != figure.value for g in same):
                return figure
    return None
