"""Which sources an answer cites: `[n]` markers found, checked against the sources, or added.

An answer is only as trustworthy as its markers: a marker that points at no source is flagged, a
marker whose source does not support its sentence is flagged, a sentence no source supports is
flagged, and for the embedded base model (which cannot follow the citation instruction) each sentence
is matched to the source its words came from: shown as "matched", never as cited. A sentence any model left
without a marker is shown beside the source that holds its claim the same way.

A cited source supports its sentence when it shares most of its words (rag.generate.support, the first
filter) and holds its claim: the same names, numbers, negation and relation within one sentence of it
(rag.generate.claims). On the labelled set of `python -m rag bench --only badges` (263 one-sentence
answers with their cited passage, Chinese and English) the words alone badged 117 of 139 wrong answers
green (green precision 51%); with the claim check none (100%), while 110 of 124 right answers stay green.
On the 30 answers written last, after the rules were frozen, the first run kept 7 of 14 right answers
green and let 2 of 16 wrong ones through (8 and 0 after the fixes it prompted).
An optional judge (a chat model asked yes or no, rag.generate.judge) can take a green badge away,
never give one: off by default.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag.generate.asked import about_another_subject, misses_question
from rag.generate.claims import holding_sources, other_currency
from rag.generate.fragments import as_claims, figure_missing, other_measure
from rag.generate.prompt import Source
from rag.generate.sentences import MARKER, sentence_spans
from rag.generate.support import FLAG_TERMS, SUPPORTED, best_support, content_terms, support
from rag.llms.choice import cites_by_itself  # the model-name rule lives with the models
from rag.scripts import HAN_CHAR, language_of


@dataclass(frozen=True)
class CitationCheck:
    cited: tuple[int, ...]
    """Source numbers the answer cites that exist, in order of first use."""
    unknown: tuple[int, ...]
    """Markers that point at no source."""

    @property
    def uncited(self) -> bool:
        return not self.cited and not self.unknown


def _numbers(match: re.Match[str]) -> tuple[int, ...]:
    return tuple(int(part.strip()) for part in re.split(r"[,，、]", match.group(1)))


def citation_numbers(answer: str) -> list[int]:
    return [n for match in MARKER.finditer(answer) for n in _numbers(match)]


def check_citations(answer: str, sources: Sequence[Source]) -> CitationCheck:
    valid = {s.n for s in sources}
    numbers = list(dict.fromkeys(citation_numbers(answer)))
    return CitationCheck(tuple(n for n in numbers if n in valid), tuple(n for n in numbers if n not in valid))


def marker_spans(answer: str) -> list[tuple[int, int, tuple[int, ...]]]:
    """(start, end, numbers) of each citation marker, for rendering them as badges."""
    return [(match.start(), match.end(), _numbers(match)) for match in MARKER.finditer(answer)]


class Status:
    """What a sentence of an answer is, as the badges show it."""

    CITED = "cited"
    """The model cited a source and that source supports the sentence."""
    NOT_SUPPORTED = "not supported"
    """The model cited a source (or one that does not exist) that does not support the sentence."""
    MATCHED = "matched"
    """The marker was added afterwards by matching the sentence to a source: never counted as cited."""
    UNSUPPORTED = "unsupported"
    """No marker and no source supports it: possibly invented."""
    UNCITED = "uncited"
    """No marker, but a source supports it."""
    UNHELD = "unheld"
    """No marker; its words are in a source (`source`), which does not state its claim: flagged beside that source
    (orange "≈ n ?"), not as said by none. A walk: "Jim Higgins's house is special because it is built around a
    real railway carriage." (its source names him in the sentence before) had "⚠ no source", untrue of its words;
    "The railway carriage was built by a local woman" (the source: lived in by her) had no badge at all."""
    SHORT = "short"
    """Too few content words to judge ("Yes.", a heading)."""
    OTHER_LANGUAGE = "other language"
    """Written in another language than every source it cites (or, citing none, than every source): its words
    cannot be compared with theirs, so it is neither cited nor flagged. A Chinese answer "保修三年[3]" drawn
    from "a three-year warranty" was called not supported by the sources."""


@dataclass(frozen=True)
class SentenceCheck:
    start: int
    end: int
    numbers: tuple[int, ...]
    """The markers in the sentence, as written (including numbers that point at no source)."""
    support: float | None
    """Share of its content terms in the cited sources (in the best source when it cites none)."""
    source: int | None
    """The source that supports it best (the cited ones when it cites some)."""
    status: str
    backing: tuple[int, ...] = ()
    """The cited numbers whose source supports the sentence (the others are padding); of a sentence that cites
    nothing, or cites only sources that do not hold it, the source that holds its claim (shown as matched)."""
    figures_elsewhere: tuple[int, ...] = ()
    """Of a flagged sentence, the sources in another language that hold every figure it writes: its words could
    not be compared with theirs, so it is not known to be in no source (`Grounding.nothing_held`)."""

    @property
    def flagged(self) -> bool:
        return self.status in (Status.NOT_SUPPORTED, Status.UNSUPPORTED, Status.UNHELD)

    def kind(self, n: int) -> str:
        """What the badge of cited number `n` says: a `Status`, "padding" (this source does not
        support the sentence, another one it cites does) or "unchecked" (too short to judge); "other language" where
        its words could not be compared with the source's."""
        if self.status == Status.SHORT:
            return "unchecked"
        if self.status == Status.OTHER_LANGUAGE:
            return Status.OTHER_LANGUAGE
        if self.status in (Status.CITED, Status.MATCHED) and n not in self.backing:
            return "padding"
        return self.status


