"""No strategy splits a character: cl100k spreads many Chinese characters and emoji over several
tokens, and a cut between them decodes to U+FFFD. `spring` snaps its cuts to character boundaries,
`spring-exact` keeps Spring AI's (the literal port, `spring_split_reference`, is its yardstick).
"""

from __future__ import annotations

import dataclasses
import random

from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from rag.chunking import STRATEGIES, ChunkSettings, split, spring_split_reference
from tests.chunking.texts import CJK, EMOJI, ENC, FRAGMENTS, exact, spring_settings

REPLACEMENT = "\ufffd"
# Characters that cl100k encodes in two or more tokens (checked below), so that windows cut them.
CHINESE = "贾宝玉林黛玉薛宝钗王熙凤饭供酒袭人晴雯鸳鸯刘姥姥荣国府宁国府大观园怡红院潇湘馆"
CLEAN = [*CJK, *EMOJI, *CHINESE, "，", "。", "\n", " ", "word", "Hello.", "é"]

clean_text = st.one_of(
    st.text(alphabet=CHINESE + "，。！？；\n", min_size=1, max_size=600),
    st.lists(st.sampled_from(EMOJI + [" ", "\n", "."]), min_size=1, max_size=200).map("".join),
    st.lists(st.sampled_from(CLEAN + FRAGMENTS), min_size=1, max_size=400).map("".join),
).filter(lambda t: REPLACEMENT not in t and "\U0010ffff" not in t)


def _novel(chars: int, seed: int) -> str:
    rng = random.Random(seed)
    out = []
    while sum(map(len, out)) < chars:
        out.append("".join(rng.choice(CHINESE) for _ in range(rng.randint(4, 30))) + rng.choice("，。！？；\n"))
    return "".join(out)


def test_the_chinese_sample_holds_characters_split_over_tokens() -> None:
    # Otherwise the tests below would prove nothing.
    assert sum(len(ENC.encode_ordinary(ch)) > 1 for ch in CHINESE) >= 10


def test_the_default_spring_keeps_every_chinese_character_whole() -> None:
    # The browser finding: 10 of 57 chunks of a Chinese novel held U+FFFD with the default preset.
    text = _novel(30_000, 1)
    spring_exact = split(text, ChunkSettings(strategy="spring-exact")).chunks
    assert any(REPLACEMENT in c.text for c in spring_exact)  # Spring AI's own cuts split characters
    chunks = split(text, ChunkSettings()).chunks
    assert len(chunks) > 5
    assert not [c.index for c in chunks if REPLACEMENT in c.text]
    for c in chunks:
        assert text[c.start : c.end] == c.text
    # Nothing lost, nothing doubled: with no separator cut the chunks tile the text (but for the
    # newlines trimmed at their ends).
    tiled = split(text, ChunkSettings(min_chunk_size_chars=10_000, chunk_size=50, min_chunk_length_to_embed=0))
    assert "".join(c.text for c in tiled.chunks).replace("\n", "") == text.replace("\n", "")


@hsettings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(
    text=clean_text,
    strategy=st.sampled_from([s for s in STRATEGIES if s != "spring-exact"]),
    size=st.one_of(st.just(800), st.integers(1, 60)),
    data=st.data(),
)
def test_no_strategy_emits_a_replacement_character_from_clean_text(text: str, strategy: str, size: int, data) -> None:
    overlap = 0 if strategy == "spring" or size == 1 else data.draw(st.integers(0, size - 1))
    settings = ChunkSettings(
        strategy=strategy,
        chunk_size=size,
        chunk_overlap=overlap,
        min_chunk_size_chars=data.draw(st.integers(0, 60)),
        min_chunk_length_to_embed=0,
    )
    for s in (ChunkSettings(strategy=strategy), settings):  # the strategy's default, and others
        for c in split(text, s).chunks:
            assert REPLACEMENT not in c.text, (s, c)
            assert text[c.start : c.end] == c.text


@hsettings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(text=clean_text, s=spring_settings)
def test_spring_exact_is_the_literal_port_and_spring_differs_only_at_split_characters(
    text: str, s: ChunkSettings
) -> None:
    s = dataclasses.replace(s, min_chunk_length_to_embed=0)  # so that no piece is hidden by dropping it
    assert s.strategy == "spring-exact"
    reference = spring_split_reference(text, s)
    assert [c.text for c in split(text, s).chunks] == reference
    snapped = [c.text for c in split(text, dataclasses.replace(s, strategy="spring")).chunks]
    assert not any(REPLACEMENT in t for t in snapped)
    if not any(REPLACEMENT in t for t in reference):
        # No cut of Spring AI fell inside a character: the two are the same.
        assert snapped == reference


def test_spring_and_spring_exact_agree_on_english() -> None:
    text = " ".join(f"Sentence {i} explains revenue, costs and margins." for i in range(400))
    for size in (7, 64, 800):
        s = ChunkSettings(chunk_size=size, min_chunk_size_chars=20)
        assert [c.text for c in split(text, s).chunks] == spring_split_reference(text, exact(s))
