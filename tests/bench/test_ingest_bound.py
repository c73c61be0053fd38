"""benchmarks/peers.py: the bound printed beside our ingest, from the work no pipeline can skip, and how far
ours is from it."""

from __future__ import annotations

from benchmarks import peers


def test_the_bound_counts_the_embedders_cpu_and_plain_extraction_over_every_core(monkeypatch) -> None:
    monkeypatch.setattr(peers, "usable_cores", lambda: 2)
    langchain = peers.Run("LangChain", 54.5, 12_409, 0.56, {"load": 10.5, "split": 4.4, "embed + insert": 39.6})
    floor = peers.Floor(seconds=21.8, cpu=22.0, chunks=11_074, write=7.7)
    least = peers._least(floor, langchain)
    assert least == (22.0 + 10.5 + 4.4 + 7.7) / 2
    line = peers._bound(least, floor)
    assert line.startswith("the same embedder alone, on our 11,074 chunks and nothing else, takes 21.8 s (22.0 CPU s)")
    assert "bare table (7.7 s)" in line and line.endswith("on all 2 cores at best 22.3 s")
    skipped = peers.Run("langchain", 0, 0, 0, skipped="not installed")
    assert peers._least(floor, skipped) == (22.0 + 7.7) / 2  # without the peer's load and split


def test_ours_against_the_bound() -> None:
    assert peers._against_bound(28.9, 22.3) == "ours 28.9 s is 1.30x the bound (goal <= 1.3x: met)"
    assert peers._against_bound(40.3, 15.5) == "ours 40.3 s is 2.60x the bound (goal <= 1.3x: NOT met)"


def test_our_own_stages_bound_beside_the_bound(monkeypatch) -> None:
    """The same bound from our own stages, each alone (our reader, splitter and write with the keyword index): what
    of the distance our stages' extra work is, and what the pipeline's."""
    monkeypatch.setattr(peers, "usable_cores", lambda: 2)
    floor = peers.Floor(seconds=2.2, cpu=2.7, chunks=11_630, write=0.3)
    own = peers.OwnWork(parse=6.5, chunk=2.1, write=3.5)
    ours = peers.Run("ours", 9.2, 11_630, 0.95)
    assert peers._own_bound(own, floor, 5.4, ours) == (
        "our own stages, each alone: our reader 6.5 CPU s, our splitter 2.1, the embedder 2.7, every row written "
        "with its keyword index 3.5 s: on all 2 cores at best 7.4 s (+2.0 s on the bound, for hit@5 0.950); "
        "ours is 1.24x that"
    )


def test_the_corpus_pdfs_hold_their_text_within_the_page(tmp_path) -> None:
    """Every line of the corpus's PDFs ends on its page, English and Chinese: with English wrapped at 80 characters of
    1-em type, a third of each line lay past the page's edge and was cut from every reader's text."""
    import pymupdf

    corpus = peers.make_corpus(tmp_path, 4, (2, 3), 4)
    assert [p.name[:2] for p in corpus.files] == ["en", "zh", "en", "zh"]
    for path in corpus.files:
        with pymupdf.open(path) as doc:
            for page in doc:
                lines = [line for block in page.get_text("dict")["blocks"] for line in block.get("lines", ())]
                assert lines, (path.name, page.number)
                assert max(line["bbox"][2] for line in lines) <= page.rect.width - 40, (path.name, page.number)


def test_each_contender_is_reported_by_its_fastest_round_beside_every_round() -> None:
    slow = peers.Run("LangChain", 23.2, 12_409, 0.61, {"load": 7.0})
    fast = peers.Run("LangChain", 16.4, 12_409, 0.61, {"load": 5.8})
    best = peers.fastest([slow, fast])
    assert (best.seconds, best.stages, best.rounds) == (16.4, {"load": 5.8}, (23.2, 16.4))
    skipped = peers.Run("langchain", 0, 0, 0, skipped="not installed")
    assert peers.fastest([skipped, skipped]) == skipped


def test_the_bounds_bare_table_takes_the_rows_as_a_vector_only_store_writes_them(store, pg_uri: str) -> None:
    """The bound's rows go into a table with no index, no trigger and no keyword column, as LangChain's: nothing is
    derived for keyword search (its CJK bigrams were ~0.7 CPU s of the 11,630 chunks' "bare" write) and nothing is
    compressed within a page (PostgreSQL's default compressed a 2.8 KB chunk's text)."""
    import uuid

    import numpy as np
    import psycopg
    import pytest

    from rag.errors import StoreError
    from rag.store import copy_rows

    documents = [["检索质量的评估方法" * 40, "English words " * 200], ["第二份文件的内容" * 30]]
    lines: list[str] = []

    class Lines:
        def line(self, text: str) -> None:
            lines.append(text)

    costs = peers.store_profile(Lines(), pg_uri, documents, 4)  # type: ignore[arg-type]
    assert costs.everything > 0 and costs.bare > 0
    assert "the 3 chunks of the corpus's first 2 PDFs copied again, a PDF a transaction" in lines[0]
    rows = [(uuid.uuid4(), text, {"knowledge": "x"}, np.ones(4, dtype=np.float32), None) for text in documents[0]]
    with psycopg.connect(pg_uri) as conn:
        try:
            copy_rows(conn, rows, table="bench_copy", keywords=False)
            stored = conn.execute(
                "SELECT search_text IS NULL AND cjk_terms IS NULL AND fts IS NULL, pg_column_compression(content) "
                "FROM bench_copy"
            ).fetchall()
            assert stored == [(True, None), (True, None)]
            conn.rollback()
            with pytest.raises(StoreError):
                copy_rows(conn, rows, keywords=False)  # vector_store's trigger would read Chinese as English words
        finally:
            conn.rollback()
            conn.execute("DROP TABLE bench_copy")
            conn.commit()
