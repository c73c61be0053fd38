"""The reason a load fails with, checked to be the one-line message the app shows."""

from __future__ import annotations

import pytest

from rag.documents import load_bytes
from rag.errors import DocumentError


def reason_of(data: bytes, filename: str) -> str:
    with pytest.raises(DocumentError) as caught:
        load_bytes(data, filename)
    assert caught.value.filename == filename
    assert str(caught.value) == f"{filename}: {caught.value.reason}"
    return caught.value.reason
