"""User-facing errors: each message is one line that says what went wrong and what to do."""
from __future__ import annotations


class RagError(Exception):
    """Base of every error meant to be shown to a user as is (never a traceback)."""


class DocumentError(RagError):
    """A file that cannot be turned into pages of text."""

    def __init__(self, filename: str, reason: str) -> None:
        self.filename = filename
        self.reason = reason
        super().__init__(f"{filename}: {reason}")


class ChunkSettingsError(RagError, ValueError):
    """Chunk parameters that contradict each other or are out of range."""


class FilterSyntaxError(RagError, ValueError):
    """A malformed filter expression; `position` is the 0-based offset of the problem."""

    def __init__(self, expression: str, position: int, reason: str) -> None:
        self.expression = expression
        self.position = position
        self.reason = reason
        pointer = f"{expression[:position]}⟪here⟫{expression[position:]}"
        super().__init__(f"filter error at position {position}: {reason} in: {pointer}")


class EmbedderError(RagError):
    """The embedding model is unreachable, missing or answered nonsense."""


class EmbedderMismatchError(RagError):
    """A knowledge base used with another embedder than the one it was built with."""


class StoreError(RagError):
    """The database is unreachable or refused an operation."""


class ModelError(RagError):
    """The chat model is unreachable, missing or failed mid-answer."""
