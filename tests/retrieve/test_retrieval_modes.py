"""Search modes measured on our own question set (English and Chinese), on the real store."""

from __future__ import annotations

from collections.abc import Sequence

import psycopg
import pytest

from rag import retrieve
from rag.chunking import Chunk
from rag.evaluation import retrieval_set
from rag.evaluation.datasets import Passage
from rag.evaluation.quality import mode_quality
from rag.settings import Settings
from rag.store import Store

PASSAGES, DISTRACTORS, QUESTIONS = retrieval_set().passages, retrieval_set().distractors, retrieval_set().questions


def write_passages(store: Store, settings: Settings, knowledge: str, passages: Sequence[Passage]) -> None:
    """Each passage a document of one chunk in `knowledge`, embedded with the configured embedder."""
    embedder = retrieve.embedder_named_or_default(settings)
    for p in passages:
        store.write_document(
            knowledge=knowledge,
            embedder=embedder.name,
            dimension=embedder.dimension,
            chunk_settings={},
            filename=p.key,
            path=None,
            data=p.text.encode(),
            sha256=p.key,
            page_count=1,
            chunks=[Chunk(0, p.text, 1, 0, len(p.text), (1,))],
            embeddings=embedder.embed([p.text]),
        )


@pytest.fixture
def eval_kb(store: Store, settings: Settings, pg_uri: str) -> str:
    write_passages(store, settings, "eval", PASSAGES + DISTRACTORS)
    # As autovacuum would soon: keyword search reads which words are common from the statistics,
    # which must describe these passages, not what an earlier test stored.
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        conn.execute("ANALYZE vector_store")
    return "eval"


def test_hybrid_retrieves_at_least_as_well_as_either_mode(store: Store, settings: Settings, eval_kb: str) -> None:
    questions = [(q.question, q.passage) for q in QUESTIONS]
    quality = {mode: mode_quality(store, settings, eval_kb, questions, mode=mode) for mode in retrieve.MODES}
    best_single = max(quality["vector"].hit_at_5, quality["keyword"].hit_at_5)
    assert quality["hybrid"].hit_at_5 >= best_single, quality
    assert quality["hybrid"].mrr >= quality["vector"].mrr, quality
    assert quality["keyword"].hit_at_5 >= 0.9 and quality["vector"].hit_at_5 >= 0.8, quality


def test_keyword_search_matches_chinese_by_bigrams(store: Store, settings: Settings, eval_kb: str) -> None:
    hits = retrieve.search(store, settings, "节假日加班工资", [eval_kb], top_k=3, mode="keyword")
    assert hits[0].original_filename == "zh-overtime"
    assert hits[0].keyword_score is not None and 0 < hits[0].keyword_score == hits[0].score  # BM25
    assert retrieve.search(store, settings, "zzzz qqqq", [eval_kb], mode="keyword") == []


def test_keyword_query_operators_are_plain_words(store: Store, settings: Settings, eval_kb: str) -> None:
    # websearch syntax ("-word", quotes, "or") must not change the meaning of a user's query
    plain = retrieve.search(store, settings, "dividend shareholders", [eval_kb], top_k=3, mode="keyword")
    tricky = retrieve.search(store, settings, '"dividend" -shareholders or', [eval_kb], top_k=3, mode="keyword")
    assert [h.id for h in plain] == [h.id for h in tricky]