@dataclass(frozen=True)
class Grounding:
    """An answer checked sentence by sentence against its sources: what the badges say."""

    sentences: tuple[SentenceCheck, ...]
    cited: tuple[int, ...]
    """Sources the model cited for a sentence they support, in order of first use."""
    unknown: tuple[int, ...]
    """Markers that point at no source."""
    attributed: bool
    """The markers were added by matching, not written by the model."""
    figure_missing: bool = False
    """The question asked for a figure (how many, how deep, 多少) and the answer writes none: what it says may be
    held, but it does not answer (`rag.generate.fragments.figure_missing`)."""
    other_measure: bool = False
    """The one-sentence answer measures in units of another kind than the question asks ("12米高" for "有多重？",
    `rag.generate.fragments.other_measure`): flagged, though its words may be the source's."""
    off_question: bool = False
    """What the answer says its sources hold, but it leaves out what the question asks about (a passage's other
    sentence: "赛里木湖古称“净海”…" for "这个名字是哪种语言的音译？"), or it is drawn from sources about another subject
    than the one a follow-up points back to (a temple's dates for "它是哪一年建成的？" asked of a villa;
    `rag.generate.asked`)."""
    other_subject: bool = False
    """Why it is `off_question`: its sources are about another subject than the one the follow-up points back to
    (the answer may say what was asked, of another thing)."""

    @property
    def flagged(self) -> tuple[SentenceCheck, ...]:
        return tuple(s for s in self.sentences if s.flagged)

    @property
    def judged_sentences(self) -> tuple[SentenceCheck, ...]:
        """The sentences compared with their sources (not too short, not in another language)."""
        return tuple(s for s in self.sentences if s.status not in (Status.SHORT, Status.OTHER_LANGUAGE))

    @property
    def judged(self) -> int:
        return len(self.judged_sentences)

    @property
    def nothing_held(self) -> bool:
        """No sentence judged is held by any source (each flagged, none held by another than the one it cites): the
        answer is not in what was found. A Chromium walk: "Who designed the Sydney Opera House?", which no document
        answers, was answered "… designed by Sir Charles Barry [1 ?]", its one orange badge all that said so."""
        judged = self.judged_sentences
        # Not a guess where what it says is the source's but measures another thing (a walk: "12米高" for a weight
        # was called "not in the sources").
        return (
            bool(judged)
            and not self.other_measure
            and all(s.flagged and not s.backing and not s.figures_elsewhere for s in judged)
        )

    @property
    def other_language(self) -> tuple[SentenceCheck, ...]:
        """Sentences not checked: their sources are in another language (`Status.OTHER_LANGUAGE`)."""
        return tuple(s for s in self.sentences if s.status == Status.OTHER_LANGUAGE)

    @property
    def not_supported(self) -> tuple[SentenceCheck, ...]:
        """Flagged sentences whose cited source does not say them and no other source is known to (not `miscited`)."""
        return tuple(s for s in self.sentences if s.status == Status.NOT_SUPPORTED and not s.backing)

    @property
    def found_in_none(self) -> tuple[SentenceCheck, ...]:
        """Flagged sentences that cite nothing and whose words no source holds (their ⚠ no source)."""
        return tuple(s for s in self.sentences if s.status == Status.UNSUPPORTED)

    @property
    def unheld(self) -> tuple[SentenceCheck, ...]:
        """Flagged sentences that cite nothing, whose words a source holds but not their claim (their ≈ n ?)."""
        return tuple(s for s in self.sentences if s.status == Status.UNHELD)

    @property
    def miscited(self) -> tuple[SentenceCheck, ...]:
        """Flagged sentences that another source than the one they cite holds (shown beside it as matched): the
        embedded model wrote "18,500元[2]" where [1] says it and [2] is another company's."""
        return tuple(s for s in self.sentences if s.status == Status.NOT_SUPPORTED and s.backing)

    @property
    def padding(self) -> tuple[int, ...]:
        """Numbers cited beside a supporting source for a sentence they do not support."""
        return tuple(
            dict.fromkeys(
                n
                for s in self.sentences
                if s.status == Status.CITED
                for n in s.numbers
                if n not in s.backing and n not in self.unknown
            )
        )

    @property
    def grounded(self) -> bool:
        """The green badge: the model cited sources that support what it said, and nothing is
        flagged: no unsupported sentence, no padding citation, no marker pointing at nothing."""
        return (
            bool(self.cited)
            and not self.flagged
            and not self.unknown
            and not self.attributed
            and not self.padding
            and not self.figure_missing
            and not self.off_question
        )

    def as_dict(self, answer: str) -> list[dict[str, object]]:
        return [
            {
                "text": answer[s.start : s.end].strip(),
                "citations": list(s.numbers),
                "status": s.status,
                "support": None if s.support is None else round(s.support, 3),
                "supported_by": s.source,
            }
            for s in self.sentences
            if answer[s.start : s.end].strip()
        ]


