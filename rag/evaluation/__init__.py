"""Retrieval checks for chunk settings: which setting puts the right passage at the top?

The user gives a few questions, each with the passage of the document that answers it.
For every chunk setting the document's chunks are embedded (once per distinct text, via
`EmbeddingCache`) and ranked by cosine similarity against each question, in memory; the
rank of the chunk holding the expected passage gives hit@k and the mean reciprocal rank.
Nothing is written to the database.
"""
from __future__ import annotations

import csv
import hashlib
import io
import math
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

import numpy as np

from rag.chunking import Chunk, ChunkSet, ChunkSettings
from rag.embeddings import Embedder, ProgressCallback
from rag.errors import RagError

DEFAULT_KS: tuple[int, ...] = (1, 3, 5)
MAX_QUESTIONS = 500
_APPROXIMATE_MIN_SHARE = 0.5
"""A passage not found verbatim matches a chunk approximately if that chunk holds an
unbroken run of at least this share of the passage's words."""


# --- questions -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    text: str
    expected: str
    """A passage of the document that answers the question (copied from it)."""


def parse_questions_csv(data: bytes) -> list[Question]:
    """Questions from a CSV with the header `question,expected` (UTF-8, with or without BOM).

    Blank lines are skipped; a row with a missing question or passage, or with more than two
    columns, is an error naming its line.
    """
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RagError(
            f"questions CSV: not UTF-8 text (invalid byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "save it as UTF-8"
        ) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        while header is not None and not any(cell.strip() for cell in header):
            header = next(reader, None)
        if header is None:
            raise RagError("questions CSV: the file is empty; the first line must be 'question,expected'")
        names = [cell.strip().lower() for cell in header]
        while names and not names[-1]:
            names.pop()
        if names != ["question", "expected"]:
            raise RagError(
                f"questions CSV: line {reader.line_num}: the header must be 'question,expected', "
                f"got {','.join(header)!r}"
            )
        questions: list[Question] = []
        line = reader.line_num + 1
        for row in reader:
            first_line, line = line, reader.line_num + 1
            cells = [cell.strip() for cell in row]
            while cells and not cells[-1] and len(cells) > 2:
                cells.pop()
            if not any(cells):
                continue
            if len(cells) != 2:
                raise RagError(
                    f"questions CSV: line {first_line}: expected 2 columns (question,expected), got "
                    f"{len(cells)}; put a cell that contains commas in double quotes"
                )
            questions.append(_question(cells[0], cells[1], f"questions CSV: line {first_line}"))
    except csv.Error as exc:
        raise RagError(f"questions CSV: line {reader.line_num}: {exc}") from None
    if not questions:
        raise RagError("questions CSV: no questions below the header 'question,expected'")
    if len(questions) > MAX_QUESTIONS:
        raise RagError(f"questions CSV: {len(questions)} questions; at most {MAX_QUESTIONS} are checked at once")
    return questions


def questions_from_rows(rows: Iterable[tuple[object, object]]) -> list[Question]:
    """Questions from table rows (question, expected); blank rows are skipped.

    A row with only one of the two filled in is an error naming its row (1-based).
    """
    questions: list[Question] = []
    for number, (question, expected) in enumerate(rows, start=1):
        q, e = _cell(question), _cell(expected)
        if not q and not e:
            continue
        questions.append(_question(q, e, f"row {number}"))
    if len(questions) > MAX_QUESTIONS:
        raise RagError(f"{len(questions)} questions; at most {MAX_QUESTIONS} are checked at once")
    return questions


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and math.isnan(value):
        return ""
    text = str(value)
    return "" if text in ("nan", "<NA>", "None") and not isinstance(value, str) else text.strip()


def _question(question: str, expected: str, where: str) -> Question:
    if not question:
        raise RagError(f"{where}: the question is empty; type it or delete the row")
    if not expected:
        raise RagError(
            f"{where}: no expected passage for {question[:60]!r}; paste the sentence of the document "
            "that answers it"
        )
    return Question(question, expected)


# --- embedding cache -----------------------------------------------------------------------


@dataclass(frozen=True)
class CacheStats:
    entries: int
    hits: int
    misses: int
    evictions: int