def test_hybrid_hits_carry_both_scores(store: Store, settings: Settings, eval_kb: str) -> None:
    hits = retrieve.search(
        store, settings, "How are keyword and embedding rankings combined?", [eval_kb], top_k=5, mode="hybrid"
    )
    assert hits[0].original_filename == "rrf"
    assert hits[0].vector_score is not None and hits[0].keyword_score is not None
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_fuse_is_weighted_reciprocal_rank() -> None:
    from rag.store import Hit

    def hit(name: str, v: float | None = None, k: float | None = None) -> Hit:
        return Hit(id=name, content=name, metadata={}, score=v or k or 0.0, vector_score=v, keyword_score=k)

    vec = [hit("a", v=0.9), hit("b", v=0.8)]
    kw = [hit("b", k=0.5), hit("c", k=0.4)]
    fused = retrieve.fuse(vec, kw, retrieve.Fusion(method="rrf", k=60, vector_weight=1, keyword_weight=2, depth=10), 3)
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
    store.write_document(
        knowledge="common",
        embedder="local:test",
        dimension=4,
        chunk_settings={},
        filename="c.txt",
        path=None,
        data=b"c",
        sha256="c",
        page_count=1,
        chunks=[Chunk(i, t, 5, 0, len(t), (1,)) for i, t in enumerate(texts)],
        embeddings=np.ones((40, 4), dtype=np.float32),
    )
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        conn.execute("ANALYZE vector_store")
    # 'zorblat' is in every chunk: BM25 weighs it near zero, so the chunk with 'quixotic' leads by far.
    hits = store.keyword_search("zorblat quixotic", ["common"], top_k=10)
    assert hits[0].content == texts[7] and hits[0].score > 100 * hits[1].score
    # A query of common words only still ranks; equal scores come in document order (chunk 7,
    # the longest, comes last).
    hits = store.keyword_search("zorblat", ["common"], top_k=10)
    assert [h.metadata["chunk_index"] for h in hits] == [i for i in range(11) if i != 7]
    # Stop words only: nothing to search for, and no error.
    assert store.keyword_search("the of and", ["common"], top_k=10) == []


def test_keyword_ties_are_ordered_by_file_then_position(store: Store) -> None:
    import numpy as np

    text = "identical passage about lighthouses"
    for name in ("b.txt", "a.txt"):
        store.write_document(
            knowledge="ties",
            embedder="local:test",
            dimension=4,
            chunk_settings={},
            filename=name,
            path=None,
            data=name.encode(),
            sha256=name,
            page_count=1,
            chunks=[Chunk(i, text, 4, 0, len(text), (1,)) for i in range(3)],
            embeddings=np.ones((3, 4), dtype=np.float32),
        )
    for _ in range(3):  # the same order every time, whatever ids the chunks were given
        hits = store.keyword_search("lighthouses", ["ties"], top_k=6)
        assert len({h.score for h in hits}) == 1
        assert [(h.original_filename, h.metadata["chunk_index"]) for h in hits] == [
            ("a.txt", 0),
            ("a.txt", 1),
            ("a.txt", 2),
            ("b.txt", 0),
            ("b.txt", 1),
            ("b.txt", 2),
        ]


