"""User-facing errors: each message is one line that says what went wrong and what to do."""

from __future__ import annotations

import re

from rag.text import Text, text_of

_URL_PASSWORD = re.compile(r"(//[^:/@\s'\"]*):([^@\s'\"]+)@")
_KEY_VALUE_SECRET = re.compile(
    r"(?i)(?<![a-z])(password|passwd|pwd|api[_-]?key|secret|token)(\s*[=:]\s*)('[^']*'|\"[^\"]*\"|[^\s,;&]+)"
    r"|(?<![a-z])(bearer)(\s+)(\S+)"
)


def mask_secrets(text: str) -> str:
    """`text` with the password of any URL (`//user:password@host`, also in a malformed
    `postgres//...`) and any `password=` / `api_key=` value replaced by `***`: psycopg quotes a bad
    connection string whole in its error, and error texts reach pages and logs."""
    text = _URL_PASSWORD.sub(r"\1:***@", text)
    return _KEY_VALUE_SECRET.sub(lambda m: f"{m[1] or m[4]}{m[2] or m[5]}***", text)


def install_log_masking() -> None:
    """Every log record's message with `mask_secrets` applied (once per process; the CLI, the MCP server
    and the app call it): a driver's error quoted in a log line may hold a connection string."""
    import logging

    previous = logging.getLogRecordFactory()
    if getattr(previous, "masks_secrets", False):
        return

    def factory(*args: object, **kwargs: object) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        message = record.getMessage()
        masked = mask_secrets(message)
        if masked != message:
            record.msg, record.args = masked, ()
        return record

    factory.masks_secrets = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)


ONE_LINE_LIMIT = 300
"""Characters of a folded error text shown to a user; past it the text is cut with '…'."""


def one_line(value: str | BaseException, limit: int | None = ONE_LINE_LIMIT, *, with_type: bool = False) -> str:
    """`value` (a text or an exception) as one line: white space folded to single spaces, cut to `limit`
    characters with '…' (None: never cut), secrets masked (`mask_secrets`). An exception group speaks through
    its first leaf; an exception with no text is named by its class, and `with_type` puts the class name
    before its text."""
    if isinstance(value, BaseException):
        while isinstance(value, BaseExceptionGroup) and value.exceptions:
            value = value.exceptions[0]
        text = " ".join(str(value).split())
        name = type(value).__name__
        text = f"{name}: {text}" if text and with_type else text or name
    else:
        text = " ".join(str(value).split())
    text = mask_secrets(text)
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


class RagError(Exception):
    """Base of every error meant to be shown to a user as is (never a traceback)."""


class DocumentError(RagError):
    """A file that cannot be turned into pages of text."""

    def __init__(self, filename: str, reason: str) -> None:
        self.filename = filename
        self.reason = reason
        super().__init__(Text("{filename}: {reason}", filename=filename, reason=reason))


class ChunkSettingsError(RagError, ValueError):
    """Chunk parameters that contradict each other or are out of range."""


class FilterSyntaxError(RagError, ValueError):
    """A malformed filter expression; `position` is the 0-based offset of the problem."""

    def __init__(self, expression: str, position: int, reason: str) -> None:
        self.expression = expression
        self.position = position
        self.reason = reason
        # The text as typed (rag.query.filters.caret draws '^' under the position).
        super().__init__(
            Text(
                "filter error at position {position}: {reason} in: {expression}",
                position=position,
                reason=reason,
                expression=expression,
            )
        )


class EmbedderError(RagError):
    """The embedding model is unreachable, missing or answered nonsense."""


class EmbedderMismatchError(RagError):
    """A knowledge base used with another embedder than the one it was built with."""


class StoreError(RagError):
    """The database is unreachable or refused an operation."""


class StoreBusyError(StoreError):
    """A transaction rolled back by a deadlock or a serialization failure: running it again may work."""


class ModelError(RagError):
    """The chat model is unreachable, missing or failed mid-answer."""


class GenerationError(ModelError):
    """A generation that failed; `partial` and `partial_thinking` hold what it had produced."""

    def __init__(self, message: str, partial: str = "", partial_thinking: str = "") -> None:
        super().__init__(message)
        self.partial = partial
        self.partial_thinking = partial_thinking


class McpConfigError(RagError):
    """The MCP servers config file is missing or malformed."""


class McpConfigMissing(McpConfigError):
    """There is no config file (so no MCP server is configured)."""


class McpError(RagError):
    """An MCP server is not running, unknown, or did not answer."""


def failure_reason(exc: RagError) -> str:
    """A failure as one line; a file's error without its filename (the result names the file). A
    message made as a `Text` that is one line already stays that Text (so a UI can translate it)."""
    reason = getattr(exc, "reason", None)
    if not reason:
        made = text_of(exc)
        reason = made if isinstance(made, Text) else exc
    line = one_line(reason, limit=None)
    return reason if isinstance(reason, Text) and reason == line else line