class EmbeddingCache:
    """Vectors by (embedder name, sha256 of the text), least recently used evicted first.

    Thread-safe: one instance can serve every session of the app. Embedding happens outside
    the lock, so two sessions asking for the same new text at the same time may both embed it.
    """

    def __init__(self, max_entries: int = 50_000) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, got {max_entries}")
        self.max_entries = max_entries
        self._vectors: OrderedDict[tuple[str, bytes], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0
        self._evictions = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._vectors)

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(len(self._vectors), self._hits, self._misses, self._evictions)

    def clear(self) -> None:
        with self._lock:
            self._vectors.clear()

    def embed(
        self, embedder: Embedder, texts: Sequence[str], progress: ProgressCallback | None = None
    ) -> np.ndarray:
        """Vectors for `texts` (rows in order), embedding only texts not seen before.

        `progress(done, total)` counts the texts actually sent to the embedder; it is not
        called when every text was cached. A text repeated within `texts` is embedded once.
        """
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single string")
        name = embedder.name
        keys = [(name, hashlib.sha256(t.encode("utf-8", "surrogatepass")).digest()) for t in texts]
        found: dict[tuple[str, bytes], np.ndarray] = {}
        missing: dict[tuple[str, bytes], str] = {}
        with self._lock:
            for key, text in zip(keys, texts):
                if key in found or key in missing:
                    continue
                vector = self._vectors.get(key)
                if vector is None:
                    missing[key] = text
                else:
                    self._vectors.move_to_end(key)
                    found[key] = vector
            self._hits += len(found)
            self._misses += len(missing)
        if missing:
            fresh = np.asarray(embedder.embed(list(missing.values()), progress), dtype=np.float32)
            if fresh.ndim != 2 or fresh.shape[0] != len(missing):
                raise RagError(
                    f"the embedder {name} returned {fresh.shape[0] if fresh.ndim else 0} vectors for "
                    f"{len(missing)} texts"
                )
            fresh.flags.writeable = False
            with self._lock:
                for key, vector in zip(missing, fresh):
                    found[key] = vector
                    self._vectors[key] = vector
                    self._vectors.move_to_end(key)
                while len(self._vectors) > self.max_entries:
                    self._vectors.popitem(last=False)
                    self._evictions += 1
        if not keys:
            dimension = _dimension_of(embedder)
            return np.empty((0, dimension), dtype=np.float32)
        return np.stack([found[key] for key in keys])


def _dimension_of(embedder: Embedder) -> int:
    try:
        return int(embedder.dimension)
    except RagError:
        return 0


# --- where is the expected passage? -------------------------------------------------------


@dataclass(frozen=True)
class Targets:
    """The chunks that hold a question's expected passage.

    How they are found (text is compared after `normalise`: NFKC, case-folded, every run of
    whitespace one space, soft hyphens removed):

    1. The passage is looked up in the document text, and each occurrence mapped back to a
       character span. Every chunk whose span covers a whole occurrence is a target.
    2. If none does, the passage was cut by a chunk boundary: the chunk(s) covering the
       largest share of an occurrence are the targets, and `split` is True.
    3. Without the document, or when the passage is not in it verbatim, each chunk's own text
       is searched; failing that, the chunk(s) with the longest unbroken run of the passage's
       words (at least half of them) are targets, with `found` False (an approximate match).
    """

    indices: frozenset[int]
    """Chunk indices (`Chunk.index`)."""
    split: bool
    """No single chunk holds the whole passage."""
    coverage: float
    """Share of the passage inside the best target chunk (1.0 unless split)."""
    found: bool
    """The passage occurs verbatim (after normalisation) in the document or a chunk."""


_NO_TARGETS = Targets(frozenset(), False, 0.0, False)
_DROP = frozenset("\u00ad\u200b\u200c\u200d\u2060\ufeff")


class _Fold(dict):
    """str.translate table built on demand: whitespace -> space, case-folded NFKC, invisibles dropped."""

    def __missing__(self, codepoint: int) -> str:
        ch = chr(codepoint)
        if ch.isspace():
            out = " "
        elif ch in _DROP:
            out = ""
        elif codepoint < 128:
            out = ch.lower()
        else:
            out = unicodedata.normalize("NFKC", ch).casefold()
        self[codepoint] = out
        return out


_FOLD = _Fold()


def normalise(text: str) -> str:
    """Text as compared by the retrieval check: NFKC, case-folded, whitespace runs -> one space."""
    return " ".join(text.translate(_FOLD).split())


