"""Whether an answer says what its question asks about, not only things its sources hold.

A sentence copied from a cited passage is held by it, so the claim check (rag.generate.claims) badges it green
whatever it was asked: the conversation bench's last green-but-wrong answers were such sentences, "赛里木湖古称
“净海”，位于…[1]" for "这个名字是哪种语言的音译？", the villa's description for "美庐别墅是怎么得名的？". What a
question asks about is in its own words, and the words that pick the right sentence out of a passage are the
ones few of its sentences hold (音译, 得名), not its topic (赛里木湖, 美庐), which most of them name. So the
question's terms that the passages the answer draws on hold are weighted by how few of their sentences hold each,
and the answer says what was asked when it (or the passage clauses it says again) holds at least `ASKED_SHARE`
of that weight.

A follow-up's answer is read against what was searched too (`about_another_subject`): a question that only points
back ("它是哪一年建成的？") answered from sources that never name what it points back to (a temple's dates, asked of
a villa) says something its sources hold, about something else.

Measured on public data nobody here wrote (`python -m rag bench --only badges`, "sentences on zh_cmrc_trial"):
each question's gold sentence of its passage as a right answer, another sentence of the same passage holding
another question's answer as a wrong one (held, cited, and not what was asked).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.generate.fragments import EN_QUESTION_WORD, ZH_QUESTION_WORD
from rag.generate.sentences import MARKER, sentence_spans
from rag.generate.support import HAN_FUNCTION, content_terms
from rag.scripts import HAN

ASKED_SHARE = 0.2
"""The share of the question's weighted terms an answer must say. On zh_cmrc_trial's sentences (above; 903 right, 903
wrong), right / wrong green without the check 874 / 809; with it at 0.1 844 / 338, 0.15 832 / 263, 0.2 822 / 203,
0.3 797 / 138, 0.4 773 / 109. On the conversation bench's 124 answers (Qwen 1.5B, session 38) at 0.2: all 60 right
green ones kept, 2 of the 4 wrong green ones taken (音译, 得名)."""
RARITY = 2
"""A term's weight is one over the number of the sources' sentences holding it, to this power: at 1 the topic (its
characters in most sentences) passed for what was asked too often (right / wrong green 848 / 404 at 0.2, 832 / 269
at 0.3)."""

_HAN_RUN = re.compile(f"[{HAN}]+")
_ASKING = re.compile(r"怎么|怎样|如何|为什么|为何|是否")
"""Asking words `ZH_QUESTION_WORD` leaves (it lists those a bare answer takes the place of)."""
_ASKING_CHARS = frozenset("有什么哪谁几多少")
_CLAUSE = re.compile(r"[，,；;：:、]")


def _terms(text: str) -> set[str]:
    """The Han characters of `text` that say something (not function characters: 的, 是) and its other content
    terms (English stems, numbers). Characters, not bigrams: a paraphrase shares them ("身体是什么颜色" and "体呈银
    灰色"), and a name's characters, found in the same sentences, weigh as one term (`asked_share`)."""
    han = {c for run in _HAN_RUN.findall(text) for c in run} - HAN_FUNCTION - _ASKING_CHARS
    return han | content_terms(_HAN_RUN.sub(" ", text))


def _sentences(texts: Sequence[str]) -> list[str]:
    return [text[start:end] for text in texts for start, end in sentence_spans(text)]


def _clauses(sentences: Sequence[str]) -> list[str]:
    return [part for sentence in sentences for part in _CLAUSE.split(sentence) if part.strip()]


def _said(answer: str, clauses: Sequence[set[str]]) -> set[str]:
    """The answer's terms, and those of the source clause each of its clauses comes from (the one sharing most of
    its terms, if at least half): "The Stockholm Subway was opened in 1950" says what "The first subway line for
    Stockholm was opened in 1950" says, asked when the first line opened. Clauses, not sentences: "平均水深46.4米"
    does not say the "最深处达106米" of its source's sentence."""
    said = _terms(answer)
    for clause in _clauses(_sentences([answer])):
        terms = _terms(clause)
        if terms and clauses:
            best = max(clauses, key=lambda c: len(terms & c))
            if 2 * len(terms & best) >= len(terms):
                said |= best
    return said


def asked_share(question: str, answer: str, sources: Sequence[str]) -> float | None:
    """The share of what `question` asks about that `answer` says (`_said`); None where the sources hold none of
    the question's terms (nothing to judge by). Only terms the sources hold count (a paraphrase of the question's
    that none uses cannot be missed); terms found in the same sentences (a name's characters) count as one, weighted
    by one over the number of those sentences to the power `RARITY`."""
    pieces = _sentences(sources)
    sentences = [_terms(piece) for piece in pieces]
    asked = _asking_removed(question)
    wanted = _terms(asked) & set().union(*sentences)
    if not wanted:
        return None
    groups: dict[frozenset[int], list[str]] = {}
    for term in wanted:
        groups.setdefault(frozenset(i for i, s in enumerate(sentences) if term in s), []).append(term)
    said = _said(MARKER.sub(" ", answer), [_terms(clause) for clause in _clauses(pieces)])
    total = got = 0.0
    for where, terms in groups.items():
        weight = 1 / len(where) ** RARITY
        total += weight
        got += weight * sum(term in said for term in terms) / len(terms)
    return got / total


def _asking_removed(text: str) -> str:
    return _ASKING.sub(" ", EN_QUESTION_WORD.sub(" ", ZH_QUESTION_WORD.sub(" ", text)))


NAMED_HAN = 3
"""Han characters in a row, none a function character, a question shares with a source that name its subject there
("西施殿" in "那西施殿呢？它是哪一年建成的？"); "建成的" of "它是哪一年建成的？" holds 的 and names nothing."""
_EN_NAME = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")


def _names_own_subject(question: str, held: str) -> bool:
    """Whether `question` names, in words of its own that `held` (the sources' text) has, what it asks about: a
    run of `NAMED_HAN` Han characters, or a capitalised name past its first word."""
    text = _asking_removed(question)
    for run in _HAN_RUN.findall(text):
        windows = (run[i : i + NAMED_HAN] for i in range(len(run) - NAMED_HAN + 1))
        if any(window in held and not set(window) & HAN_FUNCTION for window in windows):
            return True
    names = [m.group() for m in _EN_NAME.finditer(text) if m.start() > 0]
    return any(name in held for name in names)


def about_another_subject(question: str, searched: str, sources: Sequence[str]) -> bool:
    """Whether the sources an answer draws on are about another subject than the one a follow-up points back to:
    `searched` (its accepted rewrite, or the question after the one before it, the user's words either way) names
    it in words the question has not ("美庐别墅" of "美庐别墅是怎么得名的？ 它是哪一年建成的？"), and the sources
    hold none of them, nor does the question name a subject of its own that they hold. A Chromium walk: "它是哪一年
    建成的？" after a question on the villa was answered "1986年奠基动工，1990年10月落成 [4]", a temple's dates,
    cited, green."""
    if not searched.strip() or searched.strip() == question.strip() or not sources:
        return False
    pointed = content_terms(_asking_removed(searched)) - content_terms(_asking_removed(question))
    if not pointed:
        return False
    held = "\n".join(sources)
    if pointed & set().union(*(content_terms(text) for text in sources)) and not _names_none(searched, question, held):
        return False
    return not _names_own_subject(question, held)


def _names_none(searched: str, question: str, held: str) -> bool:
    """Whether `searched` names things by capitalised words the question does not say and `held` (the sources'
    text) has none of those words: the conversation bench's "why?", searched as "Why do people jump over the fire
    on Red Wednesday in Iran?", was answered from a passage on nature that shares "people" with it, and none of
    Red, Wednesday, Iran."""
    said = set(re.findall(r"[A-Za-z]+", question))
    words = {w for m in _EN_NAME.finditer(searched) if m.start() > 0 for w in m.group().split()} - said
    return bool(words) and not any(re.search(rf"\b{re.escape(w)}\b", held) for w in words)


def misses_question(question: str, answer: str, sources: Sequence[str]) -> bool:
    """Whether `answer` leaves out what `question` asks about (`asked_share` below `ASKED_SHARE`)."""
    share = asked_share(question, answer, sources)
    return share is not None and share < ASKED_SHARE