def annotate(answer: str, grounding: Grounding, badge: Callable[[int, str], str], flag: str) -> str:
    """The answer with each marker number replaced by `badge(n, kind)` (kind: `SentenceCheck.kind`,
    or "unknown" for a number that points at no source), `flag` after each sentence that cites nothing and
    that no source supports, `badge(n, Status.UNHELD)` after one that cites nothing whose words source n holds but
    not its claim, and `badge(n, Status.MATCHED)` after one that cites nothing, or only sources that do not hold
    it, where source n holds its claim."""
    spans = marker_spans(answer)
    parts: list[str] = []
    for sentence in grounding.sentences:
        pos = sentence.start
        for start, end, numbers in spans:
            if not sentence.start <= start < sentence.end:
                continue
            parts.append(answer[pos:start])
            parts.append(" ".join(badge(n, "unknown" if n in grounding.unknown else sentence.kind(n)) for n in numbers))
            pos = end
        tail = answer[max(pos, sentence.start) : sentence.end]
        after = ""  # the badges after a sentence that cites nothing, or only sources that do not hold it
        if sentence.status == Status.UNHELD and sentence.source is not None:
            after = badge(sentence.source, Status.UNHELD)
        elif sentence.status in (Status.UNCITED, Status.NOT_SUPPORTED) and sentence.backing:
            after = " ".join(badge(n, Status.MATCHED) for n in sentence.backing)
        if sentence.status == Status.UNSUPPORTED:
            body = tail.rstrip()
            tail = f"{body} {flag}{tail[len(body) :]}"
        elif after:
            core = tail.rstrip().rstrip(_SENTENCE_END)  # where a marker would stand, as attribute_citations adds it
            tail = f"{core} {after}{tail[len(core) :]}"
        parts.append(tail)
    covered = grounding.sentences[-1].end if grounding.sentences else 0
    return "".join(parts) + answer[covered:]


