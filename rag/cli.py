"""`python -m rag`: ingest, search, chunk, kb and bench from the command line."""
from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from rag import chunking, documents, ingest, retrieve
from rag.mcp import server as mcp_server
from rag.chunking import ChunkSettings
from rag.errors import RagError
from rag.settings import Settings, get_settings
from rag.store import Hit, Store


def _add_chunk_options(parser: argparse.ArgumentParser) -> None:
    d = ChunkSettings()
    group = parser.add_argument_group("chunking")
    group.add_argument("--strategy", choices=chunking.STRATEGIES, default=d.strategy,
                       help="spring = Spring AI's TokenTextSplitter (default); token = fixed token "
                            "windows; recursive = paragraph, sentence, then word boundaries")
    group.add_argument("--chunk-size", type=int, default=d.chunk_size, help="target tokens per chunk (cl100k)")
    group.add_argument("--chunk-overlap", type=int, default=d.chunk_overlap,
                       help="tokens shared by neighbouring chunks (token and recursive only)")
    group.add_argument("--min-chunk-size-chars", type=int, default=d.min_chunk_size_chars,
                       help="spring: cut at the last . ? ! or newline only if it lies beyond this many "
                            "characters (not a merge threshold)")
    group.add_argument("--min-chunk-length-to-embed", type=int, default=d.min_chunk_length_to_embed,
                       help="drop chunks of this many characters or fewer")
    group.add_argument("--max-num-chunks", type=int, default=d.max_num_chunks,
                       help="spring: after this many chunks the rest becomes one last chunk")
    group.add_argument("--keep-separator", action=argparse.BooleanOptionalAction, default=d.keep_separator,
                       help="spring: keep newlines in chunks (--no-keep-separator turns them into spaces)")


def _chunk_settings(args: argparse.Namespace) -> ChunkSettings:
    # The chunking options' dests are the ChunkSettings field names.
    return chunking.settings_from_dict(vars(args))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m rag",
        description="RAG Knowledge Lab: build and query a pgvector knowledge base.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log diagnostics to stderr")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("ingest", help="parse, chunk, embed and store files or folders")
    p.add_argument("paths", nargs="+", metavar="PATH", help="files, or folders to scan for PDF/EPUB/XPS/TXT/MD")
    p.add_argument("--kb", required=True, help="knowledge base name (metadata 'knowledge')")
    _add_chunk_options(p)

    p = sub.add_parser("search", help="find the chunks closest to a query (or to each line of a file)")
    p.add_argument("query", nargs="?", help="the query (omit it with --queries)")
    p.add_argument("--queries", metavar="FILE", default=None,
                   help="one query per line; with --json, one line of JSON per query, in order")
    p.add_argument("--mode", choices=retrieve.MODES, default=retrieve.DEFAULT_MODE,
                   help="vector (embeddings), keyword (PostgreSQL full text, CJK bigrams), or hybrid "
                        f"(weighted reciprocal rank fusion); default {retrieve.DEFAULT_MODE}")
    p.add_argument("--kb", required=True, action="append",
                   help="knowledge base to search (repeat for several)")
    p.add_argument("--top-k", type=int, default=5)
    p.add_argument("--min-score", type=float, default=None, help="minimum cosine similarity (-1..1)")
    p.add_argument("--filter", default=None,
                   help="Spring AI filter expression, e.g. \"original_filename == 'a.pdf' && page >= 3\"")
    p.add_argument("--json", action="store_true", help="print hits as JSON")

    p = sub.add_parser("ask", help="answer a question from a knowledge base, with citations")
    p.add_argument("question")
    p.add_argument("--kb", required=True, action="append", help="knowledge base (repeat for several)")
    p.add_argument("--top-k", type=int, default=8)
    p.add_argument("--model", default=None,
                   help="an Ollama model (e.g. qwen2.5:7b-instruct) or 'local' for the embedded one; "
                        "default RAG_CHAT_MODEL, else Ollama's first model, else local")
    p.add_argument("--mode", choices=retrieve.MODES, default=retrieve.DEFAULT_MODE)
    p.add_argument("--filter", default=None, help="Spring AI filter expression")
    p.add_argument("--json", action="store_true",
                   help='print {"answer", "citations": [{"n", "original_filename", "pages", "score", '
                        '"chunk_id"}], "model"}')

    p = sub.add_parser("chunk", help="show how files would be chunked (nothing is stored)")
    p.add_argument("files", nargs="+", metavar="FILE")
    _add_chunk_options(p)
    p.add_argument("--json", action="store_true",
                   help='print a JSON list of {"text", "tokens", "start", "end", "pages"} per file')

    p = sub.add_parser("kb", help="list or delete knowledge bases")
    kb_sub = p.add_subparsers(dest="kb_command", required=True)
    kl = kb_sub.add_parser("list", help="knowledge bases with their embedder and counts")
    kl.add_argument("--json", action="store_true")
    kd = kb_sub.add_parser("delete", help="delete a knowledge base with its documents and chunks")
    kd.add_argument("name")

    p = sub.add_parser("mcp", help="serve the knowledge base as MCP tools (stdio, or --http)")
    mcp_server.add_arguments(p)

    p = sub.add_parser("bench", help="benchmarks, each reported as a ratio against a peer")
    p.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    p.add_argument("--only", action="append", default=None,
                   help="run only these benchmarks (rechunk, spring, gpu, insert, search, retrieval, answers); repeatable")
    return parser


