"""Embedders against a protocol-level Ollama stand-in (pytest-httpserver) and the real WordLlama weights.

The stand-in speaks Ollama's documented wire format; nothing here reaches the internet or downloads weights.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import numpy as np
import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from rag.embeddings import (
    Embedder,
    LocalEmbedder,
    OllamaEmbedder,
    embedder_for_name,
    local_fallback_reason,
    ollama_has_model,
    ollama_models,
    resolve_embedder,
    short_name,
)
from rag.errors import EmbedderError
from rag.settings import Settings

MODEL = "nomic-embed-text"
TAGS = {
    "models": [
        {
            "name": "nomic-embed-text:latest",
            "model": "nomic-embed-text:latest",
            "modified_at": "2024-11-01T10:00:00.000000000+01:00",
            "size": 274302450,
            "digest": "0a109f422b47e3a30ba2b10eca18548e944e8a23073ee3f3e947efcf3c45e59f",
            "details": {
                "parent_model": "",
                "format": "gguf",
                "family": "nomic-bert",
                "families": ["nomic-bert"],
                "parameter_size": "137M",
                "quantization_level": "F16",
            },
        },
        {"name": "llama3.2:3b", "model": "llama3.2:3b", "size": 2019393189, "digest": "a80c4f17"},
    ]
}


def host_of(server: HTTPServer) -> str:
    return server.url_for("/").rstrip("/")


def sent_bodies(server: HTTPServer) -> list[dict]:
    return [json.loads(request.get_data()) for request, _ in server.log]


def vector(i: int, dim: int = 4) -> list[float]:
    """A distinct, deliberately non-unit vector per index."""
    return [float(i + 1), 2.0 * (i + 1), 0.5, float(dim)][:dim]


def fake_embed(request: Request) -> Response:
    """Answers /api/embed like Ollama: one vector per input, in order."""
    body = json.loads(request.get_data())
    embeddings = [vector(len(text)) for text in body["input"]]
    return Response(
        json.dumps({"model": body["model"], "embeddings": embeddings}),
        content_type="application/json",
    )


def default_local_name() -> str:
    """What `local` means on this machine: e5, or WordLlama where e5 cannot run."""
    return "local:e5" if local_fallback_reason() is None else "local:wordllama-l2_supercat-256"


def make_settings(host: str, embedder: str = "auto", batch_size: int = 2) -> Settings:
    return Settings(
        database_url=None,
        data_dir=Path("/nonexistent-rag-data"),
        ollama_host=host,
        embedder=embedder,
        chat_model=None,
        ollama_timeout=5.0,
        embed_batch_size=batch_size,
    )


# --- OllamaEmbedder -----------------------------------------------------------------------------


def test_batches_in_order_with_exact_bodies_and_progress(httpserver: HTTPServer) -> None:
    texts = ["a", "bb", "ccc", "dddd", "eeeee"]
    for batch in (texts[0:2], texts[2:4], texts[4:5]):
        httpserver.expect_ordered_request(
            "/api/embed", method="POST", json={"model": MODEL, "input": batch}
        ).respond_with_handler(fake_embed)
    calls: list[tuple[int, int]] = []

    embedder = OllamaEmbedder(host_of(httpserver), MODEL, batch_size=2, timeout=5)
    vectors = embedder.embed(texts, progress=lambda done, total: calls.append((done, total)))

    httpserver.check_assertions()
    assert sent_bodies(httpserver) == [
        {"model": MODEL, "input": ["a", "bb"]},
        {"model": MODEL, "input": ["ccc", "dddd"]},
        {"model": MODEL, "input": ["eeeee"]},
    ]
    assert calls == [(2, 5), (4, 5), (5, 5)]
    assert vectors.shape == (5, 4)
    assert vectors.dtype == np.float32
    # Rows stay in input order: row i is the normalised vector for a text of length i + 1.
    for i, row in enumerate(vectors):
        expected = np.array(vector(i + 1), dtype=np.float32)
        np.testing.assert_allclose(row, expected / np.linalg.norm(expected), rtol=1e-6)


def test_rows_are_unit_length_and_dimension_is_learned(httpserver: HTTPServer) -> None:
    httpserver.expect_oneshot_request("/api/embed", method="POST").respond_with_json(
        {"model": MODEL, "embeddings": [[3.0, 4.0, 0.0], [0.0, 0.0, 10.0]]}
    )
    embedder = OllamaEmbedder(host_of(httpserver), MODEL, batch_size=8, timeout=5)

    vectors = embedder.embed(["x", "y"])

    np.testing.assert_allclose(vectors, [[0.6, 0.8, 0.0], [0.0, 0.0, 1.0]], rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    # Learned from the answer: asking again must not send anything (the stand-in would answer 500).
    assert embedder.dimension == 3
    assert embedder.embed([]).shape == (0, 3)
    assert len(httpserver.log) == 1


def test_dimension_before_any_embed_sends_one_probe(httpserver: HTTPServer) -> None:
    httpserver.expect_oneshot_request("/api/embed", method="POST").respond_with_handler(fake_embed)
    embedder = OllamaEmbedder(host_of(httpserver), MODEL, timeout=5)

    assert embedder.dimension == 4
    assert embedder.dimension == 4

    (body,) = sent_bodies(httpserver)
    assert set(body) == {"model", "input"}
    assert body["model"] == MODEL
    assert len(body["input"]) == 1


def test_identity_and_limits() -> None:
    embedder = OllamaEmbedder("http://127.0.0.1:9", "nomic-embed-text:latest")
    assert embedder.name == "ollama:nomic-embed-text"
    assert embedder.max_input_tokens == 2048
    assert OllamaEmbedder("http://127.0.0.1:9", "some-new-embedder").max_input_tokens is None
    # Both satisfy the protocol (checked by type checkers; isinstance would probe Ollama).
    embedders: list[Embedder] = [embedder, LocalEmbedder()]
    assert [e.name for e in embedders] == ["ollama:nomic-embed-text", "local:wordllama-l2_supercat-256"]
    # What the Library's headline shows of each (the whole name was cut to "local:wordll…").
    names = [*(e.name for e in embedders), "local:wordllama", "local:e5", "ollama:bge-m3:567m"]
    assert [short_name(n) for n in names] == ["nomic-embed-text", "WordLlama", "WordLlama", "e5", "bge-m3:567m"]


def test_missing_model_says_how_to_pull_it(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/embed", method="POST").respond_with_json(
        {"error": f'model "{MODEL}" not found, try pulling it first'}, status=404
    )
    embedder = OllamaEmbedder(host_of(httpserver), MODEL, timeout=5)

    with pytest.raises(EmbedderError) as caught:
        embedder.embed(["hello"])

    assert str(caught.value) == f"Ollama has no model '{MODEL}': run 'ollama pull {MODEL}'"


def test_server_error_carries_ollamas_text(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/embed", method="POST").respond_with_json(
        {"error": "llama runner process has terminated: signal: killed"}, status=500
    )
    embedder = OllamaEmbedder(host_of(httpserver), "mxbai-embed-large", timeout=5)

    with pytest.raises(EmbedderError) as caught:
        embedder.embed(["hello"])

    message = str(caught.value)
    assert message == (
        "Ollama failed to embed with 'mxbai-embed-large': llama runner process has terminated: signal: killed"
    )
    assert "\n" not in message


def test_connection_refused_says_not_reachable(dead_host: str) -> None:
    embedder = OllamaEmbedder(dead_host, MODEL, timeout=5)

    with pytest.raises(EmbedderError) as caught:
        embedder.embed(["hello"])

    assert str(caught.value) == (
        f"Ollama is not reachable at {dead_host} (connection refused): start it with 'ollama serve' or set OLLAMA_HOST"
    )


def test_timeout_says_not_reachable(httpserver: HTTPServer) -> None:
    def slow(request: Request) -> Response:
        time.sleep(0.5)
        return fake_embed(request)

    httpserver.expect_request("/api/embed", method="POST").respond_with_handler(slow)
    embedder = OllamaEmbedder(host_of(httpserver), MODEL, timeout=0.1)

    with pytest.raises(EmbedderError) as caught:
        embedder.embed(["hello"])

    message = str(caught.value)
    assert message.startswith(f"Ollama is not reachable at {host_of(httpserver)} (no answer within 0.1 s)")
    assert "RAG_OLLAMA_TIMEOUT" in message


def test_wrong_number_of_embeddings(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/embed", method="POST").respond_with_json(
        {"model": MODEL, "embeddings": [[1.0, 0.0]]}
    )
    embedder = OllamaEmbedder(host_of(httpserver), MODEL, timeout=5)

    with pytest.raises(EmbedderError, match="returned 1 embeddings for 2 texts"):
        embedder.embed(["one", "two"])


def test_inconsistent_dimensions_within_a_response(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/embed", method="POST").respond_with_json(
        {"model": MODEL, "embeddings": [[1.0, 0.0], [1.0, 0.0, 0.0]]}
    )
    embedder = OllamaEmbedder(host_of(httpserver), MODEL, timeout=5)

    with pytest.raises(EmbedderError, match="inconsistent dimensions"):
        embedder.embed(["one", "two"])


def test_dimension_change_between_batches(httpserver: HTTPServer) -> None:
    httpserver.expect_ordered_request("/api/embed", method="POST").respond_with_json(
        {"model": MODEL, "embeddings": [[1.0, 0.0]]}
    )
    httpserver.expect_ordered_request("/api/embed", method="POST").respond_with_json(
        {"model": MODEL, "embeddings": [[1.0, 0.0, 0.0]]}
    )
    embedder = OllamaEmbedder(host_of(httpserver), MODEL, batch_size=1, timeout=5)

    with pytest.raises(EmbedderError, match=r"3-dimensional embeddings .* after 2-dimensional"):
        embedder.embed(["one", "two"])


def test_not_ollama_answering(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/embed", method="POST").respond_with_data(
        "<html>proxy login</html>", content_type="text/html"
    )
    embedder = OllamaEmbedder(host_of(httpserver), MODEL, timeout=5)

    with pytest.raises(EmbedderError, match="did not answer /api/embed like Ollama does"):
        embedder.embed(["hello"])


def test_a_bare_string_is_refused() -> None:
    with pytest.raises(TypeError):
        OllamaEmbedder("http://127.0.0.1:9").embed("not a list")


# --- discovery and resolution -------------------------------------------------------------------


def test_ollama_models_lists_tags(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/tags", method="GET").respond_with_json(TAGS)

    assert ollama_models(host_of(httpserver)) == ["nomic-embed-text:latest", "llama3.2:3b"]


def test_ollama_models_none_when_down(dead_host: str) -> None:
    assert ollama_models(dead_host, timeout=1.0) is None


def test_ollama_models_none_when_not_ollama(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/tags").respond_with_data("404 page not found", status=404)

    assert ollama_models(host_of(httpserver)) is None


@pytest.mark.parametrize(
    ("models", "model", "expected"),
    [
        (["nomic-embed-text:latest"], "nomic-embed-text", True),
        (["nomic-embed-text"], "nomic-embed-text:latest", True),
        (["nomic-embed-text:v1.5"], "nomic-embed-text", False),
        (["nomic-embed-text:v1.5"], "nomic-embed-text:v1.5", True),
        (["nomic-embed-text-v2:latest"], "nomic-embed-text", False),
        (["Nomic-Embed-Text:latest"], "nomic-embed-text", True),
        (["localhost:5000/team/embed:latest"], "localhost:5000/team/embed", True),
        ([], "nomic-embed-text", False),
    ],
)
def test_ollama_has_model(models: list[str], model: str, expected: bool) -> None:
    assert ollama_has_model(models, model) is expected


def test_auto_uses_ollama_when_it_has_the_model(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/tags", method="GET").respond_with_json(TAGS)

    embedder = resolve_embedder(make_settings(host_of(httpserver)))

    assert isinstance(embedder, OllamaEmbedder)
    assert embedder.name == "ollama:nomic-embed-text"
    assert [request.path for request, _ in httpserver.log] == ["/api/tags"]


def test_auto_falls_back_when_model_missing(httpserver: HTTPServer, caplog: pytest.LogCaptureFixture) -> None:
    httpserver.expect_request("/api/tags", method="GET").respond_with_json(
        {"models": [m for m in TAGS["models"] if not m["name"].startswith("nomic")]}
    )

    with caplog.at_level(logging.INFO, logger="rag.embeddings"):
        embedder = resolve_embedder(make_settings(host_of(httpserver)))

    assert embedder.name == default_local_name()
    assert "ollama pull nomic-embed-text" in caplog.text


def test_auto_falls_back_when_ollama_down(dead_host: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="rag.embeddings"):
        embedder = resolve_embedder(make_settings(dead_host))

    assert embedder.name == default_local_name()
    assert "not reachable" in caplog.text


def test_explicit_choices_do_not_probe(dead_host: str) -> None:
    # Nothing listens at dead_host, so any request would raise.
    ollama_choice = resolve_embedder(make_settings(dead_host, "ollama:mxbai-embed-large", batch_size=7))
    assert isinstance(ollama_choice, OllamaEmbedder)
    assert ollama_choice.name == "ollama:mxbai-embed-large"
    assert isinstance(resolve_embedder(make_settings(dead_host, "local:wordllama")), LocalEmbedder)
    assert resolve_embedder(make_settings(dead_host, "local")).name == default_local_name()
    with pytest.raises(EmbedderError, match="not understood"):
        resolve_embedder(make_settings(dead_host, "openai"))


def test_embedder_for_name_round_trips(dead_host: str) -> None:
    settings = make_settings(dead_host)
    assert embedder_for_name("ollama:nomic-embed-text", settings).name == "ollama:nomic-embed-text"
    assert embedder_for_name(LocalEmbedder().name, settings).name == "local:wordllama-l2_supercat-256"
    with pytest.raises(EmbedderError, match="does not provide"):
        embedder_for_name("local:wordllama-l3_supercat-512", settings)
    with pytest.raises(EmbedderError, match="Unknown embedder"):
        embedder_for_name("openai:text-embedding-3-small", settings)


def test_ollama_embedder_from_settings_uses_batch_size(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/embed", method="POST").respond_with_handler(fake_embed)
    embedder = embedder_for_name("ollama:nomic-embed-text", make_settings(host_of(httpserver), batch_size=2))

    embedder.embed(["a", "b", "c"])

    assert [body["input"] for body in sent_bodies(httpserver)] == [["a", "b"], ["c"]]


# --- LocalEmbedder (real WordLlama weights from the wheel, offline) -----------------------------


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    return LocalEmbedder(batch_size=3)


def test_local_shape_dtype_and_norm(local: LocalEmbedder) -> None:
    texts = [f"Sentence number {i} about databases." for i in range(7)]
    calls: list[tuple[int, int]] = []

    vectors = local.embed(texts, progress=lambda done, total: calls.append((done, total)))

    assert vectors.shape == (7, 256)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert calls == [(3, 7), (6, 7), (7, 7)]
    assert local.name == "local:wordllama-l2_supercat-256"
    assert local.dimension == 256
    assert local.max_input_tokens is None


def test_local_related_sentences_score_higher(local: LocalEmbedder) -> None:
    query, related, unrelated = local.embed(
        [
            "How do I reset my password?",
            "Steps to change your account password",
            "Quarterly revenue rose by ten percent.",
        ]
    )
    assert query @ related > query @ unrelated + 0.2


def test_local_chinese_text(local: LocalEmbedder) -> None:
    vectors = local.embed(["机器学习是人工智能的一个分支。", "深度学习使用神经网络。", "今天天气很好。"])

    assert vectors.shape == (3, 256)
    assert np.isfinite(vectors).all()
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


def test_local_empty_inputs(local: LocalEmbedder) -> None:
    assert local.embed([]).shape == (0, 256)
    assert local.embed([]).dtype == np.float32
    # An empty text has no tokens: a zero row, never NaN.
    assert np.isfinite(local.embed([""])).all()


def test_local_is_deterministic_and_batch_independent(local: LocalEmbedder) -> None:
    texts = ["alpha beta", "a much longer sentence that pads the batch a lot more", "gamma"]
    together = local.embed(texts)
    alone = np.vstack([LocalEmbedder(batch_size=1).embed([t]) for t in texts])

    np.testing.assert_allclose(together, alone, atol=1e-6)


def test_local_vectors_are_wordllamas_own(local: LocalEmbedder) -> None:
    """Each text's token vectors are pooled on their own (not padded into one batch array as WordLlama's `embed`
    does): the vectors must still be WordLlama's, so knowledge bases built before stay valid."""
    texts = [
        "The lighthouse keeper kept a log of every ship that passed the harbour.",
        "机器学习是人工智能的一个分支，深度学习使用神经网络。",
        "",
        " ",
        "x" * 50,
        "mixed 中文 and English, with numbers 1898 and symbols ∂ ≤ ☃",
        "word " * 700,
        "HTML kept as text: <s>struck</s>, and <unk> too",
    ]
    model = local._load()
    theirs = model.embed(texts, norm=False, batch_size=len(texts))
    norms = np.linalg.norm(theirs, axis=1, keepdims=True)
    expected = np.divide(theirs, norms, out=np.zeros_like(theirs), where=norms > 0)

    ours = local.embed(texts)

    np.testing.assert_allclose(ours, expected, atol=1e-6)
    assert not ours[2].any() and np.count_nonzero(np.linalg.norm(ours, axis=1)) == len(texts) - 1


