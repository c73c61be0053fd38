"""The knowledge base as tools: list the knowledge bases, search one, read a passage, ingest a file, answer a
question. The MCP server (`rag.mcp.server`) serves them; the agent turn calls the search in-process, with the
same schema and description the server's clients see.

Each tool is a typed, documented function: the docstring is its description, each parameter has a
`Field(description=...)`, and the return type (a pydantic model) is its output schema. The tools are
read-only unless given folders to ingest from; `ingest_file` then only reads files whose resolved path
lies inside one of them (a `..` or a symbolic link leading out is refused).

They live beside the engine they call rather than in `rag.mcp`, because the agent turn (`agent_turn`)
builds them too: the server sits above `rag.generate`, the agent below it.
"""

from __future__ import annotations

import functools
import inspect
import os
import stat
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, Field

from rag.errors import RagError
from rag.settings import Settings, get_settings
from rag.store import Hit, Store
from rag.text import Text

if TYPE_CHECKING:
    from rag.agent.mcp_client import ToolCallResult

# The MCP SDK is imported where it is used: the chat's agent turn builds these tools without serving them.

MAX_TOP_K = 50
TOOL_NAMES = ("list_knowledge_bases", "search_knowledge_base", "get_chunk")
"""The read-only tools; `ingest_file` joins them when the server is given folders to ingest from."""
ASK_TOOL = "ask_knowledge_base"
"""Joins the tools when the server is given a chat model to answer with (`--answer`)."""


# ------------------------------------------------------------------------------------------------
# Output schemas


class KnowledgeBaseInfo(BaseModel):
    """One knowledge base."""

    name: str = Field(description="The name to pass as knowledge_base")
    documents: int = Field(description="Number of documents")
    chunks: int = Field(description="Number of searchable chunks")
    embedder: str = Field(description="The embedding model the knowledge base was built with")


class KnowledgeBaseList(BaseModel):
    knowledge_bases: list[KnowledgeBaseInfo]


class SearchHit(BaseModel):
    """One passage found by a search."""

    id: str = Field(description="Chunk id, for get_chunk")
    original_filename: str = Field(description="The file the passage comes from")
    pages: list[int] = Field(description="1-based pages of the file the passage spans")
    location: str = Field(
        default="",
        description="Where the passage is, for a citation: 'p. 4', 'slide 3', "
        "'sheet Sales', or a Word/HTML heading path",
    )
    score: float = Field(
        description="Ranking score (higher is better): cosine similarity (vector), the keyword "
        "score (keyword) or the fused score (hybrid)"
    )
    text: str = Field(description="The passage")
    ranking: str = Field(
        default="",
        description="Where each search ranked it, e.g. 'hybrid #2 · vector #3 (0.82) · keyword #1 (BM25 7.4)'",
    )
    fused_rank: int | None = Field(default=None, description="1-based rank in the hybrid ranking")
    vector_rank: int | None = Field(default=None, description="1-based rank by vector search; null: not found by it")
    vector_score: float | None = Field(default=None, description="Cosine similarity to the query")
    keyword_rank: int | None = Field(default=None, description="1-based rank by keyword search; null: not found by it")
    keyword_score: float | None = Field(default=None, description="The keyword search's score")


class SearchResults(BaseModel):
    query: str
    knowledge_base: str
    hits: list[SearchHit]


class ChunkText(BaseModel):
    """One stored passage, in full."""

    id: str
    knowledge_base: str
    original_filename: str
    pages: list[int]
    location: str = ""
    text: str


class HistoryMessage(BaseModel):
    """One earlier message of the conversation."""

    role: Literal["user", "assistant"] = Field(description="Who wrote it")
    content: str = Field(description="What was written")


class CitedSource(BaseModel):
    """A source the answer cites with its number."""

    n: int = Field(description="The number the answer cites it with, as in [1]")
    chunk_id: str = Field(description="Chunk id, for get_chunk")
    original_filename: str
    pages: list[int]
    location: str = Field(
        default="", description="Where the passage is: 'p. 4', 'slide 3', 'sheet Sales', a heading path"
    )
    score: float
    supported: bool = Field(description="The cited passage supports the sentence that cites it (shared words checked)")