class _Progress:
    """A one-line progress bar on stderr, drawn only when stderr is a terminal."""

    def __init__(self, stream: TextIO, total_files: int) -> None:
        self.stream = stream
        self.total = total_files
        self.index = 0
        self.enabled = stream.isatty()

    def update(self, filename: str, stage: str, fraction: float, message: str) -> None:
        if not self.enabled:
            return
        overall = (self.index + max(0.0, min(1.0, fraction))) / max(self.total, 1)
        width = 30
        filled = int(overall * width)
        bar = "#" * filled + "." * (width - filled)
        line = f"[{bar}] {overall:4.0%} {self.index + 1}/{self.total} {filename}: {stage} {message}"
        self.stream.write("\r" + line[:120].ljust(120))
        self.stream.flush()

    def clear(self) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * 120 + "\r")
            self.stream.flush()


def cmd_ingest(args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO) -> int:
    chunk_settings = _chunk_settings(args)
    knowledge = ingest.validate_kb_name(args.kb)
    paths = list(ingest.expand_paths(args.paths))
    if not paths:
        raise RagError("no supported files found (PDF, EPUB, XPS, TXT, MD) in: " + ", ".join(args.paths))
    failed = 0
    with Store.open(settings) as store:
        embedder = ingest.embedder_for_kb(store, settings, knowledge)
        progress = _Progress(err, len(paths))
        for index, path in enumerate(paths):
            progress.index = index
            result = ingest.ingest_path(
                store, embedder, path, knowledge, chunk_settings,
                on_stage=lambda stage, fraction, message, name=path.name: progress.update(
                    name, stage, fraction, message),
            )
            progress.clear()
            failed += not result.ok
            print(result.line(), file=out, flush=True)
    stored = len(paths) - failed
    print(f"{stored} of {len(paths)} files in '{knowledge}' ({embedder.name})", file=err)
    return 1 if failed else 0


def _print_hits(hits: Sequence[Hit], out: TextIO) -> None:
    if not hits:
        print("no hits", file=out)
    for rank, hit in enumerate(hits, 1):
        pages = ",".join(str(p) for p in hit.pages) or "-"
        preview = " ".join(hit.content.split())[:160]
        print(f"{rank:2}. {hit.score:.3f}  {hit.original_filename} p.{pages}  [{hit.knowledge}]", file=out)
        print(f"    {preview}", file=out)


def cmd_search(args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO) -> int:
    if (args.query is None) == (args.queries is None):
        raise RagError("give either a QUERY or --queries FILE")
    if args.queries is not None:
        try:
            lines = Path(args.queries).read_text(encoding="utf-8-sig").splitlines()
        except OSError as exc:
            raise RagError(f"{args.queries}: cannot read the file ({exc.strerror or exc})") from exc
        queries = [line.strip() for line in lines if line.strip()]
    else:
        queries = [args.query]
    with Store.open(settings) as store:
        for query in queries:
            hits = retrieve.search(store, settings, query, args.kb, top_k=args.top_k, min_score=args.min_score,
                                    filter_expression=args.filter, mode=args.mode)
            if args.json and args.queries is not None:
                out.write(json.dumps({"query": query, "hits": [h.as_dict() for h in hits]}, ensure_ascii=False) + "\n")
            elif args.json:
                json.dump([h.as_dict() for h in hits], out, ensure_ascii=False, indent=2)
                out.write("\n")
            else:
                if args.queries is not None:
                    print(f"# {query}", file=out)
                _print_hits(hits, out)
            out.flush()
    return 0


