"""Plain text files: UTF-8, or UTF-8/UTF-16 with a BOM; anything else is refused by name."""

from __future__ import annotations

from typing import NoReturn

from rag.errors import DocumentError
from rag.text import Text

_BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)


def decode_text(data: bytes, filename: str) -> str:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return _decode_or_fail(data, len(bom), encoding, filename)
    # Without a BOM only UTF-8 is accepted: a NUL byte means UTF-16 without BOM or a binary
    # file, and Python's UTF-8 codec would let it through.
    nul = data.find(b"\x00")
    text = _decode_or_fail(data, 0, "utf-8", filename, limit=nul if nul >= 0 else None)
    if nul >= 0:
        _fail_decoding(filename, data, nul)
    return text


def _decode_or_fail(data: bytes, skip: int, encoding: str, filename: str, limit: int | None = None) -> str:
    try:
        return data[skip:limit].decode(encoding)
    except UnicodeDecodeError as exc:
        _fail_decoding(filename, data, skip + exc.start)


def _fail_decoding(filename: str, data: bytes, offset: int) -> NoReturn:
    raise DocumentError(
        filename,
        Text(
            "not UTF-8 or UTF-16 text (invalid byte 0x{byte} at offset {offset}); save it as UTF-8",
            byte=f"{data[offset]:02x}",
            offset=offset,
        ),
    )
