"""Issue 18 (1): memory bounded by construction. A PDF whose pages repeat one content stream is refused
with one line; the one huge chunk Spring AI's splitter leaves after `max_num_chunks` is embedded from
its first characters (stored whole), in batches weighed by what WordLlama pads them to (a Chinese
character weighs ~10 English ones), and a long text is split from the tokens of a prefix only (the
rest is counted, not kept): so an ingest of it stays small, measured in a process of its own. Two
big files are not held at once by `ingest_paths`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from benchmarks.memory import PEAK_MB
from rag.chunking import ChunkSettings
from rag.documents import load_bytes
from rag.embeddings.local import LocalEmbedder, padded_length
from rag.errors import DocumentError
from tests.conftest import ROOT
from tests.docgen import make_repeated_stream_pdf


def test_a_pdf_whose_pages_repeat_one_stream_is_refused_with_one_line() -> None:
    data = make_repeated_stream_pdf()
    assert len(data) < 40_000
    with pytest.raises(DocumentError) as info:
        load_bytes(data, "bomb.pdf")
    message = str(info.value)
    assert message.startswith("bomb.pdf: its text (")
    assert "is absurdly larger than the file" in message and "\n" not in message


def test_a_huge_text_is_embedded_from_its_first_characters_and_batches_stay_small() -> None:
    embedder = LocalEmbedder()
    huge = "Harbour log, night watch. " * 200_000  # 5.2 MB: what follows max_num_chunks in one chunk
    seen: list[list[int]] = []
    real = embedder._embed_batch

    def spy(batch: list[str]) -> np.ndarray:
        seen.append([len(t) for t in batch])
        return real(batch)

    embedder._embed_batch = spy  # type: ignore[method-assign]
    vectors = embedder.embed(["short one"] * 300 + [huge] + ["short two"] * 10)
    assert vectors.shape == (311, 256)
    assert max(max(b) for b in seen) == LocalEmbedder.MAX_CHARS
    assert all(len(b) * max(b) <= LocalEmbedder.PADDED_CHARS or len(b) == 1 for b in seen)
    np.testing.assert_allclose(vectors[300], embedder.embed([huge[: LocalEmbedder.MAX_CHARS]])[0], atol=1e-6)


# Each script reads its peak from VmHWM (`PEAK_MB`): its ru_maxrss would start at this pytest process's RSS.
PEAK_SCRIPT = PEAK_MB + textwrap.dedent("""
    import json, sys
    from rag.chunking import ChunkSettings
    from rag.embeddings.local import LocalEmbedder
    from rag.ingest import ingest_bytes
    from rag.store import Store
    text = ("Lighthouse keepers wrote the weather into a ledger every night. " * 160_000).encode()  # 10 MB
    store = Store(sys.argv[1])
    result = ingest_bytes(store, LocalEmbedder(), text, "ledger.txt", "memory-kb",
                          ChunkSettings(chunk_size=800, max_num_chunks=20))
    store.close()
    print(json.dumps({"status": result.status, "chunks": result.chunks,
                      "peak_mb": peak_mb()}))
""")


def test_ingesting_a_10_mb_text_whose_last_chunk_holds_most_of_it_stays_under_1_5_gb(store, pg_uri) -> None:
    # Before: the 9.9 MB last chunk was padded with its batch (20 x ~2.5 M tokens x 256 floats): gigabytes.
    done = subprocess.run(
        [sys.executable, "-c", PEAK_SCRIPT, pg_uri], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["status"] == "stored" and figures["chunks"] == 21
    assert figures["peak_mb"] < 1500, figures
    stored = store.find_document("memory-kb", "ledger.txt")
    assert stored.chunk_count == 21


CHINESE = textwrap.dedent("""
    import random
    def chinese(sentences, seed=3):
        # Sentences of 20 common characters (~1 cl100k token each; 400 bigrams: a small tsvector).
        rng = random.Random(seed)
        common = "的一是不了人我在有他这为之大来以个中上们到"
        return "".join("".join(rng.choice(common) for _ in range(rng.randint(8, 30))) + rng.choice("，。")
                       for _ in range(sentences))
