"""Why a generated question is dropped: each rule one function, each reason one code.

The reasons are counted and shown, so that a user sees whether the model or the document is at fault
(a model that does not quote, a document of tables) rather than only fewer questions than asked for.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

import numpy as np

from rag.evaluation.keyword import ChunkBM25
from rag.evaluation.normalise import NormalisedText, normalise
from rag.generate.support import STOP_WORDS, content_terms
from rag.scripts import CJK

NO_REPLY = "no_reply"
"""The reply held no `Q:` and `A:` line."""
NOT_FOUND = "answer_not_found"
"""The answer is not in the document, even after normalisation, nor close enough to its passage's words to be
mapped to them (`rescue_paraphrase`): the model summarised or invented."""
TOO_LONG = "answer_too_long"
AMBIGUOUS = "answer_ambiguous"
"""The answer occurs elsewhere in the document too, and no longer quote around it is unique."""
GIVES_AWAY = "gives_away"
"""The question holds most of the answer's content words, or is answered yes or no (it states its fact)."""
GENERIC = "too_generic"
"""The question has too few content words of its own ("What is it?")."""
ELSEWHERE = "matches_elsewhere"
"""The question's words match several other passages of the document as well as its own (`RIVALS`)."""
DUPLICATE = "duplicate"
FAILED = "model_failed"
"""The model raised an error for this passage (the next passage is still tried)."""

REASONS = (NO_REPLY, NOT_FOUND, TOO_LONG, AMBIGUOUS, GIVES_AWAY, GENERIC, ELSEWHERE, DUPLICATE, FAILED)

MAX_ANSWER_CHARS = 200
"""An answer longer than this is a passage, not a fact: it spans chunk boundaries of small settings and
says little about which setting finds the fact."""
GIVE_AWAY_SHARE = 0.5
"""A question holding this share of its answer's content terms or more answers itself."""
MIN_QUESTION_TERMS = 2
"""Content terms a question needs besides its answer's ("What is it?" has none)."""
RESCUE_SHARE = 0.8
"""A paraphrased answer is mapped to the passage's own words only when a stretch of the passage holds this share
of its units (`_units`: English word stems, numbers, CJK characters) or more, in the answer's order: all of
them for answers of up to 4 units, 4 of 5. "明尼苏达州" for the passage's "明尼苏达" passes (4 of 5 characters); "The
passage discusses the cultural differences in skin color..." for a passage about skin colour does not. Gold
answers tried against the passage after their own (which does not hold them) were rescued there once in 556
(en_race: "Five." as "five") and never in 997 (zh_cmrc_trial); against their own, 88 of the 480 en_race
answers not found verbatim (RACE's options are often reworded) were."""
MAX_RESCUE_CHARS = 80
"""A longer answer is not rescued: the prompt asks for a few words, and a sentence reworded is a summary
rather than a quote (the window search also grows with the answer's units times the stretch's)."""
RESCUE_LENGTH = 1.5
"""...and only when that stretch is at most this many times the answer's length (characters, normalised):
the answer's words scattered over a sentence are not a quote of it."""
RIVALS = 3
"""Windows besides a question's own (and the two beside it, which share its topic: the window before a Chinese
article's passage holds the article's first sentence) that may match its words as well as its own or better
before it counts as a question any passage could answer (`matches_elsewhere`). This was a margin once: its own
window had to score 1.2 times every other's, which kept only questions whose wording keyword search singles
out, copies of the passage's words, and they ranked the chunk settings worse than with the questions it dropped
added back (`python -m rag bench --only tune`, Spearman rho against the sets' real questions): zh_cmrc_trial
0.67 -> 0.85 (49 questions + 5), en_race 0.71 -> 0.74 (16 + 6), and zh 0.67 -> 0.77 in a run before. Of the
9 dropped in that run, 7 had their own window first or second; "What is the main message of the passage?"
(91 windows ahead of its own) asks about no passage at all."""


def locate(doc: NormalisedText, answer: str, passage: tuple[int, int]) -> list[tuple[int, int]]:
    """Spans of `answer` (normalised) in the document, those inside `passage` (start, end) first."""
    spans = doc.find_all(normalise(answer))
    lo, hi = passage
    return sorted(spans, key=lambda s: (not (lo <= s[0] and s[1] <= hi), abs(s[0] - lo)))


