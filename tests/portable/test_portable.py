"""Export and import of a knowledge base (rag.portable) on the embedded PostgreSQL: a round trip into
another database gives the same rows and the same search results; a corrupt or hostile file is refused
in one line with nothing written; a replace that fails or is killed midway leaves the old base."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import subprocess
import textwrap
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import psycopg
import pytest

from rag.errors import EmbedderMismatchError, RagError
from rag.portable import Archive, PortableFileError, embedder_for_import, export_knowledge_base, import_knowledge_base
from rag.portable.reader import MAX_RATIO
from rag.settings import Settings
from rag.store import Store, graphs
from tests.conftest import PYTHON, ROOT, wipe
from tests.portable.helpers import (
    DIM,
    EMBEDDER,
    build_kb,
    counts,
    declaring,
    members,
    rewrite,
    snapshot,
    unit,
    with_member,
)


@pytest.fixture
def other_store(pg_uri: str) -> Iterator[Store]:
    """Another database on the same server: its own tables, ids and statistics, as a fresh data folder's."""
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = 'rag_portable'").fetchone():
            conn.execute("CREATE DATABASE rag_portable")
    uri = psycopg.conninfo.make_conninfo(pg_uri, dbname="rag_portable")
    s = Store(uri)
    wipe(uri)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def exported(store: Store, tmp_path: Path) -> Path:
    build_kb(store)
    return export_knowledge_base(store, "harbour", tmp_path / "harbour.zip").path


def searches(store: Store, kb: str) -> list[list[tuple[str, str, float]]]:
    """Vector search for five random queries and keyword search for three: (id, content, score) of each hit."""
    rng = np.random.default_rng(5)
    found = [store.search(q, [kb], top_k=4) for q in unit(rng, 5)]
    found += [store.keyword_search(q, [kb], top_k=4) for q in ("storm harbour keeper", "dividend quarter", "加班工资")]
    assert all(found), "every query finds something"
    return [[(str(h.id), h.content, h.score) for h in hits] for hits in found]


