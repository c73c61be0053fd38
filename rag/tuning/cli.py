"""`rag questions`, `rag tune` and `rag eval --kb NAME` on a saved set (issue #30, items 5 and 6): the command
bodies, kept out of rag.cli so that its other commands do not import the tuning code.

Progress goes to stderr (the estimate first), results to stdout. Ctrl+C stops generation between two
passages and a sweep between two slices of embedding: what was done by then is written out; a second
Ctrl+C stops at once.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from rag.errors import RagError
from rag.evaluation.questions import Question
from rag.settings import Settings
from rag.text import Text, printable
from rag.tuning.questions import GeneratedQuestions

GRID_KEYS = ("strategies", "sizes", "overlaps", "modes", "weights")
SAMPLE_CHARS = 4000
"""Characters of the document read to tell its language for the estimate (the passages asked about are
told one by one)."""


@contextlib.contextmanager
def stop_on_interrupt(err: TextIO) -> Iterator[threading.Event]:
    """An event Ctrl+C sets (the work ends at its next check and keeps what it did); a second Ctrl+C raises
    KeyboardInterrupt as usual. Off the main thread signals cannot be caught: the event is never set."""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def interrupted(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        print("stopping: what is done is kept (Ctrl+C again to quit at once)", file=err, flush=True)

    previous = signal.signal(signal.SIGINT, interrupted)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)


def duration(seconds: float) -> str:
    if seconds < 90:
        return Text("{n} s", n=max(round(seconds), 1))
    if seconds < 5400:
        return Text("{n} min", n=round(seconds / 60))
    return Text("{n} h", n=f"{seconds / 3600:.1f}")


def generate(
    text: str, source: str, count: int, settings: Settings, model_choice: str | None, err: TextIO
) -> GeneratedQuestions:
    """`count` questions about `text` from the app's chat model (`--model`, else RAG_CHAT_MODEL, else
    Ollama's first model, else the embedded one), the estimate said first and progress on `err`."""
    from rag import llms
    from rag.scripts import language_of
    from rag.tuning.questions import MAX_COUNT, generate_questions
    from rag.tuning.timing import estimate_seconds

    if not 1 <= count <= MAX_COUNT:
        raise RagError(Text("ask for 1 to {most} questions, got {n}", most=MAX_COUNT, n=count))
    model = llms.resolve_chat_model(settings, model_choice)
    language = language_of(text[:SAMPLE_CHARS])
    print(
        f"{printable(source)}: {model.name} writes up to {count} questions, one per passage: about "
        f"{duration(estimate_seconds(count, model, language))} on quiet cores. Ctrl+C stops it and keeps the "
        "questions written so far.",
        file=err,
        flush=True,
    )

    def progress(done: int, total: int) -> None:
        print(f"  passage {done}/{total}", file=err, flush=True)

    with stop_on_interrupt(err) as stop:
        result = generate_questions(text, model, count, progress=progress, stop=stop)
    dropped = ", ".join(f"{reason} {n}" for reason, n in result.dropped.items() if n)
    print(
        f"kept {len(result.questions)} of {result.passages} questions"
        + (f" (dropped: {dropped})" if dropped else "")
        + (f"; stopped after {result.passages} of {result.planned} passages" if result.stopped else "")
        + f" in {duration(result.seconds)}",
        file=err,
        flush=True,
    )
    return result


def cmd_questions(args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO) -> int:
    from rag import documents
    from rag.tuning.files import dump_questions

    if args.out is None and args.kb is None:
        raise RagError("give --out FILE (a JSONL question set), --kb NAME (saved with the knowledge base), or both")
    doc = documents.load_path(args.file)
    if args.kb is not None:
        _check_kb_holds(settings, args.kb, doc.filename, documents.sha256_hex(Path(args.file).read_bytes()))
    result = generate(doc.text, doc.filename, args.n, settings, args.model, err)
    if args.out is not None:
        try:
            Path(args.out).write_text(dump_questions(result.questions), encoding="utf-8")
        except OSError as exc:
            raise RagError(f"{args.out}: cannot write the file ({exc.strerror or exc})") from exc
        print(f"wrote {len(result.questions)} questions to {printable(args.out)}", file=err)
    if args.kb is not None:
        from rag.store import Store
        from rag.store.question_sets import SavedQuestion

        saved = [SavedQuestion(q.text, q.answer, q.start, q.end, q.language, doc.filename) for q in result.questions]
        with Store.open(settings) as store:
            total = store.question_sets.replace(args.kb, doc.filename, saved)
        print(
            f"saved {len(saved)} questions about {printable(doc.filename)} as '{args.kb}''s question set "
            f"({total} in all): python -m rag eval --kb {args.kb} runs them",
            file=err,
        )
    return 130 if result.stopped else 0


