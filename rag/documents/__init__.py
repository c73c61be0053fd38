"""Files -> pages of text: PDF, EPUB and XPS through MuPDF (scanned pages through Tesseract OCR,
tables as Markdown rows), Word, PowerPoint and Excel through their object models, web pages
through trafilatura, CSV, TXT and MD.

`Document` (model.py) is what every loader returns; `load_bytes`/`load_path` (loading.py) pick
the reader by extension and check the bytes match it; render.py draws chunks on the pages.
Importing this package does not import pymupdf (only loading such a file does).
"""

from __future__ import annotations

import sys

from rag.documents.loading import READ_TYPES, SUPPORTED_EXTENSIONS, load_bytes, load_path, sha256_hex
from rag.documents.model import PAGE_SEPARATOR, Document, Page, Progress, page_label, unit_of
from rag.documents.sections import tables_in
from rag.errors import DocumentError

# pymupdf imports its layout analyser (pymupdf_layout, installed with it) when it is imported: an ONNX
# model loaded into onnxruntime, 45 MB of the process's own memory and 0.17 s (of 0.33) measured, used
# only by a table search that few pages need. A None in sys.modules makes that import raise ImportError,
# which pymupdf catches; mupdf._layout_model loads it when a page needs it.
sys.modules.setdefault("pymupdf.layout", None)  # type: ignore[arg-type]

__all__ = [
    "PAGE_SEPARATOR",
    "READ_TYPES",
    "SUPPORTED_EXTENSIONS",
    "Document",
    "DocumentError",
    "Page",
    "Progress",
    "load_bytes",
    "load_path",
    "page_label",
    "sha256_hex",
    "tables_in",
    "unit_of",
]
