"""`python -m rag` end to end: real PDFs, the embedded PostgreSQL, the local embedder.

The commands run in this process (tests/clirun.py: `rag.cli.main(argv, out, err)`); the tests that need a
process of their own (what a fresh interpreter imports, a SIGKILL mid-sync) start one and say why."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from rag.chunking import ChunkSettings, split
from rag.documents import load_bytes
from tests.clirun import rag
from tests.conftest import PYTHON, ROOT, wipe
from tests.docgen import make_encrypted_pdf, make_image_only_pdf, make_pdf, make_png, make_truncated_pdf

FINANCE = [
    "Quarterly report. Revenue grew by twelve percent in 2023, driven by subscriptions.\n"
    "Operating costs fell slightly. The board approved a dividend.",
    "Outlook. Management expects steady growth and plans to hire forty engineers.",
]
DATABASE = [
    "PostgreSQL stores vectors with the pgvector extension. HNSW indexes give fast "
    "approximate nearest neighbour search with cosine distance.",
]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    d = tmp_path / "docs"
    d.mkdir()
    (d / "finance.pdf").write_bytes(make_pdf(FINANCE))
    (d / "database.pdf").write_bytes(make_pdf(DATABASE))
    (d / "notes.md").write_text("# Notes\n\nOllama serves nomic-embed-text for embeddings.", encoding="utf-8")
    (d / "encrypted.pdf").write_bytes(make_encrypted_pdf())
    (d / "truncated.pdf").write_bytes(make_truncated_pdf())
    (d / "empty.pdf").write_bytes(b"")
    (d / "scan.pdf").write_bytes(make_image_only_pdf())
    (d / "picture.pdf").write_bytes(make_png())
    (d / "ignored.odt").write_bytes(b"PK\x03\x04 not scanned in folders")
    return d


@pytest.fixture
def clean_db(pg_uri: str) -> None:
    wipe(pg_uri)


def test_ingest_folder_stores_good_files_and_reports_bad_ones(folder: Path, clean_db: None) -> None:
    proc = rag(["ingest", str(folder), "--kb", "finance"])
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.strip().splitlines()
    by_file = {line.split(":", 1)[0]: line for line in lines}
    assert sorted(by_file) == [
        "database.pdf",
        "empty.pdf",
        "encrypted.pdf",
        "finance.pdf",
        "notes.md",
        "picture.pdf",
        "scan.pdf",
        "truncated.pdf",
    ]
    assert by_file["finance.pdf"].startswith("finance.pdf: stored (2 pages, ")
    assert by_file["notes.md"].startswith("notes.md: stored (1 page, ")
    assert by_file["empty.pdf"] == "empty.pdf: failed: empty file (0 bytes)"
    assert (
        by_file["encrypted.pdf"] == "encrypted.pdf: failed: password-protected PDF: remove the password and try again"
    )
    assert (
        by_file["scan.pdf"]
        == "scan.pdf: failed: no extractable text: its pages hold neither text nor a scanned page image"
    )
    assert by_file["truncated.pdf"].startswith("truncated.pdf: failed: truncated PDF")
    assert by_file["picture.pdf"].startswith("picture.pdf: failed: not a PDF file")
    assert "Traceback" not in proc.stderr
    assert "3 of 8 files in 'finance'" in proc.stderr

    found = rag(["search", "How much did revenue grow?", "--kb", "finance", "--top-k", "3", "--json"])
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)
    assert hits[0]["metadata"]["original_filename"] == "finance.pdf"
    assert hits[0]["metadata"]["pages"] == [1, 2] or hits[0]["metadata"]["pages"] == [1]
    assert all(-1.0 <= h["score"] <= 1.0 for h in hits)
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)

    vectors = rag(["search", "approximate nearest neighbour index", "--kb", "finance", "--top-k", "1", "--json"])
    assert json.loads(vectors.stdout)[0]["metadata"]["original_filename"] == "database.pdf"

    filtered = rag(["search", "revenue", "--kb", "finance", "--json", "--filter", "original_filename == 'notes.md'"])
    assert {h["metadata"]["original_filename"] for h in json.loads(filtered.stdout)} == {"notes.md"}


def test_reingest_unchanged_then_replaced(tmp_path: Path, clean_db: None) -> None:
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(make_pdf(FINANCE))
    assert rag(["ingest", str(pdf), "--kb", "kb1"]).stdout.startswith("report.pdf: stored")
    again = rag(["ingest", str(pdf), "--kb", "kb1"])
    assert again.returncode == 0 and again.stdout.strip() == "report.pdf: unchanged"
    pdf.write_bytes(make_pdf(FINANCE + ["A third page with an appendix."]))
    changed = rag(["ingest", str(pdf), "--kb", "kb1"])
    assert changed.stdout.startswith("report.pdf: replaced (3 pages, ")
    listing = json.loads(rag(["kb", "list", "--json"]).stdout)
    assert [(k["name"], k["documents"]) for k in listing] == [("kb1", 1)]
    assert listing[0]["embedder"].startswith("local:") and listing[0]["dimension"] == 256


def test_files_of_one_name_in_two_subfolders_stay_two_documents(tmp_path: Path, clean_db: None) -> None:
    """Issue 33: `rag ingest t` named t/a/r.txt and t/b/r.txt both 'r.txt': "stored", then "replaced", one
    document kept. A file found in a folder is named by its path inside it, as `rag sync` names it."""
    top = tmp_path / "t"
    for sub, text in (("a", "Alpha branch revenue rose by a third."), ("b", "Beta branch costs fell by a fifth.")):
        (top / sub).mkdir(parents=True)
        (top / sub / "r.txt").write_text(text, encoding="utf-8")
    (top / "top.txt").write_text("The head office moved to Lisbon.", encoding="utf-8")
    proc = rag(["ingest", str(top), "--kb", "twins"])
    assert proc.returncode == 0, proc.stderr
    names = [line.split(": ", 1) for line in proc.stdout.strip().splitlines()]
    assert [name for name, _ in names] == ["a/r.txt", "b/r.txt", "top.txt"]
    assert all(said.startswith("stored (") for _, said in names), proc.stdout
    assert json.loads(rag(["kb", "list", "--json"]).stdout)[0]["documents"] == 3
    # The names are those `rag sync` gives: the same folder synced is unchanged.
    synced = rag(["sync", str(top), "--kb", "twins", "--dry-run"])
    assert "0 new, 0 replaced, 3 unchanged" in synced.stderr, synced.stdout + synced.stderr
    # A file given by itself keeps its file name.
    alone = rag(["ingest", str(top / "b" / "r.txt"), "--kb", "twins"])
    assert alone.stdout.startswith("r.txt: stored (")


def test_without_chunk_options_a_knowledge_base_keeps_its_settings(tmp_path: Path, clean_db: None) -> None:
    """A base built with Spring AI's 800 tokens is not cut again (and re-embedded whole) because the default
    changed: with no chunk option, ingest and sync keep the base's settings; a new base gets the default."""
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(make_pdf(FINANCE))
    assert rag(["ingest", str(pdf), "--kb", "old", "--chunk-size", "800"]).stdout.startswith("report.pdf: stored")
    assert rag(["ingest", str(pdf), "--kb", "old"]).stdout.strip() == "report.pdf: unchanged"
    synced = rag(["sync", str(tmp_path), "--kb", "old"])
    assert synced.returncode == 0 and "0 new, 0 replaced, 1 unchanged" in synced.stderr, synced.stderr
    assert rag(["ingest", str(pdf), "--kb", "old", "--chunk-size", "320"]).stdout.startswith("report.pdf: replaced")
    rag(["ingest", str(pdf), "--kb", "new"])
    listing = {k["name"]: k["chunk_settings"] for k in json.loads(rag(["kb", "list", "--json"]).stdout)}
    assert listing["old"]["chunk_size"] == 320 and listing["new"]["chunk_size"] == 320