def _check_kb_holds(settings: Settings, knowledge: str, filename: str, sha256: str) -> None:
    """A saved question is checked on the stored chunks of its document, whose offsets index the text of the
    file as it was ingested: the file must be in the knowledge base, unchanged."""
    from rag.store import Store

    with Store.open(settings) as store:
        if store.get_knowledge_base(knowledge) is None:
            raise RagError(f"no knowledge base named {knowledge!r}: python -m rag ingest FILE --kb {knowledge} first")
        stored = store.find_document(knowledge, filename)
    if stored is None:
        raise RagError(
            f"{printable(filename)} is not in knowledge base {knowledge!r}: ingest it there first "
            "(its questions are checked on its stored chunks)"
        )
    if stored.sha256 != sha256:
        raise RagError(
            f"{printable(filename)} differs from the copy in {knowledge!r} (ingested "
            f"{stored.ingested_at:%Y-%m-%d %H:%M}): ingest it again first, so that the answers' places match"
        )


def parse_grid(specs: list[str] | None, base: Any) -> Any:
    """`base` (a rag.tuning.sweep.Grid) with the values `--grid` gives: 'strategies=spring,recursive,
    sizes=128,256,overlaps=0,32' (a name starts a new list; repeat --grid or put all in one), also 'modes='
    and 'weights=' (hybrid's keyword weights)."""
    if not specs:
        return base
    values: dict[str, list[str]] = {}
    key: str | None = None
    for spec in specs:
        for token in spec.replace(";", ",").replace(" ", ",").split(","):
            token = token.strip()
            if not token:
                continue
            if "=" in token:
                key, _, token = token.partition("=")
                key = key.strip().lower()
                if key not in GRID_KEYS:
                    raise RagError(f"--grid: unknown name {key!r} (use {', '.join(GRID_KEYS)})")
                values.setdefault(key, [])
                token = token.strip()
                if not token:
                    continue
            if key is None:
                raise RagError(f"--grid: {token!r} has no name: write e.g. sizes=128,256")
            values[key].append(token)
    changes: dict[str, tuple[Any, ...]] = {}
    for name, items in values.items():
        if not items:
            raise RagError(f"--grid: {name}= has no values")
        try:
            if name in ("sizes", "overlaps"):
                changes[name] = tuple(int(v) for v in items)
            elif name == "weights":
                changes["keyword_weights"] = tuple(float(v) for v in items)
            else:
                changes[name] = tuple(items)
        except ValueError:
            raise RagError(f"--grid: {name}= takes numbers, got {','.join(items)}") from None
    return dataclasses.replace(base, **changes)


def cmd_tune(args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO) -> int:
    from rag import documents, retrieve
    from rag.evaluation.cache import EmbeddingCache
    from rag.tuning.files import load_questions
    from rag.tuning.questions import DEFAULT_COUNT, to_questions
    from rag.tuning.recommend import recommend
    from rag.tuning.sweep import SweepProgress, default_grid, run_sweep

    if args.questions is not None and args.questions_file is not None:
        raise RagError("give --questions N or --questions-file FILE, not both")
    questions: list[Question] = []
    if Path(args.target).is_file():
        doc = documents.load_path(args.target)
        text, source = doc.text, doc.filename
        embedder = retrieve.embedder_named_or_default(settings)
    else:
        from rag.store import Store
        from rag.tuning.kb_check import knowledge_text, saved_for_sweep

        with Store.open(settings) as store:
            kb = store.get_knowledge_base(args.target)
            if kb is None:
                raise RagError(f"{args.target}: no such file, nor a knowledge base of that name")
            joined = knowledge_text(store, args.target)
            saved = store.question_sets.questions(args.target)
        text, source = joined.text, f"knowledge base '{args.target}'"
        embedder = retrieve.embedder_named(kb.embedder, settings)
        if saved and args.questions is None and args.questions_file is None:
            questions = saved_for_sweep(saved, joined)
            print(f"{source}: its {len(questions)} saved questions", file=err)
    grid = parse_grid(args.grid, default_grid(embedder))  # before any question is written: fail fast
    if args.questions_file is not None:
        try:
            data = Path(args.questions_file).read_bytes()
        except OSError as exc:
            raise RagError(f"{args.questions_file}: cannot read the file ({exc.strerror or exc})") from exc
        questions = to_questions(load_questions(data, args.questions_file, document=text))
    elif not questions:
        questions = to_questions(
            generate(text, source, args.questions or DEFAULT_COUNT, settings, args.model, err).questions
        )
    if not questions:
        raise RagError("no questions to score the settings on: none was kept; ask for more with --questions N")
    print(
        f"{source}: {grid.size} settings scored on {len(questions)} questions with {embedder.name}; "
        "Ctrl+C stops and shows those scored",
        file=err,
        flush=True,
    )
    scored = [0]

    def progress(p: SweepProgress) -> None:
        if p.scored != scored[0]:
            scored[0] = p.scored
            print(f"  scored {p.scored}/{p.points}", file=err, flush=True)

    with stop_on_interrupt(err) as stop:
        result = run_sweep(text, questions, embedder, EmbeddingCache(), grid, progress=progress, stop=stop)
    recommendation = recommend(result) if result.points else None
    if args.json:
        body = {
            "source": source,
            "embedder": result.embedder,
            "questions": len(result.questions),
            "stopped": result.stopped,
            "not_found": list(result.not_found),
            "points": [_point_dict(p) for p in result.points],
            "recommendation": None
            if recommendation is None
            else {
                "label": recommendation.recommended.label,
                "best": recommendation.best.label,
                "metric": recommendation.metric,
                "score": round(recommendation.score, 4),
                "interval": [round(recommendation.interval.low, 4), round(recommendation.interval.high, 4)],
                "sure": recommendation.sure,
                "reason": str(recommendation.reason),
            },
        }
        out.write(json.dumps(body, ensure_ascii=False) + "\n")
    else:
        width = max([len(p.label) for p in result.points] + [7])
        print(
            f"{'setting':{width}} {'hit@1':>6} {'hit@3':>6} {'hit@5':>6} {'MRR':>6} {'nDCG@10':>7} {'chunks':>6} "
            f"{'prompt tokens':>13}",
            file=out,
        )
        for p in result.points:
            print(
                f"{p.label:{width}} {p.hit_at(1):6.3f} {p.hit_at(3):6.3f} {p.hit_at(5):6.3f} {p.mrr:6.3f} "
                f"{p.ndcg:7.3f} {p.chunks:6} {p.prompt_tokens:13.0f}",
                file=out,
            )
        if recommendation is not None:
            print("", file=out)
            print(recommendation.reason, file=out)
    if result.stopped:
        print(f"stopped: {len(result.points)} of {grid.size} settings scored", file=err)
    return 130 if result.stopped else 0


