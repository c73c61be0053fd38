"""Writing chunks: binary COPY against INSERTs, in a scratch database on the configured server."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.types.json import Jsonb

from benchmarks.report import Report, best_of
from rag.query import keywords
from rag.store import copy_rows


def scratch_database(base_uri: str, suffix: str = "") -> tuple[str, Callable[[], None]]:
    """A fresh database `rag_bench_<pid>[_suffix]` on the server of `base_uri`, and the function that drops it."""
    name = f"rag_bench_{os.getpid()}" + (f"_{suffix}" if suffix else "")
    with psycopg.connect(base_uri, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    info = psycopg.conninfo.conninfo_to_dict(base_uri)
    info["dbname"] = name
    uri = psycopg.conninfo.make_conninfo(**info)

    def drop() -> None:
        with psycopg.connect(base_uri, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

    return uri, drop


def bench_insert(report: Report, uri: str, quick: bool) -> None:
    n, dim = (5_000 if quick else 20_000), 768
    report.section(f"Bulk insert of {n:,} chunks ({dim}-d)")
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    rows = [
        (
            uuid.uuid4(),
            f"chunk {i} " + "lorem ipsum " * 40,
            Jsonb({"knowledge": "bench", "chunk_index": i}),
            vectors[i],
            None,
        )
        for i in range(n)
    ]
    with psycopg.connect(uri) as conn:
        register_vector(conn)
        conn.execute("CREATE TABLE bench_copy (LIKE vector_store INCLUDING DEFAULTS INCLUDING GENERATED)")
        conn.execute("CREATE TABLE bench_rows (LIKE vector_store INCLUDING DEFAULTS INCLUDING GENERATED)")
        conn.commit()

        def copy() -> None:
            conn.execute("TRUNCATE bench_copy")
            copy_rows(conn, ((r[0], r[1], r[2].obj, r[3], r[4]) for r in rows), table="bench_copy")
            conn.commit()

        def executemany() -> None:
            conn.execute("TRUNCATE bench_rows")
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO bench_rows (id, content, metadata, embedding, document_id, "
                    "search_text) VALUES (%s, %s, %s, %s, %s, %s)",
                    [(*row, keywords.search_text(row[1])) for row in rows],
                )
            conn.commit()

        def one_by_one() -> None:
            conn.execute("TRUNCATE bench_rows")
            with conn.cursor() as cur:
                for row in rows:
                    cur.execute(
                        "INSERT INTO bench_rows (id, content, metadata, embedding, document_id, "
                        "search_text) VALUES (%s, %s, %s, %s, %s, %s)",
                        (*row, keywords.search_text(row[1])),
                    )
            conn.commit()

        def server_floor() -> None:
            conn.execute("TRUNCATE bench_rows")
            with (
                conn.cursor() as cur,
                cur.copy(
                    "COPY bench_rows (id, content, metadata, embedding, "
                    "document_id, search_text) FROM STDIN WITH (FORMAT BINARY)"
                ) as cp,
            ):
                cp.write(payload)
            conn.commit()

        ours_t, _ = best_of(copy, 2)
        copied = conn.execute("SELECT count(*) FROM bench_copy").fetchone()[0]
        payload = bytearray()
        with (
            conn.cursor() as cur,
            cur.copy(
                "COPY bench_copy (id, content, metadata, embedding, document_id, "
                "search_text) TO STDOUT WITH (FORMAT BINARY)"
            ) as cp,
        ):
            for data in cp:
                payload += data
        conn.commit()
        floor_t, _ = best_of(server_floor, 1)
        pipelined_t, _ = best_of(executemany, 1)
        single_t, _ = best_of(one_by_one, 1)
    report.line(
        f"rows written: {copied:,} (same table layout as vector_store, no ANN index on either); "
        f"the server alone needs {floor_t:.2f} s to take the {len(payload) / 1e6:.0f} MB"
    )
    report.ratio("binary COPY vs one INSERT per row (execute in a loop)", ours_t, single_t, 5)
    report.ratio("binary COPY vs psycopg executemany (pipelined)", ours_t, pipelined_t, 5)
    from benchmarks.peers import langchain_insert

    peer_t = langchain_insert(uri, [r[1] for r in rows], vectors, [r[2].obj for r in rows])
    if peer_t is None:
        report.line("langchain-postgres: not installed (make bench, or pip install -r requirements-bench.txt)")
    else:  # the user's real alternative: PGVector.add_embeddings, what add_documents runs per batch
        report.ratio("binary COPY vs langchain-postgres PGVector.add_embeddings (1,000 a batch)", ours_t, peer_t, 5)
