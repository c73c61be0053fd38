"""Search modes measured on our own question set (English and Chinese), on the real store."""
from __future__ import annotations

import psycopg
import pytest

from rag import retrieve
from rag.chunking import Chunk
from rag.settings import Settings
from rag.evaluation import retrieval_set
from rag.store import Store

PASSAGES, DISTRACTORS, QUESTIONS = retrieval_set().passages, retrieval_set().distractors, retrieval_set().questions


@pytest.fixture
def eval_kb(store: Store, settings: Settings, pg_uri: str) -> str:
    embedder = retrieve.embedder_named_or_default(settings)
    for p in PASSAGES + DISTRACTORS:
        store.write_document(
            knowledge="eval", embedder=embedder.name, dimension=embedder.dimension, chunk_settings={},
            filename=p.key, path=None, data=p.text.encode(), sha256=p.key, page_count=1,
            chunks=[Chunk(0, p.text, 1, 0, len(p.text), (1,))], embeddings=embedder.embed([p.text]),
        )
    # As autovacuum would soon: keyword search reads which words are common from the statistics,
    # which must describe these passages, not what an earlier test stored.
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        conn.execute("ANALYZE vector_store")
    return "eval"


def test_hybrid_retrieves_at_least_as_well_as_either_mode(store: Store, settings: Settings, eval_kb: str) -> None:
    questions = [(q.question, q.passage) for q in QUESTIONS]
    quality = {mode: retrieve.mode_quality(store, settings, eval_kb, questions, mode=mode)
               for mode in retrieve.MODES}
    best_single = max(quality["vector"].hit_at_5, quality["keyword"].hit_at_5)
    assert quality["hybrid"].hit_at_5 >= best_single, quality
    assert quality["hybrid"].mrr >= quality["vector"].mrr, quality
    assert quality["keyword"].hit_at_5 >= 0.9 and quality["vector"].hit_at_5 >= 0.8, quality


def test_keyword_search_matches_chinese_by_bigrams(store: Store, settings: Settings, eval_kb: str) -> None:
    hits = retrieve.search(store, settings, "节假日加班工资", [eval_kb], top_k=3, mode="keyword")
    assert hits[0].original_filename == "zh-overtime"
    assert hits[0].keyword_score is not None and 0 < hits[0].keyword_score < 1
    assert retrieve.search(store, settings, "zzzz qqqq", [eval_kb], mode="keyword") == []


def test_keyword_query_operators_are_plain_words(store: Store, settings: Settings, eval_kb: str) -> None:
    # websearch syntax ("-word", quotes, "or") must not change the meaning of a user's query
    plain = retrieve.search(store, settings, "dividend shareholders", [eval_kb], top_k=3, mode="keyword")
    tricky = retrieve.search(store, settings, '"dividend" -shareholders or', [eval_kb], top_k=3, mode="keyword")
    assert [h.id for h in plain] == [h.id for h in tricky]


def test_hybrid_hits_carry_both_scores(store: Store, settings: Settings, eval_kb: str) -> None:
    hits = retrieve.search(store, settings, "How are keyword and embedding rankings combined?", [eval_kb],
                            top_k=5, mode="hybrid")
    assert hits[0].original_filename == "rrf"
    assert hits[0].vector_score is not None and hits[0].keyword_score is not None
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_fuse_is_weighted_reciprocal_rank() -> None:
    from rag.store import Hit

    def hit(name: str, v: float | None = None, k: float | None = None) -> Hit:
        return Hit(id=name, content=name, metadata={}, score=v or k or 0.0, vector_score=v, keyword_score=k)

    vec = [hit("a", v=0.9), hit("b", v=0.8)]
    kw = [hit("b", k=0.5), hit("c", k=0.4)]
    fused = retrieve.fuse(vec, kw, retrieve.Fusion(k=60, vector_weight=1, keyword_weight=2, depth=10), 3)
    expected = {"a": 1 / 61, "b": 1 / 62 + 2 / 61, "c": 2 / 62}
    assert [h.id for h in fused] == sorted(expected, key=expected.get, reverse=True)
    assert [round(h.score, 9) for h in fused] == [round(expected[h.id], 9) for h in fused]
    b = next(h for h in fused if h.id == "b")
    assert (b.vector_score, b.keyword_score) == (0.8, 0.5)


