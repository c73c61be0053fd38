"""Does a cited passage hold a sentence's claim, and not just its words? (issue 27)

The share of shared words (rag.generate.support) badged "林黛玉的父亲是贾赦 [1]" green: the passage
names 林黛玉 and 贾赦 ("大舅贾赦"), but not as daughter and father. A passage holds a claim when one
*window* of it holds it all:

- a window is one sentence's first clause with up to two consecutive clauses of the same stretch
  (clauses end at commas, colons and ，：; a semicolon, or a comma before a conjunction ("，但",
  ", and", ", then"), ends a stretch), so the subject a Chinese sentence names once carries over its
  clauses, and "Oxford where he studied physics, then ... Cambridge" are two stretches;
- every term of the claim that the passage holds anywhere is in the window: a claim whose names,
  numbers and words are spread over the passage is not held. One name missing from the window may be
  carried by a pronoun of it (他/她/其/he/his...) that no term of the claim precedes in its clause, when
  the name is the subject of an earlier sentence (or of its own, no other name between), or for a
  Latin name the last one written; a surname stands for the full name the passage gives elsewhere
  ("Dickens" for "Charles Dickens");
- numbers are equal (rag.generate.figures: "三岁" is 3 and 3 is not 5) and not moved onto another
  word ("长80米，深702米" where the passage has 长702米，深80米);
- negation is equal: a word the claim negates ("不/没有/无/未/not/never/no", to the end of its clause
  or a word that opens another: "unless", "除非") and the window does not, or the other way round,
  makes another claim ("林如海有一个儿子" against "并无儿子");
- each relation word of the claim (rag.generate.relations: 父亲, daughter, 击败, obsoletes, faster)
  has one of its group in the window that gives the claim's terms the same roles: "黛玉的父亲是林如海"
  is held by "林如海…生得一女，乳名黛玉" (the converse word, the roles agree) and "林如海是黛玉的女儿"
  is not; a father is not a mother, nor an elder uncle (大舅) a second one (二舅);
- an entity the window names only as the owner of somebody else ("Gal's adviser, Michael Franz, led
  the group", "甄士隐的嫡妻封氏，情性贤淑") is not the subject of what the window says about that other,
  unless the claim names the relation too;
- words that exclude each other (以东/以西, gold/bronze, 批准/驳回, red/white) agree;
- no Latin name the passage never writes (a capitalised word inside a sentence: "The CEO is Tran Van Hoa" where it
  names Tran Minh Duc), no long stretch of Chinese words it never writes (`UNKNOWN_RUN`), and no words of the
  claim's own in the place of the window's between the same held words (`_replaced`);
- what a window says of every one of a kind ("Every model comes with…") holds of each ("Model 4"), where the
  window writes no figure of that one itself.

A sentence no single window holds is split into its clauses, each of which must be held (a sentence
drawn from two sentences of the passage, or from two cited sources); a clause of dates alone stays
with the one it dates. A lone line break is read as a space (a PDF's lines break inside sentences), except
between a Markdown table's rows, each of which is also a window with its header row (its column names).
All of it is string work on the CPU: about 5 ms per answer, the passage analysed afresh (`python -m
rag bench --only badges` times it).

What it cannot see: antonyms outside `relations.EXCLUSIVE` (the passage must say the opposite and
never the claim's own word, anywhere: "父母都还健在" against "自幼父母双亡" is caught so), a swap around a
symmetric word other than "identical to … except", and a name left out of a sentence without a
pronoun (Chinese drops the subject across sentences: "怡良…。18年出任广东巡抚"), which costs right
answers their badge.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from rag.generate.figures import ZH_KIND_WORDS, Figure, currency, figures, moved
from rag.generate.fragments import measure_nouns
from rag.generate.relations import CONVERSE, Mention, exclusive_words, mentions
from rag.generate.sentences import CLAUSE_MARK, MARKER, sentence_spans
from rag.generate.support import HAN_FUNCTION, HAN_POINTING, spelled, term_spans
from rag.scripts import HAN, HAN_CHAR

Term = tuple[str, int, int]
"""(term, start, end) as rag.generate.support.term_spans gives it."""

WINDOW_CLAUSES = 2
"""Consecutive clauses a window takes besides its stretch's first one. Measured on the labelled set
(benchmarks/data/badges.jsonl, 124 right and 139 wrong answers): one keeps 102 right answers
green, two 110, three 111 but also badges three more wrong ones green, each mixing clauses of one long
sentence ("拉乔利纳" of the fourth clause standing in for the president named in the second)."""

_CONJUNCTIONS = re.compile(
    r"[，,]\s*(?:但是?|而且?|然而|却|可是|不过|并且|随后|然后|后来|其后|此后|同时|因此|所以|于是|"
    r"(?:and|but|then|so|while|whereas|yet|although|though|because)\b)|\s+but\b",
    re.IGNORECASE,
)
_HARD = re.compile(r"[；;]")
_SOFT = re.compile(r"[，：]|[,:](?!(?<=\d[,:])\d)")
"""A comma or colon, but not one between two digits ("1,000", "10:30"): cut there, a source's "It weighs more than
1,000 kilos" held neither the number nor its unit in one clause, and a right answer copied from it was flagged."""
_NEGATION = re.compile(
    r"(?:并非|绝非|而非|尚未|没有|不|没|无|未|勿|毋|否)|\b(?:not|no|never|cannot|none|nothing|nobody|neither|nor|"
    r"without|unable)\b|n't\b|\binstead of\b|\brather than\b|\bNOT\b",
    re.IGNORECASE,
)
# Words that hold a negation character without negating ("不仅", "无论", "未来", "是否") or a title
# ("Not Modified", the name of status 304).
_NOT_NEGATION = re.compile(
    r"不仅|不但|不过|不断|不久|不少|不得不|不管|不同|不论|无论|无数|无限|无线|无敌|毫无疑问|未来|是否|否则|"
    r"\bNot(?= [A-Z])"
)
_PRONOUNS = re.compile(
    r"(?:他们|她们|它们|他|她|它|其(?![他中实余次])|该(?=[城地公国校]))|\b(?:he|she|it|they|his|her|its|their|him|them)\b",
    re.IGNORECASE,
)
_NOT_PRONOUN = re.compile(r"其他|其中|其实|其余|其次|尤其|极其|应该")
_GLUED = re.compile(r"(?<=[a-z]{2}|\d{2})[.!?](?=[A-Z][a-z])")
_RANK = {"大": 1, "长": 1, "二": 2, "次": 2, "三": 3, "四": 4}
_RUN_GAP = re.compile(r"[\s·.\-]*")
_MODIFIERS = re.compile(
    r"(?:[大二三四五长次幼小亲胞嫡独生]|一个|一位|唯一的?|\s+(?:elder|younger|eldest|youngest|older|"
    r"only|late|own|little|big|first|second|third|the|a|an))*\s*$",
    re.IGNORECASE,
)
_POSSESSIVE = re.compile(r"(?:的|之|'s|’s|s')$")
_POSSESSIVE_PRONOUN = re.compile(r"(?:其|\b(?:his|her|its|their)\s*)$", re.IGNORECASE)
_COPULA_BEFORE = re.compile(r"(?:是|为|乃|成为|\b(?:is|was|are|were|became|becomes|remains)\b)\s*$", re.IGNORECASE)
_APPOSITION = re.compile(r",\s*(?:the\s+|a\s+|an\s+)?$", re.IGNORECASE)
_SKIP_AFTER = re.compile(
    r"[\s,，、]*(?:是|为|乃|即|叫做?|名叫|乳名|名|\b(?:is|was|are|were|named|called)\b)?[\s,，、]*", re.IGNORECASE
)
_OF_AFTER = re.compile(r"\s+of\s+(?:the\s+)?", re.IGNORECASE)
_PASSIVE_EN = re.compile(r"\b(?:is|was|are|were|been|being|be)\s+$", re.IGNORECASE)
_BY = re.compile(r"\s*by\b", re.IGNORECASE)


@dataclass(frozen=True)
class Analysis:
    """A text cut up once for every claim checked against it."""

    text: str
    """With markers blanked (offsets kept)."""
    terms: tuple[Term, ...]
    figures: tuple[Figure, ...]
    mentions: tuple[Mention, ...]
    negations: tuple[int, ...]
    pronouns: tuple[tuple[int, int], ...]
    clauses: tuple[tuple[int, int, bool], ...]
    """(start, end, opens a stretch) of each clause, in order."""
    sentences: tuple[tuple[int, int], ...]
    clause_terms: tuple[tuple[Term, ...], ...] = ()
    """The terms of each clause (a term across a clause end belongs to none)."""
    clause_sets: tuple[frozenset[str], ...] = ()
    openers: tuple[frozenset[str], ...] = ()
    """The terms of each sentence's opening run (its subject: "林黛玉初到荣国府")."""
    sentence_sets: tuple[frozenset[str], ...] = ()
    lists: tuple[ListLines, ...] = ()
    """The lists of lines it holds (`list_lines`)."""
    name_runs: tuple[frozenset[str], ...] = ()
    """The terms of each run of capitalised words, but a sentence's opening word that is no name (`_name_runs`)."""


@dataclass(frozen=True)
class Verdict:
    held: bool
    reason: str
    """"held", or what failed: "scattered", "numbers", "moved number", "negation", "relation", "relative",
    "exclusive", "unknown clause", "unknown name"."""
    window: tuple[int, int] | None = None
    """Where the source holds it (the first window that does): its first clause's start, its last clause's end."""


_LINE_BREAK = re.compile(r"(?<![\n|])\r?\n(?!\r?\n)(?![ \t]*\|)")
"""A lone line break, not one that ends or starts a table's row ("| SKU-1003 | Pump Z4 |"): rows read as one
sentence put one row's model beside the next row's key ("SKU-1003 is Pump Z3" was badged held)."""


def _blank(text: str) -> tuple[str, list[ListLines]]:
    """`text` with markers blanked and lone line breaks as spaces, offsets kept: a PDF's lines break
    inside sentences ("Revenue grew by\ntwelve percent"), its paragraphs at blank lines, a table's rows at
    every line, and so do the lines of a list (`list_lines`, given too), whose breaks are kept."""
    text = MARKER.sub(lambda m: " " * len(m.group()), text)
    lists = list_lines(text)
    kept = {end for lead, rows in lists for _start, end in [*([lead] if lead else []), *rows]}
    return _LINE_BREAK.sub(lambda m: m.group() if m.start() in kept else " " * len(m.group()), text), lists


ListLines = tuple[tuple[int, int] | None, list[tuple[int, int]]]
"""A list's title line (None where it has none) and its lines, as (start, end) spans."""


_LIST_LINE = re.compile(f"(?:[-•*·▪–]\\s+|\\(?\\w\\)\\s+)?[A-Z0-9{HAN}][^\\n]*\\d")
"""A line that may be a row of a list: it opens (after a bullet, if any) with a capital, a digit or a Chinese
character and holds a number ("Model 4: $18,500.00, 95 kg", "- Profit: $1.2 million")."""
LIST_LINE_CHARS = 80
"""The longest line of a list, and of its title: a paragraph held on one line is no row (the title of a window
over a row, it would hold half a page)."""
_GOES_ON = re.compile(r"(?:[,，、(（&+/–-]|\b(?:and|or|of|to|the|a|an|by|for|with|from|in|at|on|as))\s*$", re.I)
"""How a line that a sentence goes on after ends."""


