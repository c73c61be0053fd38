"""A bare answer read with its question: "华西协合大学 [1]" answers "华西医院的前身是什么？".

The claim check (rag.generate.claims) reads a sentence's own words: a bare noun phrase says nothing about
how it relates to what was asked, so "华西协合大学 [1]" was green on a passage that names the university and
the hospital but has the hospital grow out of two other hospitals (a Chromium walk of the chat, session 36).
`as_claims` writes the claim such an answer makes: the question with its question word replaced by the answer
("华西医院的前身是华西协合大学"), which the cited passage must hold as well. Two more readings of an answer with
its question: `other_measure` (a height for a weight) and `figure_missing` (no figure where one is asked).
"""

from __future__ import annotations

import re

from rag.generate.sentences import CLAUSE_MARK, MARKER
from rag.scripts import HAN, HAN_CHAR

FRAGMENT_CHARS = 32
"""The longest answer read as a bare answer (markers and end punctuation left out): a name, a date, a figure
with its unit, a short phrase. Measured on zh_cmrc_trial's 1,000 gold spans and 989 wrong ones (`python -m rag bench
--only badges`, its last line): right / wrong green read with the question at 16 characters 908 / 671, 24 897 /
604, 32 893 / 579, 48 886 / 565 (without the question 975 / 961; before `figure_missing`, which took the wrong ones
at 32 to 551)."""

_END = re.compile(r"[\s。．.！!？?]+$")
ZH_QUESTION_WORD = re.compile(
    r"什么时候|什么地方|什么人|什么|谁|哪里|哪儿|哪一年|哪年|哪一天|"
    r"哪(?:一个|一位|一座|一家|一所|一种|个|位|座|家|所|种|条|国|些)|"
    r"多少(?:年|人|个|件|次|米|公里|平方公里)?|几(?:个|年|岁|位|次|种|月|号)|多久|多长|多大|多高|多重|多远|多深|多宽|何时|何地|何人|何处"
)
"""A Chinese question's question word: what a bare answer takes the place of."""
EN_QUESTION_WORD = re.compile(
    r"\b(?:how\s+(?:many|much|long|old|tall|high|big|far|large)|"
    r"(?:what|which)(?:\s+(?:year|city|country|town|day|month|date|place))?|who|whom|whose|where|when)\b",
    re.IGNORECASE,
)
"""An English question's question word (with the noun or measure it asks for)."""
_ZH_PARTICLE = re.compile(r"[呢吗呀啊]?[\s？?。.！!]*$")
_EN_AUXILIARY = re.compile(r"^\s*(?:do|does|did)\b\s*", re.IGNORECASE)


def fragment(answer: str) -> str | None:
    """The answer's text when it is a bare answer (one short clause, markers and end punctuation dropped), else
    None."""
    text = _END.sub("", MARKER.sub("", answer)).strip()
    if not text or len(text) > FRAGMENT_CHARS or CLAUSE_MARK.search(text):
        return None
    return text


_RESTATED_HAN = 3
"""Han characters in a row an answer shares with its question that make it a sentence of its own: "黑龙江省博物馆藏品
11万余件" (16 characters, short) names what was asked; "华西协合大学" shares only 华西 with "华西医院的前身"."""


def _restates(question: str, text: str) -> bool:
    """Whether a short answer names what `question` asks about (it is a sentence, not a bare answer)."""
    han = re.findall(f"[{HAN}]+", question)
    if any(run[i : i + _RESTATED_HAN] in text for run in han for i in range(len(run) - _RESTATED_HAN + 1)):
        return True
    words = re.findall(r"[A-Za-z0-9]+", question.lower())
    pairs = {f"{a} {b}" for a, b in zip(words, words[1:], strict=False)}
    said = " ".join(re.findall(r"[A-Za-z0-9]+", text.lower()))
    return any(pair in said for pair in pairs)