def find_answer(
    doc: NormalisedText, text: str, answers: Sequence[str], passage: tuple[int, int]
) -> tuple[tuple[int, int] | None, str | None]:
    """(span, None) of the model's answer in the document, or (None, reason) when it is not found or too long.

    `answers` are the forms of the answer to look for, best first (rag.tuning.replies.answer_candidates).
    Each is looked for verbatim after normalisation (`locate`), those inside `passage` first; failing that,
    as a close paraphrase of the passage's own words (`rescue_paraphrase`). A quote longer than
    `MAX_ANSWER_CHARS` that begins a sentence is cut to its first clause (`first_clause`): the model copied
    whole sentences, and what it meant first stands first. The span is always exact text of the document,
    never the model's wording."""
    for candidate in answers:
        spans = locate(doc, candidate, passage)
        if not spans:
            continue
        start, end = spans[0]
        if end - start <= MAX_ANSWER_CHARS:
            return spans[0], None
        if _starts_sentence(text, start, passage[0]):
            clause = first_clause(text[start:end])
            if clause and len(clause) <= MAX_ANSWER_CHARS and content_terms(clause):
                return (start, start + len(clause)), None
        return None, TOO_LONG
    for candidate in answers:
        if len(normalise(candidate)) > MAX_ANSWER_CHARS:
            return None, TOO_LONG
        if (span := rescue_paraphrase(text, passage, candidate)) is not None:
            return span, None
    return None, NOT_FOUND


_CLAUSE_END = re.compile(r"[.!?;:,](?=\s|$)|[。！？；：，、\n]")  # not the point of 1.5 or comma of 10,000


def first_clause(answer: str) -> str:
    """`answer` up to its first clause or sentence end, stripped: "Stopping and getting off a bike is easier
    than stopping and getting out of your car. You can bike to work ..." -> its first sentence."""
    stripped = answer.strip()
    match = _CLAUSE_END.search(stripped)
    return (stripped[: match.start()] if match else stripped).strip()


def _starts_sentence(text: str, at: int, lo: int) -> bool:
    """Whether `at` begins the passage (which begins at `lo`) or a sentence of it."""
    while at > lo and text[at - 1].isspace():
        at -= 1
    return at <= lo or text[at - 1] in '.!?。！？\n"”'


_UNIT = re.compile(f"[A-Za-z]+(?:'[A-Za-z]+)?|\\d+(?:[.,]\\d+)*|[{CJK}]")


def _units(text: str, offset: int = 0, *, stem: bool = True) -> list[tuple[str, int, int]]:
    """(unit, start, end) of each unit of `text` a paraphrase is compared by: English words (stop words
    dropped; with `stem`, cut to five letters as rag.generate.support cuts them: "devices" meets "device",
    "lives" does not meet "life"), numbers, and single CJK characters. Characters rather than bigrams for
    Chinese, so that one character changed costs one unit, not two; function characters (的, 所) count too,
    or "四所" would be one character long."""
    out: list[tuple[str, int, int]] = []
    for match in _UNIT.finditer(_fold_chars(text)):
        token = match.group()
        if token.isascii() and token[0].isalpha():
            if token in STOP_WORDS or len(token) <= 2:
                continue
            token = token[:5] if stem else token
        out.append((token, offset + match.start(), offset + match.end()))
    return out


def _fold_chars(text: str) -> str:
    """`text` lower-cased character by character (full-width forms folded where that keeps one character), so
    that offsets into it are offsets into `text`."""
    out = []
    for ch in text:
        folded = normalise(ch)
        out.append(folded if len(folded) == 1 else ch.lower())
    return "".join(out)


_STOP = re.compile(r"[.!?](?=\s|$)|[。！？\n]")
_ENDS = ".!?。！？ "


