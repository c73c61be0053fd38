"""Ground truth by character offsets (issue #30, item 2): a question whose answer span is given is answered
by every chunk overlapping that span, under every strategy, in Chinese, with overlapping chunks; a typed
passage without a span is still found by its text."""

from __future__ import annotations

import pytest

from rag import chunking
from rag.chunking import Chunk, ChunkSettings
from rag.chunking.settings import STRATEGIES
from rag.errors import RagError
from rag.evaluation.normalise import normalise
from rag.evaluation.questions import Question
from rag.evaluation.targets import find_targets
from tests.tuning.samples import chinese_document, english_document

DOCUMENTS = {
    "en": english_document(10),
    "zh": chinese_document(10),
    "mixed": english_document(3) + "\n\n" + chinese_document(4),
}


def small(strategy: str) -> ChunkSettings:
    """Chunks small enough for many answers to straddle a boundary; overlapping where the strategy can."""
    overlap = 0 if strategy.startswith("spring") else 16
    return ChunkSettings(strategy=strategy, chunk_size=48, chunk_overlap=overlap, min_chunk_size_chars=40)


def overlapping(chunks: tuple[Chunk, ...], start: int, end: int) -> set[int]:
    return {c.index for c in chunks if c.start < end and c.end > start}


@pytest.mark.parametrize("language", DOCUMENTS)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_chunk_offsets_index_the_text_the_document_was_chunked_from(strategy: str, language: str) -> None:
    document = DOCUMENTS[language]
    chunks = chunking.split(document, small(strategy)).chunks
    assert chunks
    assert all(0 <= c.start < c.end <= len(document) for c in chunks)
    assert [c.start for c in chunks] == sorted(c.start for c in chunks)
    for c in chunks:
        if strategy == "spring-exact":
            # Spring AI's cuts may fall inside a character cl100k spreads over tokens (U+FFFD at the edges).
            assert c.text.strip("\ufffd").strip() in document[c.start : c.end] or "\ufffd" in c.text
        else:
            assert document[c.start : c.end] == c.text


@pytest.mark.parametrize("language", DOCUMENTS)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_chunk_overlapping_the_answer_span_is_a_target(strategy: str, language: str) -> None:
    document = DOCUMENTS[language]
    chunks = chunking.split(document, small(strategy)).chunks
    shared = cut = 0
    for start in range(0, len(document) - 12, 23):
        end = start + 12
        question = Question("q", document[start:end], "doc.txt", (start, end))
        targets = find_targets(chunks, question.expected, document, span=question.span)
        wanted = overlapping(chunks, start, end)
        assert set(targets.indices) == wanted and targets.found
        whole = any(c.start <= start and c.end >= end for c in chunks)
        assert targets.split == (bool(wanted) and not whole)
        assert targets.coverage == (1.0 if whole else targets.coverage) and 0 < targets.coverage <= 1.0
        shared += len(wanted) >= 2
        cut += targets.split
    assert shared > 0  # spans two chunks share: on a boundary, or inside an overlap
    if strategy.startswith("spring"):
        assert cut > 0  # without overlap a boundary cuts some answers, and each piece's chunk counts


def test_a_span_inside_an_overlap_has_both_chunks_as_targets_and_a_cut_one_both_pieces() -> None:
    document = english_document(6)
    chunks = chunking.split(document, ChunkSettings(strategy="token", chunk_size=48, chunk_overlap=24)).chunks
    first, second = chunks[0], chunks[1]
    assert second.start < first.end  # they overlap
    inside = (second.start + 1, min(first.end, second.start + 20))
    targets = find_targets(chunks, document[inside[0] : inside[1]], document, span=inside)
    assert targets.indices == {first.index, second.index} and not targets.split and targets.coverage == 1.0

    windows = chunking.split(document, ChunkSettings(strategy="token", chunk_size=48, chunk_overlap=0)).chunks
    boundary = windows[0].end
    cut = (boundary - 10, boundary + 30)
    targets = find_targets(windows, document[cut[0] : cut[1]], document, span=cut)
    assert targets.indices == {windows[0].index, windows[1].index}
    second_piece = min(windows[1].end, cut[1]) - max(windows[1].start, cut[0])
    assert targets.split and targets.coverage == pytest.approx(max(10, second_piece) / 40) and second_piece < 40


def test_the_same_question_set_scores_every_chunking_by_the_same_spans() -> None:
    document = chinese_document(10)
    answer = "吴道子"
    start = document.index(answer)
    question = Question("玉泉灯塔是由哪位工程师主持建造的？", answer, None, (start, start + len(answer)))
    for strategy in STRATEGIES:
        for size in (32, 64, 200):
            settings = ChunkSettings(strategy=strategy, chunk_size=size, min_chunk_size_chars=20)
            chunks = chunking.split(document, settings).chunks
            targets = find_targets(chunks, question.expected, document, span=question.span)
            assert set(targets.indices) == overlapping(chunks, start, start + len(answer)) != set()


def test_a_span_from_another_text_falls_back_to_finding_the_passage() -> None:
    document = english_document(6)
    answer = "Simon Frey" if "Simon Frey" in document else "Piers Hale"
    at = document.index(answer)
    chunks = chunking.split(document, ChunkSettings(strategy="recursive", chunk_size=60, chunk_overlap=0)).chunks
    wrong = (0, len(answer))  # where another version of the document had it
    targets = find_targets(chunks, answer, document, span=wrong)
    assert targets.indices == {c.index for c in chunks if c.start <= at and c.end >= at + len(answer)}
    # Without the document the span cannot be checked, and is taken as given.
    assert set(find_targets(chunks, answer, None, span=wrong).indices) == overlapping(chunks, *wrong)


def test_a_typed_passage_without_a_span_keeps_the_whole_or_largest_piece_rule() -> None:
    document = english_document(6)
    windows = chunking.split(document, ChunkSettings(strategy="token", chunk_size=48, chunk_overlap=0)).chunks
    boundary = windows[0].end
    passage = document[boundary - 10 : boundary + 30]
    targets = find_targets(windows, passage, document)
    assert normalise(passage) and targets.indices == {windows[1].index} and targets.split


def test_an_answer_in_text_no_chunk_kept_has_no_target_but_is_found() -> None:
    chunk = Chunk(0, "alpha beta", 2, 0, 10)
    targets = find_targets([chunk], "gamma", "alpha beta gamma", span=(11, 16))
    assert targets.indices == frozenset() and targets.found


def test_a_question_checks_its_span_and_says_which_chunk_overlaps_it() -> None:
    with pytest.raises(RagError, match="0 <= start < end, got 5 and 5"):
        Question("q", "a", None, (5, 5))
    question = Question("q", "answer", "a.pdf", (10, 20))
    assert question.overlaps("a.pdf", 15, 40) and question.overlaps("a.pdf", 0, 11)
    assert not question.overlaps("a.pdf", 20, 30) and not question.overlaps("b.pdf", 15, 40)
    assert not Question("q", "answer", "a.pdf").overlaps("a.pdf", 0, 100)