def list_lines(text: str) -> list[ListLines]:
    """The lists of `text`: two lines or more in a row that begin alike (`_shape`: one first word, a label and a
    colon, a bullet), each a `_LIST_LINE` of at most `LIST_LINE_CHARS` that does not end as a sentence going on
    (`_GOES_ON`), with the line before them (their title, "Price list of the Model series") where that is as
    short and does not go on into the first, as (start, end) spans. Read as one sentence, "The price of Model 4
    is $21,000.00" was held by a price list's lines, whose each model and price were in it somewhere; lines of
    prose that a PDF wrapped ("…averages more than\n3 ounces. For 20 years, …") begin each their own way."""
    lines: list[tuple[int, int]] = []
    start = 0
    for end in [m.start() for m in re.finditer("\n", text)] + [len(text)]:
        lines.append((start, end))
        start = end + 1

    def shape(k: int) -> str | None:
        line = text[lines[k][0] : lines[k][1]].strip()
        if len(line) > LIST_LINE_CHARS or not _LIST_LINE.match(line) or _GOES_ON.search(line):
            return None
        return _shape(line)

    found: list[ListLines] = []
    k = 0
    while k < len(lines):
        first = shape(k)
        end = k + 1
        while first is not None and end < len(lines) and shape(end) == first:
            end += 1
        if end - k >= 2:
            above = text[lines[k - 1][0] : lines[k - 1][1]].strip() if k else ""
            title = above and len(above) <= LIST_LINE_CHARS and not _GOES_ON.search(above)
            found.append((lines[k - 1] if title else None, lines[k:end]))
        k = end
    return found


_BULLET = re.compile(r"(?:[-•*·▪–]|\(?\w\)|\d{1,2}[.)])\s")
_LABEL = re.compile(r"[^:：]{1,40}[:：]")


def _shape(line: str) -> str:
    """How a line begins: a bullet or an enumerator, a label and a colon ("Price: $18,500"), or its first word."""
    if _BULLET.match(line):
        return "•"
    label = _LABEL.match(line)
    if label and label.group().count(" ") <= 4:  # a label of a few words, not a sentence's clause
        return ":"
    return line.split(maxsplit=1)[0] if line.split() else ""


def _words(terms: Sequence[Term], start: int, end: int) -> int:
    """How many terms of [start, end) are words (not numbers, not single characters)."""
    return sum(start <= t[1] and t[2] <= end and len(t[0]) > 1 and not t[0][0].isdigit() for t in terms)


def _clauses(text: str, sentences: Sequence[tuple[int, int]], terms: Sequence[Term]) -> list[tuple[int, int, bool]]:
    """(start, end, opens a stretch) of each clause. A piece with fewer than two words ("such as black",
    "grey and dark blue" of a list; "最终") belongs to the clause before it."""
    clauses: list[tuple[int, int, bool]] = []
    for start, end in sentences:
        cuts: dict[int, bool] = {}
        for pattern, hard in ((_SOFT, False), (_HARD, True), (_CONJUNCTIONS, True)):
            for m in pattern.finditer(text, start, end):
                cuts[m.start() + 1] = cuts.get(m.start() + 1, False) or hard
        pieces: list[tuple[int, int, bool]] = []
        pos, opens = start, True
        for cut in [*sorted(c for c in cuts if start < c < end), end]:
            if text[pos:cut].strip(" ,，：:；;"):
                pieces.append((pos, cut, opens))
                opens = cuts.get(cut, True)
            pos = cut
        for piece in pieces or [(start, end, True)]:
            if clauses and not piece[2] and clauses[-1][1] == piece[0] and _words(terms, piece[0], piece[1]) < 2:
                clauses[-1] = (clauses[-1][0], piece[1], clauses[-1][2])
            else:
                clauses.append(piece)
    return clauses