def test_hybrid_searches_keywords_while_the_query_is_embedded(
    store: Store, settings: Settings, eval_kb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The keyword search must not wait for the embedder (Ollama's can take tens of ms)."""
    import threading

    started = threading.Event()
    real_keyword_search = store.keyword_search
    embedder = retrieve.embedder_named(store.list_knowledge_bases()[0].embedder, settings)
    real_embed = embedder.embed

    def keyword_search(*args, **kwargs):  # noqa: ANN002
        started.set()
        return real_keyword_search(*args, **kwargs)

    def embed(texts):
        # Sequential code would reach the keyword search only after this returns: it would time out.
        assert started.wait(10), "the keyword search did not start while the query was being embedded"
        return real_embed(texts)

    monkeypatch.setattr(store, "keyword_search", keyword_search)
    monkeypatch.setattr(embedder, "embed", embed)
    hits = retrieve.search(
        store, settings, "How are keyword and embedding rankings combined?", [eval_kb], top_k=5, mode="hybrid"
    )
    assert hits[0].original_filename == "rrf"
    assert hits[0].vector_score is not None and hits[0].keyword_score is not None


def test_a_failing_keyword_search_fails_the_hybrid_search(
    store: Store, settings: Settings, eval_kb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rag.errors import StoreError

    def broken(*args, **kwargs):  # noqa: ANN002
        raise StoreError("the database went away")

    monkeypatch.setattr(store, "keyword_search", broken)
    with pytest.raises(StoreError, match="the database went away"):
        retrieve.search(store, settings, "dividend", [eval_kb], mode="hybrid")


# --- readable scores: a hybrid hit's fused rank with its vector and keyword ranks and scores ----------


def test_hybrid_hits_carry_their_rank_in_each_search(store: Store, settings: Settings, eval_kb: str) -> None:
    query = "How are keyword and embedding rankings combined?"
    fusion = retrieve.DEFAULT_FUSION
    hybrid = retrieve.search(store, settings, query, [eval_kb], top_k=8, mode="hybrid")
    vector = retrieve.search(store, settings, query, [eval_kb], top_k=fusion.depth, mode="vector")
    keyword = retrieve.search(store, settings, query, [eval_kb], top_k=fusion.depth, mode="keyword")
    by_vector = {h.id: (rank, h.vector_score) for rank, h in enumerate(vector, 1)}
    by_keyword = {h.id: (rank, h.keyword_score) for rank, h in enumerate(keyword, 1)}
    assert [h.fused_rank for h in hybrid] == list(range(1, len(hybrid) + 1))
    for hit in hybrid:
        assert (hit.vector_rank, hit.vector_score) == by_vector.get(hit.id, (None, None))
        assert (hit.keyword_rank, hit.keyword_score) == by_keyword.get(hit.id, (None, None))
    assert any(h.keyword_rank is None for h in hybrid)  # a chunk only the vectors found
    # The single-mode searches number their own hits, and leave the other ranks empty.
    assert [h.vector_rank for h in vector] == list(range(1, len(vector) + 1))
    assert {(h.fused_rank, h.keyword_rank) for h in vector} == {(None, None)}
    assert {(h.fused_rank, h.vector_rank) for h in keyword} == {(None, None)}


def test_a_hit_says_where_each_search_ranked_it() -> None:
    from rag.store import Hit

    both = Hit(
        id="a",
        content="",
        metadata={},
        score=0.0325,
        vector_score=0.8213,
        keyword_score=7.4,
        fused_rank=2,
        vector_rank=3,
        keyword_rank=1,
    )
    assert both.ranking == "hybrid #2 · vector #3 (0.82) · keyword #1 (BM25 7.4)"
    only_vector = Hit(id="b", content="", metadata={}, score=0.01, vector_score=0.5, fused_rank=4, vector_rank=9)
    assert only_vector.ranking == "hybrid #4 · vector #9 (0.50) · keyword: not found"
    vector_only = Hit(id="c", content="", metadata={}, score=0.7, vector_score=0.7, vector_rank=1)
    assert vector_only.ranking == "vector #1 (0.70)"
    assert Hit(id="d", content="", metadata={}, score=1.0).ranking == "score 1.000"
    out = both.as_dict()
    assert (out["fused_rank"], out["vector_rank"], out["keyword_rank"], out["ranking"]) == (2, 3, 1, both.ranking)
    assert "keyword_rank" not in only_vector.as_dict()


def test_fuse_adds_min_max_normalised_scores() -> None:
    from rag.store import Hit

    def hit(name: str, v: float | None = None, k: float | None = None) -> Hit:
        return Hit(id=name, content=name, metadata={}, score=v or k or 0.0, vector_score=v, keyword_score=k)

    vec = [hit("a", v=0.9), hit("b", v=0.8), hit("c", v=0.4)]
    kw = [hit("c", k=12.0), hit("d", k=7.0), hit("b", k=2.0)]
    fused = retrieve.fuse(vec, kw, retrieve.Fusion(method="scores", vector_weight=1, keyword_weight=2, depth=10), 4)
    # vector, min-max: a 1, b 0.8, c 0 ((s - 0.4) / 0.5); keyword, a share of the best BM25 score:
    # c 1, d 7/12, b 2/12; weighted 1:2, over 3.
    expected = {"a": 1 / 3, "b": (0.8 + 2 * 2 / 12) / 3, "c": 2 / 3, "d": 2 * 7 / 12 / 3}
    assert [h.id for h in fused] == ["c", "d", "b", "a"]
    # A tie keeps the vector list's order: a (vector 1) and e (keyword, half of the best, x2).
    tie = retrieve.fuse(
        [hit("a", v=0.9), hit("z", v=0.1)],
        [hit("y", k=4.0), hit("e", k=2.0)],
        retrieve.Fusion(vector_weight=1, keyword_weight=2),
        4,
    )
    assert [h.id for h in tie] == ["y", "a", "e", "z"]
    assert [round(h.score, 9) for h in fused] == [round(expected[h.id], 9) for h in fused]
    # One hit alone in a list counts as its best.
    alone = retrieve.Fusion(vector_weight=1, keyword_weight=2)
    assert retrieve.fuse([hit("x", v=0.2)], [], alone, 1)[0].score == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="unknown fusion method 'max'"):
        retrieve.Fusion(method="max")
    with pytest.raises(ValueError, match="not both 0"):
        retrieve.Fusion(vector_weight=0, keyword_weight=0)


def test_fuse_numbers_its_hits_and_keeps_each_lists_rank() -> None:
    from rag.store import Hit

    vec = [
        Hit(id=n, content=n, metadata={}, score=s, vector_score=s, vector_rank=r)
        for r, (n, s) in enumerate((("a", 0.9), ("b", 0.8)), 1)
    ]
    kw = [
        Hit(id=n, content=n, metadata={}, score=s, keyword_score=s, keyword_rank=r)
        for r, (n, s) in enumerate((("b", 5.0), ("c", 4.0)), 1)
    ]
    fused = retrieve.fuse(vec, kw, retrieve.Fusion(method="rrf", k=60, vector_weight=1, keyword_weight=1, depth=10), 3)
    assert [(h.id, h.fused_rank, h.vector_rank, h.keyword_rank) for h in fused] == [
        ("b", 1, 2, 1),
        ("a", 2, 1, None),
        ("c", 3, None, 2),
    ]


# --- quality of a search mode over questions --------------------------------------------------------


def test_rank_of_the_right_chunk_by_file_or_expected_text() -> None:
    from rag.evaluation import Question
    from rag.evaluation.quality import rank_of
    from rag.store import Hit

    hits = [
        Hit(id=str(i), content=text, metadata={"original_filename": name}, score=1.0)
        for i, (name, text) in enumerate(
            (("a.pdf", "Depots open at six."), ("b.pdf", "The Manager\nsigns."), ("a.pdf", "The manager signs twice."))
        )
    ]
    assert rank_of(Question("q", "", "a.pdf"), hits) == 1
    assert rank_of(Question("q", "the manager signs"), hits) == 2
    assert rank_of(Question("q", "the manager signs", "a.pdf"), hits) == 3
    assert rank_of(Question("q", "", "c.pdf"), hits) is None


def test_mode_quality_reads_ranks_down_to_its_depth(store: Store, settings: Settings, eval_kb: str) -> None:
    questions = [(q.question, q.passage) for q in QUESTIONS]
    deep = mode_quality(store, settings, eval_kb, questions, mode="vector", depth=10)
    shallow = mode_quality(store, settings, eval_kb, questions, mode="vector", depth=1)
    assert shallow.ranks == tuple(r if r == 1 else None for r in deep.ranks)
    assert shallow.hit_at_5 == shallow.hit_at_1 == deep.hit_at_1
    assert deep.hit_at_1 <= deep.hit_at_3 <= deep.hit_at_5 and deep.n == len(QUESTIONS)
    assert deep.as_dict() == {
        "hit@1": round(deep.hit_at_1, 4),
        "hit@3": round(deep.hit_at_3, 4),
        "hit@5": round(deep.hit_at_5, 4),
        "mrr": round(deep.mrr, 4),
        "n": len(QUESTIONS),
    }


@pytest.mark.parametrize("mode", retrieve.MODES)
def test_a_passage_held_by_two_knowledge_bases_is_found_once(
    store: Store, settings: Settings, eval_kb: str, mode: str
) -> None:
    """A base imported beside the one it came from, both searched: each passage once, from the better ranked, and
    top_k hits still (the Chromium walk of issue 31 had the same passage three times as [1]-[3])."""
    write_passages(store, settings, "eval copy", PASSAGES[:10])
    question = QUESTIONS[0].question
    both = retrieve.search(store, settings, question, [eval_kb, "eval copy"], top_k=5, mode=mode)
    texts = [" ".join(h.content.split()) for h in both]
    assert len(both) == 5 and len(set(texts)) == 5, [(h.knowledge, h.original_filename) for h in both]
    if mode == "vector":  # the same vectors, the same scores: the same passages as one base alone gives
        alone = retrieve.search(store, settings, question, [eval_kb], top_k=5, mode=mode)
        assert {h.original_filename for h in both} == {h.original_filename for h in alone}
    if mode == "hybrid":
        assert [h.fused_rank for h in both] == [1, 2, 3, 4, 5]