def rescue_paraphrase(text: str, passage: tuple[int, int], answer: str) -> tuple[int, int] | None:
    """The span of the passage (`text[passage[0]:passage[1]]`) that quotes `answer` most closely, when the model
    reworded it: a stretch from one of the answer's units to another, at most `RESCUE_LENGTH` times the
    answer's length and within one sentence if the answer is one, that holds at least `RESCUE_SHARE` of
    the answer's units in the answer's order (their longest common subsequence) and every number of it
    ("海拔50米至1,520米" is not "海拔250米至600米"); the highest share wins, then the shortest stretch. None when no
    stretch qualifies, or the answer is longer than `MAX_RESCUE_CHARS`. The span is widened to whole ASCII
    words ("1990" -> "1990s")."""
    if len(normalise(answer)) > MAX_RESCUE_CHARS:
        return None
    units = _units(answer)
    stem = len(units) > 1  # one word alone must be the same word: "difficult" is not "difficulty"
    wanted = [unit for unit, _, _ in (units if stem else _units(answer, stem=False))]
    total = len(wanted)
    if not total:
        return None
    numbers = {unit for unit in wanted if unit[0].isdigit()}
    limit = RESCUE_LENGTH * len(normalise(answer))
    lo, hi = passage
    found = [u for u in _units(text[lo:hi], lo, stem=stem) if u[0] in numbers or u[0] in wanted]
    one_sentence = not _STOP.search(answer.strip().rstrip(_ENDS))
    best: tuple[float, int, int, int] | None = None  # (-share, length, start, end)
    for i, (_, start, _) in enumerate(found):
        common = [0] * (total + 1)  # longest common subsequence of wanted[:k] and the stretch so far
        seen: set[str] = set()
        for unit, _, end in found[i:]:
            if end - start > limit or (one_sentence and _STOP.search(text, start, end)):
                break
            seen.add(unit)
            row = [0] * (total + 1)
            for k, want in enumerate(wanted):
                row[k + 1] = common[k] + 1 if want == unit else max(common[k + 1], row[k])
            common = row
            key = (-common[total] / total, end - start, start, end)
            if common[total] / total >= RESCUE_SHARE and numbers <= seen and (best is None or key < best):
                best = key
    if best is None:
        return None
    start, end = best[2], best[3]
    while start > lo and text[start - 1].isascii() and text[start - 1].isalnum():
        start -= 1
    while end < hi and text[end].isascii() and text[end].isalnum():
        end += 1
    return start, end


def unique_quote(
    doc: NormalisedText, text: str, span: tuple[int, int], limit: int = MAX_ANSWER_CHARS
) -> tuple[int, int] | None:
    """The shortest span around `span` (fewest words added on either side, within its sentence) whose
    text occurs only once in the document, so that the retrieval check, which takes every occurrence of
    the expected text as a target (rag.evaluation.targets), has exactly this one; None when none within
    the sentence and `limit` characters does (a sentence repeated word for word)."""
    lo, hi = _sentence_around(text, span)
    start, end = span
    lefts, rights = [start], [end]
    while lefts[-1] > lo and start - lefts[-1] < limit:
        lefts.append(max(_next_edge(text, lefts[-1], -1), lo))
    while rights[-1] < hi and rights[-1] - end < limit:
        rights.append(min(_next_edge(text, rights[-1], +1), hi))
    # Fewest words added first, and of those the most on the left, where the phrase's owner usually stands:
    # "Arden's brass compasses" rather than "brass compasses that" when both are unique. A quote that ends
    # in punctuation it did not have ("二〇〇一年，", shown so in a Chromium walk) is taken only when no longer
    # one without it is unique: the first such is kept aside while the search goes on.
    ragged_unique: tuple[int, int] | None = None
    for added in range(len(lefts) + len(rights) - 1):
        for left in range(min(added, len(lefts) - 1), max(0, added - len(rights) + 1) - 1, -1):
            a, b = lefts[left], rights[added - left]
            if b - a > limit:
                continue
            body = text[a:b]  # no outer whitespace: the span is the one the check finds (`find_all`)
            a, b = a + len(body) - len(body.lstrip()), a + len(body.rstrip())
            ragged = (a < start and _is_punctuation(text[a])) or (b > end and _is_punctuation(text[b - 1]))
            if ragged and ragged_unique is not None:
                continue
            needle = normalise(text[a:b])
            if needle and len(doc.find_all(needle, limit=2)) == 1:
                if not ragged:
                    return a, b
                ragged_unique = (a, b)
    return ragged_unique


def _is_punctuation(ch: str) -> bool:
    return unicodedata.category(ch).startswith("P")


_SENTENCE_END = re.compile(r"[.!?。！？\n]")


def _sentence_around(text: str, span: tuple[int, int]) -> tuple[int, int]:
    """The bounds of the sentence(s) holding `span`: from after the terminator before it to the end of the
    first terminator after it (a quote grown past them would join two sentences that say nothing together)."""
    start, end = span
    before = [m.end() for m in _SENTENCE_END.finditer(text, max(0, start - 2 * MAX_ANSWER_CHARS), start)]
    lo = before[-1] if before else max(0, start - 2 * MAX_ANSWER_CHARS)
    after = _SENTENCE_END.search(text, end)
    hi = after.end() if after else len(text)
    return lo, hi


def _next_edge(text: str, at: int, step: int) -> int:
    """The offset one word (one CJK character) further from `at` in direction `step`."""
    if step > 0:
        i = at
        while i < len(text) and text[i].isspace():
            i += 1
        if i < len(text) and not text[i].isascii():
            return i + 1  # CJK: a character at a time
        while i < len(text) and not text[i].isspace() and text[i].isascii():
            i += 1
        return max(i, at + 1)
    i = at
    while i > 0 and text[i - 1].isspace():
        i -= 1
    if i > 0 and not text[i - 1].isascii():
        return i - 1
    while i > 0 and not text[i - 1].isspace() and text[i - 1].isascii():
        i -= 1
    return min(i, at - 1)