_SENTENCE_END = ".!?。！？\"'”’」』）)"
"""What ends a sentence after its last word: a marker goes before it ("… header [1].")."""


def source_terms(sources: Sequence[Source]) -> dict[int, set[str]]:
    """Each source's content terms, by its number (what sentences are checked against)."""
    return {s.n: content_terms(s.hit.content) for s in sources}


Judge = Callable[[str, str], "bool | None"]
"""(sentence, passage) -> whether the passage supports the sentence; None when it cannot tell."""


def check_grounding(
    answer: str,
    sources: Sequence[Source],
    *,
    attributed: bool = False,
    threshold: float = SUPPORTED,
    claims: bool = True,
    judge: Judge | None = None,
    question: str = "",
    searched: str = "",
) -> Grounding:
    """Each sentence of `answer` with its markers and how well the sources it cites support it.

    Each cited number is judged on its own: "[1][2]" where only [1] holds the words has [2] marked
    as not supporting it (a padding citation), and the sentence is cited only by [1]. A sentence
    that cites nothing is flagged only when it says something (`FLAG_TERMS` content terms or more:
    "It was written in Rust." is, "I hope this helps!" is not).

    A cited source whose words pass must also hold the sentence's claim (rag.generate.claims);
    `claims=False` keeps the words alone (the check before issue 27, for the benchmark's before and
    after). `judge` (rag.generate.judge.model_judge: a chat model asked yes or no) is asked about each
    source left backing a sentence and drops the ones it says no to: it can take a badge away, never
    give one, and costs a model call per cited sentence, so it is off unless given.

    A one-sentence answer is read with `question` (as the user asked it: a wrong rewrite must not flag a right
    answer) when one is given: a bare answer ("华西协合大学 [1]") as the claim it makes of it, which its sources
    must hold too, and one in units of another kind than asked ("12米高" for "有多重？") is not supported
    (rag.generate.fragments). An answer whose words leave out what the question asks about, however held, is not
    green (`Grounding.off_question`, rag.generate.asked), nor is one drawn from sources about another subject than
    the one `searched` (a follow-up's accepted rewrite, or the question after the one before it) points back to."""
    terms = source_terms(sources)
    texts = {s.n: s.hit.content for s in sources}
    markers = marker_spans(answer)
    checks: list[SentenceCheck] = []
    cited: list[int] = []
    for start, end in sentence_spans(answer):
        said = content_terms(answer[start:end])
        numbers = tuple(n for a, _b, ns in markers if start <= a < end for n in ns)
        valid = [n for n in dict.fromkeys(numbers) if n in terms]
        if numbers:
            shares = {n: support(said, terms[n], numbers=len(valid) == 1) for n in valid}
            union = support(said, set().union(*(terms[n] for n in valid)))
            # A source that holds its part of a sentence drawn from two ("[2][3]") supports it too.
            backing = tuple(
                n
                for n, share in shares.items()
                if share is not None
                and (share >= threshold or (union is not None and union >= threshold and share >= threshold / 2))
            )
            sentence = answer[start:end]
            if claims and backing:
                backing = holding_sources(sentence, {n: texts[n] for n in backing}, question, restated=True)
            if judge is not None and backing:
                backing = tuple(n for n in backing if judge(sentence, texts[n]) is not False)
            source = max(valid, key=lambda n: shares[n] or 0.0) if valid else None
            share = union
        else:
            source, share = best_support(said, terms.items())
            # The source that holds an uncited sentence's claim is shown beside it as matched, never as cited
            # (a right sentence copied from [1] without its marker had no badge at all: a walk of the chat).
            backing = ()
            if source is not None and share is not None and share >= threshold and len(said) >= FLAG_TERMS:
                if claims:  # any source whose words pass may hold its claim, not only the one with the most
                    passing = {n: texts[n] for n, t in terms.items() if (support(said, t) or 0.0) >= threshold}
                    backing = holding_sources(answer[start:end], passing, question, restated=True)
                else:
                    backing = (source,)
        if share is None:
            status = Status.SHORT
        elif numbers:
            status = (Status.MATCHED if attributed else Status.CITED) if backing else Status.NOT_SUPPORTED
        elif share >= threshold and (backing or not claims or len(said) < FLAG_TERMS):
            status = Status.UNCITED
        elif share >= threshold:
            status = Status.UNHELD  # its words are in the sources, its claim in none
        else:
            status = Status.UNSUPPORTED if len(said) >= FLAG_TERMS else Status.SHORT
        if status == Status.NOT_SUPPORTED and claims:
            # Cited by the wrong number: the source that holds it is shown beside the orange one (the sentence
            # stays flagged: what it cites does not say it).
            backing = _held_elsewhere(answer[start:end], said, terms, texts, set(numbers), threshold, judge)
        elsewhere: tuple[int, ...] = ()
        if status in (Status.NOT_SUPPORTED, Status.UNSUPPORTED) and not backing:
            compared = valid or list(texts)  # what it cites, or where nothing it cites exists, every source
            if _other_language(answer[start:end], [texts[n] for n in compared]):
                status = Status.OTHER_LANGUAGE
            elif _FIGURE.search(MARKER.sub(" ", answer[start:end])):
                # A walk: "The depth of Sayram Lake is 106 meters. [3]" cited an English source that does not hold it,
                # and [1], Chinese, holds 最深处达106米: "not in the sources" was not true.
                elsewhere = tuple(n for n in texts if _other_language(answer[start:end], [texts[n]]))
        if status == Status.CITED:
            cited += backing
        checks.append(SentenceCheck(start, end, numbers, share, source, status, backing, elsewhere))
    missing = measure = off = other = False
    if claims and question:
        checks, cited, measure = _read_with_question(answer, question, checks, cited, texts)
        missing = bool(answer.strip()) and figure_missing(question, answer)
        # Read against the sources that hold what it says (cited or matched): their sentences tell the question's
        # topic from what it asks about. A bare answer names none of it: read as its claim, above.
        holding = [texts[n] for n in dict.fromkeys(n for c in checks for n in c.backing)]
        if holding:
            unanswered = not missing and not as_claims(question, answer) and misses_question(question, answer, holding)
            other = about_another_subject(question, searched, holding)
            off = unanswered or other
    unknown = tuple(dict.fromkeys(n for n in citation_numbers(answer) if n not in terms))
    return Grounding(tuple(checks), tuple(dict.fromkeys(cited)), unknown, attributed, missing, measure, off, other)


