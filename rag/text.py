"""User-facing text that a UI can translate: an English string that remembers its template.

`Text("Ollama {version} at {host}", version="0.6", host=...)` is the English string itself (a `str`,
so everything that prints, compares or logs it works unchanged), and keeps `template` and `values`
so that the app can look the template up in its catalogue (ui.i18n.tr) and fill in the same values.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Any


class Text(str):
    template: str
    values: dict[str, Any]

    def __new__(cls, template: str, **values: Any) -> Text:
        made = super().__new__(cls, template.format(**values) if values else template)
        made.template = template
        made.values = values
        return made


def pages_text(n: int) -> Text:
    """'1 page', '3 pages' (a Text, translated as such)."""
    return Text("{n} page", n=n) if n == 1 else Text("{n} pages", n=n)


def chunks_text(n: int) -> Text:
    """'1 chunk', '3 chunks' (a Text, translated as such)."""
    return Text("{n} chunk", n=n) if n == 1 else Text("{n} chunks", n=n)


def text_of(value: str | BaseException) -> str:
    """What a UI should show for `value`: an exception's message as it was made (a `Text` keeps its template
    for translation; `str(exc)` would make it a plain string), else the text itself."""
    if isinstance(value, BaseException):
        first = value.args[0] if len(value.args) == 1 else None
        return first if isinstance(first, Text) else str(value)
    return value


def printable(text: str) -> str:
    """`text` for a terminal: control characters (escape sequences, carriage returns, newlines in a file
    name) written as Python escapes, so that a crafted file name cannot rewrite what the CLI printed."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


_BIDI_CONTROLS = dict.fromkeys(map(ord, "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"))
"""The bidirectional formatting characters: embeddings, overrides, isolates and marks."""


def shown_name(name: str) -> str:
    """A file name as shown beside other text (a source's label, '[1] report.pdf p. 4'): without bidi controls,
    so that a U+202E in the name cannot reverse the rest of the label, and isolated (U+2068 ... U+2069) when it
    holds right-to-left letters, so that an Arabic or Hebrew name does not reorder the text after it."""
    cleaned = name.translate(_BIDI_CONTROLS)
    if any(unicodedata.bidirectional(ch) in ("R", "AL") for ch in cleaned):
        return f"\u2068{cleaned}\u2069"
    return cleaned


def place_in_file(location: str, pages: Sequence[int]) -> str:
    """A chunk's place for a citation: its own `location` (a slide, a sheet, a heading path), else its pages
    ('p. 4', 'pp. 4–5'); '' when neither is known."""
    if location:
        return location
    if not pages:
        return ""
    return f"p. {pages[0]}" if len(pages) == 1 else f"pp. {pages[0]}–{pages[-1]}"
