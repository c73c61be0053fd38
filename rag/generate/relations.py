"""The words that say how two things relate (父亲, daughter, 击败, obsoletes, faster), in both languages.

The claim check (rag.generate.claims) needs more than shared words: "林黛玉的父亲是贾赦" shares 黛玉 and
贾赦 with a passage about her uncle ("大舅贾赦"), and "RFC 2068 obsoletes RFC 2616" shares every word
with the sentence that says the opposite. Each entry names a relation `group`, the `role` of the one
the word names or that does the action (the father is the "parent" of the parent-child group, the one
who "beats" is the "winner"), and how the word attaches to the one it is relative to:

- "noun" (父亲, daughter, coach): the other side is its possessor ("黛玉的父亲", "Gal's adviser",
  "the father of four"), or, said as a verb ("生得一女", "had five daughters"), the subject before it;
- "verb" (击败, beat, obsoletes, faster, 比...高): the subject before it has the role, the object after
  it the converse (a passive "被/by" turns them round).

So "黛玉的父亲是林如海" and "林如海…生得一女，乳名黛玉" say the same thing (converse roles of one group),
and "林如海是黛玉的女儿" the opposite. Groups with no direction (spouse, cousin) have role "".

`EXCLUSIVE` lists words of which a passage saying one denies the others (东/西, gold/bronze, approved
/rejected): an answer saying "以东" where the passage says "以西" states something else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Relation:
    group: str
    role: str
    """The role of the one the word names (noun) or of the subject (verb); "" for groups with no direction."""
    kind: str
    """"noun" or "verb"."""
    gender: str = ""
    """"m", "f" or "" (father and mother are the same role, not the same person)."""


@dataclass(frozen=True)
class Mention:
    start: int
    end: int
    relation: Relation


# The converse of each role: the parent of a child, the loser of a winner.
CONVERSE = {
    "parent": "child",
    "child": "parent",
    "elder": "younger",
    "younger": "elder",
    "teacher": "student",
    "student": "teacher",
    "winner": "loser",
    "loser": "winner",
    "buyer": "bought",
    "bought": "buyer",
    "newer": "older",
    "older": "newer",
    "more": "less",
    "less": "more",
    "variant": "model",
    "model": "variant",
    "": "",
}


def _noun(group: str, role: str, gender: str = "") -> Relation:
    return Relation(group, role, "noun", gender)


def _verb(group: str, role: str) -> Relation:
    return Relation(group, role, "verb")


# Chinese kin words written with one character (父, 女, 弟) count only where they are kin words: after
# 之/其/的 or a rank (长/次/独...), never inside 女子, 女词人 or 父系.
_ZH_AFTER = "(?:(?<=[之其的长次幼独胞嫡亲生一])|(?<=小女)|^)"
_ZH: tuple[tuple[str, Relation], ...] = (
    ("父亲|爸爸|" + _ZH_AFTER + "父(?![系权])", _noun("parent", "parent", "m")),
    ("母亲|妈妈|" + _ZH_AFTER + "母(?![语国校])", _noun("parent", "parent", "f")),
    ("女儿|" + _ZH_AFTER + "女(?![子性士单双词])", _noun("parent", "child", "f")),
    ("儿子|公子|" + _ZH_AFTER + "子(?![弹女孙])", _noun("parent", "child", "m")),
    ("外?祖父|爷爷|外公", _noun("grand", "elder", "m")),
    ("外?祖母|奶奶|外婆", _noun("grand", "elder", "f")),
    ("外?孙女", _noun("grand", "younger", "f")),
    ("外?孙子|之孙|其孙", _noun("grand", "younger", "m")),
    ("哥哥|兄长|长兄|" + _ZH_AFTER + "兄(?![弟妹])", _noun("sibling", "elder", "m")),
    ("姐姐|" + _ZH_AFTER + "姐", _noun("sibling", "elder", "f")),
    ("弟弟|胞弟|" + _ZH_AFTER + "弟(?![子])|(?<=[，,。])弟", _noun("sibling", "younger", "m")),
    ("妹妹|" + _ZH_AFTER + "妹", _noun("sibling", "younger", "f")),
    ("[大二三四]?舅舅?|舅父|叔叔|叔父|伯父|大伯", _noun("uncle", "elder", "m")),
    ("舅母|姑妈|姑母|姨妈|姨母", _noun("uncle", "elder", "f")),
    ("外甥女?|侄子|侄女|之侄|之甥", _noun("uncle", "younger")),
    ("[表堂][兄弟姐妹]", _noun("cousin", "")),
    ("妻子|之妻|嫡妻|为妻|太太|的夫人|丈夫|之夫|其夫|娶|嫁|结婚|成婚", _noun("spouse", "")),
    ("老师|师父|导师|恩师|教练|之师", _noun("teacher", "teacher")),
    ("学生|弟子|徒弟|门生", _noun("teacher", "student")),
    ("击败|战胜|打败|击溃|胜过|赢了", _verb("defeat", "winner")),
    ("负于|败给|输给|不敌", _verb("defeat", "loser")),
    ("收购|并购|买下", _verb("acquire", "buyer")),
    ("打破|刷新", _verb("record", "winner")),
    ("领先", _verb("lead", "more")),
    ("落后", _verb("lead", "less")),
    ("取代|替代|接替", _verb("replace", "newer")),
    # What a thing grew out of: "华西医院的前身是华西协合大学" was green on a passage that has it grow out of two
    # other hospitals (its words were all there, 前身 nowhere: a walk's answer, benchmarks/data/badges.jsonl).
    ("前身", _noun("origin", "older")),
    ("起源于|起源自|源于|源自|发源于|脱胎于", _verb("origin", "newer")),
    ("发展为|发展成为?|演变为|演变成|演化为|扩建为|升格为|改制为|改组为", _verb("origin", "older")),
)

_EN: tuple[tuple[str, Relation], ...] = (
    (r"father|dad|daddy", _noun("parent", "parent", "m")),
    (r"mother|mom|mum|mummy", _noun("parent", "parent", "f")),
    (r"parents?", _noun("parent", "parent")),
    (r"daughters?", _noun("parent", "child", "f")),
    (r"sons?", _noun("parent", "child", "m")),
    (r"child|children|kids?", _noun("parent", "child")),
    (r"grandfather|grandmother|grandparents?", _noun("grand", "elder")),
    (r"grandsons?|granddaughters?|grandchild(?:ren)?", _noun("grand", "younger")),
    (r"brothers?|sisters?|siblings?", _noun("sibling", "")),
    (r"uncles?|aunts?", _noun("uncle", "elder")),
    (r"nephews?|nieces?", _noun("uncle", "younger")),
    (r"cousins?", _noun("cousin", "")),
    (r"wife|wives|husbands?|spouses?|married|marries|marry|widow(?:er)?", _noun("spouse", "")),
    (r"teachers?|coach(?:es)?|advis[eo]rs?|tutors?|mentors?|supervisors?", _noun("teacher", "teacher")),
    (r"students?|pupils?|apprentices?", _noun("teacher", "student")),
    (r"beat|beats|beaten|defeat(?:s|ed)?", _verb("defeat", "winner")),
    (r"lost to|loses to|lose to|fell to", _verb("defeat", "loser")),
    (r"acquire[sd]?|bought|buys|purchased", _verb("acquire", "buyer")),
    (r"obsolete[sd]?|supersede[sd]?|replace[sd]?", _verb("replace", "newer")),
    (r"predecessors?|forerunners?|precursors?", _noun("origin", "older")),
    (r"successors?", _noun("origin", "newer")),
    (
        r"originated (?:from|in|as)|grew out of|evolved from|derived from|derives from|descended from|descends from",
        _verb("origin", "newer"),
    ),
    (r"evolved into|developed into|grew into", _verb("origin", "older")),
    # "HEAD is identical to GET except that …": the exception is the subject's, so the two cannot swap.
    (r"(?:identical to|the same as)(?=[^.;]*\bexcept\b)", _verb("alike", "variant")),
    (r"faster|quicker", _verb("speed", "more")),
    (r"slower", _verb("speed", "less")),
    (r"larger|bigger|greater", _verb("size", "more")),
    (r"smaller|fewer", _verb("size", "less")),
    (r"higher|taller", _verb("height", "more")),
    (r"lower|shorter", _verb("height", "less")),
    (r"older|elder|eldest", _verb("age", "more")),
    (r"younger|youngest", _verb("age", "less")),
)

# Chinese comparisons: "X比Y高" (the adjective after the compared one decides the direction).
_ZH_COMPARE = re.compile("比(?P<what>[^，。；,;比]{1,8}?)(?P<adj>[高低大小多少快慢长短早晚强弱重轻])")
_COMPARE_ROLES = {
    "高": ("height", "more"),
    "低": ("height", "less"),
    "大": ("size", "more"),
    "小": ("size", "less"),
    "多": ("size", "more"),
    "少": ("size", "less"),
    "快": ("speed", "more"),
    "慢": ("speed", "less"),
    "长": ("length", "more"),
    "短": ("length", "less"),
    "早": ("time", "less"),
    "晚": ("time", "more"),
    "强": ("strength", "more"),
    "弱": ("strength", "less"),
    "重": ("weight", "more"),
    "轻": ("weight", "less"),
}

_ZH_PATTERNS = tuple((re.compile(pattern), relation) for pattern, relation in _ZH)
_EN_PATTERNS = tuple((re.compile(rf"\b(?:{pattern})\b", re.IGNORECASE), relation) for pattern, relation in _EN)

EXCLUSIVE: tuple[tuple[str, ...], ...] = (
    ("以东", "以西", "以南", "以北"),
    ("东部", "西部", "南部", "北部"),
    ("east", "west", "north", "south"),
    ("金牌", "银牌", "铜牌"),
    ("gold", "silver", "bronze"),
    ("批准", "驳回", "拒绝"),
    ("approved", "rejected", "refused"),
    ("增加", "减少"),
    ("increased", "decreased"),
    ("rose", "fell"),
    ("以上", "以下"),
    ("above", "below"),
    ("before", "after"),
    ("nearer", "farther"),
    ("permanent", "temporary", "temporarily"),
    ("健在", "双亡", "去世", "逝世", "已故"),
    ("alive", "dead", "died", "deceased"),
    ("red", "yellow", "green", "blue", "purple", "pink", "black", "white", "grey"),
    ("红色", "黄色", "绿色", "蓝色", "紫色", "粉色", "黑色", "白色", "灰色"),
)
"""Words that exclude each other: a passage that says one of them (and not another) denies the others."""
# (Comparatives, "bigger" and "smaller", are relations above: their direction depends on what is compared.)
_EXCLUSIVE = tuple(
    re.compile("|".join(rf"\b{w}\b" if w.isascii() else w for w in words), re.IGNORECASE) for words in EXCLUSIVE
)


def mentions(text: str) -> list[Mention]:
    """The relation words of `text`, in order (overlapping ones: the longest)."""
    found: list[Mention] = []
    for pattern, relation in (*_ZH_PATTERNS, *_EN_PATTERNS):
        found += [Mention(m.start(), m.end(), relation) for m in pattern.finditer(text)]
    for m in _ZH_COMPARE.finditer(text):
        group, role = _COMPARE_ROLES[m.group("adj")]
        # The relation sits at 比: the subject is before it, the compared one between it and the adjective.
        found.append(Mention(m.start(), m.start() + 1, Relation(group, role, "verb")))
    found.sort(key=lambda m: (m.start, -(m.end - m.start)))
    kept: list[Mention] = []
    for mention in found:
        if not kept or mention.start >= kept[-1].end:
            kept.append(mention)
    return kept


def exclusive_words(text: str) -> list[tuple[int, str]]:
    """(set index, word) of each word of `EXCLUSIVE` in `text`."""
    return [(i, m.group().lower()) for i, pattern in enumerate(_EXCLUSIVE) for m in pattern.finditer(text)]
