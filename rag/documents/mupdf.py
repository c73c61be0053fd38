"""PDF, EPUB and XPS through MuPDF: the text of every page, or one plain reason why not.

Imported only when such a file is loaded: pymupdf takes a while to import, and the CLI's
`--help` and `chunk` of plain text do not need it.
"""
from __future__ import annotations

import logging

import pymupdf

from rag.documents.model import KIND_LABELS
from rag.errors import DocumentError

logger = logging.getLogger("rag.documents")

_MAX_CAUSE_CHARS = 160


def extract_pages(data: bytes, filename: str, kind: str) -> tuple[list[str], tuple[str, ...]]:
    label = KIND_LABELS[kind]
    page_number = 0
    try:
        with pymupdf.open(stream=data, filetype=kind) as doc:
            if doc.needs_pass:
                raise DocumentError(
                    filename, f"password-protected {label}: remove the password and try again"
                )
            if doc.page_count == 0:
                raise DocumentError(filename, f"corrupt or unreadable {label}: it has no pages")
            texts: list[str] = []
            for page_number in range(1, doc.page_count + 1):
                texts.append(doc.load_page(page_number - 1).get_text("text"))
            # Read after extraction: MuPDF also repairs lazily, when a page refers to an
            # object that the xref places wrongly.
            repaired = doc.is_repaired
    except DocumentError:
        raise
    except Exception as exc:  # pymupdf raises FileDataError, FzError*, ValueError, RuntimeError...
        where = f"page {page_number}: " if page_number else ""
        logger.debug("MuPDF failed on %r (%s)", filename, where or "open", exc_info=True)
        raise DocumentError(filename, f"corrupt or unreadable {label}: {where}{_short_cause(exc)}") from None
    if repaired:
        # info, not warning: the user already sees it in Document.warnings.
        logger.info("MuPDF repaired %r while reading it", filename)
        return texts, ("MuPDF repaired a damaged xref; some text may be missing or out of order",)
    return texts, ()


def _short_cause(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    cause = lines[0] if lines else exc.__class__.__name__
    # MuPDF's C errors arrive as "code=2: cannot ..."; the code means nothing to a user.
    if cause.startswith("code=") and ": " in cause:
        cause = cause.split(": ", 1)[1]
    cause = cause[:1].lower() + cause[1:]
    if len(cause) > _MAX_CAUSE_CHARS:
        cause = cause[: _MAX_CAUSE_CHARS - 1] + "…"
    return cause
