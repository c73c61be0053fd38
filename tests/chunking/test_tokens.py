"""rag.chunking.tokens: tokenising once (offsets against tiktoken), boundaries, and re-chunking
without encoding again.

Expectations come from tiktoken itself (an independent cl100k instance), never from the
implementation's own output.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from rag.chunking import (
    SEED_PROJECT,
    SPRING_DEFAULT,
    ChunkSettings,
    cl100k,
    count_tokens,
    split,
    spring_split_reference,
    tokenize,
)
from rag.chunking import tokens as chunk_tokens
from tests.chunking.texts import ENC, long_text, mixed_text, sentences, token_char_spans
from tests.conftest import ROOT


def test_encode_of_very_long_text_matches_tiktoken(monkeypatch) -> None:
    # Over 200_000 characters, with tiktoken (no gigatoken): the text is encoded in pieces in several processes,
    # and the pieces' tokens must be exactly tiktoken's tokens for the whole text.
    text = long_text(7, 230_000) + " tail" + "数字123 4567" * 10
    assert len(text) > 200_000
    monkeypatch.setattr(cl100k, "fast_allowed", False)
    if cl100k.usable_cores() < 2:
        monkeypatch.setattr(cl100k, "usable_cores", lambda: 2)
    assert cl100k.start_workers(wait=60), "the encoding workers did not start"
    monkeypatch.setattr(cl100k, "usable_cores", lambda: 4)  # three workers take pieces from the back
    monkeypatch.setattr(cl100k, "PARALLEL_CHARS", 50_000)
    sent: list[str] = []
    submit = cl100k._pool.submit

    def recorded(fn, piece: str):
        sent.append(piece)
        return submit(fn, piece)

    monkeypatch.setattr(cl100k._pool, "submit", recorded)
    expected = ENC.encode_ordinary(text)
    assert chunk_tokens._encode(text).tolist() == expected
    assert sent and text.endswith(sent[0])  # the workers began at the end
    assert not text.startswith(sent[-1])  # and this process kept the front
    tt = tokenize(text)
    assert tt.tokens.tolist() == expected
    monkeypatch.undo()
    exact = dataclasses.replace(SPRING_DEFAULT, strategy="spring-exact")  # the text holds emoji and CJK
    assert [c.text for c in split(tt, exact).chunks] == spring_split_reference(text, exact)


def test_gigatoken_encodes_on_its_platform_and_then_starts_no_worker() -> None:
    # Declared for Linux x86-64 (pyproject.toml): there it encodes, and tiktoken's worker processes are not needed.
    on_its_platform = sys.platform == "linux" and platform.machine() == "x86_64"
    assert cl100k.fast() == on_its_platform
    if on_its_platform:
        assert not cl100k.start_workers(), "workers started beside gigatoken"


@hsettings(max_examples=400, deadline=None)
@given(text=mixed_text)
def test_the_encoder_gives_tiktokens_tokens(text: str) -> None:
    assert cl100k.encode_piece(text).tolist() == ENC.encode_ordinary(text)
    assert cl100k.count(text) == len(ENC.encode_ordinary(text))


@pytest.mark.parametrize(
    "text",
    [
        "<|endoftext|> and <|fim_prefix|>, <|endofprompt|>: text, not special tokens",
        "A" * 100_000,
        " " * 50_000 + "x",
        "中" * 60_000,
        "1" * 30_001 + " " + "😀" * 5_000,
        "it's I'LL we've 'tis\r\n\r\n\t \u00a0\u3000\u200b\ufeff",
        "a\ud800b lone surrogate",  # gigatoken refuses it; count_tokens counted it as encode_ordinary does
    ],
)
def test_the_encoder_gives_tiktokens_tokens_where_pre_tokenisers_differ_most(text: str) -> None:
    assert cl100k.encode_piece(text).tolist() == ENC.encode_ordinary(text)


def test_gigatoken_is_made_anew_after_its_characters(monkeypatch) -> None:
    # Its cache of pieces is never emptied: a new encoder after RENEW_CHARS bounds what it holds.
    assert cl100k.fast()
    monkeypatch.setattr(cl100k, "RENEW_CHARS", 1_000)
    text = long_text(5, 3_000)
    assert cl100k.encode_piece(text).tolist() == ENC.encode_ordinary(text)
    first = cl100k._fast
    assert cl100k.encode_piece(text[::-1]).tolist() == ENC.encode_ordinary(text[::-1])
    assert cl100k._fast is not first and cl100k._fast is not None


def test_a_gigatoken_that_disagrees_with_tiktoken_is_not_used(monkeypatch, caplog) -> None:
    import gigatoken

    real = gigatoken.Tokenizer.from_tiktoken

    def other_scheme(path, pretokenizer, special_tokens):  # as gigatoken's
        return real(path, pretokenizer="gpt2", special_tokens=special_tokens)  # GPT-2's digits, contractions

    monkeypatch.setattr(gigatoken.Tokenizer, "from_tiktoken", other_scheme)
    monkeypatch.setattr(cl100k, "_fast", None)
    monkeypatch.setattr(cl100k, "_fast_failed", False)
    with caplog.at_level("WARNING", logger="rag.chunking.cl100k"):
        assert not cl100k.fast()
    assert "differ from tiktoken's" in caplog.text
    text = "Revenue 1234567 grew; it's 收入增长了。"
    assert cl100k.encode_piece(text).tolist() == ENC.encode_ordinary(text)


@hsettings(max_examples=150, deadline=None)
@given(text=mixed_text, count=st.integers(2, 9))
def test_pieces_cut_at_seams_encode_to_the_whole_texts_tokens(text: str, count: int) -> None:
    # Pieces of a few characters: every seam the cutter picks is tested, in every script.
    parts = cl100k.pieces(text, count)
    assert "".join(parts) == text and (all(parts) or not text) and len(parts) <= count
    assert [t for part in parts for t in ENC.encode_ordinary(part)] == ENC.encode_ordinary(text)


def test_a_text_without_a_seam_is_one_piece() -> None:
    text = "😀🚀" * 200_000  # no ASCII and no CJK letter: no place where a cut is known to be exact
    assert cl100k.pieces(text, 4) == [text]


def test_a_killed_worker_costs_nothing_but_time(monkeypatch) -> None:
    # The pool breaks (a worker killed by the OOM killer, say): the text is encoded here, then new workers start.
    import os
    import signal

    monkeypatch.setattr(cl100k, "fast_allowed", False)
    monkeypatch.setattr(cl100k, "PARALLEL_CHARS", 50_000)
    if cl100k.usable_cores() < 2:
        monkeypatch.setattr(cl100k, "usable_cores", lambda: 2)
    assert cl100k.start_workers(wait=60)
    text = long_text(3, 120_000)
    for pid in list(cl100k._pool._processes):
        os.kill(pid, signal.SIGKILL)
    assert chunk_tokens._encode(text).tolist() == ENC.encode_ordinary(text)
    assert cl100k.start_workers(wait=60), "no new workers after the old ones died"
    assert chunk_tokens._encode(text).tolist() == ENC.encode_ordinary(text)


@pytest.mark.parametrize(
    "text",
    [
        "1234567 89 " * 30_000,  # digits grouped by three
        ("it's don't we'll " * 15_000),
        ("a  b   c\n\n d. e? f! (g) [h] {i} 'j' \"k\" " * 6_000),
        "中文没有空格。" * 40_000,  # no ASCII at all
    ],
)
def test_encode_on_tricky_long_texts(text: str) -> None:
    assert len(text) > 200_000
    assert chunk_tokens._encode(text).tolist() == ENC.encode_ordinary(text)


@hsettings(max_examples=80, deadline=None)
@given(text=mixed_text)
def test_tokenize_offsets_match_tiktoken(text: str) -> None:
    tt = tokenize(text)
    ids, byte_starts, cstarts, cends = token_char_spans(text)
    assert tt.tokens.tolist() == ids
    assert tt.byte_starts.tolist() == byte_starts
    assert tt.char_starts.tolist() == cstarts
    assert tt.char_ends.tolist() == cends
    assert len(tt) == len(ids)
    for level in ("paragraph", "sentence", "word"):
        b = tt.boundaries(level)
        assert np.all(np.diff(b) > 0) and (len(b) == 0 or (b[0] >= 1 and b[-1] <= len(ids)))
        if ids and level == "word":
            assert len(b) and b[-1] == len(ids)  # the end of the text is a word boundary


def test_boundaries_by_level() -> None:
    text = "One two. Three four!\n\nFive 3.14 six? Seven"
    tt = tokenize(text)
    _, _, _, cends = token_char_spans(text)

    def ends(level: str) -> list[str]:
        return [text[: cends[i - 1]] for i in tt.boundaries(level)]

    assert ends("paragraph") == ["One two. Three four!\n\n"] or ends("paragraph") == ["One two. Three four!"]
    sentence_ends = [e.rstrip() for e in ends("sentence")]
    assert sentence_ends[:3] == ["One two.", "One two. Three four!", "One two. Three four!\n\nFive 3.14 six?"]
    assert "One two. Three four!\n\nFive 3." not in sentence_ends  # a decimal point is not a sentence end
    word_ends = {e.rstrip() for e in ends("word")}
    assert {"One", "One two.", "One two. Three four!\n\nFive 3.14"} <= word_ends
    assert text in word_ends  # the end of the text counts
    with pytest.raises(ValueError, match="chapter"):
        tt.boundaries("chapter")


# --- 3. token strategy ------------------------------------------------------------------------


RECHUNK_SETTINGS = [
    SPRING_DEFAULT,
    SEED_PROJECT,
    ChunkSettings(chunk_size=50, min_chunk_size_chars=20, keep_separator=False),
    ChunkSettings(chunk_size=7, min_chunk_size_chars=0, max_num_chunks=3),
    ChunkSettings(strategy="token", chunk_size=64, chunk_overlap=16),
    ChunkSettings(strategy="token", chunk_size=5),
    ChunkSettings(strategy="recursive", chunk_size=80, chunk_overlap=20),
    ChunkSettings(strategy="recursive", chunk_size=300),
]


def test_rechunking_a_tokenized_text_never_calls_encode(monkeypatch) -> None:
    text = long_text(11, 20_000) + "\n\n" + "中文没有空格。" * 50 + sentences(30, 7)
    expected = {s: split(text, s) for s in RECHUNK_SETTINGS}
    tt = tokenize(text)

    def boom(_text: str) -> list[int]:
        raise AssertionError("re-encoded the document")

    monkeypatch.setattr(chunk_tokens, "_encode", boom)
    with pytest.raises(AssertionError, match="re-encoded"):
        split(text, SPRING_DEFAULT)  # the patch is effective for raw strings
    for s in RECHUNK_SETTINGS:
        got = split(tt, s)
        assert got == expected[s]
        assert got.chunks, s


def test_count_tokens_is_cl100k() -> None:
    for text in ["", "hello world", "中文没有空格。", "😀 don't", "<|endoftext|> is plain text here"]:
        assert count_tokens(text) == len(ENC.encode_ordinary(text))


def test_vocab_tables_match_a_per_token_reading() -> None:
    """The vectorised tables say for every token what reading its bytes one by one says."""
    enc = chunk_tokens.encoding()
    vocab = chunk_tokens._vocab()
    cjk_ends = tuple(ch.encode() for ch in "。！？；")
    checked = 0
    for raw, rank in enc._mergeable_ranks.items():
        core = raw.rstrip(b" \t\r\n")
        expected = {
            "nbytes": len(raw),
            "nchars": sum(1 for b in raw if not 0x80 <= b < 0xC0),
            "midchar": 1 if 0x80 <= raw[0] < 0xC0 else 0,
            "ws_start": raw[:1] in (b" ", b"\n", b"\t", b"\r"),
            "ws_end": raw[-1:] in (b" ", b"\n", b"\t", b"\r"),
            "sentence_end": core[-1:] in (b".", b"?", b"!"),
            "cjk_end": core.endswith(cjk_ends),
            "paragraph": b"\n\n" in raw or b"\n\r\n" in raw,
            "nl_start": raw[:1] in (b"\n", b"\r"),
            "nl_end": raw[-1:] == b"\n",
        }
        for name, value in expected.items():
            assert getattr(vocab, name)[rank] == value, (name, raw, rank)
        checked += 1
    assert checked == len(enc._mergeable_ranks) > 100_000
    # Tokens that hold each rule exist, so the comparison above covers both answers of each.
    assert vocab.paragraph.sum() > 0 and vocab.cjk_end.sum() > 0 and vocab.midchar.sum() > 0


def test_one_long_text_starts_no_worker_and_a_second_starts_them(tmp_path) -> None:
    # A one-off `rag chunk` must not pay for starting (and, at exit, waiting for) a worker process.
    code = (
        "from rag.chunking import cl100k\n"
        "cl100k.fast_allowed = False\n"
        "cl100k.PARALLEL_CHARS = 10_000\n"
        "cl100k.usable_cores = lambda: 2\n"
        "text = 'Words and more words, ' * 2_000\n"
        "first = cl100k.encode(text)\n"
        "assert cl100k._pool is None, 'one long text started the workers'\n"
        "second = cl100k.encode(text)\n"
        "assert cl100k._pool is not None, 'the second long text did not start them'\n"
        "assert cl100k.start_workers(wait=60)\n"
        "assert cl100k.encode(text).tolist() == first.tolist() == second.tolist()\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(tmp_path),
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