class GroundedAnswer(BaseModel):
    """An answer written from the knowledge base's passages, with its citations checked."""

    answer: str = Field(description="The answer, with [n] markers after the sentences that use a source")
    query: str = Field(description="What was searched: the question, or its standalone rewrite")
    model: str = Field(description="The chat model that answered")
    citations: list[CitedSource]
    unknown_citations: list[int] = Field(description="Markers that point at no source: claims not backed")
    citations_attributed: bool = Field(
        description="The markers were added by matching sentences to sources (a model that does not cite by itself)"
    )
    grounded: bool = Field(description="Every judged sentence is supported by a source and the model cited them")
    unsupported_sentences: list[str] = Field(description="Sentences no cited (or any) source supports")
    notes: list[str] = Field(description="How the answer was made (history left out, rewrite failed, ...)")


class IngestOutcome(BaseModel):
    """What ingesting one file did."""

    path: str = Field(description="The resolved path that was read")
    knowledge_base: str
    status: str = Field(description="stored, replaced or unchanged")
    pages: int
    chunks: int


def hit_out(hit: Hit) -> SearchHit:
    return SearchHit(
        id=str(hit.id),
        original_filename=hit.original_filename,
        pages=list(hit.pages),
        location=hit.location,
        score=round(float(hit.score), 6),
        text=hit.content,
        ranking=hit.ranking,
        fused_rank=hit.fused_rank,
        vector_rank=hit.vector_rank,
        keyword_rank=hit.keyword_rank,
        vector_score=None if hit.vector_score is None else round(hit.vector_score, 6),
        keyword_score=None if hit.keyword_score is None else round(hit.keyword_score, 6),
    )


# ------------------------------------------------------------------------------------------------
# Ingest confinement


def resolve_roots(roots: Sequence[str | Path]) -> tuple[Path, ...]:
    """The folders `ingest_file` may read from, resolved; each must be an existing folder."""
    resolved: list[Path] = []
    for raw in roots:
        path = Path(raw).expanduser()
        try:
            real = path.resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            raise RagError(f"--allow-ingest {raw}: no such folder") from exc
        if not real.is_dir():
            raise RagError(f"--allow-ingest {raw}: not a folder")
        resolved.append(real)
    return tuple(dict.fromkeys(resolved))


def confine(path: str, roots: Sequence[Path]) -> Path:
    """`path` resolved (symbolic links followed, `..` collapsed), if it lies inside one of `roots`.

    A relative path is taken relative to the first root. Raises RagError naming the path, what it
    resolves to and the allowed folders otherwise.
    """
    if not roots:
        raise RagError("this server is read-only: start it with --allow-ingest FOLDER to ingest files")
    if not path or not path.strip():
        raise RagError("the path is empty: give a file inside " + _roots_text(roots))
    given = Path(path).expanduser()
    candidate = given if given.is_absolute() else roots[0] / given
    try:
        real = candidate.resolve(strict=False)
    except (OSError, RuntimeError) as exc:  # e.g. a symlink loop
        raise RagError(f"refused {path!r}: cannot resolve it ({exc})") from exc
    if not any(real == root or real.is_relative_to(root) for root in roots):
        how = ""
        if ".." in given.parts:
            how = " through '..'"
        elif _has_symlink(candidate):
            how = " through a symbolic link"
        raise RagError(
            f"refused {path!r}: it resolves{how} to {real}, outside the folders this server may "
            f"ingest from ({_roots_text(roots)})"
        )
    if not real.exists():
        raise RagError(f"{path!r}: no such file (looked at {real})")
    if not real.is_file():
        raise RagError(f"{path!r} is not a file")
    from rag import documents  # pymupdf: imported only by servers that may ingest

    if real.suffix.lower() not in documents.SUPPORTED_EXTENSIONS:
        raise RagError(f"{path!r}: unsupported file type; supported: {', '.join(documents.SUPPORTED_EXTENSIONS)}")
    return real


