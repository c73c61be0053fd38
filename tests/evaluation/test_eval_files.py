"""`rag eval`'s question files, the public sets in the repository, the BM25 peer and the on-disk vectors."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from benchmarks.bm25_peers import BM25Peer
from rag.errors import RagError
from rag.evaluation import Question, parse_questions_csv
from rag.evaluation.keyword import tokens
from rag.evaluation.metrics import hit_rate, mean_reciprocal_rank
from rag.evaluation.questions import parse_questions
from rag.evaluation.sets import EVAL_DIR, SETS, eval_set
from rag.evaluation.vectors import CachedEmbedder, DiskVectors

# --- question files: JSONL or CSV, by file and/or by expected text ------------------------------------


def test_jsonl_questions_by_file_by_text_or_both() -> None:
    data = "\n".join(
        [
            json.dumps({"question": "When do depots open?", "file": "guide.pdf"}),
            "",
            json.dumps({"question": "Who signs?", "expected": "The manager signs.", "qid": 7}),
            json.dumps({"question": "检索质量？", "file": "zh.txt", "expected": "检索质量"}, ensure_ascii=False),
        ]
    ).encode("utf-8")
    assert parse_questions(data, "q.jsonl") == [
        Question("When do depots open?", "", "guide.pdf"),
        Question("Who signs?", "The manager signs."),
        Question("检索质量？", "检索质量", "zh.txt"),
    ]


def test_the_chunk_labs_download_is_read_with_its_answer_as_the_expected_passage() -> None:
    from rag.tuning.files import dump_questions
    from rag.tuning.questions import GeneratedQuestion

    written = dump_questions([GeneratedQuestion("Who built it?", "Mara Quill", 40, 50, 12, "en")])
    assert parse_questions(written.encode(), "lab.jsonl") == [Question("Who built it?", "Mara Quill")]
    both = json.dumps({"question": "Who?", "expected": "The manager signs.", "answer": "manager"}).encode()
    assert parse_questions(both, "q.jsonl") == [Question("Who?", "The manager signs.")]  # expected wins


def test_csv_questions_take_the_same_headers_in_any_order() -> None:
    data = b'file,question\nguide.pdf,"When, exactly, do depots open?"\n'
    assert parse_questions(data, "q.csv") == [Question("When, exactly, do depots open?", "", "guide.pdf")]
    both = b"question,file,expected\nWho signs?,a.pdf,The manager signs.\nWhere?,b.pdf,\n"
    assert parse_questions(both, "q.csv") == [
        Question("Who signs?", "The manager signs.", "a.pdf"),
        Question("Where?", "", "b.pdf"),
    ]


def test_the_chunk_lab_reads_a_rag_eval_csv_with_expected_text() -> None:
    data = b"question,file,expected\nWho signs?,a.pdf,The manager signs.\n"
    assert parse_questions_csv(data) == [Question("Who signs?", "The manager signs.", "a.pdf")]
    with pytest.raises(RagError, match="line 1: the header must be 'question,expected', got 'question,file'"):
        parse_questions_csv(b"question,file\nWho signs?,a.pdf\n")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"question": "a", "file": "x"}\n{"question": "b"\n', "q.jsonl: line 2: not JSON"),
        (b'{"question": "a", "file": "x"}\n["b", "x"]\n', "q.jsonl: line 2: expected an object"),
        (b'{"question": "a", "file": 3}\n', "q.jsonl: line 1: 'file' must be a string, got 3"),
        (
            b'{"question": "a"}\n',
            "q.jsonl: line 1: no expected passage for 'a'; paste the sentence of the document "
            "that answers it, or name the file that does",
        ),
        (b'{"question": "", "file": "x"}\n', "q.jsonl: line 1: the question is empty"),
        (
            b"question,page\na,1\n",
            "q.jsonl: line 1: the header must be 'question' and 'file' and/or 'expected', got 'question,page'",
        ),
        (b"question,file\na,x,y\n", "q.jsonl: line 2: expected 2 columns (question,file), got 3"),
        (b"\n\n", "q.jsonl: the file is empty"),
    ],
)
def test_question_file_errors_name_the_file_and_line(data: bytes, message: str) -> None:
    with pytest.raises(RagError) as info:
        parse_questions(data, "q.jsonl")
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_a_question_matches_by_file_and_expected_text() -> None:
    by_file, by_text = Question("q", "", "a.pdf"), Question("q", "The Manager  signs.")
    both = Question("q", "the manager signs.", "a.pdf")
    assert by_file.matches("a.pdf", "") and not by_file.matches("b.pdf", "")
    assert by_text.matches("b.pdf", "so the manager signs. then") and not by_text.matches("b.pdf", "the clerk")
    assert both.matches("a.pdf", "the manager signs.")
    assert not both.matches("b.pdf", "the manager signs.") and not both.matches("a.pdf", "the clerk signs.")


def test_hit_rate_and_mrr() -> None:
    ranks = [1, 3, None, 6]
    assert [hit_rate(ranks, k) for k in (1, 3, 5, 10)] == [0.25, 0.5, 0.5, 0.75]
    assert mean_reciprocal_rank(ranks) == pytest.approx((1 + 1 / 3 + 1 / 6) / 4)
    assert hit_rate([], 5) == 0.0 and mean_reciprocal_rank([]) == 0.0


# --- the public sets -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "passages", "questions"), [("en_race", 167, 561), ("zh_c3", 273, 505), ("zh_cmrc_trial", 256, 1000)]
)
def test_each_public_set_is_in_the_repository_whole(name: str, passages: int, questions: int) -> None:
    data = eval_set(name)
    assert (len(data.passages), len(data.questions)) == (passages, questions)
    pids = {p.key for p in data.passages}
    assert len(pids) == passages and all(q.file in pids and q.text for q in data.questions)
    assert data.language == name.split("_")[0]
    readme = (EVAL_DIR / "README.md").read_text(encoding="utf-8")
    assert f"`{name}`" in readme and "CC BY-SA 4.0" in readme


def test_a_sample_is_evenly_spread_and_the_same_every_time() -> None:
    data = eval_set("zh_cmrc_trial")
    picked = data.sample(100)
    assert len(picked) == 100 and picked == data.sample(100)
    assert picked[0] == data.questions[0] and picked[-1] == data.questions[990]
    assert data.sample(None) == data.questions == data.sample(5000)


def test_an_unknown_set_is_named() -> None:
    with pytest.raises(RagError, match=f"unknown evaluation set 'en_squad' \\(choose from: {', '.join(SETS)}\\)"):
        eval_set("en_squad")


# --- the BM25 peer -----------------------------------------------------------------------------------


def test_peer_tokens_are_lower_cased_words_and_chinese_bigrams() -> None:
    assert tokens("Hybrid Search 检索质量, e5!") == ["hybrid", "search", "检索", "索质", "质量", "e5"]


def test_peer_ranks_by_bm25() -> None:
    texts = [
        "the cat sat on the mat",
        "dogs chase cats",
        "a mat of straw for the cat and the dog",
        "nothing here",
        "会议在北京举行",
        "北京的天气很好",
    ]
    peer = BM25Peer(texts)
    # 'mat' is in two passages, 'cat' in two: the passage with both, and shorter, first.
    assert peer.rank("cat mat", 3) == [0, 2]
    assert peer.rank("北京会议", 2) == [4, 5]
    assert peer.rank("zebra", 3) == []


# --- vectors on disk ----------------------------------------------------------------------------------


class CountingEmbedder:
    """Vectors derived from each text's length, different for queries; counts what it embeds."""

    dimension = 3
    max_input_tokens = None

    def __init__(self, name: str = "test:count") -> None:
        self.name = name
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str], progress: object = None) -> np.ndarray:
        self.texts.extend(texts)
        return np.array([[len(t), 1.0, 0.0] for t in texts], dtype=np.float32)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return np.array([[len(t), 0.0, 1.0] for t in texts], dtype=np.float32)


