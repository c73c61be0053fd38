"""What the Upload page tells before anything is embedded: the warnings about a parsed file,
what an ingest would do with it, and whether the chosen embedder can ingest at all."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import os

from rag import chunking
from rag.documents import READ_TYPES, SUPPORTED_EXTENSIONS, page_label
from rag.documents.model import KIND_LABELS

if TYPE_CHECKING:
    from rag.ingest.pipeline import Prepared
    from rag.status import OllamaStatus
    from rag.store import KnowledgeBase, StoredDocument

Destiny = Literal["fails", "new", "unchanged", "replaces"]
OLLAMA_PREFIX = "ollama:"
REPLACEMENT = "\ufffd"
"""U+FFFD, what a decoder puts where bytes are not a whole character: stored, searched and
exported as is, so a chunk holding one is flagged."""


def destiny(prepared: Prepared | None, sha256: str, existing: StoredDocument | None,
            settings: chunking.ChunkSettings) -> Destiny:
    """What an ingest would do with this file, as far as can be told before embedding: a file that
    cannot be read (`prepared` None) or gives no chunks fails."""
    from rag.ingest.pipeline import unchanged

    if prepared is None or not prepared.chunk_set.chunks:
        return "fails"
    if existing is None:
        return "new"
    return "unchanged" if unchanged(existing, sha256, settings) else "replaces"


def all_fail(destinies: list[Destiny]) -> bool:
    """True when there are files and an ingest would fail for every one of them: nothing to start."""
    return bool(destinies) and all(d == "fails" for d in destinies)


# Formats users bring that are not read (old binary Office files, OpenDocument, RTF), with the
# program that saves them in a format that is.
_SAVE_AS = {
    ".doc": ("Word", ".docx"), ".odt": ("LibreOffice Writer", ".docx"), ".rtf": ("Word", ".docx"),
    ".ppt": ("PowerPoint", ".pptx"), ".odp": ("LibreOffice Impress", ".pptx"),
    ".ods": ("LibreOffice Calc", ".xlsx"), ".mht": ("the browser", ".html"), ".mhtml": ("the browser", ".html"),
}


def unreadable_advice(filename: str) -> str | None:
    """What to do with a file whose type is not read (None for the types that are)."""
    extension = os.path.splitext(filename)[1].lower()
    if extension in SUPPORTED_EXTENSIONS:
        return None
    saved = _SAVE_AS.get(extension)
    if saved is not None:
        program, target = saved
        return (f"{extension} files are not read: open it in {program}, save it as {target} (File › Save As) "
                "and upload that.")
    return f"only {READ_TYPES} files are read: convert it to one of them and upload that."


def warnings(prepared: Prepared, max_tokens: int | None) -> list[str]:
    """User-facing warnings about a parsed and chunked file, one line each: pages without text
    (scans), the document's own warnings, no chunks at all, chunks holding U+FFFD (a broken
    character), chunks longer than the embedder reads (`max_tokens`, None when unknown), and the
    rest of the text folded into the last chunk."""
    doc, chunk_set = prepared.document, prepared.chunk_set
    out: list[str] = []
    if doc.dropped_pages:
        pages = page_label(doc.dropped_pages)
        many = len(doc.dropped_pages) > 1
        out.append(f"Page{'s' if many else ''} {pages} ha{'ve' if many else 's'} no extractable text: "
                   "nothing there will be searchable.")
    out.extend(doc.warnings)
    if not chunk_set.chunks:
        out.append("No chunks: every piece is shorter than the minimum length to embed "
                   f"({chunk_set.settings.min_chunk_length_to_embed} chars); ingesting it will fail. "
                   "Lower that setting.")
    broken = [c.index for c in chunk_set.chunks if REPLACEMENT in c.text]
    if broken:
        many = len(broken) > 1
        if REPLACEMENT in doc.text:
            why = ("the text read from the file already holds it (a broken encoding or extraction): "
                   "check the file, or convert it to UTF-8 text first")
        else:
            why = (f"the `{chunk_set.settings.strategy}` strategy cut inside a character that cl100k "
                   "spreads over several tokens: choose `spring`, which keeps every character whole")
        out.append(f"{len(broken)} chunk{'s' if many else ''} (# {page_label(broken)}) hold{'' if many else 's'} the "
                   f"replacement character � (U+FFFD) instead of a real character, and would be stored, "
                   f"searched and exported so: {why}.")
    if max_tokens is not None:
        long = [c for c in chunk_set.chunks if c.tokens > max_tokens]
        if long:
            out.append(f"{len(long)} chunk{'s are' if len(long) > 1 else ' is'} longer than the "
                       f"{max_tokens} tokens the embedder reads (largest {max(c.tokens for c in long)}): "
                       "their ends would be ignored when embedding. Lower the chunk size.")
    stats = chunking.stats(chunk_set)
    if stats.over_size:
        out.append(f"The last chunk holds {stats.max_tokens} tokens: the maximum number of chunks "
                   f"({chunk_set.settings.max_num_chunks}) was reached and the rest became one chunk.")
    return out


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
            "the knowledge base was built with another embedder",
            f"'{kb.name}' was built with `{kb.embedder}`, but this app would embed with "
            f"`{embedder_name}`: mixing the two vector spaces would make search meaningless, so "
            f"ingesting is refused. Set RAG_EMBEDDER=auto (or RAG_EMBEDDER={kb.embedder}) and "
            "restart, or ingest into another knowledge base.",
            refused=True,
        )
    model = ollama_model(embedder_name)
    if model is None or ollama is None:
        return None
    from rag.embeddings import ollama_has_model

    if not ollama.reachable:
        return Blocker("Ollama is not reachable",
                       f"This knowledge base embeds with Ollama (`{model}`), which is not reachable at "
                       f"{ollama.host}: start it with `ollama serve` before ingesting.")
    if not ollama_has_model(ollama.models, model):
        return Blocker(f"Ollama lacks {model}", f"Ollama has no `{model}`: run `ollama pull {model}` before ingesting.")
    return None


def ollama_model(embedder_name: str) -> str | None:
    """The Ollama model an embedder name such as 'ollama:bge-m3' stands for; None for the others."""
    return embedder_name.removeprefix(OLLAMA_PREFIX) if embedder_name.startswith(OLLAMA_PREFIX) else None


WORTH_SAYING_SECONDS = 10.0
"""An ingest expected to embed for at least this long says so before it starts (e5 reads 160-700
tokens/s here: a 14-page paper is ~30 s, a 300-page book 7-30 minutes)."""
SAMPLE_CHARS = 20_000
"""How much of the files' text the language hint reads."""


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(round(seconds), 1)} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


