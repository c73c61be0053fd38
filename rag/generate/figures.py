"""The numbers a text states, as values, with the words they count: "30km", "二十岁", "five communities".

A number is the most checkable part of a claim, and the commonest slip: "1943" for 1942, "年方三岁" for
五岁, "30个目标" where the passage says 30km and 20个目标. Values are compared, not spellings, so "三岁"
meets "3岁", "10,000" meets "10000" and "12万" meets "120000". Each number keeps its labels, the word
just before and just after it ("长" in "长702米", "communities" in "eight communities"), so that a
number moved onto another word ("长80米，深702米") is told from a paraphrase.
"""

from __future__ import annotations

import dataclasses
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
_TIME = re.compile(r"(?<![\d:.])(?:[01]?\d|2[0-3]):[0-5]\d(?![\d:])")
"""A time of day ("06:30", "8:00"), one figure."""
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
UNITS = frozenset(
    "kg g mg t lb lbs oz km m cm mm mi ft in l ml kw w kwh v a mah gb mb tb hz ghz mhz "
    "secon minut hour day week month year 岁 年 月 天 日 小 分 秒 公 米 克 吨 元 美 人 个 次 倍".split()
)
"""Labels after a figure that say what it counts: a figure the claim counts in one and the source only in others
has moved ("weighs 3 kg" where the source has "Warranty: 3 years"). Five letters at most, as labels are."""


def _unit(label: str) -> str:
    """The unit a figure's label after it names ("years" and "year" alike), or ""."""
    unit = label[:-1] if label.endswith("s") and label[:-1] in UNITS else label
    return unit if unit in UNITS else ""


_SERIES = re.compile(r"[,，、和及与]|\b(?:and|or)\b")
"""What joins the figures of a series ("06:30 on weekdays and at 08:00 on Saturdays")."""
_LINKS_AFTER = frozenset({"on", "at", "per", "during", "every", "each"})
"""Words between a figure and what it is of ("06:30 on weekdays", "3 per day"): its label is the word after."""
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


ZH_KIND_WORDS = (
    "型号",
    "机型",
    "版本",
    "方案",
    "阶段",
    "项目",
    "套餐",
    "计划",
    "产品",
    "系列",
    "模型",
    "选项",
    "车型",
    "款式",
)
"""Chinese words that name one of a kind by a number written after them ("型号5", "方案 2"): Chinese writes no
capital letter to tell such a name from an amount ("售价18,500元")."""


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
    pos = 0
    for match in _WORD.finditer(rest):
        word = match.group().lower()
        if rest[pos : match.start()].strip(" %％"):
            return ""
        if len(word) == 1 and not word.isascii():
            return word
        if word in _LINKS_AFTER:
            pos = match.end()
            continue
        if word in STOP_WORDS:
            return ""
        return word[:5]
    return ""


def figures(text: str) -> list[Figure]:
    """Every number `text` states, in order."""
    found: list[Figure] = []
    times = [(m.start(), m.end()) for m in _TIME.finditer(text)]
    for start, end in times:
        hours, minutes = text[start:end].split(":")
        # 08:00 is 8 and 8.00 ("at 8 on Saturdays", "at 6.30"); read as two numbers, the hours of one time
        # carried the label of the other's minutes.
        value = Decimal(hours) + Decimal(minutes) / 100
        found.append(Figure(value, start, end, _label_before(text, start), _label_after(text, end)))
    for match in _DIGITS.finditer(text):
        if any(a <= match.start() < b for a, b in times):
            continue
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
    # One word before a series is each figure's ("opens at 06:30 on weekdays and at 08:00 on Saturdays"): the
    # second's nearest word before it is the first's after it, and 08:00 read as "on weekdays" was moved off them.
    # "Model 3 weighs 80 kg" is no series: 80 is the weight's, "weighs" its word (the word and the second figure
    # are joined by "and", "or" or a comma in a series).
    for i in range(1, len(found)):
        before, figure = found[i - 1], found[i]
        if (
            figure.before
            and figure.before == before.after
            and before.before
            and _SERIES.search(text, before.end, figure.start)
        ):
            found[i] = dataclasses.replace(figure, before=before.before)
    return found


def moved(claimed: list[Figure], held: list[Figure]) -> Figure | None:
    """A number of `claimed` that sits on a word where `held` has another number, while `held` never
    has it on that word ("five communities" where the source says "eight communities" and "five
    states"); None when there is none."""
    for figure in claimed:
        unit = _unit(figure.after)
        same_value = [_unit(g.after) for g in held if g.value == figure.value]
        if unit and same_value and all(u and u != unit for u in same_value):
            return figure  # "3 kg" where `held` has "3 years"
        for side in ("before", "after"):
            label = getattr(figure, side)
            if not label:
                continue
            same = [g for g in held if getattr(g, side) == label]
            if same and all(g.value != figure.value for g in same):
                if side == "before" and _of_a_left_out_subject(figure, unit, same, held):
                    continue
                return figure
    return None


def _of_a_left_out_subject(figure: Figure, unit: str, same: list[Figure], held: list[Figure]) -> bool:
    """Whether `held` writes `figure`'s number in its unit with no word before it (its clause leaves the subject out),
    and the numbers on the claim's word are all of other units: "尤金袋鼠约只有8公斤重" of
    "尤金袋鼠共有三个亚种：尤金袋鼠很细小，约只有8公斤重" (a Chromium walk's right answer was flagged), not
    "小明有5公斤大米" of "小明有3个苹果，小红有5公斤大米", whose 5 is 小红's."""
    return (
        bool(unit)
        and all(_unit(g.after) not in ("", unit) for g in same)
        and any(g.value == figure.value and _unit(g.after) == unit and not g.before for g in held)
    )


_CURRENCY_BEFORE = re.compile(r"(US\$|\$|€|£|￥|¥|\b(?:RMB|USD|EUR|GBP|CNY))\s*$", re.IGNORECASE)
_CURRENCY_AFTER = re.compile(
    r"\s*(?:(?:million|billion|thousand)\s*)?(美元|欧元|英镑|日元|港元|人民币|元|dollars?\b|euros?\b|yuan\b|RMB\b|USD\b|"
    r"EUR\b|GBP\b|CNY\b)",
    re.IGNORECASE,
)
_CURRENCIES = {
    "$": "USD",
    "us$": "USD",
    "usd": "USD",
    "美元": "USD",
    "dollar": "USD",
    "dollars": "USD",
    "€": "EUR",
    "eur": "EUR",
    "欧元": "EUR",
    "euro": "EUR",
    "euros": "EUR",
    "£": "GBP",
    "gbp": "GBP",
    "英镑": "GBP",
    "rmb": "CNY",
    "cny": "CNY",
    "人民币": "CNY",
    "元": "CNY",
    "yuan": "CNY",
    "日元": "JPY",
    "港元": "HKD",
    "¥": "¥",  # yen or yuan: ¥ meets either
    "￥": "¥",
}
"""Currency signs and words, by currency. "Pounds" is left out: as often a weight."""


def currency(text: str, figure: Figure) -> str | None:
    """The currency `text` states `figure` in ("$21,000.00", "21,000美元", "18,500元"), or None."""
    before = _CURRENCY_BEFORE.search(text, max(0, figure.start - 6), figure.start)
    if before is not None:
        return _CURRENCIES[before.group(1).lower()]
    after = _CURRENCY_AFTER.match(text, figure.end)
    return _CURRENCIES[after.group(1).lower()] if after is not None else None
