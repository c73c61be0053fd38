"""The Unicode ranges of the scripts written without spaces between words, defined once.

Keyword search, the support check, sentence splitting and the loop guard all treat these
characters one by one (or as bigrams) instead of as space-separated words; the language rules
(the Chinese prompt, the Chinese-embedder hint) look at Han characters alone.
"""

from __future__ import annotations

import re

HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
"""CJK ideographs: Extension A, the Unified block and the compatibility ideographs."""
KANA = "\u3040-\u30ff"
HANGUL = "\uac00-\ud7af"
CJK = HAN + KANA + HANGUL
"""Characters of Chinese, Japanese and Korean text (a regex character-class body)."""
UNSPACED = HAN + KANA + "\u3000-\u303f\uff00-\uffef"
"""Characters written without spaces between them: ideographs, kana, CJK punctuation and full-width forms
(Korean puts spaces between words); a space or newline beside one is a layout's, not the text's."""


HAN_CHAR = re.compile(f"[{HAN}]")


def language_of(text: str) -> str:
    """'zh' when Han characters carry the text (two Latin letters weigh one character), else 'en': the
    language a web search's fallback and a conversation's summary are written in."""
    han = len(HAN_CHAR.findall(text))
    latin = sum(1 for ch in text if ch.isascii() and ch.isalpha())
    return "zh" if han >= 2 and 2 * han >= latin else "en"