def _read_with_question(
    answer: str, question: str, checks: list[SentenceCheck], cited: list[int], texts: dict[int, str]
) -> tuple[list[SentenceCheck], list[int], bool]:
    """A one-sentence answer, cited or matched, stays so only where it measures what `question` asks (not a height
    for a weight) and, a bare answer, where a source it names holds the claim it makes of `question`
    (rag.generate.fragments); else it is flagged as not supported. Also whether a one-sentence answer measures
    another thing than asked (`Grounding.other_measure`)."""
    said = [c for c in checks if answer[c.start : c.end].strip()]
    if len(said) != 1:
        return checks, cited, False
    check = said[0]
    sentence = answer[check.start : check.end]
    measure = other_measure(question, sentence)
    if check.status not in (Status.CITED, Status.MATCHED) or not check.backing:
        return checks, cited, measure
    claims = as_claims(question, sentence)
    if measure:
        backing: tuple[int, ...] = ()
    elif claims:
        held = {n for claim in claims for n in holding_sources(claim, {n: texts[n] for n in check.backing}, question)}
        backing = tuple(n for n in check.backing if n in held)
    else:
        return checks, cited, measure
    if backing == check.backing:
        return checks, cited, measure
    if backing:
        kept = dataclasses.replace(check, backing=backing)
    else:
        kept = dataclasses.replace(check, status=Status.NOT_SUPPORTED, backing=())
    dropped = set(check.backing) - set(backing)
    return [kept if c is check else c for c in checks], [n for n in cited if n not in dropped], measure


