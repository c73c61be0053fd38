"""Does a source support a sentence? The share of the sentence's content terms found in the source.

Terms are words as keyword search sees them (rag.query.keywords), made fit for comparing: English
words (stop words dropped, cut to a five-letter stem so "covers" meets "cover") and numbers, and
overlapping bigrams of CJK characters (those with a Chinese function character dropped). The share
is scaled by the share of the sentence's numbers the source holds. A sentence copied or paraphrased
closely from its source shares most of its terms with it; an invented one ("faster by a factor of
10", "run on Firefox, Chrome, Safari") does not.

`SUPPORTED` is the threshold, measured with `python -m rag bench --only answers`: the sentences of
right answers that cite their gold passage score against that passage (supported) and against the
other passages of the same prompt (not supporting it); 0.5 separated them best (see the README).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rag.generate.sentences import MARKER
from rag.scripts import CJK

SUPPORTED = 0.5
"""A sentence whose terms are at least this share in the source is supported by it."""
FLAG_TERMS = 2
"""A sentence that cites nothing is flagged as unsupported only with this many content terms or more
(a claim, not "I hope this helps.")."""
MIN_TERMS = 1
"""Sentences with fewer content terms ("Yes.", "Here it is:") are not judged; one is enough ("英莲 [1]"
is supported when the source names 英莲, "42 [1]" when it holds 42)."""

_WORDS = re.compile(f"[A-Za-z]+(?:'[a-z]+)?|\\d+(?:[.,]\\d+)*%?|[{CJK}]+")
_CJK_RUN = re.compile(f"[{CJK}]+")
STOP_WORDS = frozenset(
    """
a about above after again against all also am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how if in into is it its itself just me more most my
myself no nor not now of off on once only or other our ours ourselves out over own same she should so
some such than that the their theirs them themselves then there these they this those through to too
under until up very was we were what when where which while who whom why will with would you your
yours yourself yourselves according source sources answer question text passage based mentioned says
said states stated following one two however therefore thus
hope help helps helpful glad happy feel free let know please thank thanks sure certainly course ask
anything else further
""".split()
)
"""Function words, and the pleasantries a chat model adds ("I hope this helps!"), which claim nothing."""
# Chinese function characters that carry no content on their own; a bigram holding one is dropped
# ("隐的", "的女" would match any text about anyone's daughter).
HAN_FUNCTION = frozenset("的了是在和与及或也都就而且并但所以因为这那个之其于为以被把从对中上下")
HAN_POINTING = frozenset("它他她这那其该此")
"""Chinese characters that point back at something said before (它, 她, 该…)."""


_BRITISH = re.compile(r"^(?:(col|fav|hon|lab|hum|rum|vap|arm|od)our|(met|lit|fib)re(?=s?$)|(kilo)gram(?:me)?|gr(e)y)")
"""British spellings as American ones ("colour", "metres", "grey") and a kilogram as a kilo: one word either way,
which five-letter stems kept apart ("colou" and "color"): "Its favorite color was red. [1]" of a passage's "Its
favourite colour was red." was not supported (RACE's passages are British, the embedded Qwen writes American)."""
_AMERICAN = ("{}or", "{}er", "{}", "gray")
"""What each alternative of `_BRITISH` becomes, its group put in."""


def spelled(word: str) -> str:
    """A lower-case English word in one spelling of it (`_BRITISH`); one anchored match, which most words fail at
    their first letters."""
    found = _BRITISH.match(word)
    if found is None:
        return word
    k = found.lastindex or 1
    return _AMERICAN[k - 1].format(found.group(k)) + word[found.end() :]


_NAMED_BEFORE = re.compile(r"\b[A-Z][a-z]+ $")
"""A capitalised word and one space just before a position."""


def term_spans(text: str) -> list[tuple[str, int, int]]:
    """(term, start, end) of each content term of `text`, in order, as `content_terms` counts them (a
    term may repeat; a CJK bigram spans two characters). Markers are not stripped here: the claim check
    blanks them first, keeping the offsets."""
    spans: list[tuple[str, int, int]] = []
    for match in _WORDS.finditer(text):
        token, start = match.group(), match.start()
        if _CJK_RUN.fullmatch(token):
            if len(token) == 1:
                if token not in HAN_FUNCTION:
                    spans.append((token, start, start + 1))
                continue
            spans += [
                (token[i : i + 2], start + i, start + i + 2)
                for i in range(len(token) - 1)
                if token[i] not in HAN_FUNCTION and token[i + 1] not in HAN_FUNCTION
            ]
        elif token[0].isdigit():
            spans.append((token.rstrip("%"), start, match.end()))
        else:
            word = token.lower()
            # Two capitals are a name ("UK", "EU", "AI"): "schools in the UK" was held by a passage that says
            # "offered to schools" and, sentences away, "people in the UK" (a walk's wrong answer, badged green).
            if word not in STOP_WORDS and (len(word) > 2 or (len(token) == 2 and token.isupper())):
                spans.append((spelled(word)[:5], start, match.end()))
            elif len(token) == 1 and token.isupper() and token != "I" and _NAMED_BEFORE.search(text, 0, start):
                # A letter naming one of a kind ("Plan A", "Vitamin C"): "Plan A includes support" was held by
                # "Plan B costs $25 per month and includes support", the letters being no terms.
                spans.append((word, start, match.end()))
    return spans


def content_terms(text: str) -> set[str]:
    """The terms of `text` that say something: stems of English words, numbers, Chinese bigrams."""
    return {term for term, _start, _end in term_spans(MARKER.sub(" ", text))}


def support(terms: set[str], source_terms: set[str], *, numbers: bool = True) -> float | None:
    """Share of a sentence's content `terms` (`content_terms`) found in the source's; None when it
    has too few to judge.

    `numbers=False` leaves out the scaling by the numbers found: for one of several sources cited
    together, where the numbers may come from another."""
    if len(terms) < MIN_TERMS:
        return None
    share = len(terms & source_terms) / len(terms)
    figures = [t for t in terms if t[0].isdigit()] if numbers else []
    if figures:
        # A number is the most checkable claim: "a factor of 10 [1]" where the source says 2x-20x
        # scores low however many other words it shares.
        share *= sum(t in source_terms for t in figures) / len(figures)
    return share


def best_support(terms: set[str], sources: Iterable[tuple[int, set[str]]]) -> tuple[int | None, float | None]:
    """(number, share) of the source that supports a sentence of content `terms` most; (None, None)
    when it is not judged."""
    best_n: int | None = None
    best: float | None = None
    for n, source_terms in sources:
        share = support(terms, source_terms)
        if share is None:
            return None, None
        if best is None or share > best:
            best_n, best = n, share
    return best_n, best