def test_a_round_trip_into_another_database_keeps_every_row_id_and_search_result(
    store: Store, other_store: Store, exported: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps: list[tuple[str, int, int]] = []
    # its 10 chunks: a knowledge base large enough for a graph
    monkeypatch.setattr(graphs, "graph_rows", lambda dimension: 5)
    result = import_knowledge_base(other_store, exported, settings=settings, progress=lambda *a: steps.append(a))
    assert (result.name, result.documents, result.chunks, result.questions, result.question_runs) == (
        "harbour",
        3,
        10,
        1,
        1,
    )
    assert result.ids_kept and not result.replaced and not result.reembedded
    assert (result.embedder, result.dimension) == (EMBEDDER, DIM)
    assert other_store._merging is not None  # its BM25 statistics merged after the import, as after an ingest
    other_store._merging.join()
    with other_store.connection() as conn:
        assert conn.execute("SELECT count(*) FROM bm25_pending").fetchone() == (0,)
    assert snapshot(other_store, "harbour") == snapshot(store, "harbour")
    assert searches(other_store, "harbour") == searches(store, "harbour")
    assert list(dict.fromkeys(s for s, _, _ in steps)) == ["verify", "write", "index"]
    assert steps[-1] == ("index", 10, 10) and has_index(other_store, "harbour")
    assert other_store.question_sets.last_run("harbour", "hybrid") == store.question_sets.last_run("harbour", "hybrid")
    assert result.line() == (f"imported 'harbour': 3 documents, 10 chunks, 1 saved question ({EMBEDDER}, 256-d)")


def test_the_file_is_what_the_format_says(store: Store, exported: Path) -> None:
    parts = members(exported)
    manifest = json.loads(parts["manifest.json"])
    assert (manifest["format"], manifest["version"], manifest["counts"]) == (
        "rag-knowledge-base",
        1,
        {"documents": 3, "chunks": 10, "questions": 1, "question_runs": 1},
    )
    assert manifest["knowledge_base"]["source_folder"] == "/docs"
    for name, part in manifest["parts"].items():
        assert hashlib.sha256(parts[name]).hexdigest() == part["sha256"] and len(parts[name]) == part["size"]
    assert set(parts) == {"manifest.json", *manifest["parts"]}
    chunks = [json.loads(line) for line in parts["chunks.jsonl"].splitlines()]
    vectors = np.frombuffer(parts["vectors.f32"], dtype="<f4").reshape(10, DIM)
    for chunk, vector in zip(chunks, vectors):
        stored = store.search(vector, ["harbour"], top_k=1, exact=True)[0]
        assert (str(stored.id), stored.score) == (chunk["id"], pytest.approx(1.0, abs=1e-6))
    # Documents in the order they were written, each one's chunks by index, then the row of no document.
    assert [c["metadata"].get("original_filename") for c in chunks][:3] == ["harbour.txt"] * 3
    assert [c["metadata"].get("chunk_index") for c in chunks][:3] == [0, 1, 2]
    assert chunks[-1]["document_id"] is None and chunks[-1]["metadata"]["source"] == "spring"
    assert "\u2028" in parts["chunks.jsonl"].decode() and len(parts["chunks.jsonl"].splitlines()) == 10
    with zipfile.ZipFile(exported) as z:
        assert z.getinfo("vectors.f32").compress_type == zipfile.ZIP_STORED


def test_import_under_another_name_in_the_same_database_gives_new_ids_and_the_same_results(
    store: Store, exported: Path, settings: Settings
) -> None:
    before = snapshot(store, "harbour")
    result = import_knowledge_base(store, exported, settings=settings, name="harbour copy")
    assert not result.ids_kept and result.name == "harbour copy"
    assert "given new ids, as the file's are in use here" in result.line()
    assert snapshot(store, "harbour") == before  # the original is untouched
    copy = snapshot(store, "harbour copy")
    assert not {r[0] for r in copy["chunks"]} & {r[0] for r in before["chunks"]}
    assert not {r[0] for r in copy["documents"]} & {r[0] for r in before["documents"]}
    documents = {r[0] for r in copy["documents"]}
    for row in copy["chunks"]:
        assert row[2]["knowledge"] == "harbour copy"
        assert row[4] is None or (row[4] in documents and row[2]["document_id"] == str(row[4]))
    strip = lambda found: [[(content, score) for _, content, score in hits] for hits in found]  # noqa: E731
    assert strip(searches(store, "harbour copy")) == strip(searches(store, "harbour"))
    assert copy["bm25"] == before["bm25"] and copy["questions"] == before["questions"]
    # Imported again into the same database under its own name (replacing itself): ids are its own, kept.
    again = import_knowledge_base(store, exported, settings=settings, replace=True)
    assert again.ids_kept and again.replaced and snapshot(store, "harbour") == before


def test_a_file_without_sources_imports_its_documents_empty(
    store: Store, other_store: Store, tmp_path: Path, settings: Settings
) -> None:
    build_kb(store)
    path = export_knowledge_base(store, "harbour", tmp_path / "lean.zip", sources=False).path
    assert not any(name.startswith("sources/") for name in members(path))
    import_knowledge_base(other_store, path, settings=settings)
    [doc] = [d for d in other_store.list_documents("harbour") if d.original_filename == "finance.md"]
    assert other_store.document_bytes(doc.id) == b"" and doc.size_bytes > 0
    assert searches(other_store, "harbour") == searches(store, "harbour")


def test_export_of_a_missing_knowledge_base_writes_no_file(store: Store, tmp_path: Path) -> None:
    with pytest.raises(RagError, match=r"^no knowledge base named 'nope'$"):
        export_knowledge_base(store, "nope", tmp_path / "nope.zip")
    assert list(tmp_path.iterdir()) == []


def _hostile(exported: Path, tmp_path: Path, kind: str) -> tuple[Path, str]:
    """A file made from `exported` as `kind` of corrupt or hostile one, and the reason it must be refused for."""
    out = tmp_path / f"{kind}.zip"
    parts = members(exported)
    if kind == "bad json":
        lines = parts["chunks.jsonl"].splitlines(keepends=True)
        lines[2] = b'{"id": "not closed"\n'
        return rewrite(exported, out, replace={"chunks.jsonl": b"".join(lines)}), "chunks.jsonl is not JSON at line 3"
    if kind == "dot dot":
        return with_member(
            exported, out, "../../etc/cron.d/evil", b"x"
        ), "member '../../etc/cron.d/evil' has an unsafe name"
    if kind == "absolute":
        return with_member(exported, out, "/etc/passwd", b"x"), "member '/etc/passwd' has an unsafe name"
    if kind == "zip bomb":
        bomb = "sources/00000000-0000-4000-8000-000000000000"
        return with_member(exported, out, bomb, bytes(60_000_000)), f"(over {MAX_RATIO}x): refused as a zip bomb"
    if kind == "wrong dimension":
        edit = lambda m: m["knowledge_base"].update(dimension=255)  # noqa: E731
        return rewrite(exported, out, manifest=edit), "vectors.f32 holds 10,240 bytes, not 10 chunks x 255 dimensions"
    if kind == "impossible dimension":
        edit = lambda m: m["knowledge_base"].update(dimension=70_000)  # noqa: E731
        return rewrite(exported, out, manifest=edit), "vector dimension 70000 is invalid (1 to 16000)"
    if kind == "10 GB declared in the manifest":
        edit = lambda m: m["counts"].update(chunks=10_000_000)  # noqa: E731
        return rewrite(exported, out, manifest=edit), "not 10,000,000 chunks x 256 dimensions x 4 = 10,240,000,000"
    if kind == "10 GB declared in a 1 KB file":
        manifest = json.loads(parts["manifest.json"])
        manifest["counts"]["chunks"] = 10_000_000
        declaring(out, manifest, b"\0" * 64, 10_240_000_000)
        assert out.stat().st_size < 4096
        return out, "declare 10,240,00"
    if kind == "checksum mismatch":
        vectors = bytearray(parts["vectors.f32"])
        vectors[100] ^= 0x01
        replaced = rewrite(exported, out, replace={"vectors.f32": bytes(vectors)}, fix_checksums=False)
        return replaced, "the checksum of vectors.f32 does not match the manifest: the file is corrupt"
    if kind == "unknown version":
        edit = lambda m: m.update(version=2)  # noqa: E731
        return rewrite(exported, out, manifest=edit), "format version 2 is not one this version"
    if kind == "count mismatch":
        edit = lambda m: m["counts"].update(questions=3)  # noqa: E731
        return rewrite(exported, out, manifest=edit), "questions.jsonl holds 1 records, the manifest declares 3"
    if kind == "chunk of a missing document":
        lines = parts["chunks.jsonl"].splitlines(keepends=True)
        record = json.loads(lines[0])
        record["document_id"] = "11111111-1111-4111-8111-111111111111"
        lines[0] = json.dumps(record).encode() + b"\n"
        return rewrite(exported, out, replace={"chunks.jsonl": b"".join(lines)}), "which the file does not hold"
    if kind == "not finite":
        vectors = np.frombuffer(parts["vectors.f32"], dtype="<f4").copy()
        vectors[DIM * 4 + 7] = np.nan
        return rewrite(exported, out, replace={"vectors.f32": vectors.tobytes()}), "not a finite number (chunk 5)"
    if kind == "not a zip":
        out.write_bytes(b"%PDF-1.7 not a zip")
        return out, "not a knowledge base export (not a zip file)"
    if kind == "a zip of something else":  # the Chromium walk's plain zip was told "member 'readme.txt' is not part"
        with zipfile.ZipFile(out, "w") as plain:
            plain.writestr("readme.txt", "notes")
        return out, "not a knowledge base export (no manifest of format rag-knowledge-base)"
    if kind == "an export with a stray member":
        return with_member(exported, out, "notes.txt", b"x"), "member 'notes.txt' is not part of the format"
    if kind == "mismatched embedder":
        edit = lambda m: m["knowledge_base"].update(embedder="ollama:nomic-embed-text")  # noqa: E731
        return rewrite(exported, out, manifest=edit), (
            "was built with ollama:nomic-embed-text, and knowledge base 'other' would be searched with "
            f"{EMBEDDER}: set RAG_EMBEDDER=ollama:nomic-embed-text, or import with --reembed"
        )
    raise AssertionError(kind)


HOSTILE = (
    "bad json",
    "dot dot",
    "absolute",
    "zip bomb",
    "wrong dimension",
    "impossible dimension",
    "10 GB declared in the manifest",
    "10 GB declared in a 1 KB file",
    "checksum mismatch",
    "unknown version",
    "count mismatch",
    "chunk of a missing document",
    "not finite",
    "not a zip",
    "a zip of something else",
    "an export with a stray member",
    "mismatched embedder",
)


@pytest.mark.parametrize("kind", HOSTILE)
def test_a_corrupt_or_hostile_file_is_refused_in_one_line_with_nothing_written(
    store: Store, exported: Path, tmp_path: Path, settings: Settings, kind: str
) -> None:
    path, reason = _hostile(exported, tmp_path, kind)
    before = counts(store)
    error = EmbedderMismatchError if kind == "mismatched embedder" else PortableFileError
    with pytest.raises(error) as caught:
        import_knowledge_base(store, path, settings=settings, name="other")
    message = str(caught.value)
    assert message.startswith(str(path)) and reason in message, message
    assert "\n" not in message
    assert counts(store) == before
    assert store.get_knowledge_base("other") is None


def test_an_existing_name_is_refused_unless_replaced(store: Store, exported: Path, settings: Settings) -> None:
    before = counts(store)
    with pytest.raises(RagError, match=r"^a knowledge base named 'harbour' exists already: import with --replace"):
        import_knowledge_base(store, exported, settings=settings)
    assert counts(store) == before


def test_a_replace_that_fails_midway_leaves_the_old_knowledge_base(
    store: Store, exported: Path, settings: Settings
) -> None:
    before = snapshot(store, "harbour")

    def fail(stage: str, done: int, total: int) -> None:
        if stage == "write" and done > 0:  # the old rows deleted and the documents written by now
            raise RuntimeError("stopped midway")

    with pytest.raises(RuntimeError, match="stopped midway"):
        import_knowledge_base(store, exported, settings=settings, replace=True, progress=fail)
    assert snapshot(store, "harbour") == before


def test_a_file_changed_between_the_check_and_the_write_is_refused_and_nothing_changes(
    store: Store, exported: Path, settings: Settings
) -> None:
    """The last part read (vectors.f32, stored) gets one byte changed once the check has passed: the write
    reads it again, finds it corrupt and the transaction is rolled back, the old base kept."""
    before = snapshot(store, "harbour")
    with zipfile.ZipFile(exported) as z:
        info = z.getinfo("vectors.f32")
    data = exported.read_bytes()
    name_len, extra_len = (
        int.from_bytes(data[info.header_offset + 26 : info.header_offset + 28], "little"),
        int.from_bytes(data[info.header_offset + 28 : info.header_offset + 30], "little"),
    )
    offset = info.header_offset + 30 + name_len + extra_len + 4000

    def corrupt(stage: str, done: int, total: int) -> None:
        if stage == "write" and done == 0:
            with exported.open("r+b") as f:
                f.seek(offset)
                byte = f.read(1)
                f.seek(offset)
                f.write(bytes([byte[0] ^ 0x40]))

    with pytest.raises(PortableFileError, match=r"vectors\.f32 is corrupt \(Bad CRC-32"):
        import_knowledge_base(store, exported, settings=settings, replace=True, progress=corrupt)
    assert snapshot(store, "harbour") == before


def has_index(store: Store, name: str) -> bool:
    with psycopg.connect(store.conninfo) as conn:
        return any(b.graphed for b in graphs.bases(conn, [name], DIM)[0])


def test_a_small_knowledge_base_is_imported_without_an_index(
    other_store: Store, exported: Path, settings: Settings
) -> None:
    """Below graphs.graph_rows chunks a knowledge base is searched row by row: the import builds nothing."""
    steps: list[tuple[str, int, int]] = []
    import_knowledge_base(other_store, exported, settings=settings, name="again", progress=lambda *a: steps.append(a))
    assert {s for s, _, _ in steps} == {"verify", "write"} and not has_index(other_store, "again")
    assert searches(other_store, "again")  # found row by row


def test_an_import_killed_while_its_index_is_built_leaves_it_whole_and_searchable(
    other_store: Store, exported: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index is built after the rows commit: a kill then leaves the knowledge base whole, searched row by row,
    and its next search builds the index."""
    script = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from rag.portable import import_knowledge_base
        from rag.settings import Settings
        from rag.store import Store, graphs

        graphs.graph_rows = lambda dimension: 5

        def die(stage, done, total):
            if stage == "index":
                os.kill(os.getpid(), signal.SIGKILL)

        settings = Settings(database_url=None, data_dir=Path("."), ollama_host="http://127.0.0.1:9", embedder="auto",
                            chat_model=None, ollama_timeout=1.0, embed_batch_size=16)
        import_knowledge_base(Store({other_store.conninfo!r}), Path({str(exported)!r}), settings=settings, progress=die)
        """)
    killed = subprocess.run([PYTHON, "-c", script], cwd=ROOT, capture_output=True, timeout=120)
    assert killed.returncode == -9, killed.stderr.decode()
    assert [kb.name for kb in other_store.list_knowledge_bases()] == ["harbour"] and not has_index(
        other_store, "harbour"
    )
    assert searches(other_store, "harbour")
    graphs.graph_rows, before = (lambda dimension: 5), graphs.graph_rows
    try:
        assert other_store.build_graphs(["harbour"]) == ["harbour"] and has_index(other_store, "harbour")
    finally:
        graphs.graph_rows = before


@pytest.mark.parametrize(
    ("stage", "after"),
    [("verify", 0), ("write", 0), ("write", 3), ("write", 7)],
    ids=["checking", "transaction begun", "documents written", "chunks half copied"],
)
def test_an_import_killed_at_any_stage_leaves_the_old_knowledge_base(
    store: Store, exported: Path, pg_uri: str, stage: str, after: int
) -> None:
    """SIGKILL where the progress says `stage` has done more than `after` rows (COPY by 2 rows here: 3 documents,
    then chunk rows 2 at a time, so 7 is midway through the chunks)."""
    before = snapshot(store, "harbour")
    script = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from rag.portable import import_knowledge_base, importer
        from rag.settings import Settings
        from rag.store import Store

        importer.COPY_ROWS = 2

        def die(stage, done, total):
            if stage == {stage!r} and done >= {after}:
                os.kill(os.getpid(), signal.SIGKILL)

        settings = Settings(database_url=None, data_dir=Path("."), ollama_host="http://127.0.0.1:9", embedder="auto",
                            chat_model=None, ollama_timeout=1.0, embed_batch_size=16)
        import_knowledge_base(Store({pg_uri!r}), Path({str(exported)!r}), settings=settings, replace=True, progress=die)
        """)
    killed = subprocess.run([PYTHON, "-c", script], cwd=ROOT, capture_output=True, timeout=120)
    assert killed.returncode == -9, killed.stderr.decode()
    assert snapshot(store, "harbour") == before


def test_a_mismatched_embedder_is_re_embedded_when_asked(
    store: Store, other_store: Store, tmp_path: Path, settings: Settings
) -> None:
    build_kb(store, embedder="ollama:nomic-embed-text", dim=16)
    path = export_knowledge_base(store, "harbour", tmp_path / "ollama.zip").path
    with pytest.raises(EmbedderMismatchError, match="built with ollama:nomic-embed-text"):
        import_knowledge_base(other_store, path, settings=settings)
    steps: list[tuple[str, int, int]] = []
    result = import_knowledge_base(
        other_store, path, settings=settings, reembed=True, progress=lambda *a: steps.append(a)
    )
    assert result.reembedded and (result.embedder, result.dimension) == (EMBEDDER, DIM)
    assert ("embed", 10, 10) in steps
    kb = other_store.get_knowledge_base("harbour")
    assert kb is not None and (kb.embedder, kb.dimension, kb.chunks) == (EMBEDDER, DIM, 9)  # + 1 of no document
    from rag.retrieve import embedder_named

    wordllama = embedder_named(EMBEDDER, settings)
    [query] = wordllama.embed_queries(["Who logged the storms in the harbour?"])
    best = other_store.search(query, ["harbour"], top_k=1, exact=True)[0]
    [expected] = wordllama.embed([best.content])
    assert best.score == pytest.approx(float(np.dot(query, expected)), abs=1e-5)


def test_the_embedder_an_import_must_match_is_the_one_the_app_would_use(settings: Settings) -> None:
    assert embedder_for_import(dataclasses.replace(settings, embedder="auto"), "ollama:bge-m3") == "ollama:bge-m3"
    assert embedder_for_import(dataclasses.replace(settings, embedder="local"), "local:e5") == "local:e5"
    assert embedder_for_import(settings, "ollama:bge-m3") == EMBEDDER  # RAG_EMBEDDER=local:wordllama


def test_an_archive_is_read_as_its_manifest_says(exported: Path) -> None:
    with Archive.open(exported) as archive:
        assert (archive.manifest.name, archive.manifest.chunks, archive.manifest.dimension) == ("harbour", 10, DIM)
        assert sum(len(block) for block in archive.vector_blocks(rows=3)) == 10
        assert [r["original_filename"] for r in archive.records("documents.jsonl")] == [
            "harbour.txt",
            "finance.md",
            "假期.txt",
        ]


def test_small_batches_write_the_same_file_and_import_the_same_rows(
    store: Store, other_store: Store, exported: Path, tmp_path: Path, settings: Settings, monkeypatch
) -> None:
    """Batches of 2 (a server-side cursor for every document, vectors packed 3 at a time, COPY and id look-ups in
    several statements) give the same parts as the defaults, and the same rows imported."""
    from rag.portable import importer, writer

    monkeypatch.setattr(writer, "BATCH_ROWS", 2)
    monkeypatch.setattr(writer, "VECTOR_ROWS", 3)
    monkeypatch.setattr(importer, "COPY_ROWS", 3)
    monkeypatch.setattr(importer, "ID_LOOKUP", 2)
    small = export_knowledge_base(store, "harbour", tmp_path / "small.zip").path
    default, batched = members(exported), members(small)
    assert {k: v for k, v in batched.items() if k != "manifest.json"} == {
        k: v for k, v in default.items() if k != "manifest.json"
    }
    import_knowledge_base(other_store, small, settings=settings)
    assert snapshot(other_store, "harbour") == snapshot(store, "harbour")