_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")
_FIGURE = re.compile(r"\d+(?:[.,]\d+)*")


def _other_language(sentence: str, passages: Sequence[str]) -> bool:
    """Whether `sentence` is written in another language than all of `passages` and holds no figure they do not
    (digits compare across languages: "110公斤" with "110 kg", not "25,000" with "21,000"): its words could not be
    compared, so it is not known to be unsupported."""
    language = _written_in(sentence)
    if language is None or not passages or any(language_of(passage) == language for passage in passages):
        return False
    if any(other_currency(sentence, passage) for passage in passages):
        return False  # "21,000.00元" for "$21,000.00": not an amount it holds, in any language
    held = {f.replace(",", "") for passage in passages for f in _FIGURE.findall(MARKER.sub(" ", passage))}
    return all(f.replace(",", "") in held for f in _FIGURE.findall(MARKER.sub(" ", sentence)))


def _written_in(sentence: str) -> str | None:
    """The language a sentence is written in, where its words tell: "zh" (two Han characters or more, carrying it),
    "en" (two Latin words or more and no Han), None for figures and the like ("18,500元", "$21,000.00"), which
    any source's language may hold."""
    language = language_of(sentence)
    if language == "zh":
        return language
    return "en" if not HAN_CHAR.search(sentence) and len(_LATIN_WORD.findall(sentence)) >= 2 else None


def _held_elsewhere(
    sentence: str,
    said: set[str],
    terms: dict[int, set[str]],
    texts: dict[int, str],
    cited: set[int],
    threshold: float,
    judge: Judge | None,
) -> tuple[int, ...]:
    """The source the sentence does not cite that best holds its words, where it also holds its claim."""
    source, share = best_support(said, ((n, t) for n, t in terms.items() if n not in cited))
    if source is None or share is None or share < threshold:
        return ()
    held = holding_sources(sentence, {source: texts[source]})
    return tuple(n for n in held if judge is None or judge(sentence, texts[n]) is not False)


def cited_page(claims: Sequence[str], parts: Sequence[tuple[int, str]]) -> int | None:
    """Of the pages a cited chunk spans (`parts`: each page's number and its part of the chunk), the one that
    shares the most content words with the sentences citing it (`claims`): the page a reader should see first.
    The first page on a tie or without claims; None without parts. A chunk across pp. 1–2 whose cited fact
    is on page 2 opened on page 1 before, where the fact is not."""
    wanted = set().union(*(content_terms(claim) for claim in claims)) if claims else set()
    best, shared = None, -1
    for number, text in parts:
        score = len(wanted & content_terms(text)) if wanted else 0
        if score > shared:
            best, shared = number, score
    return best


def attribute_citations(answer: str, sources: Sequence[Source], *, threshold: float = SUPPORTED) -> str:
    """Add `[n]` to each sentence whose words mostly come from one source.

    For models that cannot follow the citation instruction (the embedded base model): the
    marker then names the source the sentence was taken from, so it can still be checked (the
    badges show such markers as "matched", never as cited).
    """
    if not sources:
        return answer
    terms = source_terms(sources)
    parts: list[str] = []
    for start, end in sentence_spans(answer):
        sentence = answer[start:end]
        n, share = best_support(content_terms(sentence), terms.items())
        if n is None or share is None or share < threshold or MARKER.search(sentence):
            parts.append(sentence)
            continue
        body = sentence.rstrip()
        core = body.rstrip(_SENTENCE_END)
        parts.append(f"{core} [{n}]{body[len(core) :]}{sentence[len(body) :]}")
    return "".join(parts)


def attribute_if_uncited(answer: str, sources: Sequence[Source], model_name: str) -> str:
    """`answer`, with markers added by `attribute_citations` when its model cannot cite and it cites nothing."""
    if cites_by_itself(model_name) or not answer or not check_citations(answer, sources).uncited:
        return answer
    return attribute_citations(answer, sources)