def as_claims(question: str, answer: str) -> tuple[str, ...]:
    """The claim a bare `answer` makes of `question`: the question's (first) question word replaced by the answer,
    its question mark dropped; none when the answer is no bare answer or the question has no question word. For a
    Chinese question whose answer is said of a noun its owner names ("胜利广场的骑马铜像有多高？") also the claim of
    that noun alone ("骑马铜像有12米高"): a passage names the owner, its topic, in a sentence before the one that
    says it ("…1828年…兴建目前的12米高的骑马铜像"). Either held holds the answer: the relation and the figure are
    still asked ("前身是华西协合大学" needs a 前身 of its own)."""
    text = fragment(answer)
    question = question.strip()
    if text is None or not question or _restates(question, text):
        return ()
    if HAN_CHAR.search(question):
        match = ZH_QUESTION_WORD.search(question)
        if match is None:
            return ()
        before, after = question[: match.start()], _ZH_PARTICLE.sub("", question[match.end() :])
        if text.startswith("是") and before.endswith("是"):
            text = text[1:]  # "是华西协合大学" for "…的前身是什么"
        claim = f"{before}{text}{after}。"
        owned = before.rfind("的")
        return (claim, f"{before[owned + 1 :]}{text}{after}。") if 0 < owned < len(before) - 1 else (claim,)
    match = EN_QUESTION_WORD.search(question)
    if match is None:
        return ()
    after = _EN_AUXILIARY.sub(" ", question[match.end() :]).rstrip(" ?.!")
    return (f"{question[: match.start()]}{text}{after}.",)


# What a question asks to be measured, and the units that measure it. A walk's "胜利广场的骑马铜像有多重？" was
# answered "12米高 [3]", a height its source holds, and badged green.
_ASKS = (
    ("weight", re.compile(r"多重|多沉|重量|\bhow\s+heavy\b|\bweigh(?:s|t)?\b", re.IGNORECASE)),
    ("area", re.compile(r"面积|占地|\b(?:floor\s+)?area\b", re.IGNORECASE)),
    ("length", re.compile(r"多高|多远|多深|多宽|高度|\bhow\s+(?:tall|high|far|deep|wide)\b|\bheight\b", re.IGNORECASE)),
)
_ASKS_ORGANISATION = re.compile(
    r"(?:哪(?:一)?(?:家|个|所)?|什么)(?:公司|机构|单位|企业|组织|电视台|电台|报社|出版社|银行|厂商)|"
    r"\b(?:which|what)\s+(?:company|firm|organi[sz]ation|agency|channel|network|broadcaster|publisher)\b",
    re.IGNORECASE,
)
_CLOCK_AND_CALENDAR = re.compile(
    r"[\d\s:：～~\-–—至到点分秒年月日号时、，,。.]|每|逢|周[一二三四五六日天末]?|星期[一二三四五六日天]?|礼拜[一二三四五六日天]?|"
    r"[上下中]午|早上|晚上|凌晨|傍晚|\b(?:a\.?m\.?|p\.?m\.?|every|on|at|from|to|until|noon|mondays?|tuesdays?|"
    r"wednesdays?|thursdays?|fridays?|saturdays?|sundays?)\b",
    re.IGNORECASE,
)
"""What writes a time or a date (a clock time, a weekday, a part of the day, their figures and punctuation): an
answer of these alone names no one."""
_UNITS = (
    ("area", re.compile(r"平方|公顷|亩|\b(?:square|sq|hectares?|acres?)\b|[mk]m²", re.IGNORECASE)),
    ("weight", re.compile(r"吨|公斤|千克|斤|(?<![千毫厘])克|\d\s*(?:kg|t|tons?|tonnes?|pounds?|lbs?|oz)\b", re.I)),
    ("length", re.compile(r"米|公里|英尺|英里|\d\s*(?:m|km|cm|mm|ft|meters?|metres?|feet|miles?)\b", re.IGNORECASE)),
)