def cmd_ask(args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO) -> int:
    from rag import generate, llms

    choice = args.model
    if choice and choice != "local" and not choice.startswith(("ollama:", "local:")):
        choice = f"ollama:{choice}"
    model = llms.resolve_chat_model(settings, choice)
    with Store.open(settings) as store:
        hits = retrieve.search(store, settings, args.question, args.kb, top_k=args.top_k,
                                filter_expression=args.filter, mode=args.mode)
    sources = generate.number_sources(hits)
    messages = generate.build_messages(args.question, sources)
    answer = generate.collect(args.question, model, messages, sources)
    if args.json:
        out.write(json.dumps(answer.as_dict(), ensure_ascii=False, indent=2) + "\n")
        return 0
    print(answer.text, file=out)
    print("", file=out)
    for s in sources:
        mark = "*" if s.n in answer.citations.cited else " "
        print(f"{mark} {s.label}  (score {s.hit.score:.3f})", file=out)
    if answer.citations.unknown:
        print(f"warning: the answer cites sources that do not exist: {list(answer.citations.unknown)}", file=err)
    if answer.citations.uncited:
        print("warning: the answer cites no source", file=err)
    return 0


def cmd_chunk(args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO) -> int:
    chunk_settings = _chunk_settings(args)
    status = 0
    for name in args.files:
        try:
            doc = documents.load_path(name)
        except RagError as exc:
            print(str(exc), file=err)
            status = 1
            continue
        chunk_set = chunking.split(doc.text, chunk_settings, doc.pages_for_span)
        if args.json:
            out.write(json.dumps([c.as_dict() for c in chunk_set.chunks], ensure_ascii=False) + "\n")
            continue
        st = chunking.stats(chunk_set)
        print(f"{doc.filename}: {len(doc.pages)} pages, {st.count} chunks, tokens "
              f"mean {st.mean_tokens:.0f} min {st.min_tokens} max {st.max_tokens}, "
              f"{st.mid_sentence_share:.0%} end mid-sentence, {st.dropped} dropped", file=out)
        for c in chunk_set.chunks:
            pages = ",".join(map(str, c.pages))
            preview = " ".join(c.text.split())[:80]
            print(f"  #{c.index:<4} {c.tokens:5} tok  p.{pages:<8} {preview}", file=out)
    return status


def cmd_kb(args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO) -> int:
    with Store.open(settings) as store:
        if args.kb_command == "delete":
            if not store.delete_knowledge_base(args.name):
                raise RagError(f"no knowledge base named {args.name!r}")
            print(f"deleted knowledge base {args.name!r}", file=out)
            return 0
        kbs = store.list_knowledge_bases()
    if args.json:
        json.dump([{"name": k.name, "embedder": k.embedder, "dimension": k.dimension,
                    "documents": k.documents, "chunks": k.chunks, "chunk_settings": k.chunk_settings,
                    "created_at": k.created_at.isoformat()} for k in kbs], out, ensure_ascii=False, indent=2)
        out.write("\n")
        return 0
    if not kbs:
        print("no knowledge bases yet: python -m rag ingest FILE --kb NAME", file=out)
    for k in kbs:
        print(f"{k.name}\t{k.documents} documents\t{k.chunks} chunks\t{k.embedder} ({k.dimension}-d)", file=out)
    return 0


def cmd_bench(args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO) -> int:
    from rag import bench

    return bench.run(settings, out=out, quick=args.quick, only=args.only)


def cmd_mcp(args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO) -> int:
    return mcp_server.serve(settings, http=args.http, port=args.port, allow_ingest=args.allow_ingest or ())


COMMANDS = {"ingest": cmd_ingest, "search": cmd_search, "ask": cmd_ask, "chunk": cmd_chunk, "kb": cmd_kb,
            "bench": cmd_bench, "mcp": cmd_mcp}


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=err,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return COMMANDS[args.command](args, get_settings(), out, err)
    except (RagError, ValueError) as exc:
        print(f"error: {exc}", file=err)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=err)
        return 130
