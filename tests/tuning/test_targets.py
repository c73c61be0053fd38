"""A generated question scored by the existing retrieval check: its quoted answer, as the expected passage,
makes the chunks holding the answer's span the targets, under every chunking strategy, in Chinese too, and
with overlapping chunks.

The rule the check applies (rag.evaluation.targets.find_targets), for an answer that occurs once: the chunks
that hold the span whole; when a boundary cuts it, the chunk(s) holding the largest share of it. So every
target overlaps the span, and some chunk is a target whenever one overlaps it."""

from __future__ import annotations

from typing import Any

import pytest

from rag import chunking
from rag.chunking import Chunk, ChunkSettings
from rag.evaluation.cache import EmbeddingCache
from rag.evaluation.normalise import NormalisedText, normalise
from rag.evaluation.ranking import evaluate
from rag.evaluation.targets import find_targets
from rag.tuning import GeneratedQuestion, overlapping_chunks, to_questions
from rag.tuning.checks import unique_quote
from tests.tuning.samples import chinese_document, english_document

SETTINGS = {
    **{name: settings for name, settings in chunking.PRESETS.items()},
    "spring 64": ChunkSettings(strategy="spring", chunk_size=64, min_chunk_size_chars=40),
    "spring-exact 64": ChunkSettings(strategy="spring-exact", chunk_size=64, min_chunk_size_chars=40),
    "token 48/24 (every character in two chunks)": ChunkSettings(strategy="token", chunk_size=48, chunk_overlap=24),
    "token 40/0": ChunkSettings(strategy="token", chunk_size=40, chunk_overlap=0),
    "recursive 60/20": ChunkSettings(strategy="recursive", chunk_size=60, chunk_overlap=20),
}
DOCUMENTS = {
    "en": english_document(12),
    "zh": chinese_document(12),
    "mixed": english_document(4) + "\n\n" + chinese_document(6) + "\n\n" + english_document(8)[-1500:],
}


def answers(document: str, step: int = 37, length: int = 9) -> list[GeneratedQuestion]:
    """Quotes all over the document, every `step` characters, each made unique as generation makes it:
    some fall inside chunks, some across their boundaries."""
    doc = NormalisedText.of(document)
    out: dict[tuple[int, int], GeneratedQuestion] = {}
    for at in range(0, len(document) - length, step):
        span = unique_quote(doc, document, (at, at + length))
        if span is not None and normalise(document[span[0] : span[1]]):
            start, end = span
            out[span] = GeneratedQuestion(f"q{at}", document[start:end], start, end, at, "en")
    return list(out.values())


def expected_targets(chunks: tuple[Chunk, ...], start: int, end: int) -> set[int]:
    covering = {c.index for c in chunks if c.start <= start and c.end >= end}
    if covering:
        return covering
    overlap = {c.index: min(c.end, end) - max(c.start, start) for c in chunks}
    best = max(overlap.values(), default=0)
    return {i for i, size in overlap.items() if size == best and size > 0}


@pytest.mark.parametrize("language", DOCUMENTS)
@pytest.mark.parametrize("label", SETTINGS)
def test_the_targets_are_the_chunks_holding_the_answer_span(label: str, language: str) -> None:
    document = DOCUMENTS[language]
    chunks = chunking.split(document, SETTINGS[label]).chunks
    if SETTINGS[label].strategy != "spring-exact":  # which cuts inside a character (U+FFFD), as Spring AI does
        assert all(document[c.start : c.end] == c.text for c in chunks)  # a chunk's span is its text's
    generated = answers(document)
    questions = to_questions(generated, "doc.txt")
    doc = NormalisedText.of(document)
    split = 0
    for q, question in zip(generated, questions):
        assert question.expected == q.answer and question.file == "doc.txt"
        assert doc.find_all(normalise(question.expected)) == [(q.start, q.end)]  # once, exactly there
        targets = find_targets(chunks, question.expected, document)
        overlapping = {chunks[i].index for i in overlapping_chunks([(c.start, c.end) for c in chunks], q.start, q.end)}
        assert set(targets.indices) == expected_targets(chunks, q.start, q.end)
        assert set(targets.indices) <= overlapping and bool(targets.indices) == bool(overlapping)
        split += targets.split
    assert len(generated) > 40
    if SETTINGS[label].chunk_size <= 64 and not SETTINGS[label].chunk_overlap:
        assert split > 0  # small chunks cut some answers: the fallback is exercised too


def test_with_overlapping_chunks_every_chunk_holding_the_answer_is_a_target() -> None:
    document = english_document(12)
    chunks = chunking.split(document, ChunkSettings(strategy="token", chunk_size=48, chunk_overlap=24)).chunks
    held_twice = [q for q in answers(document) if sum(c.start <= q.start and c.end >= q.end for c in chunks) >= 2]
    assert held_twice
    for q in held_twice:
        targets = find_targets(chunks, q.answer, document).indices
        assert len(targets) >= 2 and targets == {c.index for c in chunks if c.start <= q.start and c.end >= q.end}


class _NoVectors:
    """The keyword mode of the check embeds nothing; only the name is read."""

    name = "none"
    dimension = 1
    max_input_tokens = None


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_retrieval_check_ranks_generated_questions_by_their_answer_chunks(language: str) -> None:
    document = DOCUMENTS[language]
    generated = [
        GeneratedQuestion(text, answer, document.index(answer), document.index(answer) + len(answer), 0, language)
        for text, answer in (
            [("Who built the Halsey lighthouse?", "Simon Frey"), ("Who built the Kelso lighthouse?", "Hugo Lind")]
            if language == "en"
            else [("玉泉灯塔是由哪位工程师主持建造的？", "吴道子"), ("松林灯塔是由哪位工程师主持建造的？", "钱学森")]
        )
    ]
    chunk_sets = {label: chunking.split(document, SETTINGS[label]) for label in ("Recursive 400 / 40", "token 40/0")}
    nothing: Any = _NoVectors()
    report = evaluate(chunk_sets, document, to_questions(generated), nothing, EmbeddingCache(), (1, 3), mode="keyword")
    for result in report.results:
        chunks = chunk_sets[result.label].chunks
        for q, scored in zip(generated, result.questions):
            # The answer's span rides with the question: every chunk overlapping it is a target.
            assert set(scored.targets) == {c.index for c in chunks if c.start < q.end and c.end > q.start}
            assert scored.found
            assert scored.rank is not None
    # Whole paragraphs keep the lighthouse's name with its engineer; 40-token windows part them (measured).
    assert report.result("Recursive 400 / 40").hit_at(1) == 1.0
    assert report.result("token 40/0").hit_at(3) == (0.5 if language == "en" else 0.0)
