"""`python -m rag kb copy NAME --to URL` and `--from URL`: a knowledge base copied between the app's database and
"another server" (a second database on the embedded server, as tests/portable's other tests make one) keeps
every row, id, vector and statistic, with the search indexes there once the rows are in; the other server's
pgvector is checked first, a refusal is one line, and the URL's password appears in no output or error."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import psycopg
import pytest
from psycopg import sql

from rag.chunking import Chunk
from rag.errors import StoreError
from rag.portable.copy import GIN_INDEX, CopyResult, check_pgvector, copy_knowledge_base, server_name
from rag.portable.importer import staging_schema
from rag.portable.writer import Progress
from rag.settings import Settings
from rag.store import Store
from tests.clirun import Ran, rag
from tests.conftest import wipe
from tests.portable.helpers import DIM, EMBEDDER, build_kb, counts, snapshot, unit

PASSWORD = "s3cret-Pa55word"
"""In every URL given to the CLI: the embedded server trusts its socket and ignores it, so it can only leak."""


@pytest.fixture
def other_url(pg_uri: str) -> Iterator[str]:
    """A URL with a password of another database on the embedded server, its tables wiped."""
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = 'rag_copy'").fetchone():
            conn.execute("CREATE DATABASE rag_copy")
    parts = psycopg.conninfo.conninfo_to_dict(pg_uri)
    url = f"postgresql://{parts.get('user', 'postgres')}:{PASSWORD}@/rag_copy?host={quote(str(parts['host']), safe='')}"
    if parts.get("port"):
        url += f"&port={parts['port']}"
    with Store(url):  # its tables, so that wipe finds them
        pass
    wipe(url)
    yield url


def said(ran: Ran) -> str:
    text = ran.stdout + ran.stderr
    assert PASSWORD not in text, text
    return text


def indexes(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'vector_store'")}


def searches(kb: str) -> list[list[tuple[str, float]]]:
    found = []
    for mode in ("vector", "keyword", "hybrid"):
        ran = rag(["search", "Who logged the storms?", "--kb", kb, "--mode", mode, "--top-k", "5", "--json"])
        assert ran.returncode == 0, ran.stderr
        found.append([(h["id"], h["score"]) for h in json.loads(ran.stdout)])
    return found


def test_copy_to_another_server_and_back_keeps_every_row_and_never_says_the_password(
    store: Store, other_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_kb(store)
    before = searches("harbour")
    where = server_name(other_url)
    assert where.endswith("/rag_copy") and PASSWORD not in where

    ran = rag(["kb", "copy", "harbour", "--to", other_url])
    assert ran.returncode == 0, said(ran)
    assert said(ran).startswith("copied 'harbour' from ")
    assert f" to {where}: 3 documents, 10 chunks, 1 saved question (pgvector 0." in ran.stdout
    # 10 chunks: searched row by row (rag.store.graphs), by no HNSW index
    assert f"indexes {GIN_INDEX})" in ran.stdout
    assert GIN_INDEX in indexes(other_url)
    with Store(other_url) as other:
        assert snapshot(other, "harbour") == snapshot(store, "harbour")  # ids, vectors, BM25, questions: all

    again = rag(["kb", "copy", "harbour", "--to", other_url])
    assert again.returncode == 2
    assert said(again).strip() == (
        "error: a knowledge base named 'harbour' exists already: import with --replace to replace it, or --as NAME "
        "to import under another name"
    )
    replaced = rag(["kb", "copy", "harbour", "--to", other_url, "--replace"])
    assert replaced.returncode == 0 and "; replaced the one before)" in said(replaced)

    back = rag(["kb", "copy", "harbour", "--from", other_url, "--as", "harbour back"])
    assert back.returncode == 0, said(back)
    assert said(back).startswith(f"copied 'harbour back' from {where} to ")
    assert "given new ids, as the file's are in use here" in back.stdout  # the ids are the original's here
    assert [[score for _, score in hits] for hits in searches("harbour back")] == [
        [score for _, score in hits] for hits in before
    ]
    missing = rag(["kb", "copy", "nope", "--to", other_url])
    assert missing.returncode == 2
    assert said(missing).strip() == "error: no knowledge base named 'nope' in " + server_name(store.conninfo)


def test_a_server_that_cannot_be_reached_is_refused_in_one_line_without_its_password(store: Store) -> None:
    url = f"postgresql://rag:{PASSWORD}@127.0.0.1:1/team"
    ran = rag(["kb", "copy", "harbour", "--to", url])
    assert ran.returncode == 2
    lines = said(ran).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot connect to 127.0.0.1:1/team ("), lines
    malformed = rag(["kb", "copy", "harbour", "--from", f"postgresql://rag:{PASSWORD}@host:notaport/x"])
    assert malformed.returncode == 2 and len(said(malformed).strip().splitlines()) == 1


def test_the_other_servers_pgvector_is_checked_first(other_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    version = check_pgvector(other_url)
    assert tuple(int(p) for p in version.split(".")[:2]) >= (0, 5)
    from rag.portable import copy

    monkeypatch.setattr(copy, "MIN_PGVECTOR", (99, 0, 0))  # as a server with an old pgvector would be refused
    with pytest.raises(StoreError) as caught:
        check_pgvector(other_url)
    assert str(caught.value) == (
        f"{server_name(other_url)} has pgvector {version}; the copy needs 99.0.0 or newer (HNSW indexes): update it "
        "with ALTER EXTENSION vector UPDATE"
    )
    assert PASSWORD not in str(caught.value)


@pytest.fixture(scope="module")
def second_server(data_dir: Path) -> Iterator[str]:
    """A second PostgreSQL server, over TCP on 127.0.0.1 with a SCRAM password (as a team's server wants one),
    started from the embedded server's binaries in a folder of its own: what `bench --only external` starts.
    (Under the session's data folder, which the server's user can reach, unlike pytest's tmp_path.)"""
    from benchmarks.external import external_server

    folder = data_dir / "second-server"
    try:
        with external_server(folder) as url:
            yield url
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_copy_to_a_second_server_over_tcp_with_a_password_and_back(store: Store, second_server: str) -> None:
    build_kb(store)
    before = searches("harbour")
    password = psycopg.conninfo.conninfo_to_dict(second_server)["password"]
    where = server_name(second_server)
    assert where.startswith("127.0.0.1:") and password not in where

    ran = rag(["kb", "copy", "harbour", "--to", second_server])
    assert ran.returncode == 0, ran.stderr
    assert password not in ran.stdout + ran.stderr
    assert f" to {where}: 3 documents, 10 chunks, 1 saved question (pgvector 0." in ran.stdout
    assert GIN_INDEX in indexes(second_server)
    with Store(second_server) as other:
        assert snapshot(other, "harbour") == snapshot(store, "harbour")

    wrong = second_server.replace(password, "not-" + password)
    refused = rag(["kb", "copy", "harbour", "--to", wrong])
    assert refused.returncode == 2 and password not in refused.stdout + refused.stderr
    assert refused.stderr.count("\n") == 1 and where in refused.stderr

    back = rag(["kb", "copy", "harbour", "--from", second_server, "--as", "harbour again"])
    assert back.returncode == 0, back.stderr
    assert [[score for _, score in hits] for hits in searches("harbour again")] == [
        [score for _, score in hits] for hits in before
    ]


# Resumable copies: the export is kept while the copy has not finished, and the rows are staged in the target in
# batches committed one by one (rag.portable.importer.import_staged); a killed copy is simulated by a progress
# callback that raises, as Ctrl+C would in the middle of a stage.


class Killed(Exception):
    """What a copy is stopped with here."""


def killed_at(stage: str, calls: int) -> Progress:
    """A progress callback that raises at the `calls`-th report of `stage` (the staging reports once before its
    first batch, then after each batch is committed; the final write after its documents and each slice of
    chunks, inside its transaction)."""
    seen = 0

    def progress(name: str, done: int, total: int) -> None:
        nonlocal seen
        if name == stage:
            seen += 1
            if seen == calls:
                raise Killed(f"{stage} {done}/{total}")

    return progress


class Counted:
    """The rows the import writes by COPY (only the staging writes by COPY) and the exports made."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from rag.portable import copy, importer

        self.rows = self.exports = 0
        self.stages: list[tuple[int, int]] = []
        real_copy_rows, real_export = importer.copy_rows, copy.export_knowledge_base

        def copy_rows(conn: psycopg.Connection, rows: list[Any], **kwargs: Any) -> int:
            self.rows += len(rows)
            return real_copy_rows(conn, rows, **kwargs)

        def export(*args: Any, **kwargs: Any) -> Any:
            self.exports += 1
            return real_export(*args, **kwargs)

        monkeypatch.setattr(importer, "copy_rows", copy_rows)
        monkeypatch.setattr(copy, "export_knowledge_base", export)
        monkeypatch.setattr(importer, "STAGE_CHUNKS", 3)  # batches: 3 + 4 + 2 chunks of documents, 1 of none

    def reset(self) -> None:
        self.rows = self.exports = 0


def staged(url: str, name: str = "harbour") -> tuple[int, int] | None:
    """(documents, chunks) staged in the database at `url` for knowledge base `name`, or None."""
    schema = staging_schema(name)
    with psycopg.connect(url) as conn:
        if not conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone():
            return None
        row = conn.execute(
            sql.SQL("SELECT documents, chunks FROM {}").format(sql.Identifier(schema, "state"))
        ).fetchone()
        assert row is not None
        return int(row[0]), int(row[1])


@pytest.fixture
def target_url(other_url: str) -> str:
    """other_url with no staging left by another test."""
    with psycopg.connect(other_url, autocommit=True) as conn:
        for (schema,) in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'kb\\_staging\\_%'"):
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
    return other_url


def copy_to(
    store: Store, url: str, work_dir: Path, settings: Settings, progress: Progress | None = None, **options: Any
) -> CopyResult:
    with Store(url) as other:
        return copy_knowledge_base(
            store, other, "harbour", work_dir=work_dir, settings=settings, progress=progress, **options
        )


def kb_names(url: str) -> list[str]:
    with Store(url) as other:
        return [kb.name for kb in other.list_knowledge_bases()]


def add_document(store: Store) -> None:
    """The source changed: one more document in `harbour`."""
    data = b"The harbour master retired after forty winters."
    store.write_document(
        knowledge="harbour",
        embedder=EMBEDDER,
        dimension=DIM,
        chunk_settings={"strategy": "spring", "chunk_size": 128},
        filename="master.txt",
        path="/docs/master.txt",
        data=data,
        sha256=hashlib.sha256(data).hexdigest(),
        page_count=1,
        chunks=[Chunk(0, data.decode(), 9, 0, len(data), (1,))],
        embeddings=unit(np.random.default_rng(7), 1),
        extras=[{"location": "p. 1"}],
    )


def test_a_killed_copy_leaves_no_knowledge_base_and_the_next_resumes_after_the_batches_committed(
    store: Store, target_url: str, tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_kb(store)
    before = searches("harbour")
    counted = Counted(monkeypatch)

    with pytest.raises(Killed):  # after the export, before anything is written to the target
        copy_to(store, target_url, tmp_path, settings, killed_at("verify", 1))
    assert counted.exports == 1 and counted.rows == 0
    kept = list(tmp_path.glob("copy-harbour-*.zip"))
    assert len(kept) == 1, kept
    assert kb_names(target_url) == [] and staged(target_url) is None

    counted.reset()
    with pytest.raises(Killed):  # after two batches
        copy_to(store, target_url, tmp_path, settings, killed_at("stage", 3))
    assert counted.exports == 0, "the kept export is used"
    assert counted.rows == 7 and staged(target_url) == (2, 7)
    assert kb_names(target_url) == [], "staged rows are no knowledge base"
    with Store(target_url) as other:
        assert counts(other)["vector_store"] == 0

    counted.reset()
    with pytest.raises(Killed):  # inside the final transaction, once its documents and chunks are in
        copy_to(store, target_url, tmp_path, settings, killed_at("write", 3))
    assert counted.rows == 3 and staged(target_url) == (3, 10)
    assert kb_names(target_url) == []

    counted.reset()
    reports: list[tuple[str, int, int]] = []
    result = copy_to(store, target_url, tmp_path, settings, lambda *report: reports.append(report))
    assert counted.exports == 0 and counted.rows == 0, "nothing staged is written again"
    assert ("resuming", 10, 10) in reports
    assert result.resumed == 10 and result.export_kept
    assert "; the export kept by the copy before was used; resumed, 10 chunks were there already)" in str(result.line())
    assert list(tmp_path.iterdir()) == [] and staged(target_url) is None
    assert GIN_INDEX in indexes(target_url)
    with Store(target_url) as other:
        assert snapshot(other, "harbour") == snapshot(store, "harbour")

    back = rag(["kb", "copy", "harbour", "--from", target_url, "--as", "harbour back"])
    assert back.returncode == 0, said(back)
    assert [[score for _, score in hits] for hits in searches("harbour back")] == [
        [score for _, score in hits] for hits in before
    ]


def test_a_source_changed_since_the_killed_copy_is_exported_and_staged_again(
    store: Store, target_url: str, tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_kb(store)
    counted = Counted(monkeypatch)
    with pytest.raises(Killed):
        copy_to(store, target_url, tmp_path, settings, killed_at("stage", 2))
    assert staged(target_url) == (1, 3)
    (stale,) = tmp_path.glob("copy-harbour-*.zip")

    add_document(store)
    counted.reset()
    reports: list[tuple[str, int, int]] = []
    result = copy_to(store, target_url, tmp_path, settings, lambda *report: reports.append(report))
    assert counted.exports == 1 and counted.rows == 11, "all of it again: the staged rows are of the old content"
    assert not any(stage == "resuming" for stage, _, _ in reports)
    assert result.resumed == 0 and not result.export_kept and result.chunks == 11
    assert not stale.exists() and list(tmp_path.iterdir()) == []
    with Store(target_url) as other:
        assert snapshot(other, "harbour") == snapshot(store, "harbour")


def test_replace_keeps_the_old_knowledge_base_searchable_until_the_resumed_copy_ends(
    store: Store, target_url: str, tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_kb(store)
    copy_to(store, target_url, tmp_path, settings)
    with Store(target_url) as other:
        old = snapshot(other, "harbour")
    add_document(store)
    counted = Counted(monkeypatch)

    with pytest.raises(Killed):
        copy_to(store, target_url, tmp_path, settings, killed_at("stage", 3), replace=True)
    assert staged(target_url) == (2, 7)  # the ids are those of the old one's rows: beside them, not among them
    with pytest.raises(Killed):  # the old one deleted and the new one's rows in, all rolled back
        copy_to(store, target_url, tmp_path, settings, killed_at("write", 4), replace=True)
    assert staged(target_url) == (4, 11)
    with Store(target_url) as other:
        assert snapshot(other, "harbour") == old and kb_names(target_url) == ["harbour"]

    counted.reset()
    result = copy_to(store, target_url, tmp_path, settings, replace=True)
    assert counted.rows == 0 and result.resumed == 11 and result.replaced
    with Store(target_url) as other:
        assert snapshot(other, "harbour") == snapshot(store, "harbour")
    assert staged(target_url) is None


def test_restart_drops_what_a_killed_copy_left_and_a_staging_of_one_name_is_not_another_s(
    store: Store, target_url: str, tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_kb(store)
    counted = Counted(monkeypatch)
    with pytest.raises(Killed):
        copy_to(store, target_url, tmp_path, settings, killed_at("stage", 3))
    assert staged(target_url) == (2, 7)

    counted.reset()  # another name in the target: a staging of its own, the first one left as it is
    other_name = copy_to(store, target_url, tmp_path, settings, as_name="harbour 2")
    assert other_name.name == "harbour 2" and other_name.resumed == 0 and counted.rows == 10
    assert staged(target_url) == (2, 7) and kb_names(target_url) == ["harbour 2"]

    counted.reset()
    ran = rag(["kb", "copy", "harbour", "--to", target_url, "--restart"])
    assert ran.returncode == 0, said(ran)
    assert "resumed" not in ran.stdout and counted.exports == 1 and counted.rows == 10
    assert staged(target_url) is None and sorted(kb_names(target_url)) == ["harbour", "harbour 2"]


def test_the_fingerprint_sees_a_row_of_no_document_and_not_a_merge(store: Store) -> None:
    """A copy's kept carrier is reused while the source base's fingerprint stays: it reads the BM25 totals merged
    and pending alike, so a merge of the pending counts changes nothing, and a row another tool wrote does."""
    import uuid

    from psycopg.types.json import Jsonb

    from rag.portable.copy import source_fingerprint

    build_kb(store)
    before = source_fingerprint(store, "harbour")
    assert store.merge_bm25() > 0
    assert source_fingerprint(store, "harbour") == before
    with store.connection() as conn:  # Spring AI's own INSERT: no document, pending until a merge
        conn.execute(
            "INSERT INTO vector_store (id, content, metadata, embedding) VALUES (%s, %s, %s, %s)",
            (uuid.uuid4(), "Another row.", Jsonb({"knowledge": "harbour"}), unit(np.random.default_rng(1), 1, DIM)[0]),
        )
    assert source_fingerprint(store, "harbour") != before