def _sentences(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for start, end in sentence_spans(text) or [(0, len(text))]:
        for m in _GLUED.finditer(text, start, end):
            spans.append((start, m.end()))
            start = m.end()
        spans.append((start, end))
    return spans


_IRREGULAR = dict(
    pair.split(":")
    for pair in [
        "gave:give",
        "given:give",
        "went:go",
        "gone:go",
        "took:take",
        "taken:take",
        "made:make",
        "found:find",
        "did:do",
        "done:do",
        "saw:see",
        "seen:see",
        "came:come",
        "became:become",
        "got:get",
        "gotten:get",
        "wrote:write",
        "written:write",
        "knew:know",
        "known:know",
        "thought:think",
        "told:tell",
        "left:leave",
        "felt:feel",
        "kept:keep",
        "held:hold",
        "brought:bring",
        "bought:buy",
        "sold:sell",
        "won:win",
        "lost:lose",
        "began:begin",
        "begun:begin",
        "broke:break",
        "broken:break",
        "ran:run",
        "grew:grow",
        "grown:grow",
        "built:build",
        "led:lead",
        "met:meet",
        "paid:pay",
        "sent:send",
        "spent:spend",
        "stood:stand",
        "taught:teach",
        "fell:fall",
        "fallen:fall",
        "chose:choose",
        "chosen:choose",
        "drove:drive",
        "driven:drive",
        "ate:eat",
        "eaten:eat",
        "flew:fly",
        "forgot:forget",
        "rose:rise",
        "risen:rise",
        "spoke:speak",
        "spoken:speak",
        "threw:throw",
        "thrown:throw",
        "wore:wear",
        "worn:wear",
        "children:child",
        "men:man",
        "women:woman",
    ]
)
_SUFFIXES = ("ing", "ed", "es", "s", "e")
_ASPECT = re.compile(f"(?=([{HAN}])[了着过]([{HAN}]))")
# Verbs keyword search drops with the pleasantries ("let me know", "hope this helps") that are a
# claim's predicate in "Scientists know where the lobsters go".
_PLEASANTRY_VERBS = re.compile(
    r"\b(?:know|knows|knew|known|help|helps|helped|ask|asks|asked|hope|hoped|feel|felt)\b", re.IGNORECASE
)
# Words that open a clause of their own inside a clause: a negation before them does not reach past
# them ("not cacheable unless the response includes...").
_SCOPE_END = re.compile(
    r"\b(?:unless|if|because|although|though|when|whereas|while|which|who|but|except)\b|除非|如果|因为|但|而|除了",
    re.IGNORECASE,
)


def _canonical(term: Term, text: str) -> Term:
    """An English term as the claim check compares it: "raises", "raising" and "raise" alike, "gave" as
    "give" (keyword search's five-letter stems keep them apart, which here would read a paraphrase as a
    term missing from the window)."""
    word, start, end = term
    if not word.isascii() or not word[0].isalpha():
        return term
    w = spelled(text[start:end].lower().split("'")[0])
    w = _IRREGULAR.get(w, w)
    for suffix in _SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            break
    if w.endswith("i"):
        w = w[:-1] + "y"
    return (w[:6], start, end)


_QUOTE = re.compile(r"“[^”]{1,2000}”|\"[^\"]{1,2000}\"")
_FIRST_PERSON = re.compile(r"\b(?:I|[Mm]e|[Mm]y|[Mm]ine|[Mm]yself)\b")
_SAYS = r"(?:says|said|tells|told|asks|asked|adds|added|explains|explained|recalls|recalled)"
_SHE_SAID_AFTER = re.compile(rf"[\s,.!?]*(?:(?:she|he)\s+{_SAYS}|{_SAYS}\s+(?:she|he))\b", re.IGNORECASE)
_SHE_SAID_BEFORE = re.compile(rf"\b(?:she|he)\s+{_SAYS}[\s,.:]*$", re.IGNORECASE)


def _speakers(text: str) -> list[tuple[int, int]]:
    """Each "I", "me" and "my" of a quotation that "she said" or "he says" reports, right after it or right before it
    (“I finished all my courses…” after “I spent hours studying,” she said.): a pronoun standing for its speaker, as
    "she" does, so that "Ellen finished all her courses" is held where the passage names Ellen before (a Chromium
    walk's right answer was flagged). Not where the quotation names its speaker ("…,” Mary said": the claim's name
    must then be Mary's, which no pronoun stands for)."""
    found = []
    for quote in _QUOTE.finditer(text):
        after = _SHE_SAID_AFTER.match(text, quote.end(), min(len(text), quote.end() + 40))
        before = _SHE_SAID_BEFORE.search(text, max(0, quote.start() - 40), quote.start())
        if after is None and before is None:
            continue
        found += [(m.start(), m.end()) for m in _FIRST_PERSON.finditer(text, quote.start(), quote.end())]
    return found


@functools.lru_cache(maxsize=512)
def analyse(text: str) -> Analysis:
    blank, lists = _blank(text)
    negations = [
        m.start()
        for m in _NEGATION.finditer(blank)
        if not any(x.start() <= m.start() < x.end() for x in _NOT_NEGATION.finditer(blank))
    ]
    excluded = [(m.start(), m.end()) for m in _NOT_PRONOUN.finditer(blank)]
    pronouns = [
        (m.start(), m.end()) for m in _PRONOUNS.finditer(blank) if not any(a <= m.start() < b for a, b in excluded)
    ]
    pronouns = sorted(pronouns + _speakers(blank))
    sentences = _sentences(blank)
    terms = sorted(
        [_canonical(t, blank) for t in term_spans(blank)]
        + [(m.group(1) + m.group(2), m.start(), m.end()) for m in _ASPECT.finditer(blank)]
        + [_canonical((m.group().lower(), m.start(), m.end()), blank) for m in _PLEASANTRY_VERBS.finditer(blank)],
        key=lambda t: (t[1], t[2]),
    )
    clauses = _clauses(blank, sentences, terms)
    clause_terms = tuple(tuple(t for t in terms if start <= t[1] and t[2] <= end) for start, end, _ in clauses)
    openers = []
    for start, end in sentences:
        runs = _runs(blank, [t for t in terms if start <= t[1] and t[2] <= end])
        openers.append(frozenset(t[0] for t in runs[0]) if runs else frozenset())
    analysis = Analysis(
        blank,
        tuple(terms),
        tuple(figures(blank)),
        tuple(mentions(blank)),
        tuple(negations),
        tuple(pronouns),
        tuple(clauses),
        tuple(sentences),
        clause_terms,
        tuple(frozenset(t[0] for t in ts) for ts in clause_terms),
        tuple(openers),
        tuple(frozenset(t[0] for t in terms if start <= t[1] and t[2] <= end) for start, end in sentences),
        tuple(lists),
    )
    return replace(analysis, name_runs=_name_runs(analysis))


def _windows(source: Analysis) -> Iterable[tuple[int, ...]]:
    """The clause indices of each window: a stretch's first clause with up to `WINDOW_CLAUSES`
    consecutive ones of the same stretch."""
    stretches: list[list[int]] = []
    for i, (_start, _end, opens) in enumerate(source.clauses):
        if opens or not stretches:
            stretches.append([])
        stretches[-1].append(i)
    for stretch in stretches:
        for i in range(len(stretch)):
            for j in range(i, min(i + WINDOW_CLAUSES, len(stretch))):
                parts = stretch[i : j + 1]
                yield tuple(parts) if i == 0 else (stretch[0], *parts)
    yield from _table_windows(source)
    yield from _list_windows(source)
    yield from _label_windows(source)


_LABEL_OPENS = re.compile(r"\s*[A-Z][A-Za-z ]{1,20}:\s")
"""A sentence that opens with a label ("Admission: 80 pence"), which says something of the item before it."""


def _label_windows(source: Analysis) -> Iterable[tuple[int, ...]]:
    """A sentence opening with a label, read with the sentence before it: "The John Bennet Big Band at The Bull's
    Head, Barnes. Admission: 80 pence" holds "The John Bennet Big Band at The Bull's Head in Barnes costs 80 pence"
    (a conversation bench's right answer, flagged: the band and its price were two sentences)."""
    for k in range(1, len(source.sentences)):
        before, this = source.sentences[k - 1], source.sentences[k]
        if not _LABEL_OPENS.match(source.text, this[0]):
            continue
        item = [i for i, (a, b, _opens) in enumerate(source.clauses) if before[0] <= a < before[1]]
        label = [i for i, (a, b, _opens) in enumerate(source.clauses) if this[0] <= a < this[1]][:2]
        if item and label and len(item) <= WINDOW_CLAUSES + 1:
            yield (*item, *label)


def _list_windows(source: Analysis) -> Iterable[tuple[int, ...]]:
    """Each line of a list with its title line: "The price of Model 4 is $18,500.00" is held by "Price list of the
    Model series" over "Model 4: $18,500.00, 95 kg", as a table's row with its header (`_table_windows`)."""
    for lead, rows in source.lists:
        if lead is None:
            continue
        title = [i for i, (start, end, _opens) in enumerate(source.clauses) if start < lead[1] and lead[0] < end]
        for a, b in rows:
            row = [i for i, (start, end, _opens) in enumerate(source.clauses) if start < b and a < end]
            if title and row:
                yield (*title, *row)


_UNIVERSAL = re.compile(r"\b(?:every|each|all|any)\s+([A-Za-z]{3,})", re.IGNORECASE)
"""A window's word for every one of a kind ("Every model", "all units")."""
_ZH_UNIVERSAL = re.compile(f"(?:所有|全部|每[款个种台件]?|各[款个种]?)的?({'|'.join(ZH_KIND_WORDS)})")
"""The same in Chinese ("所有型号", "每款产品"), of a kind whose ones are named by a number ("型号5"); a figure's
word before it is then the kind's last character (rag.generate.figures: "号" of "型号5")."""


_TABLE_RULE = re.compile(r"\|(?:[ \t]*:?-{3,}:?[ \t]*\|)+[ \t]*")
"""The rule row under a Markdown table's header ("|---|---|", as rag.documents.sections writes tables)."""


def _table_windows(source: Analysis) -> Iterable[tuple[int, ...]]:
    """Each row of a Markdown table with its header, the row above its rule ("|---|"): a cell is read with the
    name of its column. "The price of SKU-1003 is $24,750.00" is held by "| SKU | Model | Price |" over
    "| SKU-1003 | Pump Z4 | $24,750.00 |", where "price" was elsewhere (scattered) with the row alone."""
    rows: dict[int, list[int]] = {}  # a line's start: the clauses that begin on it
    for i, (start, end, _opens) in enumerate(source.clauses):
        first = start + len(source.text[start:end]) - len(source.text[start:end].lstrip())
        rows.setdefault(source.text.rfind("\n", 0, first) + 1, []).append(i)
    lines = sorted(rows)
    for k, line in enumerate(lines[:-2]):
        header, rule = rows[line], rows[lines[k + 1]]
        if not (_row(source, header) and _TABLE_RULE.fullmatch(_text(source, rule))):
            continue
        for below in lines[k + 2 :]:
            if not _row(source, rows[below]):
                break
            yield (*header, *rows[below])


def _text(source: Analysis, clauses: Sequence[int]) -> str:
    return source.text[source.clauses[clauses[0]][0] : source.clauses[clauses[-1]][1]].strip()


def _row(source: Analysis, clauses: Sequence[int]) -> bool:
    text = _text(source, clauses)
    return text.startswith("|") and text.endswith("|")


def _inside(spans: Sequence[tuple[int, int]], start: int, end: int) -> bool:
    return any(a <= start and end <= b for a, b in spans)


def _runs(text: str, terms: Sequence[Term]) -> list[list[Term]]:
    """Terms grouped into runs of adjacent ones (a name, a noun phrase: "Andreas Gal", 林如海)."""
    runs: list[list[Term]] = []
    for term in sorted(terms, key=lambda t: (t[1], t[2])):
        if runs and (term[1] <= runs[-1][-1][2] or _RUN_GAP.fullmatch(text[runs[-1][-1][2] : term[1]])):
            runs[-1].append(term)
        else:
            runs.append([term])
    return runs


def _run_ending(runs: Sequence[list[Term]], pos: int) -> set[str]:
    before = [r for r in runs if r[-1][2] <= pos]
    return {t[0] for t in before[-1]} if before else set()


def _run_starting(runs: Sequence[list[Term]], pos: int, limit: int | None = None) -> set[str]:
    after = [r for r in runs if r[0][1] >= pos and (limit is None or r[0][1] <= limit)]
    return {t[0] for t in after[0]} if after else set()


def _roles(text: str, span: tuple[int, int], terms: Sequence[Term], mention: Mention) -> dict[str, str]:
    """The role each term of `span` plays in the relation `mention` states (rag.generate.relations)."""
    relation = mention.relation
    args = [
        t for t in terms if span[0] <= t[1] and t[2] <= span[1] and not (t[1] < mention.end and mention.start < t[2])
    ]
    runs = _runs(text, args)
    before = text[span[0] : mention.start]
    after_pos = mention.end
    role, other = relation.role, CONVERSE[relation.role]
    holder: set[str] = set()
    possessor: set[str] = set()
    if relation.kind == "verb":
        subject = {t[0] for t in args if t[2] <= mention.start}
        obj = {t[0] for t in args if t[1] >= mention.end}
        agent = "被" in before or "由" in before[-4:]
        if agent:  # "A被B击败": B beat A
            cut = span[0] + max(before.rfind("被"), before.rfind("由"))
            obj = {t[0] for t in args if t[2] <= cut}
            subject = {t[0] for t in args if cut < t[1] and t[2] <= mention.start}
        elif _PASSIVE_EN.search(before) and _BY.match(text, after_pos):
            subject, obj = obj, subject
        return {**{t: other for t in obj - subject}, **{t: role for t in subject - obj}}
    stem = before[: len(before) - len(_MODIFIERS.search(before).group())]  # type: ignore[union-attr]
    possessive, pronoun = _POSSESSIVE.search(stem), _POSSESSIVE_PRONOUN.search(stem)
    copula, apposition = _COPULA_BEFORE.search(stem), _APPOSITION.search(stem)
    of = _OF_AFTER.match(text, after_pos)
    if possessive or pronoun:  # "黛玉的父亲", "Gal's adviser", "his mother"
        if pronoun:  # whoever stands at the pronoun (a carried name), else nobody named
            possessor = {t[0] for t in args if span[0] + pronoun.start() <= t[1] < span[0] + len(stem)}
        else:
            possessor = _run_ending(runs, span[0] + possessive.start())  # type: ignore[union-attr]
        skip = _SKIP_AFTER.match(text, after_pos)
        holder = _run_starting(runs, after_pos, skip.end() if skip else after_pos)
        if not holder:  # "Y是X的父亲", "Y is X's father"
            holder = _before_copula(text, runs, span, possessor)
    elif of:  # "the father of four", "Y is the adviser of X"
        possessor = _run_starting(runs, of.end())
        holder = _before_copula(text, runs, span, set()) or _run_ending(runs, mention.start)
    elif copula:  # "Elizabeth was the second daughter"
        holder = _run_ending(runs, span[0] + len(stem) - len(copula.group()))
        possessor = {t[0] for t in args if t[1] >= mention.end} - holder
    elif apposition:  # "Elizabeth, the second daughter,"
        holder = _run_ending(runs, span[0] + len(stem) - len(apposition.group()))
    else:  # said as a verb: "林如海…生得一女，乳名黛玉", "Mr. Bennet had five daughters"
        possessor = {t[0] for t in args if t[2] <= mention.start}
        holder = {t[0] for t in args if t[1] >= mention.end}
    return {**{t: other for t in possessor - holder}, **{t: role for t in holder - possessor}}


def _before_copula(text: str, runs: Sequence[list[Term]], span: tuple[int, int], possessor: set[str]) -> set[str]:
    """The run before the copula that opens "Y是X的父亲" / "Y is the father of X"."""
    for m in re.finditer(r"是|为|乃|\b(?:is|was|are|were|became)\b", text[span[0] : span[1]]):
        found = _run_ending(runs, span[0] + m.start())
        if found and not found & possessor:
            return found
    return set()


def _rank(text: str, mention: Mention) -> int:
    return _RANK.get(text[mention.start : mention.start + 1]) or _RANK.get(text[mention.start - 1 : mention.start], 0)


def _agrees(
    claim: Analysis,
    part: tuple[int, int],
    cm: Mention,
    source: Analysis,
    window: tuple[int, int],
    terms: Sequence[Term],
) -> bool:
    """Whether a relation word of the window states the relation `cm` of the claim, with the same roles."""
    said = _roles(claim.text, part, claim.terms, cm)
    for wm in source.mentions:
        if wm.relation.group != cm.relation.group or not (window[0] <= wm.start and wm.end <= window[1]):
            continue
        if not cm.relation.role:  # no direction (spouse, cousin): the word is enough
            return True
        held = _roles(source.text, window, terms, wm)
        agree = [t for t in said if t in held and held[t] == said[t]]
        disagree = [t for t in said if t in held and held[t] != said[t]]
        same_role = cm.relation.role == wm.relation.role
        if same_role and cm.relation.gender and wm.relation.gender and cm.relation.gender != wm.relation.gender:
            continue  # a father is not a mother
        if (
            same_role
            and _rank(claim.text, cm)
            and _rank(source.text, wm)
            and _rank(claim.text, cm) != _rank(source.text, wm)
        ):
            continue  # 大舅 is not 二舅
        if disagree:
            continue
        owners = [t for t, r in said.items() if r != cm.relation.role]
        held_owners = [t for t, r in held.items() if r != wm.relation.role]
        if agree or (same_role and not owners and not held_owners):  # "his mother" for "his mother"
            return True
    return False


def _owned_only(source: Analysis, terms: Sequence[Term], term: str, groups: set[str]) -> bool:
    """Whether every mention of `term` in the window is the owner of a relative the claim does not name
    ("Gal's adviser", "甄士隐的嫡妻")."""
    places = [t for t in terms if t[0] == term]
    if not places:
        return False
    for _term, start, end in places:
        owned = False
        for wm in source.mentions:
            if wm.relation.kind != "noun" or wm.relation.group in groups or not 0 <= wm.start - end <= 3:
                continue
            gap = source.text[end : wm.start]
            stem = gap[: len(gap) - len(_MODIFIERS.search(gap).group())]  # type: ignore[union-attr]
            if re.fullmatch(r"\s*(?:的|之|'s|’s|s')", stem) or (
                _POSSESSIVE_PRONOUN.fullmatch(source.text[start:end] + " ") and not stem.strip()
            ):
                # The stand-in for a carried name at "Their" of "Their cousin, Mr. Collins, ..."
                owned = True
        if not owned:
            return False
    return True


def _negated(analysis: Analysis, spans: Sequence[tuple[int, int]]) -> tuple[set[str], bool]:
    """The terms a negation of `spans` applies to (the rest of its clause, up to a word that opens
    another: "并无儿子" 儿子, "he was never top of his class" top and class, "not cacheable unless..."
    cacheable), and whether `spans` holds a negation at all."""
    terms: set[str] = set()
    found = False
    for n in analysis.negations:
        if not _inside(spans, n, n + 1):
            continue
        found = True
        end = next((c[1] for c in analysis.clauses if c[0] <= n < c[1]), len(analysis.text))
        stop = _SCOPE_END.search(analysis.text, n + 1, end)
        end = stop.start() if stop else end
        terms |= {t[0] for t in analysis.terms if n <= t[1] < end}
    return terms, found


def _denies_otherwise(
    claim: Analysis, part: tuple[int, int], source: Analysis, span: tuple[int, int], common: set[str]
) -> bool:
    """Whether the claim and the window deny different things: a term they share is negated in one and
    not in the other, or the claim denies something the window does not mention while it denies nothing."""
    said, claim_denies = _negated(claim, [part])
    held, window_denies = _negated(source, [span])
    if any((t in said) != (t in held) for t in common):
        return True
    return claim_denies and not said & common and not window_denies


def _opens_sentence(source: Analysis, missing: set[str]) -> bool:
    """Whether a sentence of the passage opens with the `missing` terms (its subject: "林黛玉初到荣国府")."""
    return any(missing <= opener for opener in source.openers)


def _last_named(source: Analysis, before: int) -> set[str]:
    """The terms of the last name the passage writes before `before` ("Edison" for the "he" after it)."""
    start = next((s for s, e in source.sentences if s <= before < e), before)
    names = [t for t in source.terms if t[2] <= start and _capitalised(source.text, t) and _named(source, t[0])]
    runs = _runs(source.text, names)
    return {t[0] for t in runs[-1]} if runs else set()


def _named(source: Analysis, term: str) -> bool:
    """Whether the passage writes `term` (a Latin word) as a name: always capitalised, and inside a
    sentence, more than once, or with capitals inside ("TraceMonkey"); not "Doctors" opening one sentence."""
    places = [(start, end) for t, start, end in source.terms if t == term]
    if not places or not all(source.text[start].isupper() for start, _end in places):
        return False
    inside = any(source.text[:start].rstrip()[-1:] not in ("", ".", "!", "?", "“", '"') for start, _end in places)
    camel = any(any(c.isupper() for c in source.text[start + 1 : end]) for start, end in places)
    return inside or camel or len(places) > 1


_DETERMINER = re.compile(r"\s*(?:The|This|That|Its|Their|Our)\s+$")


_AUXILIARY_AFTER = re.compile(r"\s+(?:is|was|are|were|has|had|have|will|can|could|would)\b")


def _titled_subject(source: Analysis, missing: set[str]) -> str | None:
    """Whether the `missing` terms are the opening of a sentence's subject headed by a name: "The Arden
    lighthouse stands …" (a determiner, a name, then the words of its noun) before "It was built in 1868",
    where the answer wrote "The Arden lighthouse was built in 1868 [1]" and "lighthouse" is no name of its own
    ("named"). The determiner is what tells a noun phrase from "Edison founded GE", whose "founded" no pronoun
    stands for. Else "described" where it is headed by "The" and no name ("The company was founded in 1987"), and
    None where it is neither. One walk over the sentences for both."""
    found: str | None = None
    for start, end in source.sentences:
        run = next(iter(_runs(source.text, [t for t in source.terms if start <= t[1] and t[2] <= end])), [])
        head = run[: len(missing)]
        if (
            # The subject's verb follows (a word of the run, or an auxiliary: "The Stockholm Subway is well-known
            # …. It is called the longest art gallery", a right answer flagged): the pronoun stands for what comes
            # before it.
            run
            and (len(run) > len(missing) or _AUXILIARY_AFTER.match(source.text, run[-1][2]) is not None)
            and {t[0] for t in head} == missing
            and _DETERMINER.fullmatch(source.text[start : head[0][1]])
        ):
            if source.text[head[0][1]].isupper() and _named(source, head[0][0]):
                return "named"
            if source.text[start : head[0][1]].strip() == "The":
                found = "described"
    return found


def _capitalised(text: str, term: Term) -> bool:
    """Whether `term` is a Latin word written with a capital in `text` (a name's, or a sentence's opening)."""
    return term[0].isascii() and text[term[1]].isupper()


def _name_runs(source: Analysis) -> tuple[frozenset[str], ...]:
    """`Analysis.name_runs`. Not a capital a sentence's opening gives a word ("Today Saigon Merchant Bank
    operates…": "Today" is no part of the name; with it, the window's "The bank was founded in 1991" left the name
    of a walk's right answer unexcused, and it was flagged as a guess)."""
    capitalised = [
        t
        for t in source.terms
        if _capitalised(source.text, t) and (not _at_opening(source.text, t[1]) or _named(source, t[0]))
    ]
    return tuple(frozenset(t[0] for t in r) for r in _runs(source.text, capitalised))


def _named_in_part(
    claim: Analysis, claim_terms: Sequence[Term], missing: set[str], present: set[str], source: Analysis
) -> set[str]:
    """The `missing` terms that are the rest of a name whose other part the window holds ("Charles" of
    "Charles Dickens" where the window says "Dickens"), when the passage gives that full name."""
    excused: set[str] = set()
    source_runs = source.name_runs
    for run in _runs(claim.text, [t for t in claim_terms if _capitalised(claim.text, t)]):
        names = {t[0] for t in run}
        written = [r for r in source_runs if r & names & present]
        # The window writes part of this name and no other name with it ("Dickens", not "Cambridge
        # University" for "Oxford University"), and the passage gives the whole name somewhere.
        if names & missing and written and all(r <= names for r in written) and any(names <= r for r in source_runs):
            excused |= names & missing
    return excused


def _han_pairs(terms: Sequence[Term]) -> list[Term]:
    """The Chinese character pairs among `terms`."""
    return [t for t in terms if len(t[0]) == 2 and not t[0].isascii()]


def _suffixed_name(
    claim: Analysis, pairs: Sequence[Term], missing: set[str], source: Analysis, window: tuple[int, int]
) -> set[str]:
    """The missing Chinese pair that ends a name of the claim one character past what the window writes of it
    ("木湖" of "赛里木湖" where the window writes "“赛里木”为哈萨克语音译"), when the window writes that part as a word
    of its own (no Han character after it) and a sentence of the passage opens with the whole name, written as a
    word too ("赛里木湖，"): its subject. The Chinese counterpart of `_named_in_part`: a Chromium walk's right answer
    "赛里木湖的名称是哈萨克语音译…[1]", copied from that window, was flagged a guess. One character only ("北京大学"
    is not "北京"), and not "毛利元就" where the window writes "毛利家". `pairs`: the claim's (`_han_pairs`)."""
    by_end = {t[2]: t for t in pairs}
    starts = {t[1] for t in pairs}
    written = source.text[window[0] : window[1]]
    excused: set[str] = set()
    for term in pairs:
        if term[0] not in missing or term[1] + 1 in starts:
            continue  # written, or not the name's end ("湖畔" follows)
        name = [term]
        while (before := by_end.get(name[0][2] - 1)) is not None and before[1] == name[0][1] - 1:
            name.insert(0, before)
        whole = claim.text[name[0][1] : term[2]]
        part = whole[:-1]
        if (
            len(part) >= 2
            and re.search(f"{re.escape(part)}(?![{HAN}])", written)
            and any(
                {t[0] for t in name} <= opener and re.search(f"{re.escape(whole)}(?![{HAN}])", source.text[a:b])
                for opener, (a, b) in zip(source.openers, source.sentences)
            )
        ):
            excused.add(term[0])
    return excused


REPLACED_OWN = 2
"""Characters of the claim's words in the window's place that neither the window nor the held words around them
write."""
REPLACED_REACH = 4
"""Characters beyond the claim's unknown words that the window's own words in their place may take (the window's words
need not be as long as the claim's)."""


@dataclass(frozen=True)
class _Gap:
    """A run of the claim's Chinese pairs that the passage never writes, with the held pairs around it."""

    start: int
    end: int
    before: Term | None
    after: Term | None
    """None: the run ends the claim's words there (its clause, or the claim), and only `before` holds it in place."""
    own: frozenset[str]
    """Its characters, but those of the held pairs around it and function characters."""


def _gaps(
    claim: Analysis,
    pairs: Sequence[Term],
    everywhere: set[str],
    given: frozenset[str] = frozenset(),
    restated: bool = False,
) -> list[_Gap]:
    """The runs of `pairs` (`_han_pairs`) that the passage never writes, with a held pair after them or, a run that
    ends the claim's words in its clause, before them; not such a last run made of `given` characters alone (the
    question's, where the claim is a bare answer put into it: "牛车水是位于新加坡国家" for "新加坡" to
    "…位于哪个国家？", whose 国家 the answer does not say). `restated`: the claim is the model's own sentence, and
    a run of `given` characters alone that opens it restates the question too ("最早建造美庐别墅的是西伊勋爵" for
    "最早是谁建造的？", where the passage writes "始建于"; a claim put together from the question opens with its words
    whatever the answer, and 7 wrong bare answers of zh_cmrc_trial turned green with them excused there)."""
    runs: list[list[Term]] = []
    for term in pairs:
        if term[0] in everywhere:
            continue
        if runs and runs[-1][-1][1] == term[1] - 1:
            runs[-1].append(term)
        else:
            runs.append([term])
    known = [t for t in pairs if t[0] in everywhere]
    gaps = []
    for run in runs:
        u0, u1 = run[0][1], run[-1][2]
        before = next((t for t in reversed(known) if t[2] <= u0 + 1 and t[2] >= u0 - 1), None)
        after = next((t for t in known if u1 - 1 <= t[1] <= u1 + 1), None)
        if after is None and before is None:
            continue
        anchors = set(after[0] if after else "") | set(before[0] if before else "")
        own = frozenset(set(claim.text[u0:u1]) - anchors - HAN_FUNCTION)
        # The question's characters alone, where the run ends the claim's words, or opens the model's own sentence.
        excused = own <= given and (
            after is None or (restated and before is None and not _writes_a_word(claim.text[:u0]))
        )
        if not excused:
            gaps.append(_Gap(u0, u1, before, after, own))
    return gaps


def _writes_a_word(text: str) -> bool:
    """Whether `text` holds a letter, a digit or a Han character but a function one."""
    return any(c.isalnum() and c not in HAN_FUNCTION for c in text)


def _replaced(claim: Analysis, gaps: Sequence[_Gap], source: Analysis, window: tuple[int, int]) -> bool:
    """Whether the claim puts words the passage never writes (`_gaps`) where the window writes words of its own
    the claim lacks, between the same held words: "赛里木是维吾尔语音译" against "“赛里木”为哈萨克语音译". The share of
    words held let such sentences pass (0.57-0.98): on zh_cmrc_trial's sentences with their answer replaced by another
    passage's (`bench --only badges`, "substitutions") 150 of 243 stayed green, 110 with this check (the 216 right
    ones all kept; 63 with `_unknown_clause` too; 39 with a run that ends its clause compared too, `_replaced_after`;
    31 with `SYNONYM_SHARE`; 24 with `UNKNOWN_RUN`; every other line of that bench the same); the labelled set's right
    answers kept green 116 -> 115 of 129 ("第一位" for "首位"), CMRC's bare answers 826 / 192 -> 818 / 183 (right /
    wrong green). Words
    sharing a character are taken for synonyms ("一起玩耍" for "一同玩耍", "当年三岁" for "年方三岁"; not one of nine:
    `SYNONYM_SHARE`), and so are words the window writes elsewhere ("高洋多次" where it writes 高洋 and 数数); so is a
    word of one character of its own ("全香港共高丽高中书院" against "全香港共有四所高中书院" passes: 高 is the
    window's)."""
    if not gaps:
        return False
    text = source.text[window[0] : window[1]]
    # The noun naming the measure of a figure ("体重" of "体重约只有8公斤") is the window's unit said again.
    written = set(HAN_CHAR.findall(text)) | measure_nouns(claim.text, text)
    claimed = set(claim.text)
    for gap in gaps:
        # Two characters of its own at least: one ("一起玩耍" for "一同玩耍") is a synonym as often.
        if len(gap.own - written) < REPLACED_OWN:
            continue
        said = set(claim.text[gap.start : gap.end])
        if gap.after is None:
            if _replaced_after(gap, text, claimed, said):
                return True
            continue
        for m in re.finditer(re.escape(gap.after[0]), text):
            reach = text[max(0, m.start() - (gap.end - gap.start) - REPLACED_REACH) : m.start()]
            if gap.before is not None:
                at = reach.rfind(gap.before[0])
                if at < 0:
                    # Not there: nothing to compare. Comparing as many characters back instead caught 4 more
                    # substitutions and took green from 2 more right answers of the labelled set.
                    continue
                reach = reach[at + 2 :]
            theirs = _content_chars(reach)  # "她常到" for "史湘云常到"
            if not theirs and gap.before is None and not _writes_a_word(CLAUSE_MARK.split(claim.text[: gap.start])[-1]):
                theirs = _left_out(source, window[0] + m.start())
            if theirs - claimed and not _synonyms(theirs, said):
                return True
    return False


def _left_out(source: Analysis, at: int) -> set[str]:
    """The characters of the subject a clause of `source` leaves out, the clause writing no word of its own before
    `at`: the subject of its sentence where the clause is not its first ("王磊在比赛中受伤了，所以退出了决赛" leaves out
    王磊), else of the sentence before. A claim putting a name the passage never writes there ("刘洋退出了决赛") puts it
    in that subject's place (it was held: the window "所以退出了决赛" writes nothing before the verb)."""
    k = next((i for i, (a, b) in enumerate(source.sentences) if a <= at < b), None)
    if k is None:
        return set()
    clause = next((c for c in source.clauses if c[0] <= at < c[1]), None)
    if clause is None or _content_chars(source.text[clause[0] : at]):
        return set()
    if clause[0] > source.sentences[k][0]:
        subject = _subject(source, k)
    elif k > 0:
        subject = _subject(source, k - 1)
    else:
        return set()
    return _content_chars("".join(subject))


def _replaced_after(gap: _Gap, text: str, claimed: set[str], said: set[str]) -> bool:
    """`_replaced` for a run that ends the claim's words in its clause (no held pair after it:
    "该银行的总部位于伴随算子，" against "…总部位于胡志明市，"): what the window writes after the held pair before it,
    to its clause's end, holds two characters of its own at least (one, "崩" for "去世", is a verb as often as a
    name) and is no synonym."""
    if gap.before is None:
        return False
    for m in re.finditer(re.escape(gap.before[0]), text):
        reach = CLAUSE_MARK.split(text[m.end() : m.end() + (gap.end - gap.start) + REPLACED_REACH])[0]
        theirs = _content_chars(reach)
        if len(theirs - claimed) >= REPLACED_OWN and not _synonyms(theirs, said):
            return True
    return False


def _content_chars(text: str) -> set[str]:
    """The Han characters of `text` but function characters and pronouns: what words in a window's place say."""
    return set(HAN_CHAR.findall(text)) - HAN_FUNCTION - HAN_POINTING


SYNONYM_SHARE = 0.25
"""Of the fewer characters of the window's words and the claim's in their place, the share they must have in common to
be taken for synonyms: one shared character of three ("儿子叫" for "有一子") is, one of nine ("湖广右布政使史朝宜" for
"江苏省扬州市广陵区", a 广 each) is not. Any one shared had let 8 of zh_cmrc_trial's remaining 39 substitutions pass
(`bench --only badges`); a third took green from a right bare answer ("元皇后的儿子叫高百年")."""


def _synonyms(theirs: set[str], said: set[str]) -> bool:
    """Whether the window's words (`theirs`, their characters) and the claim's in their place (`said`) share enough
    characters to be taken for synonyms (`SYNONYM_SHARE`)."""
    shared = theirs & said
    return bool(shared) and len(shared) >= SYNONYM_SHARE * min(len(theirs), len(said))


UNKNOWN_PAIRS = 3
"""Chinese pairs no source writes, at least, in a clause of the claim that holds twice as many of them as held ones:
a clause of its own ("研究人员认为狐蝠科是它们主要授粉者，南开大学…毕业"), not a paraphrase of the window's."""


UNKNOWN_RUN = 5
"""Chinese pairs no source writes in a row (across function characters: "牠们主要的食粮是海里的虫类及鱼类"), at
least, that make a stretch of words the passage has nothing of, wherever the clause's other words come from: such a
stretch between words the window does not write around it (a football club's name, then "（Morecambe）的足球俱乐部")
was compared with nothing (`_replaced` needs held words beside it) and outweighed by the clause's held pairs
(`UNKNOWN_PAIRS`). On zh_cmrc_trial's substituted sentences (`bench --only badges`) wrong green 31 -> 24 of 243,
every other line of that bench the same; 4 in a row: 20, and a right paraphrase of the labelled set lost green
("宝玉出生时嘴里衔着…" for "…口中衔下…"); 3: 12, and three lost. The question's words do not count (a bare answer
put into its question)."""


def _unknown_clause(
    claim: Analysis, part: tuple[int, int], pairs: Sequence[Term], everywhere: set[str], given: frozenset[str]
) -> bool:
    """Whether a clause of the claim is mostly words the passage never writes (`UNKNOWN_PAIRS`; `pairs`: the claim's,
    `_han_pairs`) or holds a long stretch of them (`UNKNOWN_RUN`; not of `given`, the question's characters). On
    zh_cmrc_trial's substituted sentences (`_replaced`) wrong green 110 -> 63 of 243, the right ones, the labelled set
    and the sentences line unchanged, CMRC's bare answers' wrong green 183 -> 181."""
    for m in re.finditer(r"[^，,；;：:。！？!?]+", claim.text[part[0] : part[1]]):
        a, b = part[0] + m.start(), part[0] + m.end()
        inside = [t for t in pairs if a <= t[1] and t[2] <= b]
        unknown = sum(t[0] not in everywhere for t in inside)
        if unknown >= UNKNOWN_PAIRS and unknown >= 2 * (len(inside) - unknown):
            return True
        if _unknown_stretch(claim.text, inside, everywhere, given) >= UNKNOWN_RUN:
            return True
    return False


def _unknown_stretch(text: str, pairs: Sequence[Term], everywhere: set[str], given: frozenset[str]) -> int:
    """The most pairs of `pairs` no source writes in a row (across function characters only)."""
    best = run = end = 0
    for t in pairs:
        if t[0] in everywhere or set(t[0]) <= given:
            run = 0
            continue
        joined = run > 0 and all(c in HAN_FUNCTION for c in text[end : t[1]])  # overlapping pairs: nothing between
        run = run + 1 if joined else 1
        end = t[2]
        best = max(best, run)
    return best


_LEADING = frozenset(" \t\r\"'“‘(（[*#>•·-")
_STOPS = frozenset(".!?:;。！？：；\n")


def _at_opening(text: str, at: int) -> bool:
    """Whether the word at `at` opens a sentence or a line (after its quote, bracket or bullet): its capital says
    nothing of it."""
    while at > 0 and text[at - 1] in _LEADING:
        at -= 1
    if at > 1 and text[at - 1] == "." and _TITLE_BEFORE.search(text, 0, at - 1):
        return False  # "Mr. Smith", "J. K. Rowling"
    return at == 0 or text[at - 1] in _STOPS


_TITLE_BEFORE = re.compile(r"(?:\b(?:Mr|Mrs|Ms|Dr|Prof|St|Sr|Jr|Mt|Gen|Capt|Col|Lt|Sgt|Rev|Hon)|\b[A-Z])$")


_LINE_LABEL = re.compile(r"^[ \t]*(?:[-*•]\s+)?\**[^:：\n*]{1,40}\**[:：]", re.MULTILINE)
"""A line's label ("**Founding Year:** 1991", "- Head office: …"), in title case as often as not."""


_LIST_ITEM = re.compile(rf"(?:(?<=、)|(?<![{HAN}]))([{HAN}]{{3,8}})、(?=([{HAN}]{{2}}))")
"""A name of an enumeration ("…、青龙天坑、神鹰天坑、…"): three to eight Han characters before a 、 (after a 、 or
no Han character), and the first two of the next (not the last name, which may run on into the claim's next
words)."""
_ITEM_BEFORE = re.compile(rf"[{HAN}]{{1,8}}$")


def _unknown_item(claim: str, source: str) -> bool:
    """Whether the claim lists a name the passage never writes in a place where the passage lists another, in an
    enumeration of three or more (its last name, which may run on into the claim's words, not judged) of whose
    other names the passage writes one at least: "天龙天坑、神鹰天坑、…" for
    "…、黑龙桥、青龙天坑、神鹰天坑、…" (the conversation bench's one wrong answer green: every pair of
    characters of "天龙天坑" is the passage's, so no word of it was unknown). A list of names is copied, not
    paraphrased. A name is in its place where the passage writes the next one after a 、: the first name may hold
    the claim's words before it ("保护区包括天龙桥、青龙桥…" for "包括天龙桥、青龙桥"), or drop some of the
    passage's."""
    if claim.count("、") < 2:
        return False
    known, unknown = 0, 0
    for m in _LIST_ITEM.finditer(claim):
        item, following = m.group(1), m.group(2)
        if item in source:
            known += 1
            continue
        theirs = [
            found.group()
            for at in (k.start() for k in re.finditer("、" + following, source))
            if (found := _ITEM_BEFORE.search(source, 0, at)) is not None
        ]
        if theirs and not any(item.endswith(t) or t.endswith(item) for t in theirs):
            unknown += 1
    return unknown > 0 and known >= 1


_OPENING_WORDS = frozenset(
    "yes yeah no nope ok okay sure indeed well now today currently nowadays overall however therefore thus hence "
    "also furthermore moreover first second third answer summary note later afterwards afterward meanwhile soon then "
    "still yet besides despite rather instead after before although though since while when once unlike like "
    "nevertheless nonetheless otherwise anyway sometimes often".split()
)
"""Words opening a sentence that say when or how, not of whom ("Yes, the bank employs…", "Later she chose…")."""


def _says_how(text: str, term: Term) -> bool:
    """Whether the word of `term` opening a sentence says when or how rather than naming someone: one of
    `_OPENING_WORDS`, an adverb ("Eventually"; not "Sally" nor "Kimberly": `_ADVERB`), or a participle its comma sets
    apart ("Undeterred, she…"; not "Lauren, …", whom it addresses)."""
    found = _OPENING_WORD.match(text, term[1])
    word = found.group(1).lower() if found else ""
    participle = len(word) >= 6 and word.endswith(("ed", "ing")) and bool(found and found.group(2))
    return word in _OPENING_WORDS or _ADVERB.search(word) is not None or participle


_OPENING_WORD = re.compile(r"([A-Za-z'-]*)( *,)?")
"""A word and the comma after it, if one follows."""


_ADVERB = re.compile(r"^.{5,}(?<!r)ly$|^(?:clearly|nearly|sadly|only|early)$")
"""An English adverb in -ly of seven letters or more ("Eventually", "Unfortunately", "Recently"): names end in -ly
too, shorter or in -rly ("Sally", "Emily", "Shelly", "Kimberly", "Beverly")."""


def _unknown_names(claim: Analysis, claim_terms: Sequence[Term], source: Analysis, everywhere: set[str]) -> bool:
    """Whether the claim writes a Latin name the passage never writes: a capitalised word inside a sentence
    ("The CEO is Tran Van Hoa" where the passage names "Tran Minh Duc", "…was founded in 1991 by John Smith", "an
    app called SMB Pay" for "SMB Go"). A name is not paraphrased: the share of words held (3 of 4) and a window
    holding every term the passage writes had badged those green, as they did every answer whose wrong part is a
    name the passage never writes. A word opening a sentence too, whose capital says nothing of it: "Thelma began
    with the first level of Englishtown" of "Ellen began with…" was green, and "Today" or "Scientists" the passage
    never writes are no more its words (on every badges line, no right answer lost). Not a word of a line's label
    ("**Founding Year:**"), nor an acronym of words the passage writes ("CEO")."""
    candidates = [
        t
        for t in claim_terms
        if _capitalised(claim.text, t)
        and not t[0][0].isdigit()
        and t[0] not in everywhere
        and claim.text[t[1] : t[2]].lower() not in _SOURCE_WORDS
        and not (_at_opening(claim.text, t[1]) and _says_how(claim.text, t))
    ]
    if not candidates:
        return False  # most claims: no line's labels to look for
    labels = [m.span() for m in _LINE_LABEL.finditer(claim.text)]
    unknown = [
        t for t in candidates if not _inside(labels, t[1], t[2]) and not _spelt_out(claim.text[t[1] : t[2]], source)
    ]
    if not unknown:
        return False
    # "Bedat" for "Bédat" (whose letters are no word of the passage's terms): the passage without its accents.
    plain = _unaccented(source.text)
    return any(re.search(rf"\b{re.escape(claim.text[t[1] : t[2]])}\b", plain, re.IGNORECASE) is None for t in unknown)


def _unaccented(word: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


_SOURCE_WORDS = frozenset(
    "source sources document documents passage passages context section paragraph page table figure chapter "
    "article text note".split()
)
"""Words an answer names its sources by, capitalised as often as not ("According to Document 1, …")."""


_LINKING = r"(?:(?:of|and|the|for|de|&)[\s-]+)?"


def _spelt_out(word: str, source: Analysis) -> bool:
    """Whether `word` is an acronym of words the passage writes ("CEO" of "chief executive officer", "USA" of
    "United States of America"): a name it writes in full."""
    if not (2 <= len(word) <= 6 and word.isalpha() and word.isupper()):
        return False
    letters = (re.escape(c) + r"[a-z]*" for c in word)
    return re.search(r"\b" + (r"[\s-]+" + _LINKING).join(letters) + r"\b", source.text, re.IGNORECASE) is not None


def _carry(
    claim_order: Sequence[str],
    missing: set[str],
    source: Analysis,
    clauses: Sequence[tuple[int, int]],
    window_terms: Sequence[Term],
    claim: Analysis,
) -> list[Term] | None:
    """The missing terms placed at the window's first pronoun, or None when it cannot stand for them:
    there is none (or a term of the claim comes before it in its clause: "Elizabeth … her father"),
    they are not one stretch of the claim, not a name ("founded", "Doctors"), neither the subject of a
    sentence nor the name last written, or no earlier sentence names them together."""
    pronouns = [p for p in source.pronouns if _inside(clauses, *p)]
    if not pronouns:
        return None
    block = [t for t in claim_order if t in missing]
    first, last = claim_order.index(block[0]), claim_order.index(block[-1])
    if last - first + 1 != len(block):
        return None  # two separate things are missing
    if (
        any(t.isascii() and not _named(source, t) for t in missing)
        and (subject := _titled_subject(source, missing)) != "named"
    ):
        # A pronoun stands for a name, not for "founded" or "Doctors"; "it" and "its" for a thing a sentence opens
        # with ("The company was founded in 1987. … Its customer tracking app is called Tide Tracker", a walk's right
        # answer "The company's customer tracking app is called Tide Tracker [1]" flagged as a guess).
        if subject is None:
            return None
        pronouns = [p for p in pronouns if source.text[p[0] : p[1]].lower() in ("it", "its")]
        if not pronouns:
            return None
    if not (
        _opens_sentence(source, missing)
        or (all(t.isascii() for t in missing) and _last_named(source, clauses[0][0]) == missing)
    ):
        return None  # it stands for a sentence's subject or the name last written, not for 王夫人
    start = next(s for s, e in source.sentences if s <= clauses[0][0] < e) if source.sentences else 0
    for p_start, p_end in pronouns:
        clause = next(c for c in source.clauses if c[0] <= p_start < c[1])
        if any(
            clause[0] <= t[1] < p_start and len(t[0]) > 1 and not t[0][0].isdigit()
            for t in window_terms
            if t[0] in claim_order
        ):
            continue  # "Elizabeth … her father": her is Elizabeth
        for (s_start, s_end), said, opener in zip(source.sentences, source.sentence_sets, source.openers):
            if s_end <= start and missing <= said:
                return [(t, p_start, p_end) for t in missing]
            if (
                s_start == start
                and missing <= opener
                and not any(
                    t[0] not in missing and _capitalised(source.text, t) and _named(source, t[0])
                    for t in source.terms
                    if s_start <= t[1] < p_start
                )
            ):
                # The subject of its own sentence ("林黛玉初到荣国府，…没有与她相见"), unless another name
                # comes between ("Jane …, and Elizabeth … her father").
                return [(t, p_start, p_end) for t in missing]
        return None
    return None


def _omitted_subject(
    claim_terms: Sequence[Term], missing: set[str], source: Analysis, window_terms: Sequence[Term], claim_text: str
) -> list[Term] | None:
    """The missing terms as the subject a Chinese sentence leaves out because the sentence before names it, or
    names only by its head noun, or None. "黑龙江省博物馆藏品11万余件" is held by "2012年，黑龙江省博物馆被…核定为…。
    馆舍面积近1万平方米，藏品11万余件", and "胜利广场的中心是…骑马雕像" by "胜利广场（…）是巴黎的一个圆形广场，…。
    在广场中心，是…骑马雕像" (a Chromium walk: both copied from their source and flagged). Only where the missing
    terms are the claim's opening (its subject), the subject of the sentence just before the window's holds every
    term of that opening (`_subject`; those the passage never writes too: "故宫博物院" is not "博物馆"), or the
    passage's first sentence opens with them (an article's topic, left out of every sentence after:
    "松平康忠（1546年－1618年）是…武将。长泽松平家第8代当主。德川氏的家臣。" holds "松平康忠是德川氏的家臣"; on
    zh_cmrc_trial's bare answers right green 818 -> 822 of 1,000, wrong 181 -> 183 of 989, the sentences' 822 -> 823
    and 203 -> 204, the conversation bench's Chinese right answers read again 26 -> 29 of 52, the labelled set the
    same), and the window's clause holding the claim's next term opens with it: no other subject stands before it
    ("宝玉的父亲是贾政" holds nothing of "贾母的父亲是贾政"). A bigram across the subject's end ("馆藏" of
    "博物馆藏品") need not be written."""
    if any(t.isascii() for t in missing):
        return None
    ordered = sorted((t for t in claim_terms if len(t[0]) > 1), key=lambda t: t[1])
    # The subject opens the claim, or else, an article's topic, a clause of it after words the window holds: "2001年，
    # 叶盛茂接替王光宇担任调查局局长" against an article on 叶盛茂 writing "2001年8月，接替王光宇担任调查局局长"
    # (zh_cmrc_trial's bare answers right green 822 -> 823 of 1,000, wrong the same). Not a name of the sentence
    # before there: "2001年，陈水扁接替王光宇…" where the sentence before writes "在陈水扁担任台北市长时期，叶盛茂是…".
    inside = next((i for i, t in enumerate(ordered) if t[0] in missing), 0)
    for begin in dict.fromkeys((0, inside)):
        if begin and _writes_a_word(CLAUSE_MARK.split(claim_text[: ordered[begin][1]])[-1]):
            continue
        found = _omitted_from(ordered, begin, missing, source, window_terms, topic_only=begin > 0)
        if found is not None:
            return found
    return None


_TIME_CLAUSE = re.compile(
    r"\s*(?:(?:在|当|自|从|于)[^，,。；;！？!?]{0,24}?(?:时期|期间|时候|之后|以后|之前|以前|时|后|前|中)"
    r"|[^，,。；;！？!?\d]{0,4}[\d〇零一二三四五六七八九十百千两]+年(?:[\d一二三四五六七八九十]+月)?(?:[\d一二三四五六七八九十]+日)?)"
    r"\s*[，,]"
)
"""A sentence's opening clause of time, a date ("2012年，", "清光绪三十二年，") or a phrase of time
("在陈水扁担任台北市长时期，"): its subject follows. Not "学校创建于1906年，", whose subject opens it."""


def _subject(source: Analysis, k: int) -> frozenset[str]:
    """The terms of sentence `k`'s subject: its first run of terms, after an opening clause of time (`_TIME_CLAUSE`).
    Not every term it writes: "在陈水扁担任台北市长时期，叶盛茂是…。2001年8月，接替王光宇担任调查局局长" left
    out 叶盛茂, and "陈水扁接替王光宇担任调查局局长" was held by it (a wrong answer green)."""
    start, end = source.sentences[k]
    lead = _TIME_CLAUSE.match(source.text, start, end)
    begin = lead.end() if lead else start
    runs = _runs(source.text, [t for t in source.terms if begin <= t[1] and t[2] <= end])
    return frozenset(t[0] for t in runs[0]) if runs else frozenset()


def _omitted_from(
    ordered: Sequence[Term],
    begin: int,
    missing: set[str],
    source: Analysis,
    window_terms: Sequence[Term],
    *,
    topic_only: bool = False,
) -> list[Term] | None:
    """`_omitted_subject` for the claim's terms (`ordered`, two characters or more) from the `begin`th on; the
    passage's topic alone with `topic_only`, not what the sentence before writes."""
    at = next(
        (
            i
            for i in range(begin, len(ordered))
            if ordered[i][0] not in missing and any(w[0] == ordered[i][0] for w in window_terms)
        ),
        0,
    )
    opening, following = ordered[begin:at], ordered[at][0] if ordered else ""
    if not opening or not missing <= {t[0] for t in opening}:
        return None
    needed = {t[0] for t in opening}
    last = opening[-1][0]
    if len(last) == 2 and following.startswith(last[1]):
        needed.discard(last)
    written = [t for t in window_terms if t[0] == following]
    if not written or not needed:
        return None
    first = min(written, key=lambda t: t[1])
    clause = next((c for c in source.clauses if c[0] <= first[1] < c[1]), None)
    if clause is None or any(clause[0] <= t[1] < first[1] and len(t[0]) > 1 for t in source.terms):
        return None
    sentence = next((i for i, (start, end) in enumerate(source.sentences) if start <= clause[0] < end), 0)
    before = frozenset() if topic_only else _subject(source, sentence - 1)
    if sentence == 0 or not (needed <= before or needed <= source.openers[0]):
        return None
    # Nor earlier in its sentence: a subject another sentence of the passage opens with ("史湘云性情豪爽，醉卧芍药裀…"
    # holds nothing of "黛玉醉卧芍药裀…"), where "馆舍面积近1万平方米，" says more of the omitted one.
    subjects = frozenset().union(*(opener for i, opener in enumerate(source.openers) if i != sentence))
    opens = source.sentences[sentence][0]
    if any(opens <= t[1] < first[1] and len(t[0]) > 1 and t[0] in subjects for t in source.terms):
        return None
    return [(t, clause[0], clause[0]) for t in missing]


def _other_ones(
    claimed: Sequence[Figure],
    held: Sequence[Figure],
    claim_terms: Sequence[Term],
    window_terms: Sequence[Term],
    claim_text: str,
    text: str,
) -> bool:
    """Whether a figure of the claim is, in the window, one of a series said alike of several things ("The Leeds
    depot has 40 staff and the York depot has 25 staff", "云账本售价299元，守望者售价899元": one word before each)
    and the claim's thing is another one's: each figure of the series holds the words since the one before it, and
    a word of the claim that only another's part writes ("York", 云账本) makes it that one's figure. Only where the
    word is written again before each: "opens at 06:30 on weekdays and at 08:00 on Saturdays" says both of one."""
    for figure in claimed:
        series = sorted((g for g in held if figure.before and g.before == figure.before), key=lambda g: g.start)
        parts: list[set[str]] = []
        start = -1
        for g in series:
            if figure.before not in text[start + 1 : g.start].lower():
                break  # the word once, for the whole series
            parts.append({t[0] for t in window_terms if start < t[1] and t[2] <= g.end})
            start = g.end
        if len(parts) < len(series) or len({g.value for g in series}) < 2:
            continue
        own = [i for i, g in enumerate(series) if g.value == figure.value]
        # Names tell the things apart ("York"; a Chinese word may be one): not a verb both share ("RFC 2616 obsoletes
        # RFC 2068", whose "obsoletes" stands in the second's part).
        said = {
            t[0] for t in claim_terms if not t[0][0].isdigit() and (not t[0].isascii() or claim_text[t[1]].isupper())
        } - {figure.before}
        placed = [
            i for i, part in enumerate(parts) if said & part - set().union(*(p for j, p in enumerate(parts) if j != i))
        ]
        if own and placed and not set(placed) & set(own):
            return True
    return False


def claim_held(claim: str, source: str) -> Verdict:
    """Whether one window of `source` holds all of `claim` (see the module's docstring), and if not, why."""
    said, passage = analyse(claim), analyse(source)
    return _held_part(said, (0, len(said.text)), passage)


def _held_part(
    claim: Analysis,
    part: tuple[int, int],
    source: Analysis,
    given: frozenset[str] = frozenset(),
    restated: bool = False,
    within: tuple[int, int] | None = None,
) -> Verdict:
    """Whether `source` holds the `part` of `claim`; `within`: by a window inside that stretch of it only."""
    claim_terms = [t for t in claim.terms if part[0] <= t[1] and t[2] <= part[1]]
    claim_mentions = [m for m in claim.mentions if part[0] <= m.start and m.end <= part[1]]
    relation_spans = [(m.start, m.end) for m in claim_mentions]
    everywhere = {t[0] for t in source.terms}
    # Relation words are judged as relations ("父亲" is held by "生得一女"), and a lone character ("年"
    # of "1912年，") by the characters, not the bigrams, of the window.
    found = [
        t
        for t in claim_terms
        if t[0] in everywhere
        and (len(t[0]) > 1 or t[0].isascii())  # a letter naming one of a kind ("Plan A") is a term
        and not any(a < t[2] and t[1] < b for a, b in relation_spans)
    ]
    chars = {t[0] for t in claim_terms if len(t[0]) == 1 and not t[0].isdigit() and not t[0].isascii()}
    pairs = _han_pairs(claim_terms)
    if _unknown_clause(claim, part, pairs, everywhere, given):
        return Verdict(False, "unknown clause")
    if _unknown_names(claim, claim_terms, source, everywhere):
        return Verdict(False, "unknown name")
    if _unknown_item(claim.text[part[0] : part[1]], source.text):
        return Verdict(False, "unknown item")
    gaps = _gaps(claim, pairs, everywhere, given, restated)
    reports = _reports_speech(claim.text[part[0] : part[1]])
    order = list(dict.fromkeys(t[0] for t in found))
    wanted = set(order)
    claim_figures = [f for f in claim.figures if part[0] <= f.start and f.end <= part[1]]
    groups = {m.relation.group for m in claim_mentions}
    claim_exclusive = exclusive_words(claim.text[part[0] : part[1]])
    reasons: list[str] = []
    # A word whose opposite the source says and which it never says itself ("父母都还健在" against "自幼父母
    # 双亡") is denied, whichever window holds the names.
    said = exclusive_words(source.text)
    if any(
        any(i == j and a != b for j, b in said) and not any(i == j and a == b for j, b in said)
        for i, a in claim_exclusive
    ):
        return Verdict(False, "exclusive")
    for indices in _windows(source):
        present = frozenset().union(*(source.clause_sets[i] for i in indices))
        missing = wanted - present
        if len(missing) >= len(wanted) > 0:
            reasons.append("scattered")
            continue
        clauses = [source.clauses[i][:2] for i in indices]
        window = (clauses[0][0], clauses[-1][1])
        if within is not None and not (within[0] <= window[0] and window[1] <= within[1]):
            continue
        terms = [t for i in indices for t in source.clause_terms[i]]
        missing -= _named_in_part(claim, claim_terms, missing, {t[0] for t in terms}, source)
        missing -= _suffixed_name(claim, pairs, missing, source, window)
        if _replaced(claim, gaps, source, window):
            reasons.append("replaced")
            continue
        if reports and _REPORTED.search(source.text, *window) is None:
            # "Edison said that he had failed 10,000 times" is no "Edison failed 10,000 times" of a window that says
            # nothing of what he said (the passage: "he said that he hadn't failed 10,000 times").
            reasons.append("scattered")
            continue
        # "Every model comes with a three-year warranty" holds it of "Model 4": the number of a thing the window
        # says of every one of its kind is no term or figure it must write.
        kinds = {m.group(1).lower()[:5] for a, b in clauses for m in _UNIVERSAL.finditer(source.text, a, b)}
        kinds |= {m.group(1)[-1] for a, b in clauses for m in _ZH_UNIVERSAL.finditer(source.text, a, b)}
        window_figures = [f for f in source.figures if _inside(clauses, f.start, f.end)]
        each = [
            f
            for f in claim_figures
            if f.before in kinds and not any(g.before == f.before and g.value == f.value for g in window_figures)
        ]
        missing -= {claim.text[f.start : f.end] for f in each}
        if any(c in source.text and not any(c in source.text[a:b] for a, b in clauses) for c in chars):
            reasons.append("scattered")
            continue
        if missing:
            carried = None
            if len(missing) < len(wanted):
                carried = _carry(order, missing, source, clauses, terms, claim)
                if carried is None:
                    carried = _omitted_subject(claim_terms, missing, source, terms, claim.text)
            if carried is None:
                reasons.append("scattered")
                continue
            terms = terms + carried
        else:
            carried = []
        figures_said = [f for f in claim_figures if f not in each]
        if any(all(f.value != g.value for g in window_figures) for f in figures_said):
            reasons.append("numbers")
            continue
        if moved(figures_said, window_figures) or _other_ones(
            figures_said, window_figures, claim_terms, terms, claim.text, source.text
        ):
            reasons.append("moved number")
            continue
        # Roles and negation are read from what the window writes, not from a pronoun's stand-in.
        written = [t for t in terms if t not in carried]
        common = {t[0] for t in claim_terms} & {t[0] for t in written}
        if _denies_otherwise(claim, part, source, window, common):
            reasons.append("negation")
            continue
        if any(_owned_only(source, terms, t, groups) for t in wanted):
            reasons.append("relative")
            continue
        if not all(_agrees(claim, part, cm, source, window, written) for cm in claim_mentions):
            reasons.append("relation")
            continue
        held_exclusive = exclusive_words(" ".join(source.text[a:b] for a, b in clauses))
        if any(i == j and a != b for i, a in claim_exclusive for j, b in held_exclusive) and not all(
            any(i == j and a == b for j, b in held_exclusive) for i, a in claim_exclusive
        ):
            reasons.append("exclusive")
            continue
        return Verdict(True, "held", window)
    order_of_blame = (
        "negation",
        "relation",
        "relative",
        "exclusive",
        "replaced",
        "moved number",
        "numbers",
        "scattered",
    )
    return Verdict(False, next((r for r in order_of_blame if r in reasons), "scattered"))


def claim_parts(claim: Analysis) -> list[tuple[int, int]]:
    """The clauses of a claim; one of numbers and dates alone ("前514年", "From 2008 on") stays with the
    clause after it, the event it dates."""
    parts: list[tuple[int, int]] = []
    pending: int | None = None
    for start, end, _opens in claim.clauses:
        if _words(claim.terms, start, end) == 0:
            pending = start if pending is None else pending
            continue
        parts.append((start if pending is None else pending, end))
        pending = None
    if pending is not None:
        parts.append((pending, len(claim.text))) if not parts else parts.__setitem__(
            -1, (parts[-1][0], len(claim.text))
        )
    return parts


_SPEECH = "says|said|tells|told"
_REPORTED = re.compile(rf"\b(?:{_SPEECH})\b", re.IGNORECASE)
"""Words reporting what someone said ("said" is no term: `support.STOP_WORDS`): a claim of what was said is held only
by a window that reports speech too. (With "say", "answered", "added", "wrote" too, right answers on RFCs lost green:
"sent with a 503 to say how long", "the server adds a header".)"""


_SOURCE_SAYS = re.compile(
    rf"\b(?:{'|'.join(sorted(_SOURCE_WORDS))}|it)\s+(?:\[?\d+\]?\s+)?(?:{_SPEECH})\b", re.IGNORECASE
)
"""A source saying something ("the passage says", "Document 1 says"): the answer's words for where it read it."""


def _reports_speech(claim: str) -> bool:
    """Whether `claim` reports what someone said (`_REPORTED`), a source's saying (`_SOURCE_SAYS`) aside."""
    return _REPORTED.search(_SOURCE_SAYS.sub(" ", claim)) is not None


_HEARSAY = re.compile(
    r"\s*(?:(?:some|many|most|other)\s+)?(?:people|others)\s+(?:say|said|believe|believed|think|thought)\s+(?:that\s+)?"
    r"|\s*(?:some|many)\s+(?:say|said|believe|believed)\s+(?:that\s+)?"
    r"|\s*it\s+is\s+(?:said|believed|thought)\s+that\s+",
    re.IGNORECASE,
)
"""An opening that says what unnamed others say or believe: the claim after it says no more than a source stating it.
Not a group the source may not name ("Scientists believe…"): that attribution would be the claim's own."""


def holding_sources(
    claim: str, sources: Mapping[int, str], given: str = "", *, restated: bool = False
) -> tuple[int, ...]:
    """The numbers of `sources` that hold `claim` or a clause of it; () when some clause of it is held
    by none of them (then no source supports the sentence as a whole). `given`: the question a bare answer was put
    into to make `claim` (rag.generate.fragments), whose words the answer does not say (`_gaps`); or, `restated`,
    the question the model's sentence `claim` answers, whose words it may open with."""
    said = analyse(claim)
    whole = (0, len(said.text))
    # An amount in another currency than the source's is not its amount, whatever else the sentence holds.
    sources = {n: text for n, text in sources.items() if other_currency(claim, text) is None}
    chars = frozenset(HAN_CHAR.findall(given))
    holders = tuple(n for n, text in sources.items() if _held_part(said, whole, analyse(text), chars, restated).held)
    if holders:
        return holders
    cause = _cause_and_effect(said.text)
    if cause is not None:
        return _with_reason(said, *cause, sources, chars, restated) or _in_one_sentence(said, sources, chars, restated)
    hedge = _HEARSAY.match(claim)
    if hedge is not None and claim[hedge.end() :].strip():
        # "Some people say it weighs more than 1,000 kilos" says less than a source's "It weighs more than 1,000 kilos"
        # (after "People say a big monster lives in its waters": a conversation bench's right answer was flagged).
        return holding_sources(claim[hedge.end() :], sources, given, restated=restated)
    parts = claim_parts(said)
    if len(parts) < 2:
        return ()
    backing: list[int] = []
    for part in parts:
        by = [n for n, text in sources.items() if _held_part(said, part, analyse(text), chars, restated).held]
        if not by:
            return ()
        backing += by
    return tuple(dict.fromkeys(n for n in sources if n in backing))


_BECAUSE = re.compile(
    r",?\s+because\s+(?=\S)|[，,]\s*(?:这|那)?(?:正|就|也)?是?(?:因为|由于)(?=\S)"
    r"|(?<![总还可只要倒于但若不凡像或老])是(?:因为|由于)(?=\S)",
    re.IGNORECASE,
)
"""What gives an effect its reason after it ("People jump over the fire because they hope…", "人们从火上跳过去，是因为
他们希望…"): each held alone is not the two held together, so a source must write them together (`_with_reason`).
Not a 因为 inside a clause ("李明总是因为迟到被批评" gives its reason before its effect, and 总是 is no "是因为")."""
_REASON_FIRST = re.compile(r"\s*(?:(?:and|but)\s+|而|但是?|并且|且|又|也)?(?:because\s+|因为|由于)(?=\S)", re.I)
"""A reason said before its effect ("Because it rained, …", "因为下雨，所以…", "而由于…，因此…")."""
_ZH_THEREFORE = "所以|因此|因而|于是"
"""Chinese words giving a consequence (`_THEREFORE`, `_CAUSAL`, `_CONSEQUENCE`)."""
_THEREFORE = re.compile(rf"\s*[，,]?\s*(?:{_ZH_THEREFORE})")
_COMMA = re.compile(r"\s*[，,]\s*")


def _cause_and_effect(text: str) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """The spans of the effect and of its reason where `text` gives one of the other ("Y because X", "Y，是因为X",
    "Because X, Y", "因为X，所以Y"); None where it gives none, or either is empty."""
    first = _REASON_FIRST.match(text)
    if first is not None:
        then = _THEREFORE.search(text, first.end()) or _COMMA.search(text, first.end())
        if then is None or then.start() <= first.end() or not text[then.end() :].strip():
            return None
        return (then.end(), len(text)), (first.end(), then.start())
    cause = _BECAUSE.search(text)
    if cause is None or not text[: cause.start()].strip() or not text[cause.end() :].strip():
        return None
    return (0, cause.start()), (cause.end(), len(text))


def _with_reason(
    said: Analysis,
    effect: tuple[int, int],
    reason: tuple[int, int],
    sources: Mapping[int, str],
    chars: frozenset[str],
    restated: bool,
) -> tuple[int, ...]:
    """The sources holding `effect` and its `reason` together: the reason after the effect in the sentence of the window
    that holds the effect, or in the next sentence where that opens by pointing back ("They hope…", "This is
    because…", "他们希望…"); or before it, where the effect's sentence opens as a consequence ("So…", "所以…",
    "于是…"), in that sentence or the one before. "People jump over the fire because they hope it will take the bad
    things away" of "People jump over the fire. They hope that it will take all the bad things away." (a conversation
    bench's right answer was flagged: no one window held both), not of a source whose sentence before says "It is on
    the eve of the last Wednesday of the year" (each part held anywhere had made "…, because it is on the eve of…"
    green, and "人们从火上跳过去，因为这一天是…" of its Chinese); nor of a reason most of whose words the source never
    writes ("because they hope it will bring money": `REASON_SHARE`)."""
    reason_terms = {t[0] for t in said.terms if reason[0] <= t[1] and t[2] <= reason[1]}
    holders = []
    for n, text in sources.items():
        source = analyse(text)
        if not reason_terms or len(reason_terms & {t[0] for t in source.terms}) < REASON_SHARE * len(reason_terms):
            continue  # words the source never writes are not judged by the windows (only names are)
        at = _held_part(said, effect, source, chars, restated).window
        if at is None:
            continue
        opens = [start for start, _end, opened in source.clauses if opened]
        before = [start for start in opens if start <= at[0]]
        after = [start for start in opens if start >= at[1]]
        end = after[0] if after else len(source.text)
        stretches = [(at[0], end)]
        if after and _POINTS_BACK.match(source.text, after[0]):
            stretches.append((at[0], after[1] if len(after) > 1 else len(source.text)))
        if before and _CONSEQUENCE.match(source.text, before[-1]):
            stretches.append((before[-2] if len(before) > 1 else before[-1], end))
        if any(_held_part(said, reason, source, chars, restated, within=s).held for s in stretches):
            holders.append(n)
    return tuple(holders)


def _in_one_sentence(
    said: Analysis, sources: Mapping[int, str], chars: frozenset[str], restated: bool
) -> tuple[int, ...]:
    """The sources one sentence of which holds every clause of `said` (`claim_parts`), each by a window of its own: a
    long sentence giving a reason ("…，由于…，因此…，…", copied from its passage) that no one window holds, where the
    effect and the reason are each more than a window (`_with_reason`)."""
    parts = claim_parts(said)
    if len(parts) < 2:
        return ()
    markers = {m.group().lower() for m in _CAUSAL.finditer(said.text)}
    wanted = {t[0] for t in said.terms}
    holders = []
    for n, text in sources.items():
        source = analyse(text)
        for (a, b), written in zip(source.sentences, source.sentence_sets, strict=True):
            # Only a sentence writing most of the claim's terms can hold all its clauses (the others cost a look each),
            # and the claim's own words of cause: "The river flooded, so the bridge was closed" holds no "…, because the
            # bridge was closed", nor "…, and she went to bed early" a "because she went to bed early".
            if len(wanted & written) < REASON_SHARE * len(wanted):
                continue
            if not markers <= {m.group().lower() for m in _CAUSAL.finditer(source.text, a, b)}:
                continue
            if all(_held_part(said, part, source, chars, restated, within=(a, b)).held for part in parts):
                holders.append(n)
                break
    return tuple(holders)


_CAUSAL = re.compile(rf"\bbecause\b|因为|由于|{_ZH_THEREFORE}", re.IGNORECASE)
"""The words giving a cause or its consequence, which a sentence holding a reason claim clause by clause writes too."""
REASON_SHARE = 0.5
"""Of a reason's terms, the share its source must write (as `support.SUPPORTED` of a sentence's)."""
_POINTS_BACK = re.compile(
    r"\s*(?:(?:they|it|this|that|these|those|he|she|because)\b|他|她|它|这是|那是|因为|由于|原因)", re.IGNORECASE
)
"""How a sentence giving the reason of the one before it opens ("They hope…", "This is because…", "他们希望…", "这是
因为…"; not "So…", which gives a consequence, nor "这一天…", a time)."""
_CONSEQUENCE = re.compile(rf"\s*(?:(?:so|therefore|thus|hence)\b|{_ZH_THEREFORE})", re.IGNORECASE)
"""How a sentence giving the consequence of the one before it opens ("So the match was cancelled.", "于是…")."""


def other_currency(claim: str, passage: str) -> Figure | None:
    """An amount of `claim` in a currency where `passage` states the same number only in others: "15,500.00元" where
    the price list says "$15,500.00" (a walk saw it matched to it). None when there is none. Read from the texts'
    analyses (cached: `holding_sources` has made them)."""
    said, source = analyse(claim), analyse(passage)
    held = [(f.value, currency(source.text, f)) for f in source.figures]
    for figure in said.figures:
        stated = currency(said.text, figure)
        if stated is None:
            continue
        others = [c for value, c in held if value == figure.value]
        if others and all(c is not None and c != stated and "¥" not in (c, stated) for c in others):
            return figure
    return None
