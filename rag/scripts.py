"""The Unicode ranges of the scripts written without spaces between words, defined once.

Keyword search, the support check, sentence splitting and the loop guard all treat these
characters one by one (or as bigrams) instead of as space-separated words; the language rules
(the Chinese prompt, the Chinese-embedder hint) look at Han characters alone.
"""
from __future__ import annotations

HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
"""CJK ideographs: Extension A, the Unified block and the compatibility ideographs."""
KANA = "\u3040-\u30ff"
HANGUL = "\uac00-\ud7af"
CJK = HAN + KANA + HANGUL
"""Characters of Chinese, Japanese and Korean text (a regex character-class body)."""