MAX_INGEST_BYTES = 200 * 1024 * 1024
"""The largest file `ingest_file` reads: the Upload page's limit (server.maxUploadSize)."""


def read_confined(real: Path, roots: Sequence[Path], limit: int = MAX_INGEST_BYTES) -> bytes:
    """The bytes of the file `confine` approved, read from one descriptor whose own path is checked
    again: between the check and the open the file (or a folder above it) may have been swapped for a
    symbolic link to a file outside `roots` (67 of 1,842 calls stored such a file when the path was
    opened again after the check)."""
    try:
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise RagError(f"{real}: cannot open the file ({exc.strerror or exc}; a symbolic link is refused)") from exc
    try:
        opened = _descriptor_path(fd, real)
        if opened is None or not any(opened == root or opened.is_relative_to(root) for root in roots):
            raise RagError(
                f"refused {str(real)!r}: it changed after it was checked and now leads outside the "
                f"folders this server may ingest from ({_roots_text(roots)})"
            )
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RagError(f"{str(real)!r} is not a file")
        if info.st_size > limit:
            raise RagError(
                f"{real.name}: {info.st_size / 1e6:,.0f} MB is more than this server ingests ({limit / 1e6:,.0f} MB)"
            )
        with os.fdopen(fd, "rb", closefd=False) as stream:
            data = stream.read(limit + 1)
        if len(data) > limit:
            raise RagError(f"{real.name}: more than this server ingests ({limit / 1e6:,.0f} MB)")
        return data
    finally:
        os.close(fd)


def _descriptor_path(fd: int, expected: Path) -> Path | None:
    """The path the open descriptor `fd` really is (Linux: /proc/self/fd); elsewhere, `expected` when it
    still names the same file (device and inode), else None."""
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        pass
    try:
        now, opened = os.stat(expected), os.fstat(fd)
    except OSError:
        return None
    return expected.resolve() if (now.st_dev, now.st_ino) == (opened.st_dev, opened.st_ino) else None


def _has_symlink(path: Path) -> bool:
    current = Path(path.anchor)
    for part in path.parts[1:]:
        current = current / part
        if current.is_symlink():
            return True
    return False


def _roots_text(roots: Sequence[Path]) -> str:
    return ", ".join(str(r) for r in roots)


# ------------------------------------------------------------------------------------------------
# The tools


