"""`python -m rag`: ingest, search, eval, questions, tune, ask, chunk, kb, mcp and bench from the command line."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar, overload

# Only light modules here: a command imports what it needs when it runs, so that `--help` and
# `chunk` do not pay for pymupdf, psycopg, ollama or llama.cpp (tests/test_cli.py checks it).
from rag import chunking, retrieve
from rag.chunking import ChunkSettings
from rag.errors import RagError, install_log_masking, one_line
from rag.process import exit_on_sigterm
from rag.settings import Settings, get_settings
from rag.text import printable

if TYPE_CHECKING:
    from rag.store import Hit

_N = TypeVar("_N")


def _add_chunk_options(parser: argparse.ArgumentParser, *, kb: bool = True) -> None:
    # One option per chunking.FIELDS entry; the dests are the ChunkSettings field names. Each defaults to
    # None, so that `_chunk_settings` can tell options given from options left out.
    group = parser.add_argument_group(
        "chunking",
        (
            "Without any of these options a knowledge base that exists keeps the settings it was last ingested "
            "with (a sync re-embeds nothing that did not change); a new one gets the default preset, "
            f"{chunking.DEFAULT_PRESET}."
        )
        if kb
        else f"Without them: the default preset, {chunking.DEFAULT_PRESET}.",
    )
    for field in chunking.FIELDS:
        shown = f"{field.cli_help} (default: {field.default})"
        if field.kind is bool:
            group.add_argument(field.option, action=argparse.BooleanOptionalAction, default=None, help=shown)
        elif field.name == "strategy":
            group.add_argument(field.option, choices=chunking.STRATEGIES, default=None, help=shown)
        else:
            group.add_argument(field.option, type=field.kind, default=None, help=shown)


def _chunk_settings(args: argparse.Namespace, kept: dict[str, object] | None = None) -> ChunkSettings:
    """The settings the chunking options ask for, over the default preset; with none given, `kept` (a
    knowledge base's recorded settings) when there are some: a base built with Spring AI's 800 tokens
    is not re-chunked and re-embedded whole because the default changed."""
    given = {f.name: getattr(args, f.name) for f in chunking.FIELDS if getattr(args, f.name, None) is not None}
    if not given and kept:
        return chunking.settings_from_dict(dict(kept))
    return chunking.settings_from_dict({**chunking.DEFAULT.as_dict(), **given})


def _kept_settings(store: Any, knowledge: str) -> dict[str, object] | None:
    """The chunk settings knowledge base `knowledge` was last ingested with; None for a new one."""
    kb = store.get_knowledge_base(knowledge)
    return dict(kb.chunk_settings) if kb is not None and kb.chunk_settings else None


class _Parser(argparse.ArgumentParser):
    """A subcommand whose options may come from a module imported only once that subcommand is parsed
    or its help shown (`add_options`): the other commands do not pay for that import."""

    def __init__(
        self, *args: Any, add_options: Callable[[argparse.ArgumentParser], None] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self._add_options = add_options

    def _ensure_options(self) -> None:
        if self._add_options is not None:
            add, self._add_options = self._add_options, None
            add(self)

    # argparse's own overloads: a namespace given comes back filled in, else a new Namespace.
    @overload
    def parse_known_args(
        self, args: Iterable[str] | None = None, namespace: None = None
    ) -> tuple[argparse.Namespace, list[str]]: ...
    @overload
    def parse_known_args(self, args: Iterable[str] | None, namespace: _N) -> tuple[_N, list[str]]: ...
    @overload
    def parse_known_args(self, *, namespace: _N) -> tuple[_N, list[str]]: ...
    def parse_known_args(
        self, args: Iterable[str] | None = None, namespace: _N | None = None
    ) -> tuple[argparse.Namespace | _N, list[str]]:
        self._ensure_options()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self._ensure_options()
        return super().format_help()


def _mcp_options(parser: argparse.ArgumentParser) -> None:
    from rag.mcp import server

    server.add_arguments(parser)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m rag",
        description="RAG Knowledge Lab: build and query a pgvector knowledge base.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log diagnostics to stderr")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("ingest", help="parse, chunk, embed and store files or folders")
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="files, or folders to scan for the types read (PDF, Office, HTML, CSV, TXT, MD...)",
    )
    p.add_argument("--kb", required=True, help="knowledge base name (metadata 'knowledge')")
    _add_chunk_options(p)

    p = sub.add_parser(
        "sync",
        help="keep a knowledge base in step with a folder: store new files, replace changed ones, leave the rest",
    )
    p.add_argument("folder", metavar="FOLDER", help="the folder (searched recursively)")
    p.add_argument("--kb", required=True, help="knowledge base name")
    p.add_argument(
        "--delete-missing", action="store_true", help="delete the documents of this folder whose file is gone"
    )
    p.add_argument("--dry-run", action="store_true", help="say what would be done; read and write nothing")
    _add_chunk_options(p)

    p = sub.add_parser("search", help="find the chunks closest to a query (or to each line of a file)")
    p.add_argument("query", nargs="?", help="the query (omit it with --queries)")
    p.add_argument(
        "--queries",
        metavar="FILE",
        default=None,
        help="one query per line; with --json, one line of JSON per query, in order",
    )
    p.add_argument(
        "--mode",
        choices=retrieve.MODES,
        default=retrieve.DEFAULT_MODE,
        help="vector (embeddings), keyword (BM25 in PostgreSQL, CJK bigrams), or hybrid "
        f"(weighted reciprocal rank fusion); default {retrieve.DEFAULT_MODE}",
    )
    p.add_argument("--kb", required=True, action="append", help="knowledge base to search (repeat for several)")
    p.add_argument("--top-k", type=int, default=5)
    p.add_argument("--min-score", type=float, default=None, help="minimum cosine similarity (-1..1)")
    p.add_argument(
        "--filter", default=None, help="Spring AI filter expression, e.g. \"original_filename == 'a.pdf' && page >= 3\""
    )
    p.add_argument("--json", action="store_true", help="print hits as JSON")

    p = sub.add_parser(
        "eval",
        help="measure retrieval: hit@1/3/5 and MRR per search mode over a question file, or over the knowledge "
        "base's saved question set with the difference from its last run",
    )
    p.add_argument("--kb", required=True, help="the knowledge base to search")
    p.add_argument(
        "--questions",
        default=None,
        metavar="FILE",
        help='JSONL, one {"question", "file"} and/or {"question", "expected"} object a line ("file": '
        'the original_filename that answers it; "expected": text the right chunk contains), or '
        "a CSV with the same headers (the Chunk Lab's question CSV); without it, the knowledge base's saved "
        "question set (python -m rag questions FILE --kb NAME), each run's figures saved and compared",
    )
    p.add_argument("--mode", choices=(*retrieve.MODES, "all"), default="all", help="search mode(s); default all")
    p.add_argument(
        "--k",
        type=int,
        default=10,
        help="hits read per question (default 10): a right chunk ranked below it counts as not found",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help='print {"MODE": {"hit@1", "hit@3", "hit@5", "mrr", "n"}} (with --details, "ranks" too)',
    )
    p.add_argument("--details", action="store_true", help="also the rank of the right chunk for each question")

    model_help = (
        "the chat model that writes the questions: an Ollama model or 'local' for the embedded one; "
        "default RAG_CHAT_MODEL, else Ollama's first model, else local"
    )
    p = sub.add_parser(
        "questions", help="write evaluation questions about a document, each with its answer quoted from it"
    )
    p.add_argument("file", metavar="FILE", help="the document (any type ingest reads)")
    p.add_argument("--n", type=int, default=10, help="passages to ask about, one question each (default 10)")
    p.add_argument(
        "--out",
        metavar="FILE",
        default=None,
        help='JSONL, one {"question", "answer", "start", "end", "language", "passage_start"} object a line',
    )
    p.add_argument(
        "--kb",
        default=None,
        help="also save them as this knowledge base's question set (FILE must be ingested there): "
        "python -m rag eval --kb NAME re-runs them",
    )
    p.add_argument("--model", default=None, help=model_help)

    p = sub.add_parser(
        "tune",
        help="score a grid of chunk settings on questions about a document or knowledge base, and recommend one",
    )
    p.add_argument("target", metavar="FILE_OR_KB", help="a document, or a knowledge base (its stored files)")
    p.add_argument(
        "--questions",
        type=int,
        default=None,
        metavar="N",
        help="generate N questions with the chat model (default 10; a knowledge base's saved set when it has one)",
    )
    p.add_argument(
        "--questions-file", metavar="FILE", default=None, help="questions written by python -m rag questions"
    )
    p.add_argument(
        "--grid",
        action="append",
        default=None,
        metavar="SPEC",
        help="the settings tried, e.g. strategies=spring,recursive,sizes=128,256,overlaps=0,32 (also modes=... "
        "and weights=... for hybrid); default: the app's grid for the embedder",
    )
    p.add_argument("--model", default=None, help=model_help)
    p.add_argument(
        "--json",
        action="store_true",
        help='print {"points": [{"label", "hit@1", "hit@3", "hit@5", "mrr", "ndcg@10", "chunks", '
        '"prompt_tokens", ...}], "recommendation": {"label", "reason", ...}}',
    )

    p = sub.add_parser("ask", help="answer a question from a knowledge base, with citations")
    p.add_argument("question")
    p.add_argument("--kb", required=True, action="append", help="knowledge base (repeat for several)")
    p.add_argument("--top-k", type=int, default=8)
    p.add_argument(
        "--model",
        default=None,
        help="an Ollama model (e.g. qwen2.5:7b-instruct) or 'local' for the embedded one; "
        "default RAG_CHAT_MODEL, else Ollama's first model, else local",
    )
    p.add_argument("--mode", choices=retrieve.MODES, default=retrieve.DEFAULT_MODE)
    p.add_argument("--filter", default=None, help="Spring AI filter expression")
    p.add_argument(
        "--history",
        metavar="FILE",
        default=None,
        help='the conversation so far, a JSON list of {"role": "user"|"assistant", "content"}: '
        "the prompt carries it (oldest left out first if it would not fit)",
    )
    p.add_argument(
        "--temperature",
        type=float,
        default=0.2,
        help="sampling temperature (default 0.2; 0: the same answer every run)",
    )
    p.add_argument(
        "--rewrite",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="with --history, rewrite a follow-up into a standalone query before searching",
    )
    p.add_argument(
        "--conversation",
        metavar="ID",
        default=None,
        help="continue a stored conversation (its turns are the history, the answer is added to it); "
        "'new' starts one and prints its id on stderr",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help='print {"answer", "citations": [{"n", "original_filename", "pages", "score", '
        '"chunk_id", "supported"}], "grounded", "sentences", "model", ...}; on failure '
        '{"error": "..."} and exit code 2',
    )

    p = sub.add_parser("conversations", help="the stored conversations: list, show, export, delete")
    conv = p.add_subparsers(dest="conversations_command", required=True)
    cl = conv.add_parser("list", help="newest first: id, date, turns, knowledge bases, title")
    cl.add_argument("--json", action="store_true")
    cs = conv.add_parser("show", help="a conversation's questions and answers with their sources")
    cs.add_argument("id")
    ce = conv.add_parser("export", help="a conversation as Markdown (default) or JSON on stdout")
    ce.add_argument("id")
    ce.add_argument("--format", choices=("md", "json"), default="md")
    cd = conv.add_parser("delete", help="delete a conversation and its turns")
    cd.add_argument("id")

    p = sub.add_parser("chunk", help="show how files would be chunked (nothing is stored)")
    p.add_argument("files", nargs="+", metavar="FILE")
    _add_chunk_options(p, kb=False)
    p.add_argument(
        "--json", action="store_true", help='print a JSON list of {"text", "tokens", "start", "end", "pages"} per file'
    )

    p = sub.add_parser("kb", help="list, delete, export, import or copy knowledge bases")
    kb_sub = p.add_subparsers(dest="kb_command", required=True)
    kl = kb_sub.add_parser("list", help="knowledge bases with their embedder and counts")
    kl.add_argument("--json", action="store_true")
    kd = kb_sub.add_parser("delete", help="delete a knowledge base with its documents and chunks")
    kd.add_argument("name")
    ke = kb_sub.add_parser(
        "export",
        help="write a knowledge base to one file: documents, chunks, vectors, settings, saved questions "
        "(a zip; the format is described in rag/portable/__init__.py)",
    )
    ke.add_argument("name")
    ke.add_argument("--out", required=True, metavar="FILE", help="the file to write (replaced if it exists)")
    ke.add_argument(
        "--no-sources", action="store_true", help="leave the documents' own bytes out (their pages cannot be shown)"
    )
    ki = kb_sub.add_parser(
        "import",
        help="read a file written by 'kb export' into this database, all of it or nothing (checked first)",
    )
    ki.add_argument("file", metavar="FILE")
    ki.add_argument("--as", dest="as_name", metavar="NAME", default=None, help="import under this name")
    ki.add_argument(
        "--replace",
        action="store_true",
        help="replace a knowledge base of that name (it stays until the new one is whole)",
    )
    ki.add_argument(
        "--reembed",
        action="store_true",
        help="embed the chunks again with the current embedder (RAG_EMBEDDER) instead of refusing a file built "
        "with another",
    )
    kc = kb_sub.add_parser(
        "copy",
        help="copy a knowledge base between this app's database and another PostgreSQL server, vectors and all "
        "(nothing is embedded again; the target's pgvector is checked first). A copy that did not finish is "
        "resumed by the next one of the same source",
    )
    kc.add_argument("name")
    kc_where = kc.add_mutually_exclusive_group(required=True)
    kc_where.add_argument("--to", metavar="URL", help="copy from this app's database to the server at URL")
    kc_where.add_argument("--from", dest="from_url", metavar="URL", help="copy from the server at URL to this app's")
    kc.add_argument("--as", dest="as_name", metavar="NAME", default=None, help="its name in the target")
    kc.add_argument(
        "--replace", action="store_true", help="replace a knowledge base of that name in the target (atomically)"
    )
    kc.add_argument(
        "--restart",
        action="store_true",
        help="start over: drop what a copy of that name that did not finish left (its export in the data folder, "
        "the rows it staged in the target) instead of resuming it",
    )

    sub.add_parser("mcp", help="serve the knowledge base as MCP tools (stdio, or --http)", add_options=_mcp_options)

    p = sub.add_parser("bench", help="benchmarks, each reported as a ratio against a peer")
    p.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    p.add_argument(
        "--only",
        action="append",
        default=None,
        help="run only these benchmarks (rechunk, spring, cli, documents, embed, gpu, insert, search, scale, "
        "external, peers, memory, retrieval, answers, sessions, portability); repeatable",
    )
    p.add_argument(
        "--scale",
        action="append",
        default=None,
        metavar="ROWSxDIM",
        help="the sizes `scale` searches (default 100000x384, 1000000x768 and 1000000x384); repeatable",
    )
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


def _say_duration(
    err: TextIO, progress: _Progress, filename: str, embedder: str, chunks: int, expected: float | None
) -> None:
    from rag.ingest import duration_note

    note = duration_note(embedder, expected, chunks)
    if note:
        progress.clear()
        print(f"{printable(filename)}: {note} Ctrl+C stops it; the files done by then stay.", file=err, flush=True)


def _interrupted(knowledge: str, unfinished: Sequence[str]) -> str:
    """The line Ctrl+C during `rag ingest` ends with: the chunks of the file it stopped whose vectors are
    kept (rag.ingest.resume), which the same command run again does not embed again."""
    from rag.ingest.resume import kept_after_stop

    kept = [(name, found) for name in unfinished if (found := kept_after_stop(knowledge, name)) and found.kept]
    if not kept:
        return "interrupted: nothing of the file in progress was stored"
    parts = [f"{printable(name)}: {k.kept:,} of {k.total:,} chunks embedded are kept" for name, k in kept]
    return "interrupted: " + "; ".join(parts) + "; run the same command again to resume from there"


def cmd_ingest(args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO) -> int:
    from rag import ingest
    from rag.store import Store

    knowledge = ingest.validate_kb_name(args.kb)
    # Files found in a folder are named by their path inside it, as `rag sync` names them (t/a/r.txt, t/b/r.txt).
    paths = list(ingest.named_paths(args.paths))
    if not paths:
        raise RagError(f"no supported files found ({documents_read_types()}) in: " + ", ".join(args.paths))
    failed = 0
    with Store.open(settings) as store:
        chunk_settings = _chunk_settings(args, _kept_settings(store, knowledge))
        embedder = ingest.embedder_for_kb(store, settings, knowledge)
        progress = _Progress(err, len(paths))
        index = {name: i for i, (name, _) in enumerate(paths)}
        started: list[str] = []  # the files whose ingest began, in order
        done: set[str] = set()

        def on_stage(name: str) -> ingest.StageCallback:
            def update(stage: str, fraction: float, message: str) -> None:
                progress.index = index[name]
                if not started or started[-1] != name:
                    started.append(name)
                progress.update(name, stage, fraction, message)

            return update

        # One file is written while the next is read and embedded (ingest_paths): results come in order.
        try:
            for result in ingest.ingest_paths(
                store,
                embedder,
                paths,
                knowledge,
                chunk_settings,
                on_stage=on_stage,
                on_plan=lambda name: (
                    lambda chunks, expected: _say_duration(err, progress, name, embedder.name, chunks, expected)
                ),
            ):
                progress.clear()
                done.add(result.filename)
                failed += not result.ok
                print(printable(result.line()), file=out, flush=True)
        except KeyboardInterrupt:
            progress.clear()
            print(_interrupted(knowledge, [name for name in started if name not in done]), file=err, flush=True)
            return 130
    stored = len(paths) - failed
    print(f"{stored} of {len(paths)} files in '{knowledge}' ({embedder.name})", file=err)
    return 1 if failed else 0


def _print_hits(hits: Sequence[Hit], out: TextIO) -> None:
    if not hits:
        print("no hits", file=out)
    for rank, hit in enumerate(hits, 1):
        where = hit.location or "-"
        preview = printable(one_line(hit.content, None)[:160])
        # A hybrid hit shows where each search put it: its fused score alone (0.03) reads as irrelevant.
        score = hit.ranking if hit.fused_rank is not None else f"{hit.score:.3f}"
        print(f"{rank:2}. {score}  {printable(hit.original_filename)} {where}  [{hit.knowledge}]", file=out)
        print(f"    {preview}", file=out)


def cmd_search(args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO) -> int:
    from rag.store import Store

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
            hits = retrieve.search(
                store,
                settings,
                query,
                args.kb,
                top_k=args.top_k,
                min_score=args.min_score,
                filter_expression=args.filter,
                mode=args.mode,
            )
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


def cmd_eval(args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO) -> int:
    from rag.evaluation.quality import mode_quality
    from rag.evaluation.questions import parse_questions
    from rag.store import Store

    if args.k < 1:
        raise RagError(f"--k must be at least 1, got {args.k}")
    if args.questions is None:
        from rag.tuning.cli import eval_saved_set

        return eval_saved_set(args, settings, retrieve.MODES if args.mode == "all" else (args.mode,), out)
    try:
        data = Path(args.questions).read_bytes()
    except OSError as exc:
        raise RagError(f"{args.questions}: cannot read the file ({exc.strerror or exc})") from exc
    questions = parse_questions(data, args.questions)
    modes = retrieve.MODES if args.mode == "all" else (args.mode,)
    progress = _Progress(err, len(modes))
    with Store.open(settings) as store:
        quality = {}
        for index, mode in enumerate(modes):
            progress.index = index

            def questions_done(done: int, total: int, mode: str = mode) -> None:
                progress.update(mode, "question", done / total, f"{done}/{total}")

            quality[mode] = mode_quality(
                store, settings, args.kb, questions, mode=mode, depth=args.k, progress=questions_done
            )
        progress.clear()
    if args.json:
        body = {mode: q.as_dict() | ({"ranks": list(q.ranks)} if args.details else {}) for mode, q in quality.items()}
        out.write(json.dumps(body, ensure_ascii=False) + "\n")
        return 0
    print(f"{len(questions)} questions on '{args.kb}', top {args.k} hits each", file=out)
    print(f"{'mode':8} {'hit@1':>6} {'hit@3':>6} {'hit@5':>6} {'MRR':>6}", file=out)
    for mode, q in quality.items():
        print(f"{mode:8} {q.hit_at_1:6.3f} {q.hit_at_3:6.3f} {q.hit_at_5:6.3f} {q.mrr:6.3f}", file=out)
    if args.details:
        print("", file=out)
        print(
            "  ".join(f"{mode:>7}" for mode in quality) + "  question (rank of the right chunk; - not found)", file=out
        )
        for i, question in enumerate(questions):
            ranks = "  ".join(f"{q.ranks[i] if q.ranks[i] is not None else '-':>7}" for q in quality.values())
            print(f"{ranks}  {one_line(question.text, None)[:100]}", file=out)
    return 0


def cmd_ask(args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO) -> int:
    from rag import llms
    from rag.generate import Status, engine, load_history
    from rag.store import Store

    choice = args.model  # a bare name is an Ollama model: resolve_chat_model reads it so (rag.model_ref)
    if not 0.0 <= args.temperature <= 2.0:
        raise RagError(f"--temperature must be between 0 and 2, got {args.temperature}")
    model = llms.resolve_chat_model(settings, choice)
    if args.history and args.conversation:
        raise RagError("give --history or --conversation, not both (a conversation carries its own history)")
    history = load_history(args.history) if args.history else []
    request = engine.Request(
        kbs=tuple(args.kb),
        top_k=args.top_k,
        filter=args.filter,
        mode=args.mode,
        rewrite=args.rewrite,
        temperature=args.temperature,
    )
    with Store.open(settings) as store:
        conversation = None if args.conversation in (None, "new") else args.conversation
        if conversation is not None:
            from rag.generate import history_messages, load_conversation, memory_of, searched_queries

            _, earlier = load_conversation(store.conversations, conversation)
            history, memory = history_messages(earlier), memory_of(earlier)
            searched = searched_queries(earlier)
        else:
            memory, searched = None, []
        turn = engine.ask(
            args.question,
            request,
            model=model,
            store=store,
            settings=settings,
            history=history,
            searched=searched,
            memory=memory,
        )
        if turn.problem or turn.error:
            raise RagError(turn.problem or turn.error)
        if args.conversation is not None:
            from rag.generate import save_turn

            saved = save_turn(store.conversations, conversation, turn)
            print(f"conversation: {saved}", file=err)
    if turn.rewritten:
        print(f"searched for: {turn.query} and the question as asked", file=err)
    for note in turn.notes:
        print(f"note: {note}", file=err)
    if args.json:
        out.write(json.dumps(turn.as_dict(), ensure_ascii=False, indent=2) + "\n")
        return 0
    check, grounding = turn.citations, turn.grounding
    print(turn.answer, file=out)
    print("", file=out)
    for s in turn.sources:
        mark = "*" if s.n in grounding.cited else "~" if s.n in check.cited else " "
        print(
            f"{mark} {s.label}  (score {s.hit.score:.3f}){'  [given in part]' if s.text is not None else ''}", file=out
        )
    if check.unknown:
        print(f"warning: the answer cites sources that do not exist: {list(check.unknown)}", file=err)
    if check.uncited:
        print("warning: the answer cites no source", file=err)
    for sentence in grounding.flagged:
        text = one_line(turn.answer[sentence.start : sentence.end], 120)
        why = (
            f"[{sentence.source}] holds its words but not its claim"
            if sentence.status == Status.UNHELD
            else "no source supports it"
            if not sentence.numbers
            else f"its cited source does not support it; [{sentence.backing[0]}] does"
            if sentence.backing
            else "its cited source does not support it"
        )
        print(f"warning: {why}: {text}", file=err)
    if grounding.figure_missing:
        print("warning: the question asks for a figure and the answer gives none", file=err)
    if grounding.other_subject:
        print(
            "warning: the answer's sources are about another subject than the one the question points back to", file=err
        )
    elif grounding.off_question:
        print("warning: the sources hold the answer's words, but it leaves out what the question asks about", file=err)
    for sentence in grounding.other_language:
        text = one_line(turn.answer[sentence.start : sentence.end], 120)
        print(f"note: not checked, in another language than its sources: {text}", file=err)
    return 0


def cmd_conversations(args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO) -> int:
    from rag import generate
    from rag.store import Store

    with Store.open(settings) as store:
        conversations = store.conversations
        command = args.conversations_command
        if command == "list":
            found = conversations.list()
            if args.json:
                json.dump(
                    [
                        {
                            "id": str(c.id),
                            "title": c.title,
                            "knowledge_bases": list(c.knowledge_bases),
                            "model": c.model,
                            "turns": c.turns,
                            "created_at": c.created_at.isoformat(),
                            "updated_at": c.updated_at.isoformat(),
                        }
                        for c in found
                    ],
                    out,
                    ensure_ascii=False,
                    indent=2,
                )
                out.write("\n")
            elif not found:
                print('no conversations yet: python -m rag ask "..." --kb NAME --conversation new', file=out)
            for c in found if not args.json else ():
                print(
                    f"{c.id}\t{c.updated_at:%Y-%m-%d %H:%M}\t{c.turns} turns\t{','.join(c.knowledge_bases) or '-'}"
                    f"\t{c.title}",
                    file=out,
                )
            return 0
        if command == "delete":
            if not conversations.delete(args.id):
                raise RagError(f"no conversation {args.id}")
            print(f"deleted conversation {args.id}", file=out)
            return 0
        info, turns = generate.load_conversation(conversations, args.id)
    if command == "export":
        out.write(
            generate.conversation_json(info, turns) + "\n"
            if args.format == "json"
            else generate.conversation_markdown_export(info, turns)
        )
        return 0
    print(f"{info.title}  ({info.turns} turns, {','.join(info.knowledge_bases) or '-'}, {info.model or '-'})", file=out)
    for number, turn in enumerate(turns, 1):
        print(f"\n{number}. {turn.question}\n{turn.answer or '(no answer)'}", file=out)
        for source in turn.sources:
            gone = "  [deleted or replaced since]" if source.n in turn.gone else ""
            print(f"   {source.label}{gone}", file=out)
    return 0


def cmd_chunk(args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO) -> int:
    from rag import documents

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
        print(
            f"{printable(doc.filename)}: {len(doc.pages)} pages, {st.count} chunks, tokens "
            f"mean {st.mean_tokens:.0f} min {st.min_tokens} max {st.max_tokens}, "
            f"{st.mid_sentence_share:.0%} of the cuts mid-sentence, {st.dropped} dropped",
            file=out,
        )
        for c in chunk_set.chunks:
            pages = ",".join(map(str, c.pages))
            preview = printable(one_line(c.text, None)[:80])
            print(f"  #{c.index:<4} {c.tokens:5} tok  p.{pages:<8} {preview}", file=out)
    return status


def documents_read_types() -> str:
    from rag.documents import READ_TYPES

    return READ_TYPES


def cmd_sync(args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO) -> int:
    from rag import ingest
    from rag.store import Store

    knowledge = ingest.validate_kb_name(args.kb)

    def say(line: str) -> None:
        print(line, file=out, flush=True)

    with Store.open(settings) as store:
        chunk_settings = _chunk_settings(args, _kept_settings(store, knowledge))
        if args.dry_run:
            report = ingest.dry_run(
                store, args.folder, knowledge, chunk_settings, delete_missing=args.delete_missing, on_line=say
            )
            print(report.summary(dry_run=True), file=err)
            return 0
        embedder = ingest.embedder_for_kb(store, settings, knowledge)
        progress = _Progress(err, 1)

        def stage(name: str) -> ingest.StageCallback:
            return lambda stage, fraction, message: progress.update(name, stage, fraction, message)

        def line(text: str) -> None:
            progress.clear()
            say(text)

        report = ingest.sync(
            store,
            embedder,
            args.folder,
            knowledge,
            chunk_settings,
            delete_missing=args.delete_missing,
            on_line=line,
            on_stage=stage,
        )
    progress.clear()
    print(report.summary() + f" ({embedder.name})", file=err)
    return 1 if report.failed else 0


class _RowsProgress:
    """Progress of an export or import on stderr (rag.portable.Progress), with the time left once a stage
    has run for a few seconds."""

    def __init__(self, err: TextIO) -> None:
        import time

        self._clock = time.monotonic
        self._err = err
        self._bar = _Progress(err, 1)
        self._stage = ""
        self._started = self._clock()

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage != self._stage:
            self._stage, self._started = stage, self._clock()
            if stage == "embed":  # hours for a million chunks on a CPU: say how to stop it, and what that costs
                print(
                    f"embedding {total:,} chunks again; the time left shows once it has run a few seconds. "
                    "Ctrl+C stops it, and nothing is written",
                    file=self._err,
                    flush=True,
                )
            elif stage == "resuming":  # a line that stays, bar or not: the copy goes on from a killed one
                print(
                    f"resuming a copy that did not finish: {done:,} of {total:,} chunks are on the target already",
                    file=self._err,
                    flush=True,
                )
            elif not self._bar.enabled:  # no bar to draw (a pipe, a log): one line as each stage starts
                print(f"{stage}: {done:,} of {total:,} rows done", file=self._err, flush=True)
        elapsed = self._clock() - self._started
        left = ""
        if done and elapsed > 3 and total > done:
            from rag.embeddings.timing import duration_text

            left = f", {duration_text(elapsed / done * (total - done))} left"
        self._bar.update(stage, "", done / total if total else 1.0, f"{done:,}/{total:,}{left}")

    def clear(self) -> None:
        self._bar.clear()


def _kb_export(args: argparse.Namespace, store: Any, out: TextIO, err: TextIO) -> int:
    from rag.portable import export_knowledge_base

    progress = _RowsProgress(err)
    try:
        result = export_knowledge_base(store, args.name, Path(args.out), sources=not args.no_sources, progress=progress)
    except OSError as exc:
        raise RagError(f"{args.out}: cannot write the file ({exc.strerror or exc})") from exc
    finally:
        progress.clear()
    print(printable(result.line()), file=out)
    return 0


def _kb_import(args: argparse.Namespace, settings: Settings, store: Any, out: TextIO, err: TextIO) -> int:
    from rag.portable import import_knowledge_base

    progress = _RowsProgress(err)
    try:
        result = import_knowledge_base(
            store,
            Path(args.file),
            settings=settings,
            name=args.as_name,
            replace=args.replace,
            reembed=args.reembed,
            progress=progress,
        )
    finally:
        progress.clear()
    print(printable(result.line()), file=out)
    return 0


def _kb_copy(args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO) -> int:
    from rag.portable.copy import check_pgvector, copy_knowledge_base
    from rag.portable.jobs import folder
    from rag.store import Store

    other_url = args.to or args.from_url
    # The other server first, before the app's database is opened: one line naming it (never its password)
    # when it cannot be reached or lacks pgvector, rather than the store's words about DATABASE_URL.
    check_pgvector(other_url)
    progress = _RowsProgress(err)
    try:
        with Store.open(settings) as ours, Store(other_url) as theirs:
            source, target = (ours, theirs) if args.to else (theirs, ours)
            result = copy_knowledge_base(
                source,
                target,
                args.name,
                work_dir=folder(settings.data_dir),
                as_name=args.as_name,
                replace=args.replace,
                restart=args.restart,
                settings=settings,
                progress=progress,
            )
    finally:
        progress.clear()
    print(printable(result.line()), file=out)
    return 0


def cmd_kb(args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO) -> int:
    from rag.store import Store

    if args.kb_command == "copy":
        return _kb_copy(args, settings, out, err)
    with Store.open(settings) as store:
        if args.kb_command == "export":
            return _kb_export(args, store, out, err)
        if args.kb_command == "import":
            return _kb_import(args, settings, store, out, err)
        if args.kb_command == "delete":
            if not store.delete_knowledge_base(args.name):
                raise RagError(f"no knowledge base named {args.name!r}")
            print(f"deleted knowledge base {args.name!r}", file=out)
            return 0
        kbs = store.list_knowledge_bases()
    if args.json:
        json.dump(
            [
                {
                    "name": k.name,
                    "embedder": k.embedder,
                    "dimension": k.dimension,
                    "documents": k.documents,
                    "chunks": k.chunks,
                    "chunk_settings": k.chunk_settings,
                    "created_at": k.created_at.isoformat(),
                    "source_folder": k.source_folder,
                }
                for k in kbs
            ],
            out,
            ensure_ascii=False,
            indent=2,
        )
        out.write("\n")
        return 0
    if not kbs:
        print("no knowledge bases yet: python -m rag ingest FILE --kb NAME", file=out)
    for k in kbs:
        synced = f"\tsynced from {k.source_folder}" if k.source_folder else ""
        print(f"{k.name}\t{k.documents} documents\t{k.chunks} chunks\t{k.embedder} ({k.dimension}-d){synced}", file=out)
    return 0


BENCH_INSTALL = "from a clone, `pip install -e '.[bench]'` (or `make bench`)"
"""How to get the benchmarks, which are not part of the library (the `bench` optional dependencies)."""


def cmd_bench(args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO) -> int:
    # Imported here, never at the top: `benchmarks` sits beside `rag`, not in it, and may be absent
    # (an install of the library alone), where every other command must still work.
    try:
        import benchmarks
    except ImportError as exc:
        if exc.name in (None, "benchmarks"):
            raise RagError(f"the benchmarks are not installed: {BENCH_INSTALL}") from exc
        raise RagError(f"the benchmarks need {exc.name}, which is not installed: {BENCH_INSTALL}") from exc
    return benchmarks.run(settings, out=out, quick=args.quick, only=args.only, scales=args.scale)


def cmd_mcp(args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO) -> int:
    from rag.mcp import server as mcp_server

    return mcp_server.serve(
        settings,
        http=args.http,
        port=args.port,
        allow_ingest=args.allow_ingest or (),
        answer_model=args.answer,
        allow_origins=args.allow_origin or (),
        idle_timeout=args.idle_timeout,
    )


def _tuning(name: str, args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO) -> int:
    # rag.tuning.cli imports the tuning code (~2 s): only `questions` and `tune` pay for it.
    from rag.tuning import cli as tuning_cli

    command: Callable[[argparse.Namespace, Settings, TextIO, TextIO], int] = getattr(tuning_cli, name)
    return command(args, settings, out, err)


COMMANDS = {
    "ingest": cmd_ingest,
    "sync": cmd_sync,
    "conversations": cmd_conversations,
    "search": cmd_search,
    "eval": cmd_eval,
    "questions": lambda *a: _tuning("cmd_questions", *a),
    "tune": lambda *a: _tuning("cmd_tune", *a),
    "ask": cmd_ask,
    "chunk": cmd_chunk,
    "kb": cmd_kb,
    "bench": cmd_bench,
    "mcp": cmd_mcp,
}


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args = build_parser().parse_args(argv)
    exit_on_sigterm()
    install_log_masking()
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        stream=err,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return COMMANDS[args.command](args, get_settings(), out, err)
    except (RagError, ValueError) as exc:
        print(f"error: {exc}", file=err)
        if args.command == "ask" and args.json:
            # A script reading stdout gets JSON whatever happened.
            out.write(json.dumps({"error": str(exc)}, ensure_ascii=False) + "\n")
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=err)
        return 130
