"""A knowledge base's saved question set, run again on its stored chunks (`rag eval --kb NAME`): the same
search the chat uses, each question answered by a hit of its document whose span overlaps its answer's
(stored chunks keep their [start, end) in the document's text), and the figures compared with the last run
(a retrieval regression check, issue #30 item 5).

Also the documents' text for `rag tune KB`: the stored files read again as the ingest read them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rag.documents.model import PAGE_SEPARATOR
from rag.errors import RagError
from rag.evaluation.normalise import normalise
from rag.evaluation.quality import ModeQuality
from rag.evaluation.questions import Question
from rag.retrieve.fusion import DEFAULT_FUSION
from rag.retrieve.searching import search
from rag.settings import Settings
from rag.store import Hit, Store
from rag.store.question_sets import RunFigures, SavedQuestion, fingerprint
from rag.text import Text

FIGURES = ("hit_at_1", "hit_at_3", "hit_at_5", "mrr")


@dataclass(frozen=True)
class SetCheck:
    """One mode's run of a saved set: its figures (saved), and the last run before it on the same set."""

    quality: ModeQuality
    run: RunFigures
    previous: RunFigures | None
    """The last run in the same mode, None before the first."""
    missing: tuple[str, ...]
    """Documents the set asks about that the knowledge base no longer holds (their questions are misses)."""

    @property
    def comparable(self) -> bool:
        """The previous run asked the same questions (else the difference says nothing)."""
        return self.previous is not None and self.previous.fingerprint == self.run.fingerprint

    def change(self) -> dict[str, float]:
        """Each figure minus the previous run's (empty when not comparable)."""
        if not self.comparable or self.previous is None:
            return {}
        return {name: getattr(self.run, name) - getattr(self.previous, name) for name in FIGURES}

    def changed_settings(self) -> list[str]:
        """What differs from the previous run: 'embedder', 'chunk settings' (for the user, as `Text`)."""
        if self.previous is None:
            return []
        changed: list[str] = []
        if self.previous.embedder != self.run.embedder:
            changed.append(Text("embedder {old} → {new}", old=self.previous.embedder, new=self.run.embedder))
        if self.previous.chunk_settings != self.run.chunk_settings:
            old, new = _label(self.previous.chunk_settings), _label(self.run.chunk_settings)
            changed.append(Text("chunk settings {old} → {new}", old=old, new=new))
        return changed


def _label(settings: dict[str, Any]) -> str:
    from rag import chunking

    try:
        return chunking.label(chunking.settings_from_dict(dict(settings)))
    except (RagError, ValueError, TypeError):  # recorded by another version of the app
        return "?"


def as_questions(saved: Sequence[SavedQuestion]) -> list[Question]:
    return [Question(q.text, q.answer, q.document, (q.start, q.end)) for q in saved]


def save_questions(store: Store, knowledge: str, document: str, questions: Sequence[Question]) -> int:
    """`questions` about `document` (their answer spans index its text) made the knowledge base's question
    set for that document, as `rag questions FILE --kb NAME` saves them: what the Chunk Lab hands to the
    Upload page with its setting, saved once the document is ingested. Questions without a span (a passage
    typed, not found word for word) are left out. Returns how many the set holds now."""
    from rag.scripts import language_of

    saved = [
        SavedQuestion(q.text, q.expected, q.span[0], q.span[1], language_of(q.text), document)
        for q in questions
        if q.span is not None
    ]
    return store.question_sets.replace(knowledge, document, saved)


def rank_of(question: Question, hits: Sequence[Hit]) -> int | None:
    """1-based rank of the first hit of the question's document overlapping its answer span; a row without
    offsets (written by another tool) answers it when it holds the answer's text."""
    for rank, hit in enumerate(hits, 1):
        start, end = hit.metadata.get("start"), hit.metadata.get("end")
        if isinstance(start, int) and isinstance(end, int):
            if question.overlaps(hit.original_filename, start, end):
                return rank
        elif question.matches(hit.original_filename, normalise(hit.content)):
            return rank
    return None


def check_saved_set(
    store: Store,
    settings: Settings,
    knowledge: str,
    mode: str,
    *,
    depth: int = 10,
    progress: Callable[[int, int], None] | None = None,
) -> SetCheck:
    """Run knowledge base `knowledge`'s saved questions in `mode`, save the run's figures, and return them
    with the last run before it."""
    kb = store.get_knowledge_base(knowledge)
    if kb is None:
        raise RagError(Text("no knowledge base named {name}", name=repr(knowledge)))
    saved = store.question_sets.questions(knowledge)
    if not saved:
        raise RagError(
            Text(
                "knowledge base {name} has no saved questions: run 'python -m rag questions FILE --kb {name}' "
                "first, or give --questions FILE",
                name=knowledge,
            )
        )
    held = {d.original_filename for d in store.list_documents(knowledge)}
    missing = tuple(sorted({q.document for q in saved} - held))
    ranks: list[int | None] = []
    for done, question in enumerate(as_questions(saved), 1):
        hits = search(
            store, settings, question.text, [knowledge], top_k=depth, mode=mode, fusion=DEFAULT_FUSION, keep_copies=True
        )
        ranks.append(rank_of(question, hits))
        if progress is not None:
            progress(done, len(saved))
    quality = ModeQuality(mode=mode, ranks=tuple(ranks), depth=depth)
    previous = store.question_sets.last_run(knowledge, mode)
    run = store.question_sets.save_run(
        knowledge,
        RunFigures(
            embedder=kb.embedder,
            chunk_settings=dict(kb.chunk_settings),
            mode=mode,
            questions=len(saved),
            fingerprint=fingerprint(saved),
            hit_at_1=quality.hit_at_1,
            hit_at_3=quality.hit_at_3,
            hit_at_5=quality.hit_at_5,
            mrr=quality.mrr,
        ),
    )
    return SetCheck(quality, run, previous, missing)


@dataclass(frozen=True)
class KnowledgeText:
    """A knowledge base's documents' text, joined as one document for a sweep, and where each begins."""

    text: str
    starts: dict[str, int]
    """`original_filename` -> offset of its text in `text`."""


def knowledge_text(store: Store, knowledge: str) -> KnowledgeText:
    """The knowledge base's stored files read again (rag.documents.load_bytes, as the ingest read them), joined
    by page separators in filename order; a saved question's span is offset by its document's start."""
    from rag.documents import load_bytes

    docs = store.list_documents(knowledge)
    if not docs:
        raise RagError(Text("knowledge base {name} holds no documents", name=repr(knowledge)))
    parts: list[str] = []
    starts: dict[str, int] = {}
    offset = 0
    for doc in docs:
        data = store.document_bytes(doc.id)
        if data is None:  # deleted meanwhile
            continue
        text = load_bytes(data, doc.original_filename).text
        starts[doc.original_filename] = offset
        parts.append(text)
        offset += len(text) + len(PAGE_SEPARATOR)
    return KnowledgeText(PAGE_SEPARATOR.join(parts), starts)


def saved_for_sweep(saved: Sequence[SavedQuestion], joined: KnowledgeText) -> list[Question]:
    """The saved questions with their spans moved into the joined text (those of documents gone left out)."""
    out = []
    for q in saved:
        at = joined.starts.get(q.document)
        if at is not None:
            out.append(Question(q.text, q.answer, None, (at + q.start, at + q.end)))
    return out