def as_tool_error(fn: Callable[..., Any]) -> Callable[..., Any]:
    """RagError -> ToolError, so the client sees our one-line message (anything else is a crash,
    which the SDK reports without details)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RagError as exc:
            from mcp.server.mcpserver.exceptions import ToolError

            raise ToolError(str(exc)) from exc

    return wrapper


class KnowledgeBaseTools:
    """The tool functions, bound to one store (opened on first use) and the settings.

    Thread-safe: the SDK runs synchronous tools on worker threads.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        store: Store | None = None,
        allow_ingest: Sequence[str | Path] = (),
        answer_model: str | None = None,
    ) -> None:
        """`answer_model` (a model name, or "" for the default one) adds `ask_knowledge_base`."""
        self.settings = settings or get_settings()
        self.answer_model = answer_model
        self._store = store
        self._owns_store = store is None
        self._lock = threading.Lock()
        self.roots = resolve_roots(allow_ingest)

    @property
    def store(self) -> Store:
        with self._lock:
            if self._store is None:
                self._store = Store.open(self.settings)
            return self._store

    def close(self) -> None:
        with self._lock:
            if self._store is not None and self._owns_store:
                self._store.close()
                self._store = None

    def tool_names(self) -> tuple[str, ...]:
        return (
            TOOL_NAMES
            + ((ASK_TOOL,) if self.answer_model is not None else ())
            + (("ingest_file",) if self.roots else ())
        )

    def input_schema(self, name: str) -> dict[str, Any]:
        """The JSON schema of a tool's arguments, exactly as MCP clients see it."""
        from mcp.server.mcpserver.tools import Tool

        if name not in self.tool_names():
            raise KeyError(name)
        return Tool.from_function(as_tool_error(getattr(self, name))).parameters

    def description(self, name: str) -> str:
        """What MCP clients read of a tool (in English: models read it)."""
        return str(self.described(name))

    def described(self, name: str) -> Text:
        """The same as a `Text`, for the Tools page to show in the user's language."""
        if name not in self.tool_names():
            raise KeyError(name)
        text = Text(tool_description(name))
        if name == "ingest_file":
            return Text("{what} Allowed folders: {roots}", what=text, roots=_roots_text(self.roots))
        return text

    def call(self, name: str, arguments: dict[str, Any]) -> ToolCallResult:
        """Call one of the tools in-process, as an MCP client would see the result (the Tools page's
        "try it" form): a RagError becomes an error result with its one line, like a ToolError."""
        import json
        import time

        from rag.agent.mcp_client import ToolCallResult

        if name not in self.tool_names():
            return ToolCallResult(f"No tool named {name!r}: this server has {', '.join(self.tool_names())}", True)
        started = time.perf_counter()
        tool = getattr(self, name)
        try:
            inspect.signature(tool).bind(**arguments)
        except TypeError as exc:  # an argument it does not take, or one missing
            return ToolCallResult(f"Error executing tool {name}: {exc}", True, None, 0.0)
        try:
            result = tool(**arguments)
        except RagError as exc:
            # Worded as the SDK words a ToolError for its clients.
            return ToolCallResult(f"Error executing tool {name}: {exc}", True, None, time.perf_counter() - started)
        structured = result.model_dump(mode="json")
        return ToolCallResult(
            json.dumps(structured, ensure_ascii=False, indent=2), False, structured, time.perf_counter() - started
        )

    # Each method below is registered as a tool: keep the docstrings written for a model.

    def list_knowledge_bases(self) -> KnowledgeBaseList:
        """List the knowledge bases that can be searched, with their number of documents and chunks."""
        return KnowledgeBaseList(
            knowledge_bases=[
                KnowledgeBaseInfo(name=kb.name, documents=kb.documents, chunks=kb.chunks, embedder=kb.embedder)
                for kb in self.store.list_knowledge_bases()
            ]
        )

    def search_knowledge_base(
        self,
        query: Annotated[str, Field(description="What to look for: a question or a few keywords")],
        knowledge_base: Annotated[
            str, Field(description="Name of the knowledge base to search (see list_knowledge_bases)")
        ],
        top_k: Annotated[int, Field(description="How many passages to return", ge=1, le=MAX_TOP_K)] = 5,
        filter: Annotated[  # noqa: A002 - the tool's public parameter name
            str | None,
            Field(
                description="Optional metadata filter in Spring AI syntax, e.g. "
                "\"original_filename == 'report.pdf' && page >= 3\""
            ),
        ] = None,
    ) -> SearchResults:
        """Search a knowledge base for the passages closest to a query (hybrid vector and keyword search).

        Each hit gives the file name, the pages and the passage text; cite the file and pages."""
        from rag.generate import engine  # the model clients: only once a tool runs

        hits = engine.find(
            self.store, self.settings, query, engine.Request(kbs=(knowledge_base,), top_k=top_k, filter=filter)
        )
        return SearchResults(query=query, knowledge_base=knowledge_base, hits=[hit_out(h) for h in hits])

    def ask_knowledge_base(
        self,
        question: Annotated[str, Field(description="The question, as the user asked it")],
        knowledge_base: Annotated[
            str, Field(description="Name of the knowledge base to answer from (see list_knowledge_bases)")
        ],
        history: Annotated[
            list[HistoryMessage] | None,
            Field(
                description="The conversation so far, oldest first: a follow-up is rewritten into a "
                "standalone query before searching"
            ),
        ] = None,
        top_k: Annotated[int, Field(description="How many passages the answer may use", ge=1, le=MAX_TOP_K)] = 8,
        filter: Annotated[  # noqa: A002 - the tool's public parameter name
            str | None,
            Field(
                description="Optional metadata filter in Spring AI syntax, e.g. "
                "\"original_filename == 'report.pdf' && page >= 3\""
            ),
        ] = None,
    ) -> GroundedAnswer:
        """Answer a question from a knowledge base: its passages are searched, the answer cites them as [n].

        The same answer the chat page gives: follow-ups rewritten, the prompt fitted to the model's window."""
        return self.answer(question, knowledge_base, history, top_k, filter)

    def answer(
        self,
        question: str,
        knowledge_base: str,
        history: Sequence[HistoryMessage] | None = None,
        top_k: int = 8,
        filter: str | None = None,  # noqa: A002 - as the tool's
        *,
        stop: threading.Event | None = None,
    ) -> GroundedAnswer:
        """`ask_knowledge_base`, its generation stopped once `stop` is set (rag.mcp.server sets it when the HTTP
        client that asked has gone: the answer would hold the local model for nobody)."""
        from rag import llms
        from rag.generate import engine
        from rag.llms.types import Message

        choice = self.answer_model or None
        model = llms.resolve_chat_model(self.settings, choice)
        turn = engine.ask(
            question,
            engine.Request(kbs=(knowledge_base,), top_k=top_k, filter=filter),
            model=model,
            store=self.store,
            settings=self.settings,
            history=[Message(m.role, m.content) for m in history or ()],
            stop=stop,
        )
        if turn.problem or turn.error:
            raise RagError(turn.problem or turn.error)
        found = turn.as_dict()
        return GroundedAnswer(
            answer=turn.answer,
            query=turn.query,
            model=turn.model,
            citations=[CitedSource(**c) for c in found["citations"]],
            unknown_citations=found["unknown_citations"],
            citations_attributed=turn.attributed,
            grounded=found["grounded"],
            unsupported_sentences=[turn.answer[s.start : s.end].strip() for s in turn.grounding.flagged],
            notes=list(turn.notes),
        )

    def get_chunk(
        self,
        id: Annotated[str, Field(description="The chunk id, as returned in a search hit")],  # noqa: A002
    ) -> ChunkText:
        """Read one stored passage in full, by the id a search returned."""
        hit = self.store.get_chunk(id.strip())
        if hit is None:
            raise RagError(f"no chunk with id {id!r}: use an id from search_knowledge_base")
        return ChunkText(
            id=str(hit.id),
            knowledge_base=hit.knowledge,
            original_filename=hit.original_filename,
            pages=list(hit.pages),
            location=hit.location,
            text=hit.content,
        )

    def ingest_file(
        self,
        path: Annotated[
            str,
            Field(
                description="The file to ingest (PDF, EPUB, XPS, Word, PowerPoint, Excel, HTML, CSV, TXT or MD), "
                "inside one of the folders this server may read; a relative path "
                "is taken from the first of them"
            ),
        ],
        knowledge_base: Annotated[str, Field(description="The knowledge base to add it to (created if new)")],
    ) -> IngestOutcome:
        """Parse, chunk, embed and store one file into a knowledge base (only from the allowed folders)."""
        from rag import ingest
        from rag.chunking import DEFAULT

        real = confine(path, self.roots)
        knowledge = ingest.validate_kb_name(knowledge_base)
        embedder = ingest.embedder_for_kb(self.store, self.settings, knowledge)
        data = read_confined(real, self.roots)
        result = ingest.ingest_bytes(self.store, embedder, data, real.name, knowledge, DEFAULT, path=str(real))
        if not result.ok:
            raise RagError(f"{real.name}: {result.reason}")
        return IngestOutcome(
            path=str(real), knowledge_base=knowledge, status=result.status, pages=result.pages, chunks=result.chunks
        )


EVERY_TOOL = (*TOOL_NAMES, ASK_TOOL, "ingest_file")
"""Every tool a server may have (`KnowledgeBaseTools.tool_names`: the ones this one has)."""


def tool_description(name: str) -> str:
    """A tool's description, its method's docstring: those of `EVERY_TOOL` are in the Chinese catalogue."""
    return inspect.cleandoc(getattr(KnowledgeBaseTools, name).__doc__ or "")
