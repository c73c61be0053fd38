"""`python -m rag bench`: each figure is a ratio against a peer measured in the same run.

Speed goals live here, never in timed tests. The database benchmarks run in a scratch
database (`rag_bench_<pid>`) on the configured server, dropped afterwards.
"""
from __future__ import annotations

import functools
import os
import random
import statistics
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.types.json import Jsonb

from rag import chunking, llms
from rag.retrieve import keywords
from rag.chunking import ChunkSettings
from rag.errors import RagError
from rag.settings import Settings
from rag.store import Hit, Store, copy_rows, embedded_server_uri

_WORDS = (
    "the of and to in is was for on that with as by at from it an be this are which or has had not "
    "but were their its also been more revenue growth index vector search model chunk document page "
    "database query answer source token embedding retrieval budget report quarter market"
).split()


def synthetic_text(tokens_wanted: int, seed: int = 0) -> str:
    """Paragraphs of sentences; about 5 characters per cl100k token (measured)."""
    rng = random.Random(seed)
    paragraphs: list[str] = []
    chars = 0
    target_chars = int(tokens_wanted * 4.96)
    while chars < target_chars:
        sentences = []
        for _ in range(rng.randint(2, 6)):
            words = [rng.choice(_WORDS) for _ in range(rng.randint(5, 22))]
            sentences.append(" ".join(words).capitalize() + rng.choice(".?!."))
        paragraph = " ".join(sentences)
        paragraphs.append(paragraph)
        chars += len(paragraph) + 2
    return "\n\n".join(paragraphs)


def _best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best = float("inf")
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