def _beside_a_figure(character: str, units: str) -> re.Pattern[str]:
    """`character` written by a figure in `units` ("8公斤重", "长约800米")."""
    return re.compile(rf"{character}\s*(?:约|近|达|逾|为|有)?\s*\d|\d[\d.,]*\s*(?:{units})\s*{character}")


_MEASURE_NOUNS = (
    (re.compile(r"体重|重量"), _beside_a_figure("重", r"吨|公斤|千克|斤|克|kg")),
    (re.compile(r"长度"), _beside_a_figure("长", r"米|公里|英尺|英里|km|m")),
    (re.compile(r"身高|高度"), _beside_a_figure("高", r"米|英尺|m")),
    (re.compile(r"深度"), _beside_a_figure("深", r"米|英尺|m")),
    (re.compile(r"宽度"), _beside_a_figure("宽", r"米|公里|英尺|km|m")),
)
"""Chinese nouns naming a measure, and where a passage writes that measure's character by a figure instead ("8公斤重",
"全长800米", "高12米")."""


def measure_nouns(claim: str, window: str) -> set[str]:
    """The characters of the nouns of `claim` naming a measure that `window` gives by its figure instead: "体重" of
    "尤金袋鼠的体重约只有8公斤" where the window writes "约只有8公斤重" (a Chromium walk's right answer was
    flagged: 体重 stood where the window writes 很细小). Only where the window writes that measure's own character
    next to a figure in its units ("深度" is no "全长800米"'s)."""
    found: set[str] = set()
    for nouns, beside in _MEASURE_NOUNS:
        if beside.search(window):
            found.update(*nouns.findall(claim))
    return found


def other_measure(question: str, answer: str) -> bool:
    """Whether `answer` measures in other units than the kind `question` asks for ("12米高" for "有多重？"): it
    gives a figure in units of another kind (weight, length, area) and none of the kind asked; or it gives a time or
    a date and nothing else where the question asks which company or organisation."""
    if _ASKS_ORGANISATION.search(question) and not _CLOCK_AND_CALENDAR.sub("", MARKER.sub(" ", answer)):
        return True  # "每周日上午11:00～12:00" for "…是由哪家公司负责的？": a time, no company
    asked = next((kind for kind, words in _ASKS if words.search(question)), None)
    if asked is None:
        return False
    text = MARKER.sub(" ", answer)
    given: set[str] = set()
    for kind, units in _UNITS:
        if units.search(text):
            given.add(kind)
            text = units.sub(" ", text)  # 平方米 is an area, not a length too
    return bool(given) and asked not in given


# Questions whose answer is a figure (an amount, a measure, a year), and what writes one. A conversation bench run
# answered "How deep is the lake?" with "The lake is the largest lake in the UK [1]": true, cited, badged green.
_ASKS_FIGURE = re.compile(
    r"多少|(?<!哪)几(?:个|位|次|种|件|名|天|月|号|岁|年|倍|层|米)|多(?:深|高|重|长|远|宽|大|久|少)|哪一?年|"
    r"\bhow\s+(?:many|much|deep|tall|high|long|far|old|big|large|heavy|wide)\b|\b(?:what|which)\s+year\b",
    re.IGNORECASE,
)
_FIGURE_WORDS = re.compile(
    r"\d|[零〇一二两三四五六七八九十百千万亿半]|\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|"
    r"twelve|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|million|billion|dozens?|half|"
    r"a few|several|none|no|tenths?|quarters?|thirds?|halves|doubled?|tripled?|twice|percent|"
    r"(?:twen|thir|for|fif|six|seven|eigh|nine)ties)\b",
    re.IGNORECASE,
)


def figure_missing(question: str, answer: str) -> bool:
    """Whether `question` asks for a figure (how many, how deep, 多少, 哪一年) and `answer` writes none (no digit,
    no numeral, no number word): whatever its sources hold, it does not answer."""
    return bool(_ASKS_FIGURE.search(question)) and not _FIGURE_WORDS.search(MARKER.sub(" ", answer))