def test_kb_list_and_delete(tmp_path: Path, clean_db: None) -> None:
    pdf = tmp_path / "a.pdf"
    pdf.write_bytes(make_pdf(DATABASE))
    rag(["ingest", str(pdf), "--kb", 'it\'s; "odd" $$ name'])
    listed = rag(["kb", "list"])
    assert listed.stdout.startswith('it\'s; "odd" $$ name\t1 documents\t')
    deleted = rag(["kb", "delete", 'it\'s; "odd" $$ name'])
    assert deleted.returncode == 0
    assert "no knowledge bases yet" in rag(["kb", "list"]).stdout
    missing = rag(["kb", "delete", "nope"])
    assert missing.returncode == 2 and missing.stderr.strip() == "error: no knowledge base named 'nope'"


def test_search_errors_are_one_line(clean_db: None) -> None:
    unknown = rag(["search", "x", "--kb", "missing"])
    assert unknown.returncode == 2
    assert (
        unknown.stderr.strip() == "error: no knowledge base named 'missing' (existing: none yet; ingest a file first)"
    )
    bad = rag(["search", "x", "--kb", "missing", "--filter", "year >= "])
    assert bad.returncode == 2 and "filter error at position" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_chunk_json_matches_library_for_each_file(tmp_path: Path) -> None:
    a = tmp_path / "a.pdf"
    a.write_bytes(make_pdf(FINANCE))
    b = tmp_path / "b.txt"
    text = "第一句。第二句！第三句？" * 40 + "\n\nEnglish tail. More words here."
    b.write_text(text, encoding="utf-8")
    args = ["chunk", str(a), str(b), "--strategy", "recursive", "--chunk-size", "30", "--chunk-overlap", "5", "--json"]
    proc = rag(args)
    assert proc.returncode == 0, proc.stderr
    outputs = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(outputs) == 2
    settings = ChunkSettings(strategy="recursive", chunk_size=30, chunk_overlap=5)
    for path, listed in zip((a, b), outputs):
        doc = load_bytes(path.read_bytes(), path.name)
        expected = split(doc.text, settings, doc.pages_for_span).chunks
        assert listed == [
            {"text": c.text, "tokens": c.tokens, "start": c.start, "end": c.end, "pages": list(c.pages)}
            for c in expected
        ]
        assert all(set(item) == {"text", "tokens", "start", "end", "pages"} for item in listed)
    assert outputs[0][-1]["pages"][-1] == 2
    # Without the library: the text file's chunks are its own text, in order, none over 30 tokens, the
    # whole text covered up to the paragraph break, the English tail in the last chunk after the 5 tokens of
    # overlap (a word may end between two Chinese characters: the overlap begins there, not at the text's start).
    chunks = outputs[1]
    assert all(c["text"] == text[c["start"] : c["end"]] and 0 < c["tokens"] <= 30 and c["pages"] == [1] for c in chunks)
    assert chunks[0]["start"] == 0 and chunks[-1]["end"] == len(text)
    assert all(x["start"] < y["start"] <= x["end"] for x, y in zip(chunks, chunks[1:-1]))
    assert "".join(c["text"] for c in chunks[:-1]).startswith("第一句。第二句！第三句？" * 2)
    assert chunks[-1]["text"] == "第三句？\n\nEnglish tail. More words here."


