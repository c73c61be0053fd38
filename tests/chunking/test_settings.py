"""rag.chunking.settings: validation messages, presets, the field table the widget and the CLI
are built from, and the words that describe a setting."""

from __future__ import annotations

import dataclasses

import pytest

from rag import chunking
from rag.chunking import SEED_PROJECT, SPRING_DEFAULT, ChunkSettings
from rag.errors import ChunkSettingsError


def test_settings_validation_messages() -> None:
    with pytest.raises(ChunkSettingsError, match="semantic") as caught:
        ChunkSettings(strategy="semantic")
    for name in ("spring", "token", "recursive"):
        assert name in str(caught.value)
    with pytest.raises(ChunkSettingsError, match=r"chunk_size.*\b0\b"):
        ChunkSettings(chunk_size=0)
    with pytest.raises(ChunkSettingsError, match=r"chunk_overlap.*-3"):
        ChunkSettings(strategy="token", chunk_overlap=-3)
    with pytest.raises(ChunkSettingsError, match=r"min_chunk_size_chars.*-1"):
        ChunkSettings(min_chunk_size_chars=-1)
    with pytest.raises(ChunkSettingsError, match=r"min_chunk_length_to_embed.*-2"):
        ChunkSettings(min_chunk_length_to_embed=-2)
    with pytest.raises(ChunkSettingsError, match=r"max_num_chunks.*\b0\b"):
        ChunkSettings(max_num_chunks=0)
    with pytest.raises(ChunkSettingsError) as caught:
        ChunkSettings(strategy="token", chunk_size=200, chunk_overlap=250)
    assert "200" in str(caught.value) and "250" in str(caught.value)
    assert issubclass(ChunkSettingsError, ValueError)
    # Spring has no overlap setting in the Java class, so it is not validated against the size.
    ChunkSettings(strategy="spring", chunk_size=10, chunk_overlap=50)
    ok = ChunkSettings(strategy="recursive", chunk_size=10, chunk_overlap=9)
    assert ok.as_dict()["chunk_overlap"] == 9
    with pytest.raises(AttributeError):
        ok.chunk_size = 3  # type: ignore[misc]


def test_fields_describe_every_setting_once_in_order() -> None:
    assert [f.name for f in chunking.FIELDS] == [f.name for f in dataclasses.fields(ChunkSettings)]
    for field in chunking.FIELDS:
        assert field.default == getattr(chunking.settings.DEFAULT, field.name)  # the default preset, not Spring AI's
        assert field.help == chunking.HELP[field.name] and field.label and field.cli_help
        if field.kind is int:
            assert field.minimum <= field.default <= field.maximum
    assert chunking.FIELD_BY_NAME["chunk_overlap"].applies_to("token")
    assert not chunking.FIELD_BY_NAME["chunk_overlap"].applies_to("spring")
    assert not chunking.FIELD_BY_NAME["min_chunk_size_chars"].applies_to("recursive")
    assert chunking.FIELD_BY_NAME["min_chunk_length_to_embed"].option == "--min-chunk-length-to-embed"


def test_presets_are_named_and_others_are_not() -> None:
    assert chunking.preset_name(SPRING_DEFAULT) == "Spring AI default"
    assert chunking.preset_name(SEED_PROJECT) == "Seed project"
    assert chunking.preset_name(ChunkSettings(chunk_size=801)) is None


def test_summaries_and_labels() -> None:
    assert chunking.label(SPRING_DEFAULT) == "spring 800"
    assert chunking.label(ChunkSettings(strategy="token", chunk_size=512, chunk_overlap=64)) == "token 512/64"
    assert chunking.summary(SPRING_DEFAULT) == (
        "Spring AI default (Spring AI splitter, 800 tokens, cut after a separator beyond 350 chars)"
    )
    assert chunking.summary(SPRING_DEFAULT, short=True) == "Spring AI default"
    custom = ChunkSettings(strategy="recursive", chunk_size=300, chunk_overlap=30)
    assert chunking.summary(custom) == "recursive, 300 tokens, 30 overlap"
    assert chunking.summary(custom, short=True) == "recursive 300 / 30 tokens"
    assert chunking.summary(ChunkSettings(chunk_size=100), short=True) == "spring 100 tokens / 350 chars"
    assert chunking.summary(ChunkSettings(strategy="token", chunk_size=90, chunk_overlap=9)) == (
        "token windows of 90 tokens, 9 overlap"
    )
    # Stored settings: as a dict, and one that no longer parses is shown as stored.
    assert chunking.summary(SEED_PROJECT.as_dict(), short=True) == "Seed project"
    assert chunking.summary({"strategy": "semantic"}) == "{'strategy': 'semantic'}"
    assert chunking.summary(None) == "unknown settings"


def test_chunks_in_span_are_clipped_and_relative() -> None:
    chunks = chunking.split(
        "One two three. " * 40, ChunkSettings(strategy="token", chunk_size=20, chunk_overlap=5)
    ).chunks
    start, end = 100, 300
    inside = chunking.chunks_in_span(chunks, start, end)
    assert [c.index for c in inside] == [c.index for c in chunks if c.start < end and c.end > start]
    for c in inside:
        original = chunks[c.index]
        assert c.start == max(original.start, start) - start and c.end == min(original.end, end) - start
        assert 0 <= c.start <= c.end <= end - start


def test_spring_exact_is_a_strategy_of_its_own_in_the_widget_and_the_cli(tmp_path, capsys) -> None:
    import json

    from rag import cli

    assert chunking.STRATEGIES[:2] == ("spring", "spring-exact")
    assert chunking.STRATEGY_LABELS["spring-exact"] == "Spring AI exact (may split characters)"
    assert chunking.FIELD_BY_NAME["min_chunk_size_chars"].applies_to("spring-exact")
    assert chunking.FIELD_BY_NAME["keep_separator"].applies_to("spring-exact")
    assert not chunking.FIELD_BY_NAME["chunk_overlap"].applies_to("spring-exact")
    for help_text in (chunking.HELP["strategy"], chunking.PRESET_HELP["Spring AI default"]):
        assert "character boundary" in help_text and "spring-exact" in help_text
    assert chunking.summary(ChunkSettings(strategy="spring-exact")) == (
        "Spring AI splitter, exact, 800 tokens, cut after a separator beyond 350 chars"
    )
    text = "贾宝玉林黛玉薛宝钗王熙凤饭供酒袭人晴雯鸳鸯刘姥姥" * 40
    path = tmp_path / "novel.txt"
    path.write_text(text, encoding="utf-8")
    got = {}
    for strategy in ("spring", "spring-exact"):
        assert cli.main(["chunk", str(path), "--strategy", strategy, "--chunk-size", "50", "--json"]) in (0, None)
        got[strategy] = [c["text"] for c in json.loads(capsys.readouterr().out)]
    exact = ChunkSettings(strategy="spring-exact", chunk_size=50)
    assert got["spring-exact"] == chunking.spring_split_reference(text, exact)
    assert any("\ufffd" in t for t in got["spring-exact"])
    assert got["spring"] and not any("\ufffd" in t for t in got["spring"])
