"""A text too long to keep every token's offsets of: the tokens of a prefix, and a count of the rest.

Every strategy stops cutting windows after `max_num_chunks` chunks and gives all the rest of the
text to one last chunk, of which only the token count is a token fact. So a split of a long text
needs a `TokenizedText` of a prefix (~8 M tokens at the defaults: 10,000 chunks of 800) and the count
of the rest, which is taken piece by piece, each piece encoded and thrown away. Keeping every
token's offsets (40 bytes a token) of a 200 MB TXT took 1.8 GB of English, and 6 GB of Chinese at
~2 tokens a character (issue 18).

The pieces are cut at seams, where cl100k's pre-tokeniser starts a new piece whatever came before
and nothing before looks past them, so encode(a) + encode(b) == encode(a + b) (cl100k.py finds them, and
cuts a text for its encoding workers at the same seams):

* kind 1: printable ASCII, then a space. A letter run, a digit group or a punctuation run ends at
  the character before a space (possessive runs; `[\\r\\n]*+` takes no space), and a space starts
  the next piece (the pieces holding a space hold it first, or after whitespace).
* kind 2: a letter (ASCII, or the original CJK block), then ASCII that is no letter or a CJK mark:
  `\\p{L}++` is possessive, so a letter run ends there (a contraction ends in a letter too).

Only characters whose Unicode classes are stable are used, so Rust's tables and Python's cannot
disagree. A stretch without a seam (a 5 MB run of CJK letters is one pre-tokeniser piece) is
counted in one go, which is exact by definition; the prefix's own count is checked against its
tokenisation, and a text with lone surrogates (which the tokeniser replaces) is tokenised whole.
"""

from __future__ import annotations

import bisect
import logging
import re
import threading

from rag.chunking.cl100k import encode, seam_at_or_after
from rag.chunking.tokens import TokenizedText, tokenize

log = logging.getLogger(__name__)

_SURROGATE = re.compile("[\ud800-\udfff]")

PIECE_TOKENS = 1 << 19
"""About how many tokens one counted piece holds (~2.5 MB of English, ~0.3 M Chinese characters):
the transient cost of counting it is a few MB, and the prefix overshoots what it must hold by one
piece at most."""
FIRST_PIECE_CHARS = 1 << 20
"""Characters of the first piece, before the text's characters per token are known."""
MIN_CHARS = 1 << 21
"""Below this (2 M characters: at most ~4 M tokens, 160 MB of offsets) a text is tokenised whole."""


def _count(text: str) -> int:
    return len(encode(text))  # on every usable core


class LongText:
    """A text whose split tokenises only the prefix it needs (see the module's docstring): pass it
    to `split` instead of a `TokenizedText`. Safe to share between threads (the Upload page does)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._ends = [0]
        """Where each counted piece ends (characters), from 0."""
        self._tokens = [0]
        """Tokens before each of `_ends`."""
        self._prefix: TokenizedText | None = None
        self._whole = _SURROGATE.search(text) is not None
        """Tokenise the whole text: lone surrogates are replaced by the tokeniser, which moves text."""
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """The text's tokens (counting them all, the first time)."""
        with self._lock:
            if self._whole:
                return len(self._tokenized_whole())
            while self._count_piece():
                pass
            return self._tokens[-1]

    def estimated_tokens(self) -> int:
        """The text's tokens as its first counted piece suggests (cheap)."""
        with self._lock:
            if self._whole:
                return len(self._tokenized_whole())
            if len(self._ends) == 1:
                self._count_piece()
            return round(self._tokens[-1] * len(self.text) / max(self._ends[-1], 1))

    def tokenized(self, tokens: int) -> tuple[TokenizedText, bool]:
        """The `TokenizedText` of a prefix of the text holding at least `tokens` tokens, and whether
        that prefix is the whole text (then the split is the plain one)."""
        with self._lock:
            if self._prefix is not None and (len(self._prefix) >= tokens or len(self._prefix.text) == len(self.text)):
                return self._prefix, len(self._prefix.text) == len(self.text)
            if self._whole:
                return self._tokenized_whole(), True
            while self._tokens[-1] < tokens and self._count_piece():
                pass
            i = min(bisect.bisect_left(self._tokens, tokens), len(self._ends) - 1)
            end = self._ends[i]
            if end >= len(self.text):
                return self._tokenized_whole(), True
            prefix = tokenize(self.text[:end])
            if len(prefix) != self._tokens[i]:  # pragma: no cover - a seam that is none: be exact anyway
                log.warning(
                    "a long text's prefix has %d tokens, counted %d: tokenising it whole", len(prefix), self._tokens[i]
                )
                self._whole = True
                return self._tokenized_whole(), True
            self._prefix = prefix
            return prefix, False

    def release(self) -> None:
        """Forget the prefix's tokens (the next split tokenises it again)."""
        with self._lock:
            self._prefix = None

    def _tokenized_whole(self) -> TokenizedText:
        if self._prefix is None or len(self._prefix.text) != len(self.text):
            self._prefix = None  # before the whole is made: never both at once
            self._prefix = tokenize(self.text)
        return self._prefix

    def _count_piece(self) -> bool:
        """Count one more piece of the text; False when all of it is counted."""
        start = self._ends[-1]
        if start >= len(self.text):
            return False
        if len(self._ends) == 1:
            size = FIRST_PIECE_CHARS
        else:
            size = max(1, PIECE_TOKENS * self._ends[-1] // max(self._tokens[-1], 1))
        end = seam_at_or_after(self.text, start + size) if start + size < len(self.text) else None
        end = len(self.text) if end is None else end
        self._tokens.append(self._tokens[-1] + _count(self.text[start:end]))
        self._ends.append(end)
        return True
