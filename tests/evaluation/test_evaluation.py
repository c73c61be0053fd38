"""rag.evaluation (questions, embedding cache, target chunks, hit@k / MRR) and rag.snippets.

Ranks are checked against a bag-of-words embedder whose cosine scores are worked out by hand
in the comments, and against the real offline WordLlama embedder ranked independently here.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from rag import chunking
from rag.chunking import Chunk, ChunkSet, ChunkSettings, split
from rag.embeddings import LocalEmbedder
from rag.errors import RagError
from rag.evaluation import (
    EmbeddingCache,
    NormalisedText,
    Question,
    best_label,
    evaluate,
    excerpt,
    find_targets,
    normalise,
    parse_questions_csv,
    questions_from_rows,
    sample,
    target_chunks,
)
from rag.evaluation.ranking import verdict
from rag.snippets import python_snippet, spring_snippet

SAMPLE_TEXT = sample().text
SAMPLE_QUESTIONS = sample().questions

# --- a deterministic embedder ------------------------------------------------------------------

VOCAB = ("red", "green", "blue", "apple", "pie", "tart", "sky", "today", "tonight")


class BagOfWords:
    """One dimension per word of VOCAB (other words ignored), counts, L2-normalised."""

    name = "test:bag-of-words"
    dimension = len(VOCAB)
    max_input_tokens = None

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str], progress=None) -> np.ndarray:
        texts = list(texts)
        self.calls.append(texts)
        out = np.zeros((len(texts), len(VOCAB)), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                if word in VOCAB:
                    out[row, VOCAB.index(word)] += 1
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        if progress is not None:
            progress(len(texts), len(texts))
        return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """The same vectors (no prefix), counted as a call of its own: the check embeds its questions as the
        chat does, as queries, apart from the chunks."""
        return self.embed(texts)

    @property
    def embedded(self) -> list[str]:
        return [t for call in self.calls for t in call]


DOC = "red apple pie green apple tart\nblue sky today red sky tonight"
PIECES = ("red apple pie", "green apple tart", "blue sky today", "red sky tonight")


def chunk_set(parts: Sequence[str], settings: ChunkSettings) -> ChunkSet:
    """Chunks cut by hand from DOC, with their real character spans."""
    chunks = []
    for i, part in enumerate(parts):
        start = DOC.index(part)
        chunks.append(Chunk(index=i, text=part, tokens=len(part.split()), start=start, end=start + len(part)))
    return ChunkSet(tuple(chunks), 0, settings)


SMALL = chunk_set(PIECES, ChunkSettings(strategy="token", chunk_size=3, chunk_overlap=0))
LARGE = chunk_set((DOC[:30], DOC[31:]), ChunkSettings(strategy="token", chunk_size=6, chunk_overlap=0))
QUESTIONS = [
    Question("red apple", "green apple tart"),
    Question("sky tonight", "red sky tonight"),
    Question("green pie", "pie green"),  # cut between chunks 0 and 1 of SMALL
]


# --- hit@k and MRR by hand -----------------------------------------------------------------------


def test_ranks_hits_and_mrr_by_hand() -> None:
    report = evaluate({"small": SMALL, "large": LARGE}, DOC, QUESTIONS, BagOfWords(), EmbeddingCache())
    small, large = report.result("small"), report.result("large")
    # small, "red apple" (|q| = sqrt 2): chunk 0 "red apple pie" 2/sqrt6 = 0.816; chunks 1 and 3
    # share one word, 1/sqrt6 = 0.408, a tie kept in chunk order -> the target, chunk 1, ranks 2.
    q1 = small.questions[0]
    assert (q1.rank, q1.targets, q1.split, q1.top_index) == (2, (1,), False, 0)
    assert q1.score == pytest.approx(1 / np.sqrt(6))
    assert q1.top_score == pytest.approx(2 / np.sqrt(6))
    # "sky tonight": chunk 3 2/sqrt6 first.
    assert (small.questions[1].rank, small.questions[1].targets) == (1, (3,))
    # "pie green" is cut: "pie" (3 of 9 chars) in chunk 0, "green" (5 of 9) in chunk 1 -> target 1;
    # "green pie" scores 1/sqrt6 on chunks 0 and 1, so chunk 1 ranks 2.
    q3 = small.questions[2]
    assert (q3.rank, q3.targets, q3.split) == (2, (1,), True)
    assert q3.coverage == pytest.approx(5 / 9)
    assert small.n_chunks == 4
    assert small.hits == ((1, pytest.approx(1 / 3)), (3, 1.0), (5, 1.0))
    assert small.mrr == pytest.approx((1 / 2 + 1 + 1 / 2) / 3)
    # large: chunk 0 = red apple(2) pie green tart, |c| = sqrt8; "red apple" scores 3/(sqrt2 sqrt8) = 0.75
    # against 1/4 for chunk 1; every passage lies whole in one chunk.
    assert [q.rank for q in large.questions] == [1, 1, 1]
    assert [q.split for q in large.questions] == [False, False, False]
    assert large.questions[0].score == pytest.approx(0.75)
    assert large.hit_at(1) == 1.0 and large.mrr == 1.0
    assert best_label(report) == "large"
    assert report.labels == ("small", "large")
    assert report.not_found == ()


def test_missing_passage_counts_as_a_miss_and_is_reported() -> None:
    questions = [QUESTIONS[0], Question("blue moon", "a blue moon over the sea")]
    report = evaluate({"small": SMALL}, DOC, questions, BagOfWords(), EmbeddingCache())
    small = report.result("small")
    missing = small.questions[1]
    assert (missing.rank, missing.score, missing.targets, missing.found) == (None, None, (), False)
    assert missing.top_index == 2  # "blue" -> "blue sky today"
    assert small.hits[0] == (1, 0.0)  # question 1 ranks 2, question 2 never
    assert small.mrr == pytest.approx((1 / 2 + 0) / 2)
    assert report.not_found == (1,)


def test_top_n_cuts_ranks_and_mrr() -> None:
    report = evaluate({"small": SMALL}, DOC, QUESTIONS, BagOfWords(), EmbeddingCache(), top_n=1)
    assert [q.rank for q in report.result("small").questions] == [None, 1, None]
    assert report.result("small").mrr == pytest.approx(1 / 3)


def test_equal_results_name_no_best_and_point_at_fewer_chunks() -> None:
    one = chunk_set(PIECES, ChunkSettings(strategy="token", chunk_size=3, chunk_overlap=0))
    two = chunk_set(PIECES + ("red apple pie green",), ChunkSettings(strategy="token", chunk_size=4, chunk_overlap=0))
    questions = [Question("sky tonight", "red sky tonight")]
    report = evaluate({"five": two, "four": one}, DOC, questions, BagOfWords(), EmbeddingCache())
    assert report.result("four").mrr == report.result("five").mrr == 1.0
    # A tie (rag.evaluation.ranking.verdict): the same ranks are no reason to prefer either.
    assert best_label(report) is None
    assert verdict(report).reason == (
        "four, five rank every question's passage alike: they tie. Of them, four has the fewest chunks (4): "
        "the cheapest to store and search."
    )


def test_evaluate_rejects_empty_inputs() -> None:
    with pytest.raises(RagError, match="no questions"):
        evaluate({"small": SMALL}, DOC, [], BagOfWords(), EmbeddingCache())
    with pytest.raises(RagError, match="no chunk settings"):
        evaluate({}, DOC, QUESTIONS, BagOfWords(), EmbeddingCache())
    with pytest.raises(RagError, match="k must be at least 1"):
        evaluate({"small": SMALL}, DOC, QUESTIONS, BagOfWords(), EmbeddingCache(), ks=(0, 3))


def test_a_setting_without_chunks_ranks_nothing() -> None:
    empty = ChunkSet((), 2, ChunkSettings())
    report = evaluate({"empty": empty, "small": SMALL}, DOC, QUESTIONS, BagOfWords(), EmbeddingCache())
    result = report.result("empty")
    assert result.n_chunks == 0 and result.mrr == 0.0
    assert all(q.rank is None and q.top_index is None for q in result.questions)


# --- the cache -------------------------------------------------------------------------------------


def test_cache_embeds_each_text_once_and_counts_hits() -> None:
    embedder, cache = BagOfWords(), EmbeddingCache()
    first = evaluate({"small": SMALL, "large": LARGE}, DOC, QUESTIONS, embedder, cache)
    distinct = {q.text for q in QUESTIONS} | set(PIECES) | {c.text for c in LARGE.chunks}
    assert sorted(embedder.embedded) == sorted(distinct)
    assert (first.embedded, first.reused) == (9, 0)
    assert cache.stats().entries == 9
    # The same check again costs nothing.
    again = evaluate({"small": SMALL, "large": LARGE}, DOC, QUESTIONS, embedder, cache)
    # Two calls of the first check: the questions as queries (as the chat embeds them), then the chunks.
    assert embedder.calls == [[q.text for q in QUESTIONS], [*PIECES, *(c.text for c in LARGE.chunks)]]
    assert (again.embedded, again.reused) == (0, 9)
    assert again.results == first.results


def test_changing_one_setting_embeds_only_its_new_chunks() -> None:
    embedder, cache = BagOfWords(), EmbeddingCache()
    text = SAMPLE_TEXT
    a = ChunkSettings(strategy="recursive", chunk_size=200, chunk_overlap=20)
    b = ChunkSettings(strategy="token", chunk_size=128, chunk_overlap=0)
    b2 = ChunkSettings(strategy="token", chunk_size=128, chunk_overlap=32)
    questions = list(SAMPLE_QUESTIONS[:3])
    evaluate({"A": split(text, a), "B": split(text, b)}, text, questions, embedder, cache)
    seen = set(embedder.embedded)
    before = cache.stats()
    changed = split(text, b2)
    report = evaluate({"A": split(text, a), "B": changed}, text, questions, embedder, cache)
    new = {c.text for c in changed.chunks} - seen
    assert new  # the overlap moves every window after the first
    assert set(embedder.calls[-1]) == new and len(embedder.calls[-1]) == len(new)
    assert report.embedded == len(new)
    after = cache.stats()
    assert after.misses - before.misses == len(new)
    assert (
        after.hits - before.hits
        == report.reused
        == len(questions) + len(split(text, a).chunks) + (len(changed.chunks) - len(new))
    )


def test_cache_is_bounded_lru() -> None:
    embedder, cache = BagOfWords(), EmbeddingCache(max_entries=2)
    cache.embed(embedder, ["red", "green"])
    cache.embed(embedder, ["red"])  # red is now the most recent
    cache.embed(embedder, ["blue"])  # evicts green
    assert cache.stats().entries == 2 and cache.stats().evictions == 1
    cache.embed(embedder, ["red", "green"])
    assert embedder.calls[-1] == ["green"]


def test_cache_vectors_match_the_embedder_and_keep_order() -> None:
    embedder, cache = BagOfWords(), EmbeddingCache()
    texts = ["red sky", "blue apple", "red sky", "pie"]
    vectors = cache.embed(embedder, texts)
    assert embedder.calls == [["red sky", "blue apple", "pie"]]  # the repeat is embedded once
    np.testing.assert_array_equal(vectors, BagOfWords().embed(texts))
    assert cache.embed(embedder, []).shape == (0, len(VOCAB))
    with pytest.raises(TypeError):
        cache.embed(embedder, "red sky")


def test_a_stopped_embedding_keeps_the_slices_done_and_the_next_run_embeds_only_the_rest() -> None:
    embedder, cache = BagOfWords(), EmbeddingCache()
    texts = [f"red apple {i}" for i in range(EmbeddingCache.SLICE * 2 + 5)]
    seen: list[tuple[int, int]] = []

    class Stopped(BaseException):  # as Streamlit ends a script run: not an Exception
        pass

    def stop_after_the_first_slice(done: int, total: int) -> None:
        seen.append((done, total))
        if done >= EmbeddingCache.SLICE:
            raise Stopped

    with pytest.raises(Stopped):
        cache.embed(embedder, texts, stop_after_the_first_slice)
    assert seen == [(EmbeddingCache.SLICE, len(texts))]  # counted over all the texts, not the slice
    assert cache.stats().entries == EmbeddingCache.SLICE
    progress: list[tuple[int, int]] = []
    vectors = cache.embed(embedder, texts, lambda done, total: progress.append((done, total)))
    assert embedder.embedded[EmbeddingCache.SLICE :] == texts[EmbeddingCache.SLICE :]
    assert progress == [(EmbeddingCache.SLICE, EmbeddingCache.SLICE + 5), (EmbeddingCache.SLICE + 5,) * 2]
    np.testing.assert_array_equal(vectors, BagOfWords().embed(texts))


def test_cache_keys_include_the_embedder_name() -> None:
    cache, one, other = EmbeddingCache(), BagOfWords(), BagOfWords()
    other.name = "test:other"
    cache.embed(one, ["red"])
    cache.embed(other, ["red"])
    assert len(other.calls) == 1 and cache.stats().entries == 2


def test_questions_are_embedded_as_queries_and_cached_apart_from_passages() -> None:
    """As the chat searches: e5 reads "query: " before a question and "passage: " before a chunk."""

    class Prefixed(BagOfWords):
        def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
            return self.embed([f"query: {t}" for t in texts])

    embedder, cache = Prefixed(), EmbeddingCache()
    questions = [Question("red sky", "red sky tonight")]
    evaluate({"small": SMALL}, DOC, questions, embedder, cache)
    assert embedder.calls[0] == ["query: red sky"] and "red sky" not in embedder.embedded
    cache.embed(embedder, ["red sky"])  # the same text as a passage: a vector of its own
    assert embedder.calls[-1] == ["red sky"] and cache.stats().entries == 1 + len(PIECES) + 1
    assert cache.missing(embedder.name, ["red sky"], queries=True) == []
    assert cache.missing(embedder.name, ["blue"], queries=True) == ["blue"]


def test_cache_is_thread_safe() -> None:
    embedder, cache = BagOfWords(), EmbeddingCache(max_entries=50)
    texts = [f"red {i}" for i in range(200)]
    errors: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for start in range(0, 200, 10):
                got = cache.embed(embedder, texts[(start + offset) % 190 : (start + offset) % 190 + 10])
                assert got.shape == (10, len(VOCAB))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i * 7,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert cache.stats().entries <= 50


# --- the real local embedder ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    return LocalEmbedder()


def test_real_embedder_ranks_equal_an_independent_numpy_ranking(local: LocalEmbedder) -> None:
    settings = ChunkSettings(strategy="recursive", chunk_size=256, chunk_overlap=32)
    chunks = split(SAMPLE_TEXT, settings)
    questions = list(SAMPLE_QUESTIONS)
    report = evaluate({"R": chunks}, SAMPLE_TEXT, questions, local, EmbeddingCache())
    result = report.result("R")
    q = local.embed([x.text for x in questions])
    c = local.embed([x.text for x in chunks.chunks])
    scores = q @ c.T
    for i, question in enumerate(questions):
        holding = [j for j, chunk in enumerate(chunks.chunks) if normalise(question.expected) in normalise(chunk.text)]
        assert holding, question
        order = list(np.argsort(-scores[i], kind="stable"))
        expected_rank = min(order.index(j) for j in holding) + 1
        assert result.questions[i].rank == expected_rank
        assert result.questions[i].score == pytest.approx(float(scores[i, order[expected_rank - 1]]), abs=1e-5)
    ranks = [x.rank for x in result.questions]
    assert result.hit_at(1) == pytest.approx(sum(r == 1 for r in ranks) / len(ranks))
    assert result.mrr == pytest.approx(sum(1 / r for r in ranks) / len(ranks))
    # The sample is written so that a sensible setting finds most passages first.
    assert result.hit_at(5) >= 0.8


def test_real_embedder_second_run_reuses_every_vector(local: LocalEmbedder) -> None:
    cache = EmbeddingCache()
    sets = {
        "A": split(SAMPLE_TEXT, chunking.SPRING_DEFAULT),
        "B": split(SAMPLE_TEXT, ChunkSettings(strategy="token", chunk_size=128, chunk_overlap=16)),
    }
    first = evaluate(sets, SAMPLE_TEXT, list(SAMPLE_QUESTIONS), local, cache)
    second = evaluate(sets, SAMPLE_TEXT, list(SAMPLE_QUESTIONS), local, cache)
    assert first.embedded > 0 and second.embedded == 0
    assert [r.mrr for r in first.results] == [r.mrr for r in second.results]
    for r in first.results:
        assert [r.hit_at(k) for k in first.ks] == sorted(r.hit_at(k) for k in first.ks)


# --- target chunks ---------------------------------------------------------------------------------


def test_normalisation_folds_case_whitespace_and_ligatures() -> None:
    assert normalise("  The  ﬁnal\n\nStraße\u00adn ") == "the final strassen"
    source = "A  ﬁx\n\tB"
    folded = NormalisedText.of(source)
    assert folded.text == normalise(source) == "a fix b"
    assert folded.origin.tolist() == [0, 1, 3, 3, 4, 5, 7]
    assert folded.find_all("fix") == [(3, 5)]


def test_target_found_whatever_the_case_and_line_breaks() -> None:
    text = "First line.\nThe Quick brown\nfox jumps.  Last line."
    chunks = split(text, ChunkSettings(strategy="token", chunk_size=200, chunk_overlap=0)).chunks
    assert target_chunks(chunks, "the quick   BROWN fox", text) == {0}
    assert target_chunks(chunks, "the quick brown fox") == {0}  # from the chunk texts alone


def test_a_chinese_passage_is_found_where_a_line_break_or_space_fell_inside_a_word() -> None:
    """Spring turns newlines into spaces ("盛大游 戏"), and a wrapped line that reached a chunk so was not
    the passage the user copied: 9 of 10 expected passages of a Chinese PDF counted as misses."""
    text = "泡泡战士是基于泡泡堂开发的游戏。中国大陆由盛大游\n戏运营，台湾由游戏橘子运营。玩家以水枪\n、小枪攻击。"
    chunks = split(text, ChunkSettings(strategy="spring", chunk_size=200, keep_separator=False)).chunks
    assert "盛大游 戏" in chunks[0].text  # what the splitter makes of the newline
    assert target_chunks(chunks, "中国大陆由盛大游戏运营，台湾由游戏橘子运营。", text) == {0}
    assert target_chunks(chunks, "玩家以水枪、小枪攻击") == {0}  # from the chunk texts alone
    folded = NormalisedText.of(text)
    assert folded.text == normalise(text) and "盛大游戏运营" in folded.text
    [(start, end)] = folded.find_all(normalise("盛大游戏运营"))
    assert text[start:end] == "盛大游\n戏运营"
    # Spaces between Latin words stay; only those beside a character written without spaces go.
    assert normalise("Nexon 开发 the game 游戏 ,由") == "nexon开发the game游戏,由"
    # Nor beside punctuation: NFKC makes "，" a "," before the check ("大师) ，可选择" was a miss).
    assert normalise("大师) ，可选择") == normalise("大师)，可选择") == "大师),可选择"


def test_every_chunk_that_holds_the_passage_is_a_target() -> None:
    text = " ".join(f"Sentence number {i} is here." for i in range(40))
    chunk_set = split(text, ChunkSettings(strategy="token", chunk_size=40, chunk_overlap=20))
    passage = "Sentence number 20 is here."
    holding = {c.index for c in chunk_set.chunks if passage.lower() in c.text.lower()}
    assert len(holding) >= 2  # the overlap repeats it
    targets = find_targets(chunk_set.chunks, passage, text)
    assert set(targets.indices) == holding and not targets.split and targets.coverage == 1.0


def test_split_passage_goes_to_the_chunk_with_the_larger_share() -> None:
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    first = Chunk(0, text[:22], 4, 0, 22)  # "alpha beta gamma delta"
    second = Chunk(1, text[23:], 6, 23, len(text))  # "epsilon zeta ... kappa"
    targets = find_targets([first, second], "delta epsilon zeta", text)
    # "delta" (5 chars) is in chunk 0, "epsilon zeta" (12 of 18) in chunk 1.
    assert targets.indices == frozenset({1}) and targets.split and targets.found
    assert targets.coverage == pytest.approx(12 / 18)


def test_split_passage_in_a_real_split() -> None:
    text = SAMPLE_TEXT
    chunk_set = split(text, ChunkSettings(strategy="token", chunk_size=60, chunk_overlap=0))
    passage = SAMPLE_QUESTIONS[1].expected
    start = text.index(passage)
    end = start + len(passage)
    touching = [c for c in chunk_set.chunks if c.start < end and c.end > start]
    assert len(touching) >= 2, "the passage should be cut at this size"
    best = max(touching, key=lambda c: min(c.end, end) - max(c.start, start))
    targets = find_targets(chunk_set.chunks, passage, text)
    assert targets.split and targets.indices == frozenset({best.index})
    assert targets.coverage == pytest.approx((min(best.end, end) - max(best.start, start)) / len(passage))


def test_excerpt_shows_the_passage_in_context() -> None:
    text = "a" * 50 + " The Cat\nsat. " + "b" * 50
    assert excerpt(text, "the cat sat.", context=5) == "… aaaa The Cat\nsat. bbbb …"
    assert excerpt("short text", "missing", context=3) == "short …"
    assert excerpt("tiny", "tiny") == "tiny"


def test_passage_not_in_the_document() -> None:
    chunks = split(DOC, ChunkSettings(strategy="token", chunk_size=4, chunk_overlap=0)).chunks
    targets = find_targets(chunks, "purple elephants dance", DOC)
    assert targets.indices == frozenset() and not targets.found


def test_nearly_verbatim_passage_matches_approximately_without_the_document() -> None:
    chunks = [
        Chunk(0, "The depot opens at six thirty on weekdays.", 9, 0, 42),
        Chunk(1, "Trucks wait in the holding bay overnight.", 8, 43, 84),
    ]
    targets = find_targets(chunks, "trucks wait in the holding area")
    assert targets.indices == frozenset({1}) and not targets.found
    assert targets.coverage == pytest.approx(5 / 6)


# --- questions from CSV and from the table ----------------------------------------------------------


def test_parse_csv_with_bom_quotes_and_blank_lines() -> None:
    data = (
        "\ufeffQuestion , Expected\n"
        'When do depots open?,"They open at 06:30, on weekdays."\n'
        "\n"
        '"A question\nover two lines",the answer\n'
    ).encode("utf-8")
    assert parse_questions_csv(data) == [
        Question("When do depots open?", "They open at 06:30, on weekdays."),
        Question("A question\nover two lines", "the answer"),
    ]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "the file is empty"),
        (b"q,a\nx,y\n", "line 1: the header must be 'question,expected', got 'q,a'"),
        (b"question,expected\nok,fine\nthree,cells,here\n", "line 3: expected 2 columns"),
        (b"question,expected\nok,fine\n\nno answer,\n", "line 4: no expected passage for 'no answer'"),
        (b"question,expected\n,an answer\n", "line 2: the question is empty"),
        (b"question,expected\n\n", "no questions below the header"),
        (b"question,expected\n\xff\xfe,x\n", "not UTF-8 text (invalid byte 0xff at offset 18)"),
        (b'question,expected\n"a,b\n', "line 2"),
    ],
)
def test_parse_csv_errors_name_the_line(data: bytes, message: str) -> None:
    with pytest.raises(RagError) as info:
        parse_questions_csv(data)
    assert message in str(info.value)


def test_questions_from_rows_skip_blank_rows_and_name_incomplete_ones() -> None:
    rows = [("Q1", "E1"), (None, None), ("", "  "), (float("nan"), None), ("Q2", "E2")]
    assert questions_from_rows(rows) == [Question("Q1", "E1"), Question("Q2", "E2")]
    with pytest.raises(RagError, match="row 2: no expected passage"):
        questions_from_rows([("Q1", "E1"), ("Q2", None)])


# --- snippets -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "settings",
    [
        chunking.SPRING_DEFAULT,
        ChunkSettings(chunk_size=120, min_chunk_size_chars=100, keep_separator=False),
        ChunkSettings(strategy="token", chunk_size=64, chunk_overlap=16),
        ChunkSettings(strategy="recursive", chunk_size=90, chunk_overlap=10, min_chunk_length_to_embed=20),
    ],
)
def test_python_snippet_runs_and_matches_split(
    settings: ChunkSettings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "notes.txt"
    path.write_text(SAMPLE_TEXT, encoding="utf-8")
    code = python_snippet(settings, filename=str(path))
    namespace: dict[str, object] = {}
    exec(compile(code, "<snippet>", "exec"), namespace)
    assert namespace["settings"] == settings
    expected = split(SAMPLE_TEXT, settings)
    got = namespace["chunk_set"]
    assert [c.text for c in got.chunks] == [c.text for c in expected.chunks]
    assert f"{len(expected.chunks)} chunks" in capsys.readouterr().out


def test_spring_snippet_for_the_spring_strategy() -> None:
    code = spring_snippet(
        ChunkSettings(chunk_size=600, min_chunk_size_chars=300, min_chunk_length_to_embed=10, keep_separator=False)
    )
    assert (
        "TokenTextSplitter.builder()\n        .withChunkSize(600)\n        .withMinChunkSizeChars(300)\n"
        "        .withMinChunkLengthToEmbed(10)\n        .withMaxNumChunks(10000)\n"
        "        .withKeepSeparator(false)\n        .build();"
    ) in code
    assert "no overlap" not in code
    assert "defaults" in spring_snippet(chunking.SPRING_DEFAULT)


def test_spring_snippet_explains_what_spring_cannot_do() -> None:
    token = spring_snippet(ChunkSettings(strategy="token", chunk_size=512, chunk_overlap=64))
    assert "has no overlap and no recursive mode" in token
    assert "64-token overlap is lost" in token
    assert ".withChunkSize(512)" in token and ".withMinChunkSizeChars(Integer.MAX_VALUE)" in token
    recursive = spring_snippet(ChunkSettings(strategy="recursive", chunk_size=400, chunk_overlap=0))
    assert "no recursive mode" in recursive and ".withMinChunkSizeChars(800)" in recursive
    assert "overlap is lost" not in recursive