_YES_NO = frozenset("是 否 不是 是的 对 不对 有 没有 yes no true false".split())


def yes_or_no(answer: str) -> bool:
    """Whether `answer` is a bare yes or no ("是", "Yes."): found in the passage it is some "是" or "no" of another
    sentence ("景栋位于……的主要城镇吗？" answered "是" was kept as "经是暹"), and the question states the fact."""
    return normalise(answer).strip(".。!！,，;； ") in _YES_NO


def gives_away(question: str, answer: str) -> bool:
    """Whether the question already holds most of the answer's content terms (numbers, word stems, bigrams)."""
    answer_terms = content_terms(answer)
    if not answer_terms:
        return normalise(answer) in normalise(question)
    return len(answer_terms & content_terms(question)) / len(answer_terms) >= GIVE_AWAY_SHARE


_CJK_CHAR = re.compile(f"[{CJK}]")
MIN_TRIMMED_CHARS = 2


def trim_echo(text: str, span: tuple[int, int], question: str) -> tuple[int, int] | None:
    """`span` without the Chinese characters and the whole words at its ends that the question holds too (and
    the punctuation and spaces around them), when what is left holds `MIN_TRIMMED_CHARS` CJK characters or
    more, or a content word the question lacks; None otherwise. In English, 4 of the bench's 24 questions were
    dropped as giving themselves away ("Who was Liu Xiang?"), before English words were trimmed too.
    Qwen2.5-Coder-1.5B answered "Sao Saimong是缅甸总理，他在哪里出生及长大的？" with "在景栋出生及长大。"
    (dropped as giving itself away: four of its seven bigrams are the question's); what it tells is "景栋".
    Only for an answer that gives itself away (the caller's rule): trimmed always, "桥横跨哪条江？" -> "青衣江"
    would lose its "江"."""
    asked = set(_CJK_CHAR.findall(question))
    words = {w.lower() for w in re.findall(r"[A-Za-z0-9]+", question)}

    def run(at: int, step: int) -> int:
        """The length of the run of ASCII letters and digits from `at` in direction `step`."""
        n = 0
        while 0 <= at + n * step < len(text) and text[at + n * step].isascii() and text[at + n * step].isalnum():
            n += 1
        return n

    def echo(at: int, step: int) -> int:
        """How many characters from `at` (direction `step`) the question echoes: a CJK character it holds,
        punctuation or a space, a whole ASCII word or number it holds; 0 for anything else."""
        ch = text[at]
        if ch.isascii() and ch.isalnum():
            n = run(at, step)
            word = text[at : at + n] if step > 0 else text[at - n + 1 : at + 1]
            return n if word.lower() in words else 0
        return 1 if ch in asked or not (ch.isalnum() or _CJK_CHAR.match(ch)) else 0

    start, end = span
    while start < end and (n := echo(start, +1)):
        start += n
    while end > start and (n := echo(end - 1, -1)):
        end -= n
    left = text[start:end]
    own = len(_CJK_CHAR.findall(left)) >= MIN_TRIMMED_CHARS or bool(content_terms(left) - content_terms(question))
    if not own or (start, end) == span:
        return None
    return start, end


def too_generic(question: str, answer: str) -> bool:
    """Whether the question has fewer than `MIN_QUESTION_TERMS` content terms besides its answer's."""
    return len(content_terms(question) - content_terms(answer)) < MIN_QUESTION_TERMS


def matches_elsewhere(question: str, bm25: ChunkBM25, window: int, rivals: int = RIVALS) -> bool:
    """Whether the question's words match `rivals` or more windows as well as `window` (an index into the
    windows `bm25` scores, in document order) or better, the windows beside it aside, or match it not at all:
    any passage could answer it."""
    scores = bm25.scores(question)
    own = float(scores[window])
    others = np.delete(scores, [i for i in (window - 1, window, window + 1) if 0 <= i < len(scores)])
    return own <= 0 or int((others >= own).sum()) >= rivals


def duplicate_of(question: str, span: tuple[int, int], kept: Sequence[tuple[str, tuple[int, int]]]) -> bool:
    """Whether an earlier kept question reads the same (normalised, punctuation aside) or quotes the same span."""
    key = _key(question)
    return any(key == _key(q) or span == s for q, s in kept)


def _key(question: str) -> str:
    return "".join(ch for ch in normalise(question) if ch.isalnum())