""")
_made: dict[str, object] = {}
exec(CHINESE, _made)
_chinese = _made["chinese"]


def test_batches_of_chinese_texts_are_weighed_by_what_wordllama_pads_them_to() -> None:
    # Before: weighed in characters, the 16,000 read of a long Chinese chunk went in one batch with 20
    # others, padded to 21 x ~16,000 tokens x 256 floats (~350 MB; 1.5 GB in a 200 MB TXT of rarer ones).
    embedder = LocalEmbedder()
    model = embedder._load()
    texts = [_chinese(20, seed) for seed in range(20)] + [_chinese(3_000)]
    seen: list[list[int]] = []
    real = embedder._embed_batch

    def spy(batch: list[str]) -> np.ndarray:
        seen.append([len(e.ids) for e in model.tokenize(batch)])
        return real(batch)

    embedder._embed_batch = spy  # type: ignore[method-assign]
    vectors = embedder.embed(texts)
    assert vectors.shape == (21, 256)
    assert max(len(b) * max(b) for b in seen) <= 250_000  # tokens padded: ~250 MB of float32 vectors
    assert padded_length("abc") == 3 and padded_length("你好") == 2 + 6 * 4 and padded_length("é") == 7
    np.testing.assert_allclose(vectors[-1], embedder.embed([texts[-1][: LocalEmbedder.MAX_CHARS]])[0], atol=1e-6)


SPLIT_SCRIPT = PEAK_MB + textwrap.dedent("""
    import json
    from rag.chunking import ChunkSettings, split
    lines = ["Lighthouse keepers wrote the weather into a ledger every night.", "The lamp was trimmed at dusk.",
             "Gulls followed the supply boat, and fog came in from the west!", "Was the foghorn heard?"]
    block = "\\n\\n".join(" ".join(lines[(i + j) % 4] for j in range(i % 4 + 3)) for i in range(1000))
    split("warm up. " * 100)
    text = block * 90  # 19 MB, ~4 M tokens, made in one piece (no garbage for the split to reuse)
    baseline = peak_mb()
    chunks = split(text, ChunkSettings(max_num_chunks=20)).chunks
    print(json.dumps({"chunks": len(chunks), "mb": len(text) / 1e6, "end": chunks[-1].end == len(text),
                      "over_mb": peak_mb() - baseline}))
""")


def test_splitting_a_long_text_keeps_no_token_offsets_of_what_its_last_chunk_holds() -> None:
    # Before: every token's offsets were kept (~10 bytes of them a byte of English, 45 a token):
    # 202 MB over the baseline for this 19 MB text, 1.8 GB for a 200 MB TXT. Now the tokens of a
    # prefix (1 M characters) are kept and the last chunk's are counted: 36 MB, that chunk and a copy.
    done = subprocess.run([sys.executable, "-c", SPLIT_SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["chunks"] == 21 and figures["end"], figures
    assert figures["over_mb"] < 3 * figures["mb"], figures


CHINESE_SCRIPT = (
    PEAK_MB
    + CHINESE
    + textwrap.dedent("""
    import json, sys
    from rag.chunking import ChunkSettings
    from rag.embeddings.local import LocalEmbedder
    from rag.ingest import ingest_bytes
    from rag.store import Store
    data = chinese(100_000).encode()  # 6 MB, 2 M characters, ~2 M tokens
    embedder = LocalEmbedder()
    embedder.embed(["warm up"])
    store = Store(sys.argv[1])
    store.list_knowledge_bases()
    baseline = peak_mb()
    result = ingest_bytes(store, embedder, data, "log.txt", "memory-kb", ChunkSettings(max_num_chunks=20))
    store.close()
    print(json.dumps({"status": result.status, "chunks": result.chunks, "over_mb": peak_mb() - baseline}))