ODD_TEXTS = [
    "",
    " ",
    "  two spaces before, two after  ",
    "tab\tnewline\n space\n\n  gap",
    "a literal ▁ mark and ▁▁ two",
    "<s>struck</s>",
    "a <unk> b </s>",
    "no-break\u00a0space and ideographic\u3000space",
    "emoji 🙂 and a surrogate-plane ideograph 𠀀 here",
    "全角，标点。English inside 中文123数字 and 1,234.5",
    "\u200bzero-width",
]


def test_local_token_ids_are_the_tokenizers_own(local: LocalEmbedder) -> None:
    """`llama_tokens` normalises the text itself (a ▁ before it, each space one), counts the characters that are a
    token on their own from a table (CJK ideographs, most punctuation) and gives the rest, cut before each ▁, to the
    tokenizer without its normalizer: the ids must be the tokenizer's own (as a multiset: the mean reads no order), on
    real passages (English and Chinese), odd text and random mixes; a text holding an added token ("<s>") goes to the
    tokenizer whole, where the two would differ."""
    import random

    from rag.evaluation.sets import eval_set

    counter = local._llama_ids()
    assert counter.shortcut  # WordLlama's configuration is the one the shortcut was worked out for
    rng = random.Random(5)
    alphabet = "ab Z9 ,.\n\t▁<>s/中文检索。，！“”🙂\u00a0\u3000"
    mixes = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(400)]
    texts = [p.text for name in ("en_race", "zh_c3", "zh_cmrc_trial") for p in eval_set(name).passages]
    texts += ODD_TEXTS + mixes
    theirs = [e.ids for e in local._tokenizer().encode_batch(texts, add_special_tokens=False)]
    ours = local._ids(texts)
    assert [sorted(ids.tolist()) for ids in ours] == [sorted(ids) for ids in theirs]
    # The added tokens are what must go to the tokenizer whole: normalised apart, "<s>" after a space would differ.
    bare = counter._bare
    assert bare is not None
    assert (
        bare.encode("▁a▁<s>▁b", add_special_tokens=False).ids
        != local._tokenizer().encode("a <s> b", add_special_tokens=False).ids
    )