def test_chunk_rejects_bad_settings_and_files(tmp_path: Path) -> None:
    a = tmp_path / "a.txt"
    a.write_text("some text here. more.", encoding="utf-8")
    bad = rag(["chunk", str(a), "--strategy", "token", "--chunk-size", "10", "--chunk-overlap", "10"])
    assert bad.returncode == 2
    assert bad.stderr.strip() == "error: the overlap (10 tokens) must be smaller than the chunk size (10 tokens)"
    missing = rag(["chunk", str(tmp_path / "nope.pdf"), str(a), "--json"])
    assert missing.returncode == 1
    assert missing.stderr.strip().startswith("nope.pdf: cannot read the file")
    assert len(missing.stdout.splitlines()) == 1


# --- what a command imports: only what it needs when it runs ------------------------------------

HEAVY = ("pymupdf", "fitz", "psycopg", "ollama", "llama_cpp", "tiktoken")
"""Packages that cost hundreds of milliseconds (or a GPU library) at import."""


def imported(args: list[str]) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """`python -m rag ARGS` under -X importtime, and the top-level packages it imported.

    A subprocess, not cli.main: what a command imports is only seen in a fresh interpreter (this one has
    imported psycopg, pymupdf and the rest long ago)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [PYTHON, "-X", "importtime", "-m", "rag", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    names = {
        line.rsplit("|", 1)[1].strip().split(".")[0]
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return proc, names


def test_help_imports_no_heavy_package() -> None:
    proc, names = imported(["--help"])
    assert proc.returncode == 0 and "chunk" in proc.stdout, proc.stderr[-2000:]
    assert "rag" in names  # the measurement saw the imports
    assert sorted(names.intersection(HEAVY)) == []


def test_chunk_of_a_text_file_imports_no_database_or_model_client(tmp_path: Path) -> None:
    text = tmp_path / "a.txt"
    text.write_text("Some text to chunk. " * 50, encoding="utf-8")
    proc, names = imported(["chunk", str(text), "--json"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted(names.intersection(("psycopg", "ollama", "llama_cpp"))) == []


def test_mcp_help_still_lists_its_options() -> None:
    # The mcp subcommand's options come from rag.mcp.server, imported only for that subcommand.
    proc, _ = imported(["mcp", "--help"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "--allow-ingest" in proc.stdout and "--port" in proc.stdout


# --- rag eval ------------------------------------------------------------------------------------------


@pytest.fixture
def race_kb(tmp_path: Path, clean_db: None) -> list[dict[str, str]]:
    """30 passages of the public en_race set ingested as files into 'race', and 2 questions on each of
    the first 12 (one by file, one by a sentence the right chunk contains)."""
    from rag.evaluation.sets import eval_set

    data = eval_set("en_race")
    folder = tmp_path / "race"
    folder.mkdir()
    for p in data.passages[:30]:
        (folder / f"{p.key}.txt").write_text(p.text, encoding="utf-8")
    proc = rag(["ingest", str(folder), "--kb", "race", "--chunk-size", "120"])
    assert proc.returncode == 0, proc.stderr
    pids = {p.key for p in data.passages[:12]}
    questions: list[dict[str, str]] = []
    for q in data.questions:
        if q.file in pids and sum(x.get("file") == f"{q.file}.txt" for x in questions) < 2:
            questions.append({"question": q.text, "file": f"{q.file}.txt"})
    return questions


def test_eval_reports_the_hit_at_5_that_counting_search_results_gives(
    tmp_path: Path, race_kb: list[dict[str, str]]
) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text("\n".join(json.dumps(q) for q in race_kb), encoding="utf-8")
    proc = rag(["eval", "--kb", "race", "--questions", str(questions), "--json", "--details"])
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert sorted(report) == ["hybrid", "keyword", "vector"]
    queries = tmp_path / "queries.txt"
    queries.write_text("\n".join(q["question"] for q in race_kb), encoding="utf-8")
    for mode, scores in report.items():
        found = rag(["search", "--queries", str(queries), "--kb", "race", "--mode", mode, "--top-k", "5", "--json"])
        assert found.returncode == 0, found.stderr
        lines = [json.loads(line) for line in found.stdout.splitlines()]
        assert [line["query"] for line in lines] == [q["question"] for q in race_kb]
        hits = sum(
            any(h["metadata"]["original_filename"] == q["file"] for h in line["hits"])
            for q, line in zip(race_kb, lines)
        )
        assert scores["n"] == len(race_kb) >= 20
        assert scores["hit@5"] == round(hits / len(race_kb), 4), mode
        assert sum(r is not None and r <= 5 for r in scores["ranks"]) == hits
        assert scores["hit@1"] <= scores["hit@3"] <= scores["hit@5"]
    # Not a trivial set: some right chunk is missed or ranked below the top.
    assert min(s["hit@1"] for s in report.values()) < 1.0


def test_eval_by_expected_text_from_a_csv_with_details(tmp_path: Path, race_kb: list[dict[str, str]]) -> None:
    from rag.evaluation.sets import eval_set

    passage = eval_set("en_race").passages[0]
    sentence = passage.text.split(". ")[1]
    questions = tmp_path / "questions.csv"
    questions.write_text(
        f'question,expected\n"{race_kb[0]["question"]}","{sentence}"\nzzzq xxqv,"{sentence}"\n', encoding="utf-8"
    )
    proc = rag(["eval", "--kb", "race", "--questions", str(questions), "--mode", "keyword", "--details"])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "2 questions on 'race', top 10 hits each"
    assert lines[1].split() == ["mode", "hit@1", "hit@3", "hit@5", "MRR"]
    assert lines[2].startswith("keyword ")
    # The nonsense question finds nothing: its rank is '-', and it counts as a miss.
    assert lines[-1].split()[0] == "-" and lines[-1].endswith("zzzq xxqv")
    assert float(lines[2].split()[3]) <= 0.5


def test_eval_errors_are_one_line(tmp_path: Path, clean_db: None) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "a", "file": "x.pdf"}\n{"question": "b"}\n', encoding="utf-8")
    proc = rag(["eval", "--kb", "race", "--questions", str(bad)])
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: {bad}: line 2: no expected passage for 'b'; paste the sentence of the document that answers it, "
        "or name the file that does"
    ]
    good = tmp_path / "good.jsonl"
    good.write_text('{"question": "a", "file": "x.pdf"}\n', encoding="utf-8")
    missing = rag(["eval", "--kb", "nowhere", "--questions", str(good)])
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
    assert "no knowledge base named 'nowhere'" in missing.stderr
    absent = rag(["eval", "--kb", "race", "--questions", str(tmp_path / "none.jsonl")])
    assert absent.returncode == 2 and "none.jsonl: cannot read the file" in absent.stderr


def _office_folder(root: Path) -> Path:
    from tests.docgen import make_pptx, make_real_docx, make_scan_pdf, make_xlsx

    d = root / "analyst"
    (d / "decks").mkdir(parents=True)
    (d / "report.docx").write_bytes(make_real_docx())
    (d / "decks" / "review.pptx").write_bytes(make_pptx())
    (d / "prices.xlsx").write_bytes(make_xlsx())
    article = "The Osprey drone passed its certification flight over the Wadden Sea in June. " * 4
    (d / "news.html").write_text(
        f"<html><head><title>Osprey news</title></head><body><nav>Home | Products | Contact"
        f"</nav><main><h1>Certification</h1><p>{article}</p></main><footer>Cookie policy"
        "</footer></body></html>",
        encoding="utf-8",
    )
    (d / "lease-scan.pdf").write_bytes(
        make_scan_pdf(["Jonathan Michael Harrison signed the lease for the Rotterdam warehouse on 3 March 2021."])
    )
    (d / "报告扫描.pdf").write_bytes(
        make_scan_pdf(["营业收入增长了百分之十二，主要来自华东地区的新客户。"], fontname="china-s")
    )
    (d / "~$report.docx").write_bytes(b"owner lock file")
    return d


def test_sync_ingests_an_analysts_folder_and_keeps_it_in_step(tmp_path: Path, clean_db: None) -> None:
    folder = _office_folder(tmp_path)
    dry = rag(["sync", str(folder), "--kb", "office", "--dry-run"])
    assert dry.returncode == 0, dry.stderr
    assert "decks/review.pptx: would be stored" in dry.stdout and "~$report" not in dry.stdout
    assert "would sync" in dry.stderr and "6 new" in dry.stderr
    assert "no knowledge bases yet" in rag(["kb", "list"]).stdout  # a dry run writes nothing

    # Small chunks, so that each says where it is (800 tokens would hold a whole slide deck).
    small = ["--chunk-size", "40", "--min-chunk-size-chars", "20"]
    first = rag(["sync", str(folder), "--kb", "office", *small])
    assert first.returncode == 0, first.stdout + first.stderr
    lines = dict(line.split(": ", 1) for line in first.stdout.strip().splitlines())
    assert set(lines) == {
        "report.docx",
        "decks/review.pptx",
        "prices.xlsx",
        "news.html",
        "lease-scan.pdf",
        "报告扫描.pdf",
    }
    assert all(v.startswith("stored (") for v in lines.values()), lines
    assert "6 new, 0 replaced, 0 unchanged, 0 deleted, 0 failed" in first.stderr

    def hits(query: str, k: int = 1) -> list[dict]:
        proc = rag(["search", query, "--kb", "office", "--json", "--mode", "keyword", "--top-k", str(k)])
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    def top(query: str) -> dict:
        found = hits(query)
        assert found, f"nothing found for {query!r}"
        return found[0]

    # Slide 1 is ~25 tokens: its chunk runs on into slide 2, and says so.
    assert top("Vasco deal Lisbon office")["metadata"]["location"] == "slides 1–2"
    assert top("SKU-6678 Falcon")["metadata"]["location"] == "sheet Sales"
    word = top("Osprey launch Asian market")
    assert word["metadata"]["original_filename"] == "report.docx"
    assert word["metadata"]["location"] == "Annual Report 2023 › Outlook"
    assert top("Wadden Sea certification")["metadata"]["location"] == "Certification"
    scan = top("Rotterdam warehouse lease")
    assert scan["metadata"]["original_filename"] == "lease-scan.pdf" and scan["metadata"]["ocr"] is True
    assert top("华东地区新客户")["metadata"]["original_filename"] == "报告扫描.pdf"
    assert not any("Cookie policy" in h["content"] for h in hits("cookie policy contact", 20))

    # Change one, delete one, add one: replaced, kept (then deleted with --delete-missing), stored.
    (folder / "prices.xlsx").write_bytes(make_pdf(["not an xlsx any more"]))
    (folder / "news.html").unlink()
    (folder / "notes.md").write_text("# Notes\n\nThe Falcon X ships in May.", encoding="utf-8")
    second = rag(["sync", str(folder), "--kb", "office", *small])
    assert second.returncode == 1  # the broken xlsx fails, with one line
    assert "prices.xlsx: failed: not an Excel file (its content is not a ZIP archive)" in second.stdout
    assert "notes.md: stored" in second.stdout and "report.docx: unchanged" in second.stdout
    assert "news.html: missing from the folder, kept" in second.stdout
    third = rag(["sync", str(folder), "--kb", "office", "--delete-missing", *small])
    assert "news.html: deleted (its file is gone)" in third.stdout
    listed = json.loads(rag(["kb", "list", "--json"]).stdout)
    assert listed[0]["documents"] == 6 and listed[0]["source_folder"] == str(folder.resolve())


def test_a_killed_sync_leaves_each_document_whole_or_absent_and_the_next_sync_finishes(
    tmp_path: Path, cli_env: dict[str, str], pg_uri: str, clean_db: None
) -> None:
    import signal

    import psycopg

    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(6):
        (folder / f"note-{i}.md").write_text(
            f"# Note {i}\n\n" + f"Harbour log entry {i}: the keeper lit the lamp. " * 400, encoding="utf-8"
        )
    # A process of its own: what is checked is what a SIGKILL mid-sync leaves in the database.
    proc = subprocess.Popen(
        [PYTHON, "-m", "rag", "sync", str(folder), "--kb", "logs"],
        cwd=ROOT,
        env=cli_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert first.startswith("note-0.md: stored"), first + proc.stderr.read()

    def stored() -> dict[str, tuple[int, int]]:
        with psycopg.connect(pg_uri) as conn:
            rows = conn.execute(
                "SELECT d.original_filename, d.chunk_count, count(v.id) FROM documents d "
                "LEFT JOIN vector_store v ON v.document_id = d.id WHERE d.knowledge = %s "
                "GROUP BY 1, 2",
                ("logs",),
            ).fetchall()
        return {name: (expected, found) for name, expected, found in rows}

    after_kill = stored()
    assert "note-0.md" in after_kill and len(after_kill) < 6
    assert all(expected == found > 0 for expected, found in after_kill.values()), after_kill
    again = rag(["sync", str(folder), "--kb", "logs"])
    assert again.returncode == 0, again.stderr
    assert "note-0.md: unchanged" in again.stdout
    assert f"{6 - len(after_kill)} new, 0 replaced, {len(after_kill)} unchanged" in again.stderr
    final = stored()
    assert len(final) == 6 and all(expected == found > 0 for expected, found in final.values())


def test_a_file_name_with_control_characters_is_printed_escaped_and_top_k_is_capped(
    tmp_path: Path, clean_db: None
) -> None:
    """Issue 18 (10): a name holding an escape sequence and a carriage return rewrote the terminal's line;
    --top-k 1000000000 returned the whole knowledge base."""
    crafted = tmp_path / "report\x1b[2K\rtotally-safe.txt"
    crafted.write_text("Harbour fees rose by four percent in the second quarter.", encoding="utf-8")
    done = rag(["ingest", str(crafted), "--kb", "names"])
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\r" not in done.stdout
    assert done.stdout.startswith("report\\x1b[2K\\rtotally-safe.txt: stored")
    found = rag(["search", "harbour fees", "--kb", "names"])
    assert "report\\x1b[2K\\rtotally-safe.txt" in found.stdout and "\x1b" not in found.stdout
    capped = rag(["search", "harbour fees", "--kb", "names", "--top-k", "1000000000"])
    assert capped.returncode != 0 and "top-k must be at most 100, got 1000000000" in capped.stderr