@dataclass(frozen=True)
class NormalisedText:
    """`normalise(source)` and, for each of its characters, the offset in `source` it came from."""

    text: str
    origin: np.ndarray
    source_length: int

    @classmethod
    def of(cls, source: str) -> NormalisedText:
        folded = source.translate(_FOLD)
        n = len(source)
        if len(folded) == n:
            origin = np.arange(n, dtype=np.int64)
        else:
            # Some characters expand (ligatures) or vanish (soft hyphens): repeat each offset
            # as many times as its character's folded form is long.
            codes = np.frombuffer(source.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
            present = np.flatnonzero(np.bincount(codes))
            table = np.zeros(int(present[-1]) + 1, dtype=np.int64)
            table[present] = [len(_FOLD[int(c)]) for c in present]
            origin = np.repeat(np.arange(n, dtype=np.int64), table[codes])
        folded_codes = np.frombuffer(folded.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        space = folded_codes == 32
        keep = ~space
        keep[1:] |= space[1:] & ~space[:-1]  # the first space of every run
        kept = np.flatnonzero(keep)
        if len(kept) and space[kept[0]]:
            kept = kept[1:]
        if len(kept) and space[kept[-1]]:
            kept = kept[:-1]
        text = folded_codes[kept].tobytes().decode("utf-32-le", "surrogatepass")
        return cls(text, origin[kept], n)

    def find_all(self, needle: str, limit: int = 200) -> list[tuple[int, int]]:
        """Spans in the source text of each occurrence of an already normalised `needle`."""
        spans: list[tuple[int, int]] = []
        if not needle:
            return spans
        at = self.text.find(needle)
        while at >= 0 and len(spans) < limit:
            start = int(self.origin[at])
            end = int(self.origin[at + len(needle) - 1]) + 1
            spans.append((start, min(end, self.source_length)))
            at = self.text.find(needle, at + 1)
        return spans


def excerpt(text: str, passage: str, context: int = 200) -> str:
    """The part of `text` around `passage` (matched as by the retrieval check), with `context`
    characters either side; the start of `text` when the passage is not in it whole."""
    spans = NormalisedText.of(text).find_all(normalise(passage), limit=1)
    start, end = spans[0] if spans else (0, 0)
    lo, hi = max(0, start - context), min(len(text), end + context) if spans else min(len(text), 2 * context)
    body = text[lo:hi]
    body = body.lstrip() if lo else body
    body = body.rstrip() if hi < len(text) else body
    return ("… " if lo else "") + body + (" …" if hi < len(text) else "")


def target_chunks(chunks: Sequence[Chunk], expected_text: str, document_text: str | None = None) -> set[int]:
    """Indices of the chunks that contain the expected passage (see `Targets` for the rules)."""
    return set(find_targets(chunks, expected_text, document_text).indices)


def find_targets(
    chunks: Sequence[Chunk],
    expected_text: str,
    document: str | NormalisedText | None = None,
    *,
    normalised_chunks: Sequence[str] | None = None,
) -> Targets:
    """Which chunks hold `expected_text`, and whether it was split (see `Targets`).

    `normalised_chunks` (`normalise` of each chunk's text) saves recomputing them when many
    passages are looked up in the same chunks.
    """
    needle = normalise(expected_text)
    if not needle or not chunks:
        return _NO_TARGETS
    if document is not None:
        doc = document if isinstance(document, NormalisedText) else NormalisedText.of(document)
        spans = doc.find_all(needle)
        if spans:
            return _targets_from_spans(chunks, spans)
    normalised = normalised_chunks if normalised_chunks is not None else [normalise(c.text) for c in chunks]
    holding = frozenset(c.index for c, text in zip(chunks, normalised) if needle in text)
    if holding:
        return Targets(holding, False, 1.0, True)
    return _approximate(chunks, normalised, needle)


def _targets_from_spans(chunks: Sequence[Chunk], spans: Sequence[tuple[int, int]]) -> Targets:
    starts = np.fromiter((c.start for c in chunks), dtype=np.int64, count=len(chunks))
    ends = np.fromiter((c.end for c in chunks), dtype=np.int64, count=len(chunks))
    indices = np.fromiter((c.index for c in chunks), dtype=np.int64, count=len(chunks))
    whole: set[int] = set()
    best_share = 0.0
    best: set[int] = set()
    for start, end in spans:
        length = max(end - start, 1)
        covers = (starts <= start) & (ends >= end)
        whole.update(int(i) for i in indices[covers])
        overlap = np.clip(np.minimum(ends, end) - np.maximum(starts, start), 0, None)
        share = overlap / length
        top = float(share.max()) if len(share) else 0.0
        if top <= 0:
            continue
        chosen = {int(i) for i in indices[np.isclose(share, top, rtol=0, atol=1e-12)]}
        if top > best_share + 1e-12:
            best_share, best = top, chosen
        elif abs(top - best_share) <= 1e-12:
            best |= chosen
    if whole:
        return Targets(frozenset(whole), False, 1.0, True)
    if best:
        return Targets(frozenset(best), True, best_share, True)
    # The passage lies only in text no chunk kept (dropped as too short, or past the end).
    return Targets(frozenset(), False, 0.0, True)


def _approximate(chunks: Sequence[Chunk], normalised: Sequence[str], needle: str) -> Targets:
    words = needle.split(" ")
    wanted = set(words)
    least = max(1, math.ceil(len(words) * _APPROXIMATE_MIN_SHARE))
    # Any run long enough to count holds at least this many distinct passage words: chunks
    # with fewer in common are skipped without running the matcher.
    needed = min(len(set(words[i:i + least])) for i in range(len(words) - least + 1))
    best_run = 0
    best: set[int] = set()
    for chunk, text in zip(chunks, normalised):
        chunk_words = text.split(" ")
        if len(wanted.intersection(chunk_words)) < needed:
            continue
        matcher = SequenceMatcher(None, chunk_words, words, autojunk=False)
        run = matcher.find_longest_match(0, len(chunk_words), 0, len(words)).size
        if run > best_run:
            best_run, best = run, {chunk.index}
        elif run == best_run and run:
            best.add(chunk.index)
    share = best_run / len(words)
    if best_run and share >= _APPROXIMATE_MIN_SHARE:
        return Targets(frozenset(best), share < 1.0, share, False)
    return _NO_TARGETS


# --- evaluation ---------------------------------------------------------------------------


@dataclass(frozen=True)
class QuestionResult:
    question: Question
    rank: int | None
    """1-based rank of the best-ranked target chunk; None if there is none (or beyond `top_n`)."""
    score: float | None
    """Cosine similarity of that chunk to the question."""
    targets: tuple[int, ...]
    split: bool
    coverage: float
    found: bool
    """The expected passage was found verbatim; False means no or only an approximate match."""
    top_index: int | None
    top_score: float | None


@dataclass(frozen=True)
class SettingResult:
    label: str
    settings: ChunkSettings
    n_chunks: int
    hits: tuple[tuple[int, float], ...]
    """(k, share of questions whose target ranks within the top k), for each k."""
    mrr: float
    questions: tuple[QuestionResult, ...]

    def hit_at(self, k: int) -> float:
        for kk, value in self.hits:
            if kk == k:
                return value
        raise KeyError(f"hit@{k} was not computed (computed: {', '.join(str(kk) for kk, _ in self.hits)})")


@dataclass(frozen=True)
class EvaluationReport:
    ks: tuple[int, ...]
    embedder: str
    results: tuple[SettingResult, ...]
    questions: tuple[Question, ...]
    embedded: int
    """Texts sent to the embedder by this evaluation (the rest came from the cache)."""
    reused: int
    """Texts whose vectors came from the cache."""

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(r.label for r in self.results)

    def result(self, label: str) -> SettingResult:
        for r in self.results:
            if r.label == label:
                return r
        raise KeyError(f"no setting labelled {label!r} (labels: {', '.join(self.labels)})")

    @property
    def not_found(self) -> tuple[int, ...]:
        """Positions of questions whose passage is not in the document verbatim (under any setting)."""
        if not self.results:
            return ()
        return tuple(
            i for i in range(len(self.questions)) if not any(r.questions[i].found for r in self.results)
        )


def evaluate(
    chunk_set_by_label: Mapping[str, ChunkSet],
    document_text: str | None,
    questions: Sequence[Question],
    embedder: Embedder,
    cache: EmbeddingCache,
    ks: Sequence[int] = DEFAULT_KS,
    *,
    progress: ProgressCallback | None = None,
    top_n: int | None = None,
) -> EvaluationReport:
    """Rank every setting's chunks for every question by cosine similarity, in memory.

    The rank of a question is that of its best-ranked target chunk (ties in score keep chunk
    order). hit@k is the share of questions ranked within k; MRR the mean of 1/rank, 0 when
    there is no target (or it ranks below `top_n`, when given). Chunks shared by several
    settings, and everything embedded before by `cache`, are embedded once.
    `progress(done, total)` counts the texts that had to be embedded.
    """
    if not chunk_set_by_label:
        raise RagError("no chunk settings to compare: add at least one")
    if not questions:
        raise RagError("no questions to check: type at least one question with its expected passage")
    ks = tuple(sorted(set(int(k) for k in ks)))
    if not ks or ks[0] < 1:
        raise RagError(f"k must be at least 1, got {', '.join(str(k) for k in ks) or 'none'}")
    if top_n is not None and top_n < 1:
        raise RagError(f"top_n must be at least 1, got {top_n}")
    doc = NormalisedText.of(document_text) if document_text is not None else None

    before = cache.stats()
    labels = list(chunk_set_by_label)
    all_texts: list[str] = [q.text for q in questions]
    for label in labels:
        all_texts.extend(c.text for c in chunk_set_by_label[label].chunks)
    # One call: the question and every chunk of every setting, each distinct text once.
    vectors = cache.embed(embedder, all_texts, progress)
    after = cache.stats()
    q_vectors = vectors[: len(questions)]

    results: list[SettingResult] = []
    offset = len(questions)
    for label in labels:
        chunk_set = chunk_set_by_label[label]
        chunks = chunk_set.chunks
        chunk_vectors = vectors[offset: offset + len(chunks)]
        offset += len(chunks)
        results.append(_rank_setting(label, chunk_set, chunk_vectors, q_vectors, questions, doc, ks, top_n))
    return EvaluationReport(
        ks=ks,
        embedder=embedder.name,
        results=tuple(results),
        questions=tuple(questions),
        embedded=after.misses - before.misses,
        reused=after.hits - before.hits,
    )


def _rank_setting(
    label: str,
    chunk_set: ChunkSet,
    chunk_vectors: np.ndarray,
    q_vectors: np.ndarray,
    questions: Sequence[Question],
    doc: NormalisedText | None,
    ks: tuple[int, ...],
    top_n: int | None,
) -> SettingResult:
    chunks = chunk_set.chunks
    position_of = {c.index: i for i, c in enumerate(chunks)}
    scores = (q_vectors @ chunk_vectors.T) if len(chunks) else np.zeros((len(questions), 0), np.float32)
    per_question: list[QuestionResult] = []
    normalised: list[str] | None = None
    for qi, question in enumerate(questions):
        needle = normalise(question.expected)
        if normalised is None and (doc is None or not doc.find_all(needle, limit=1)):
            normalised = [normalise(c.text) for c in chunks]  # once per setting, only if needed
        targets = find_targets(chunks, question.expected, doc, normalised_chunks=normalised)
        row = scores[qi]
        top_index = top_score = None
        rank = score = None
        if len(chunks):
            order = np.argsort(-row, kind="stable")
            top_index, top_score = chunks[int(order[0])].index, float(row[order[0]])
            if targets.indices:
                ranks = np.empty(len(chunks), dtype=np.int64)
                ranks[order] = np.arange(1, len(chunks) + 1)
                best_pos = min((position_of[i] for i in targets.indices), key=lambda p: ranks[p])
                rank, score = int(ranks[best_pos]), float(row[best_pos])
                if top_n is not None and rank > top_n:
                    rank = None
        per_question.append(QuestionResult(
            question=question, rank=rank, score=score, targets=tuple(sorted(targets.indices)),
            split=targets.split, coverage=targets.coverage, found=targets.found,
            top_index=top_index, top_score=top_score,
        ))
    n = len(per_question)
    hits = tuple((k, sum(1 for r in per_question if r.rank is not None and r.rank <= k) / n) for k in ks)
    mrr = sum(1.0 / r.rank for r in per_question if r.rank) / n
    return SettingResult(label, chunk_set.settings, len(chunks), hits, mrr, tuple(per_question))


def best_label(report: EvaluationReport) -> str | None:
    """The winning setting: highest MRR, then highest hit@1 (smallest k), then fewest chunks."""
    if not report.results:
        return None
    first_k = report.ks[0]

    def key(r: SettingResult) -> tuple[float, float, int]:
        return (round(r.mrr, 9), round(r.hit_at(first_k), 9), -r.n_chunks)

    return max(report.results, key=key).label


def describe(settings: ChunkSettings) -> str:
    """A short name for a setting, e.g. 'spring 800' or 'token 512/64'."""
    if settings.strategy == "spring":
        return f"spring {settings.chunk_size}"
    return f"{settings.strategy} {settings.chunk_size}/{settings.chunk_overlap}"


# --- a built-in example, so the Chunk Lab is never empty ----------------------------------

SAMPLE_FILENAME = "sample-field-guide.md"

SAMPLE_TEXT = """\
# Northwind Field Guide: running the regional depots

## 1. Opening hours and access

The regional depots open at 06:30 on weekdays and at 08:00 on Saturdays. They are closed on \
Sundays and public holidays. Staff enter through the north gate with their badge; visitors sign \
in at the reception desk and are escorted at all times. A lost badge must be reported to the \
security desk within two hours, after which it is blocked and a replacement is issued the next \
working day.

Deliveries are accepted between 07:00 and 15:00. A truck arriving outside these hours waits in \
the holding bay and is unloaded first the next morning. Drivers must switch off their engines \
while waiting, because the holding bay is next to the staff canteen.

## 2. Cold storage

Chilled goods are kept between 2 and 5 degrees Celsius; frozen goods at minus 18 degrees or \
colder. The temperature of every cold room is logged automatically every ten minutes. When a \
cold room stays above its limit for more than thirty minutes, the duty manager is paged and the \
goods are moved to the backup freezer in hall C. Goods that were above the limit for more than \
two hours are quarantined and may not be shipped until quality assurance releases them.

The backup freezer in hall C is tested on the first Monday of every month. The test takes about \
forty minutes and its result is written in the maintenance book kept at the hall C office.

## 3. Forklifts and safety

Only staff with a valid forklift licence may drive a forklift. Licences are renewed every three \
years after a half-day refresher course. Before each shift the driver checks the brakes, the \
horn, the lights and the battery level, and signs the checklist hanging at the charging station. \
A forklift with a failed check is tagged out of service with a red label and reported to the \
workshop.

Pedestrians walk only on the green lanes. The speed limit inside the halls is 6 kilometres per \
hour, and 10 kilometres per hour on the outdoor yard. High-visibility vests are worn by everyone \
on the yard, visitors included.

## 4. Returns

Customers may return unopened goods within 30 days of delivery. Returned goods are inspected in \
the returns area of hall B within two working days. Goods in their original packaging go back to \
stock; damaged goods are photographed, recorded in the returns system and sent to the recycling \
partner on Thursdays. A refund is approved by the returns team and paid by finance within ten \
working days of the inspection.

## 5. Incidents

Every accident, however small, is recorded in the incident log before the end of the shift. The \
first-aid kits are in the canteen, at the charging station and at the reception desk; the \
defibrillator hangs next to the reception desk. In case of fire, everyone leaves by the nearest \
exit and gathers at the assembly point by the car park flagpole, where the shift lead counts \
people against the badge register.

## 6. Energy

The roofs of halls A and B carry 1,200 solar panels that cover about 40 percent of the depot's \
electricity over a year. Forklift batteries are charged preferably between 11:00 and 15:00, when \
the panels produce most. Lights in the halls switch off automatically after fifteen minutes \
without movement.

## 7. Shift handover

Shifts change at 06:00, 14:00 and 22:00. The outgoing shift lead writes a handover note in the \
shift log with open orders, late trucks, equipment out of service and anything unusual. The \
incoming shift lead reads the note, walks the halls with the outgoing lead for ten minutes and \
signs the log. No one leaves before the handover is signed, and overtime for a late handover is \
paid in full.

When a shift is short of more than two people, the shift lead calls the on-call pool first and \
the temporary staffing agency second. Temporary staff receive a safety briefing of thirty minutes \
before their first shift and work alongside a permanent colleague for their first three shifts.

## 8. Picking and packing

Orders are picked in waves of forty minutes. The warehouse system sorts the pick list by aisle so \
that a picker never walks back along an aisle. Fragile goods are picked last and packed in the \
padded boxes stored at packing table 4. Every parcel heavier than 23 kilograms carries a yellow \
two-person-lift label, and parcels over 31.5 kilograms go by pallet, never by parcel carrier.

Each packed order is weighed. If the weight differs from the expected weight by more than five \
percent, the parcel is opened and checked against the pick list before it may leave the depot. \
Packing material is recycled: cardboard goes into the blue compactor, plastic film into the \
yellow bins by the loading docks.

## 9. Inventory counts

A full inventory count takes place twice a year, in the last week of June and the last week of \
December. During a full count the depot takes no deliveries for two days. In addition, every \
aisle is cycle-counted once a quarter: the system picks ten locations a day at random and a \
counter compares the quantity on the shelf with the quantity in the system.

A difference of more than two units or more than 500 euros in value is recounted by a second \
person. If the recount confirms the difference, the stock controller corrects the system and \
writes the reason in the adjustments register, which finance reviews every month.

## 10. Vehicles and the yard

The depot runs twelve delivery vans and four trucks. Vans are refuelled or charged at the end of \
each day so that they leave full in the morning. Tyre pressure is checked every Monday, and every \
vehicle is serviced every 20,000 kilometres or once a year, whichever comes first. Damage to a \
vehicle is photographed and reported on the damage form before the driver goes home.

The yard has two lanes: the left lane for incoming trucks and the right lane for outgoing vans. \
Reversing on the yard is done only with a banksman, a colleague who guides the driver by hand \
signals from a safe spot that the driver can see in the mirror.

## 11. Customers and complaints

Customer calls are answered by the service desk from 08:00 to 18:00 on weekdays. A complaint is \
acknowledged within one working day and resolved within five. When a complaint cannot be \
resolved within five working days, the customer is told why and given a new date, and the depot \
manager is informed. Every complaint gets a number, which the customer can quote in later calls.

Compensation up to 150 euros may be granted by the service desk itself; larger amounts need the \
approval of the depot manager. A customer who reports the same problem three times within a \
month is called back by the depot manager personally.

## 12. Training and development

Every new employee follows an induction programme of three days: one day of safety training, one \
day in the halls with a mentor and one day on the warehouse system. After six months each \
employee has a development talk with the shift lead, and after that one talk a year.

The depot pays for courses that help people in their current job or the next one, up to 1,000 \
euros per person per year. Forklift licences, first-aid courses and the dangerous goods \
certificate are paid in full and do not count towards this budget.

## 13. Dangerous goods

Aerosols, lithium batteries and cleaning chemicals are stored in the fenced cage in hall A, away \
from heat and direct sunlight. Only staff with the dangerous goods certificate may open the cage. \
Leaking containers are placed in the spill tray and the spill kit next to the cage is used to \
absorb the liquid; the used absorbent is treated as dangerous waste. Lithium batteries are \
shipped only with the orange class 9 label and never by air.

## 14. Security

The depot is covered by cameras at the gates, the loading docks and the yard. Recordings are \
kept for 28 days and viewed only by the security officer after an incident. The last person to \
leave the office sets the alarm; the alarm code is changed every three months and whenever a \
key holder leaves the company. Keys are signed out and back in at the security desk.

## 15. Contacts

The duty manager can be reached day and night on extension 200. The workshop is on extension 310, \
the security desk on extension 100 and the returns team on extension 420. For medical emergencies \
call the emergency number first and the duty manager second.
"""

SAMPLE_QUESTIONS: tuple[Question, ...] = (
    Question("When do the depots open on Saturdays?",
             "The regional depots open at 06:30 on weekdays and at 08:00 on Saturdays."),
    Question("What happens to goods that were too warm for more than two hours?",
             "Goods that were above the limit for more than two hours are quarantined and may not be "
             "shipped until quality assurance releases them."),
    Question("How often must a forklift licence be renewed?",
             "Licences are renewed every three years after a half-day refresher course."),
    Question("How long do customers have to return goods?",
             "Customers may return unopened goods within 30 days of delivery."),
    Question("Where is the assembly point in case of fire?",
             "gathers at the assembly point by the car park flagpole"),
    Question("How much of the electricity do the solar panels provide?",
             "cover about 40 percent of the depot's electricity over a year"),
    Question("How long are camera recordings kept?",
             "Recordings are kept for 28 days and viewed only by the security officer after an incident."),
    Question("What is the limit for parcels sent by parcel carrier?",
             "parcels over 31.5 kilograms go by pallet, never by parcel carrier"),
    Question("How much may the service desk grant as compensation?",
             "Compensation up to 150 euros may be granted by the service desk itself"),
    Question("How often is each vehicle serviced?",
             "every vehicle is serviced every 20,000 kilometres or once a year, whichever comes first"),
)