@dataclass(frozen=True)
class PlanNotes:
    """What to say before an ingest starts; None where there is nothing to say."""

    duration: str | None
    """How long embedding should take, when that is long enough to matter."""
    language: str | None
    """Which embedder suits the text better (mostly Chinese text and an embedder weak in it)."""


def plan_notes(embedder_name: str, expected: float | None, chunks: int, sample_text: str) -> PlanNotes:
    """The notes for embedding `chunks` chunks with `embedder_name`: `expected` is the seconds that
    `rag.embeddings.expected_seconds` gives (None: no estimate), `sample_text` some of the files' text."""
    from rag.embeddings.hints import chinese_hint

    return PlanNotes(duration_note(embedder_name, expected, chunks), chinese_hint(embedder_name, sample_text[:SAMPLE_CHARS]))


def duration_note(embedder_name: str, expected: float | None, chunks: int) -> str | None:
    """"Embedding 104 chunks with local:e5 should take about 3 min on this machine." when that is
    long enough to say (`expected` seconds, None: no estimate); the caller says how to stop it."""
    if expected is None or expected < WORTH_SAYING_SECONDS:
        return None
    return (f"Embedding {chunks} chunk{'' if chunks == 1 else 's'} with {embedder_name} should take "
            f"about {_duration(expected)} on this machine.")