def _point_dict(p: Any) -> dict[str, Any]:
    return {
        "label": p.label,
        "strategy": p.settings.strategy,
        "chunk_size": p.settings.chunk_size,
        "chunk_overlap": p.settings.chunk_overlap,
        "mode": p.search.mode,
        "keyword_weight": p.search.keyword_weight,
        "hit@1": round(p.hit_at(1), 4),
        "hit@3": round(p.hit_at(3), 4),
        "hit@5": round(p.hit_at(5), 4),
        "mrr": round(p.mrr, 4),
        "ndcg@10": round(p.ndcg, 4),
        "chunks": p.chunks,
        "prompt_tokens": round(p.prompt_tokens, 1),
    }


def eval_saved_set(args: argparse.Namespace, settings: Settings, modes: tuple[str, ...], out: TextIO) -> int:
    """`rag eval --kb NAME` without --questions: the knowledge base's saved set, each mode's figures saved and
    set beside the last run's."""
    from rag.chunking import label, settings_from_dict
    from rag.store import Store
    from rag.tuning.kb_check import FIGURES, check_saved_set

    with Store.open(settings) as store:
        checks = {mode: check_saved_set(store, settings, args.kb, mode, depth=args.k) for mode in modes}
    first = next(iter(checks.values()))
    if args.json:
        body: dict[str, Any] = {}
        for mode, check in checks.items():
            entry = check.quality.as_dict()
            if check.previous is not None:
                entry["previous"] = {
                    "ran_at": check.previous.ran_at.isoformat() if check.previous.ran_at else None,
                    "embedder": check.previous.embedder,
                    "chunk_settings": check.previous.chunk_settings,
                    "comparable": check.comparable,
                    **{name: round(getattr(check.previous, name), 4) for name in FIGURES},
                }
                entry["change"] = {name: round(value, 4) for name, value in check.change().items()}
            body[mode] = entry
        out.write(json.dumps(body, ensure_ascii=False) + "\n")
        return 0
    chunks = label(settings_from_dict(dict(first.run.chunk_settings)))
    print(
        f"{first.run.questions} saved questions on '{args.kb}' ({first.run.embedder}, {chunks}), "
        f"top {args.k} hits each",
        file=out,
    )
    if first.missing:
        print(f"not in the knowledge base any more (their questions miss): {', '.join(first.missing)}", file=out)
    print(f"{'mode':8} {'hit@1':>6} {'hit@3':>6} {'hit@5':>6} {'MRR':>6}", file=out)
    for mode, check in checks.items():
        q = check.quality
        print(f"{mode:8} {q.hit_at_1:6.3f} {q.hit_at_3:6.3f} {q.hit_at_5:6.3f} {q.mrr:6.3f}", file=out)
        before = check.previous
        if before is None:
            print("         first run of this set: the next one is compared with it", file=out)
            continue
        when = f"{before.ran_at:%Y-%m-%d %H:%M}" if before.ran_at else "?"
        if not check.comparable:
            print(f"         the question set changed since the last run ({when}): nothing to compare", file=out)
            continue
        change = check.change()
        what = "  ".join(
            f"{name.replace('hit_at_', 'hit@').replace('mrr', 'MRR')} {change[name]:+.3f}" for name in FIGURES
        )
        changed = check.changed_settings()
        since = f"; changed since: {', '.join(changed)}" if changed else ""
        print(f"         vs {when}: {what}{since}", file=out)
    return 0