""")
)


def test_ingesting_a_long_chinese_text_stays_a_few_copies_of_it(store, pg_uri) -> None:
    # Before: 820 MB over the baseline (the batch padding above, and every token's offsets); now
    # 170 MB: the text, its chunks, and the store's COPY of the last one (its bigrams above all).
    done = subprocess.run(
        [sys.executable, "-c", CHINESE_SCRIPT, pg_uri], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["status"] == "stored" and figures["chunks"] == 21, figures
    assert figures["over_mb"] < 250, figures
    stored = store.find_document("memory-kb", "log.txt")
    assert stored.chunk_count == 21


def test_ingest_paths_does_not_hold_two_big_files_at_once(store, tmp_path, monkeypatch) -> None:
    # One file is written while the next is read: for two 200 MB TXTs, both in memory. Files of more
    # than OVERLAP_BYTES together take turns (the write of the first waits here for the second's
    # parse, which never comes while it waits); small ones still overlap.
    from rag.ingest import ingest_paths, pipeline

    monkeypatch.setattr(pipeline, "OVERLAP_BYTES", 20_000)
    for name, repeat in (("big-1.txt", 1_000), ("big-2.txt", 1_000), ("small-1.txt", 20), ("small-2.txt", 20)):
        (tmp_path / name).write_text("Harbour log, night watch. " * repeat, encoding="utf-8")
    parsed = {name: threading.Event() for name in ("big-2.txt", "small-2.txt")}
    overlapped: dict[str, bool] = {}
    real = store.write_document

    def write_document(**kwargs):
        following = {"big-1.txt": "big-2.txt", "small-1.txt": "small-2.txt"}.get(kwargs["filename"])
        if following:
            overlapped[kwargs["filename"]] = parsed[following].wait(timeout=5)
        return real(**kwargs)

    def on_stage(name: str):
        def tick(stage: str, fraction: float, message: str) -> None:
            if stage == "parse" and name in parsed:
                parsed[name].set()

        return tick

    monkeypatch.setattr(store, "write_document", write_document)
    names = ["big-1.txt", "big-2.txt", "small-1.txt", "small-2.txt"]
    results = list(
        ingest_paths(
            store,
            LocalEmbedder(),
            [tmp_path / n for n in names],
            "paths-kb",
            ChunkSettings(chunk_size=120),
            on_stage=on_stage,
        )
    )
    assert [r.status for r in results] == ["stored"] * 4
    assert overlapped == {"big-1.txt": False, "small-1.txt": True}


ANSWER_SCRIPT = textwrap.dedent("""
    import json
    import os
    from rag.llms import Message, embedded_chat_model
    from tests.smaps import resident_kb  # the GGUF's pages in this process's memory

    def anonymous_mb():  # the process's own pages: not the GGUF file mapped beside them
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) / 1024 for line in status if line.startswith("RssAnon:"))

    model = embedded_chat_model()
    before = anonymous_mb()
    context = "The Rotterdam warehouse lease was signed on 3 March 2021; the rent is 1,200 euros a month. " * 40
    messages = [Message("system", "Answer from the context.\\n\\nContext:\\n" + context),
                Message("user", "When was the lease signed?")]
    answer = "".join(e.text for e in model.stream(messages, temperature=0.0) if e.kind == "content")
    path = os.path.realpath(type(model)._weights_path())
    print(json.dumps({"model": model.name, "answer": answer, "own_mb": anonymous_mb() - before,
                      "mapped_mb": resident_kb(path) / 1024, "file_mb": os.path.getsize(path) / 2**20}))
""")


def test_the_embedded_chat_model_answers_without_a_second_copy_of_its_weights() -> None:
    # llama.cpp copied every Q4_K matrix into a repacked layout beside the mapped GGUF (597 MB for Qwen)
    # and sized its compute buffer for 512 rows of the 151,936-word output layer (306 MB): the model and
    # one answer took 850 MB of the app's own memory; ~250 with neither (KV cache 112 MB, compute buffer ~150),
    # now ~190 (8-bit keys: KV cache 90 MB; 128 rows at once; malloc's free memory handed back).
    run = subprocess.run(
        [sys.executable, "-c", ANSWER_SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )
    assert run.returncode == 0, run.stderr[-2000:]
    found = json.loads(run.stdout.strip().splitlines()[-1])
    assert "2021" in found["answer"] or "March" in found["answer"], found
    assert found["own_mb"] < 300, found
    # llama.cpp maps the GGUF whole (MAP_POPULATE); the token table's pages (125 MB), of which only the rows of
    # the prompt's tokens are read, are handed back after the load (rag.llms.residency).
    assert found["mapped_mb"] < found["file_mb"] - 100, found


E5_SCRIPT = textwrap.dedent("""
    import ctypes
    import json
    from rag.embeddings import E5Embedder

    def anonymous_mb():  # after glibc hands back what is free: what is left is held, not cached by malloc
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) / 1024 for line in status if line.startswith("RssAnon:"))

    embedder = E5Embedder()
    embedder.embed(["warm-up"])
    before = anonymous_mb()
    texts = [f"Ledger {i}: lighthouse keepers wrote the weather into a ledger every night. " * 40 for i in range(24)]
    vectors = embedder.embed(texts)  # 512 tokens each, in 2048-token batches
    print(json.dumps({"rows": len(vectors), "grown_mb": anonymous_mb() - before}))
""")


def test_e5_hands_back_the_memory_of_a_batch_after_it(tmp_path) -> None:
    # onnxruntime's arena kept what the largest batch needed (the attention's scores: 12 heads x 512² x 4
    # texts): 170 MB more of the app's own memory after an ingest, for good.
    run = subprocess.run(
        [sys.executable, "-c", E5_SCRIPT],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "RAG_DATA_DIR": str(tmp_path)},
    )
    assert run.returncode == 0, run.stderr[-2000:]
    found = json.loads(run.stdout.strip().splitlines()[-1])
    assert found["rows"] == 24 and found["grown_mb"] < 60, found