def test_keyword_search_ignores_words_most_chunks_contain(store: Store, pg_uri: str) -> None:
    import numpy as np
    import psycopg

    texts = [f"zorblat report number {i} about topic{i}" for i in range(40)]
    texts[7] += " with quixotic findings"
    store.write_document(knowledge="common", embedder="local:test", dimension=4, chunk_settings={},
                         filename="c.txt", path=None, data=b"c", sha256="c", page_count=1,
                         chunks=[Chunk(i, t, 5, 0, len(t), (1,)) for i, t in enumerate(texts)],
                         embeddings=np.ones((40, 4), dtype=np.float32))
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        conn.execute("ANALYZE vector_store")
    # 'zorblat' is in every chunk: left out, so only the chunk with 'quixotic' matches.
    hits = store.keyword_search("zorblat quixotic", ["common"], top_k=10)
    assert [h.content for h in hits] == [texts[7]]
    # A query of common words only is kept whole; equal scores come in document order.
    hits = store.keyword_search("zorblat", ["common"], top_k=10)
    assert [h.metadata["chunk_index"] for h in hits] == list(range(10))
    # Stop words only: nothing to search for, and no error.
    assert store.keyword_search("the of and", ["common"], top_k=10) == []


def test_keyword_ties_are_ordered_by_file_then_position(store: Store) -> None:
    import numpy as np

    text = "identical passage about lighthouses"
    for name in ("b.txt", "a.txt"):
        store.write_document(knowledge="ties", embedder="local:test", dimension=4, chunk_settings={},
                             filename=name, path=None, data=name.encode(), sha256=name, page_count=1,
                             chunks=[Chunk(i, text, 4, 0, len(text), (1,)) for i in range(3)],
                             embeddings=np.ones((3, 4), dtype=np.float32))
    for _ in range(3):  # the same order every time, whatever ids the chunks were given
        hits = store.keyword_search("lighthouses", ["ties"], top_k=6)
        assert len({h.score for h in hits}) == 1
        assert [(h.original_filename, h.metadata["chunk_index"]) for h in hits] == [
            ("a.txt", 0), ("a.txt", 1), ("a.txt", 2), ("b.txt", 0), ("b.txt", 1), ("b.txt", 2)]


def test_hybrid_searches_keywords_while_the_query_is_embedded(
        store: Store, settings: Settings, eval_kb: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The keyword search must not wait for the embedder (Ollama's can take tens of ms)."""
    import threading

    started = threading.Event()
    real_keyword_search = store.keyword_search
    embedder = retrieve.embedder_named(store.list_knowledge_bases()[0].embedder, settings)
    real_embed = embedder.embed

    def keyword_search(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        started.set()
        return real_keyword_search(*args, **kwargs)

    def embed(texts):  # noqa: ANN001, ANN202
        # Sequential code would reach the keyword search only after this returns: it would time out.
        assert started.wait(10), "the keyword search did not start while the query was being embedded"
        return real_embed(texts)

    monkeypatch.setattr(store, "keyword_search", keyword_search)
    monkeypatch.setattr(embedder, "embed", embed)
    hits = retrieve.search(store, settings, "How are keyword and embedding rankings combined?", [eval_kb],
                            top_k=5, mode="hybrid")
    assert hits[0].original_filename == "rrf"
    assert hits[0].vector_score is not None and hits[0].keyword_score is not None


def test_a_failing_keyword_search_fails_the_hybrid_search(
        store: Store, settings: Settings, eval_kb: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from rag.errors import StoreError

    def broken(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise StoreError("the database went away")

    monkeypatch.setattr(store, "keyword_search", broken)
    with pytest.raises(StoreError, match="the database went away"):
        retrieve.search(store, settings, "dividend", [eval_kb], mode="hybrid")