class Report:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def section(self, title: str) -> None:
        print(f"\n## {title}", file=self.out, flush=True)

    def line(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def ratio(self, label: str, ours: float, peer: float, goal: float, unit: str = "s") -> bool:
        ratio = peer / ours if ours > 0 else float("inf")
        met = ratio >= goal
        self.line(f"{label}: ours {ours:.4f} {unit}, peer {peer:.4f} {unit} -> {ratio:.1f}x "
                  f"(goal >= {goal:g}x: {'met' if met else 'NOT met'})")
        return met


def bench_rechunk(report: Report, quick: bool) -> None:
    from langchain_text_splitters import TokenTextSplitter

    n_tokens = 200_000 if quick else 1_000_000
    text = synthetic_text(n_tokens, seed=1)
    settings = [(200, 20), (300, 50), (500, 0), (800, 80), (1000, 100)]
    report.section(f"Re-chunking a {n_tokens:,}-token text at {len(settings)} new settings")
    chunking._vocab()
    tokenized = chunking.tokenize(text)
    report.line(f"text: {len(text):,} chars, {len(tokenized):,} tokens (tokenised once beforehand)")

    def ours() -> list[int]:
        return [len(chunking.split(tokenized, ChunkSettings(strategy="token", chunk_size=size,
                                                            chunk_overlap=overlap)).chunks)
                for size, overlap in settings]

    def peer() -> list[int]:
        counts = []
        for size, overlap in settings:
            splitter = TokenTextSplitter(encoding_name=chunking.encoding().name, chunk_size=size,
                                         chunk_overlap=overlap)
            counts.append(len(splitter.split_text(text)))
        return counts

    ours_t, ours_counts = _best_of(ours, 3)
    peer_t, peer_counts = _best_of(peer, 1)
    report.line(f"chunks per setting: ours {ours_counts}, langchain {peer_counts}")
    report.ratio("re-chunk vs langchain-text-splitters TokenTextSplitter", ours_t, peer_t, 20)

    pages = 300
    doc_text = synthetic_text(pages * 500, seed=2)
    report.line(f"a {pages}-page document ({pages * 500:,} tokens): re-chunk time after the first "
                "tokenisation (goal < 200 ms each)")
    first_t, doc_tokens = _best_of(lambda: chunking.tokenize(doc_text), 1)
    report.line(f"  first tokenisation: {first_t * 1000:.0f} ms")
    for strategy in chunking.STRATEGIES:
        overlap = 0 if strategy == "spring" else 50
        t, _ = _best_of(lambda: chunking.split(doc_tokens, ChunkSettings(
            strategy=strategy, chunk_size=400, chunk_overlap=overlap)), 3)
        report.line(f"  {strategy:9}: {t * 1000:6.1f} ms ({'met' if t < 0.2 else 'NOT met'}; "
                    f"{0.2 / t:.0f}x under the 200 ms budget)")


def bench_spring(report: Report, quick: bool) -> None:
    n_tokens = 200_000 if quick else 1_000_000
    text = synthetic_text(n_tokens, seed=3)
    report.section(f"Cold Spring AI chunking of a {n_tokens:,}-token text (tokenise + split)")
    chunking._vocab()  # per-process tables, not per-text work

    def ours() -> list[str]:
        return [c.text for c in chunking.split(chunking.tokenize(text), chunking.SPRING_DEFAULT).chunks]

    ours_t, ours_out = _best_of(ours, 2)
    peer_t, peer_out = _best_of(lambda: chunking.spring_split_reference(text), 2)
    report.line(f"chunks: {len(ours_out)}; identical to the straightforward port: {ours_out == peer_out}")
    report.ratio("cold spring vs a port that re-encodes each cut", ours_t, peer_t, 3)
    if ours_out != peer_out:
        raise RagError("the fast Spring splitter disagrees with the reference port")


def _scratch_database(base_uri: str) -> tuple[str, Callable[[], None]]:
    name = f"rag_bench_{os.getpid()}"
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


def _clustered(n: int, dim: int, rng: np.random.Generator, centers: np.ndarray) -> np.ndarray:
    """Vectors around topic centres, as real embeddings cluster (uniform noise is a worst case)."""
    picks = rng.integers(0, len(centers), size=n)
    v = centers[picks] + rng.normal(scale=0.35, size=(n, dim)).astype(np.float32)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def bench_insert(report: Report, uri: str, quick: bool) -> None:
    n, dim = (5_000 if quick else 20_000), 768
    report.section(f"Bulk insert of {n:,} chunks ({dim}-d)")
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    rows = [(uuid.uuid4(), f"chunk {i} " + "lorem ipsum " * 40, Jsonb({"knowledge": "bench", "chunk_index": i}),
             vectors[i], None) for i in range(n)]
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
                cur.executemany("INSERT INTO bench_rows (id, content, metadata, embedding, document_id, "
                                "search_text) VALUES (%s, %s, %s, %s, %s, %s)",
                                [(*row, keywords.search_text(row[1])) for row in rows])
            conn.commit()

        def one_by_one() -> None:
            conn.execute("TRUNCATE bench_rows")
            with conn.cursor() as cur:
                for row in rows:
                    cur.execute("INSERT INTO bench_rows (id, content, metadata, embedding, document_id, "
                                "search_text) VALUES (%s, %s, %s, %s, %s, %s)",
                                (*row, keywords.search_text(row[1])))
            conn.commit()

        def server_floor() -> None:
            conn.execute("TRUNCATE bench_rows")
            with conn.cursor() as cur, cur.copy("COPY bench_rows (id, content, metadata, embedding, "
                                                "document_id, search_text) FROM STDIN WITH (FORMAT BINARY)") as cp:
                cp.write(payload)
            conn.commit()

        ours_t, _ = _best_of(copy, 2)
        copied = conn.execute("SELECT count(*) FROM bench_copy").fetchone()[0]
        payload = bytearray()
        with conn.cursor() as cur, cur.copy("COPY bench_copy (id, content, metadata, embedding, document_id, "
                                            "search_text) TO STDOUT WITH (FORMAT BINARY)") as cp:
            for data in cp:
                payload += data
        conn.commit()
        floor_t, _ = _best_of(server_floor, 1)
        pipelined_t, _ = _best_of(executemany, 1)
        single_t, _ = _best_of(one_by_one, 1)
    report.line(f"rows written: {copied:,} (same table layout as vector_store, no ANN index on either); "
                f"the server alone needs {floor_t:.2f} s to take the {len(payload) / 1e6:.0f} MB")
    report.ratio("binary COPY vs one INSERT per row (execute in a loop)", ours_t, single_t, 5)
    report.ratio("binary COPY vs psycopg executemany (pipelined)", ours_t, pipelined_t, 5)


def bench_search(report: Report, uri: str, quick: bool) -> None:
    n, dim, k = (20_000 if quick else 100_000), 768, 10
    kbs = 10
    report.section(f"Top-{k} search over {n:,} vectors ({dim}-d), HNSW vs exact scan")
    rng = np.random.default_rng(11)
    centers = rng.normal(size=(max(50, n // 100), dim)).astype(np.float32)
    store = Store(uri)
    try:
        with psycopg.connect(uri) as conn:
            register_vector(conn)
            conn.execute("SET maintenance_work_mem = '1GB'")
            batch = 10_000
            for start in range(0, n, batch):
                vectors = _clustered(min(batch, n - start), dim, rng, centers)
                texts = _sentences(len(vectors), seed=start)
                rows = ((uuid.uuid4(), texts[i],
                         {"knowledge": f"kb{(start + i) % kbs}", "chunk_index": start + i,
                          "original_filename": f"doc{(start + i) // 50}.pdf", "pages": [1 + i % 30]}, v, None)
                        for i, v in enumerate(vectors))
                copy_rows(conn, rows)
            for i in range(kbs):
                # The knowledge-base bookkeeping a real ingest writes; search sizes ef_search from it.
                conn.execute("INSERT INTO knowledge_bases (name, embedder, dimension, chunk_settings) "
                             "VALUES (%s, 'bench', %s, '{}')", (f"kb{i}", dim))
                conn.execute("INSERT INTO documents (id, knowledge, original_filename, sha256, content, "
                             "size_bytes, page_count, chunk_count, chunk_settings) "
                             "VALUES (%s, %s, 'bench', '', '', 0, 1, %s, '{}')",
                             (uuid.uuid4(), f"kb{i}", n // kbs))
            conn.commit()
            t0 = time.perf_counter()
            conn.execute(f"CREATE INDEX vector_store_hnsw_{dim} ON vector_store USING hnsw "
                         f"((embedding::vector({dim})) vector_cosine_ops) WHERE vector_dims(embedding) = {dim}")
            conn.execute("ANALYZE vector_store")
            conn.commit()
            report.line(f"HNSW build: {time.perf_counter() - t0:.1f} s (m=16, ef_construction=64)")
        plan = store.explain_search(dim, "kb3", k)
        report.line(f"KB-filtered plan uses the HNSW index: {f'vector_store_hnsw_{dim}' in plan}")
        queries = _clustered(60 if quick else 100, dim, rng, centers)
        for label, names in (("no filter", [f"kb{i}" for i in range(kbs)]), ("KB filter, 10% of rows", ["kb3"])):
            approx_t, approx_ids = [], []
            exact_t, exact_ids = [], []
            for q in queries:
                t = time.perf_counter()
                hits = store.search(q, names, top_k=k)
                approx_t.append(time.perf_counter() - t)
                approx_ids.append({h.id for h in hits})
            for q in queries[:30]:
                t = time.perf_counter()
                hits = store.search(q, names, top_k=k, exact=True)
                exact_t.append(time.perf_counter() - t)
                exact_ids.append({h.id for h in hits})
            recall = statistics.mean(len(a & e) / k for a, e in zip(approx_ids, exact_ids))
            p50 = (statistics.median(approx_t), statistics.median(exact_t))
            p95 = (float(np.percentile(approx_t, 95)), float(np.percentile(exact_t, 95)))
            report.line(f"[{label}] p50 {p50[0] * 1000:.1f} ms vs exact {p50[1] * 1000:.1f} ms -> "
                        f"{p50[1] / p50[0]:.1f}x; p95 {p95[0] * 1000:.1f} ms vs {p95[1] * 1000:.1f} ms -> "
                        f"{p95[1] / p95[0]:.1f}x; recall@{k} vs exact {recall:.3f} "
                        f"(goal >= 0.95: {'met' if recall >= 0.95 else 'NOT met'}); "
                        f"rows returned {min(len(a) for a in approx_ids)}..{max(len(a) for a in approx_ids)}")
        _bench_chat_overhead(report, store, queries, k, kbs)
    finally:
        store.close()


def bench_retrieval(report: Report, uri: str, settings: Settings) -> None:
    """hit@5 per search mode on the question set in tests/retrieval_eval.py (English + Chinese)."""
    import dataclasses

    from rag import retrieve
    from rag.chunking import Chunk

    try:
        from tests.retrieval_eval import DISTRACTORS, PASSAGES, QUESTIONS
    except ImportError:
        report.section("Retrieval quality per search mode")
        report.line("skipped: tests/retrieval_eval.py is not importable (run from the project root)")
        return
    local = dataclasses.replace(settings, database_url=uri)
    embedder = retrieve.embedder_named_or_default(local)
    report.section(f"Retrieval quality per search mode ({len(QUESTIONS)} questions, "
                   f"{len(PASSAGES) + len(DISTRACTORS)} passages, embedder {embedder.name})")
    store = Store(uri)
    try:
        for p in PASSAGES + DISTRACTORS:
            store.write_document(knowledge="bench-eval", embedder=embedder.name, dimension=embedder.dimension,
                                 chunk_settings={}, filename=p.key, path=None, data=p.text.encode(),
                                 sha256=p.key, page_count=1, chunks=[Chunk(0, p.text, 1, 0, len(p.text), (1,))],
                                 embeddings=embedder.embed([p.text]))
        questions = [(q.question, q.passage) for q in QUESTIONS]
        quality = {m: retrieve.mode_quality(store, local, "bench-eval", questions, mode=m)
                   for m in retrieve.MODES}
        for mode, q in quality.items():
            report.line(f"{mode:8} hit@1 {q.hit_at_1:.3f}  hit@5 {q.hit_at_5:.3f}  MRR {q.mrr:.3f}")
        best = max(quality["vector"].hit_at_5, quality["keyword"].hit_at_5)
        report.line(f"hybrid hit@5 vs the better single mode: {quality['hybrid'].hit_at_5:.3f} vs {best:.3f} "
                    f"({'met' if quality['hybrid'].hit_at_5 >= best else 'NOT met'})")
    finally:
        store.close()


_STOPWORDS = "the of and to in is was for on that with as by at from it an be this are which or".split()


@functools.cache
def _vocabulary(size: int = 20_000) -> tuple[list[str], list[float]]:
    """Pseudo-words with Zipf frequencies, as in real text (a tiny vocabulary would make every
    keyword match every chunk, which no real corpus does)."""
    rng = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = list(dict.fromkeys("".join(rng.choice(letters) for _ in range(rng.randint(4, 10)))
                               for _ in range(size)))
    return words, [1.0 / (rank + 1) for rank in range(len(words))]


def _sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    words, weights = _vocabulary()
    out = []
    for _ in range(n):
        length = rng.randint(40, 120)
        content = rng.choices(words, weights=weights, k=length)
        text = [w if rng.random() > 0.4 else f"{rng.choice(_STOPWORDS)} {w}" for w in content]
        out.append(" ".join(text).capitalize() + ".")
    return out


def _question(rng: random.Random, passage: str) -> str:
    """A question about one passage: a few of its words among stop words."""
    words = [w for w in passage.rstrip(".").split() if w.lower() not in _STOPWORDS]
    picked = rng.sample(words, k=min(5, len(words)))
    return "what is the " + " of ".join(picked)


class _KnownVector:
    """An embedder that answers with the query vector the bench already has: the chat-turn figures
    then leave out the embedder's own time, which depends on the model and not on this code."""

    name = "bench"
    max_input_tokens = None

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.vector = np.zeros(dimension, dtype=np.float32)

    def embed(self, texts: Sequence[str], progress: object = None) -> np.ndarray:
        return np.tile(self.vector, (len(texts), 1))


def _bench_chat_overhead(report: Report, store: Store, queries: np.ndarray, k: int, kbs: int) -> None:
    """What a chat turn costs before the model: retrieval (each mode, through retrieve.search as
    the chat calls it) and prompt assembly."""
    from rag import generate, retrieve
    from rag.settings import get_settings

    names = [f"kb{i}" for i in range(kbs)]
    rng = random.Random(3)
    passages = _sentences(len(queries), seed=0)  # the first rows stored are these texts
    known = _KnownVector(queries.shape[1])
    settings = get_settings()
    previous = retrieve._embedders.get(known.name)
    retrieve._embedders[known.name] = known
    timings: dict[str, list[float]] = {"vector": [], "keyword": [], "hybrid": [], "hybrid + prompt": []}
    try:
        for q, passage in zip(queries, passages):
            question = _question(rng, passage)
            known.vector = np.asarray(q, dtype=np.float32)
            for mode in ("vector", "keyword"):
                t = time.perf_counter()
                retrieve.search(store, settings, question, names, top_k=8, mode=mode)
                timings[mode].append(time.perf_counter() - t)
            t = time.perf_counter()
            fused = retrieve.search(store, settings, question, names, top_k=8, mode="hybrid")
            timings["hybrid"].append(time.perf_counter() - t)
            sources = generate.number_sources(fused)
            messages = generate.build_messages(question, sources)
            generate.context_budget(messages, sources, 8192)
            timings["hybrid + prompt"].append(time.perf_counter() - t)
    finally:
        if previous is None:
            retrieve._embedders.pop(known.name, None)
        else:
            retrieve._embedders[known.name] = previous
    report.line(f"chat turn before the model, {len(queries)} questions (query embedding excluded: it is the "
                "embedder's time):")
    for label, values in timings.items():
        p95 = float(np.percentile(values, 95))
        goal = " (goal p95 < 50 ms: " + ("met)" if p95 < 0.05 else "NOT met)") if label == "hybrid + prompt" else ""
        report.line(f"  {label:16} p50 {statistics.median(values) * 1000:6.1f} ms  p95 {p95 * 1000:6.1f} ms{goal}")


def bench_gpu(report: Report, quick: bool) -> None:
    """The GPU sampler's cost per tick against the two NVML calls every GPU monitor makes."""
    from rag import gpu

    report.section("GPU sampler: one tick vs bare nvmlDeviceGetMemoryInfo + nvmlDeviceGetUtilizationRates")
    cost = gpu.tick_cost(ticks=800 if quick else 4000, rounds=3 if quick else 5)
    if cost.skipped:
        report.line(f"skipped: {cost.skipped}")
        return
    met = cost.ratio <= 1.5
    report.line(f"{cost.devices} GPU(s), {cost.ticks} ticks per round: sampler {cost.ours * 1e6:.1f} µs/tick, "
                f"bare calls {cost.peer * 1e6:.1f} µs -> {cost.ratio:.2f}x (goal <= 1.5x: {'met' if met else 'NOT met'})")


def bench_answers(report: Report, quick: bool) -> None:
    """The embedded base model's answers on the retrieval question set: each question with its
    passage and two others as numbered sources, greedy decoding; does the answer's first citation
    (after attribute_citations) name the passage? With the worked example vs without it."""
    import uuid as _uuid

    from rag import generate
    from rag.llms import LocalChatModel, completion_prompt

    report.section("Embedded model: first citation names the right source (worked example vs none)")
    ok, reason = LocalChatModel.available()
    if not ok:
        report.line(f"skipped: {reason}")
        return
    try:
        from tests.retrieval_eval import DISTRACTORS, PASSAGES, QUESTIONS
    except ImportError:
        report.line("skipped: tests/retrieval_eval.py is not importable (run from the project root)")
        return
    model = LocalChatModel()
    by_key = {p.key: p for p in PASSAGES + DISTRACTORS}
    rng = random.Random(5)
    questions = QUESTIONS[::2] if quick else QUESTIONS
    right = {"with the example": 0, "without": 0}
    for q in questions:
        passages = [by_key[q.passage], *rng.sample([p for p in by_key.values() if p.key != q.passage], 2)]
        rng.shuffle(passages)
        sources = generate.number_sources([
            Hit(id=_uuid.uuid4(), content=p.text, score=1.0,
                metadata={"original_filename": f"{p.key}.pdf", "pages": [1], "knowledge": "bench"})
            for p in passages])
        expected = next(s.n for s in sources if s.hit.original_filename == f"{q.passage}.pdf")
        messages = generate.build_messages(q.question, sources)
        for label, example in (("with the example", llms.citation_example(messages)), ("without", None)):
            # The model's own generation path (its stop sequences, penalty and token limit), greedy.
            answer = "".join(e.text for e in model._generate(completion_prompt(messages, example), 0.0, None)
                             if e.kind == "content")
            cited = generate.citation_numbers(generate.attribute_citations(answer, sources))
            right[label] += bool(cited) and cited[0] == expected
    report.line(f"{len(questions)} questions: " + ", ".join(f"{label} {n}/{len(questions)}" for label, n in right.items()))


BENCHES = ("rechunk", "spring", "gpu", "insert", "search", "retrieval", "answers")


def run(settings: Settings, *, out: TextIO, quick: bool = False, only: list[str] | None = None) -> int:
    chosen = only or list(BENCHES)
    unknown = [b for b in chosen if b not in BENCHES]
    if unknown:
        raise RagError(f"unknown benchmark {unknown[0]!r} (choose from: {', '.join(BENCHES)})")
    report = Report(out)
    report.line(f"# rag bench{' (quick)' if quick else ''}: ratios are peer time / our time, same process")
    if "rechunk" in chosen:
        bench_rechunk(report, quick)
    if "spring" in chosen:
        bench_spring(report, quick)
    if "gpu" in chosen:
        bench_gpu(report, quick)
    if "answers" in chosen:
        bench_answers(report, quick)
    if {"insert", "search", "retrieval"} & set(chosen):
        base = settings.database_url or embedded_server_uri(settings.pgdata)
        uri, drop = _scratch_database(base)
        try:
            Store(uri).close()  # schema
            if "insert" in chosen:
                bench_insert(report, uri, quick)
            if "search" in chosen:
                bench_search(report, uri, quick)
            if "retrieval" in chosen:
                bench_retrieval(report, uri, settings)
        finally:
            drop()
    return 0