def test_vectors_are_embedded_once_per_embedder_and_read_back(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    first = CachedEmbedder(DiskVectors(tmp_path, inner))
    assert first.name == inner.name and first.dimension == 3
    passages = first.embed(["ab", "abc", "ab"])
    assert passages.tolist() == [[2, 1, 0], [3, 1, 0], [2, 1, 0]] and inner.texts == ["ab", "abc"]
    # A question is encoded as a query even when the same text was stored as a passage.
    assert first.embed_queries(["ab"]).tolist() == [[2, 0, 1]] and inner.texts == ["ab", "abc", "ab"]

    again = CountingEmbedder()
    second = DiskVectors(tmp_path, again)
    assert second.vectors(["abc", "ab"]).tolist() == [[3, 1, 0], [2, 1, 0]]
    assert second.vectors(["ab"], "query").tolist() == [[2, 0, 1]]
    assert again.texts == [] and second.embedded == 0

    other = CountingEmbedder("test:other")
    DiskVectors(tmp_path, other).vectors(["ab"])
    assert other.texts == ["ab"]  # another embedder's vectors are never reused


def test_an_unreadable_vector_file_is_embedded_again(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    store = DiskVectors(tmp_path, inner)
    store.path.write_bytes(b"not an npz")
    again = DiskVectors(tmp_path, inner)
    assert again.vectors(["ab"]).tolist() == [[2, 1, 0]] and inner.texts == ["ab"]
    assert DiskVectors(tmp_path, CountingEmbedder()).vectors(["ab"]).tolist() == [[2, 1, 0]]
