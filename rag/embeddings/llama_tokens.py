"""WordLlama's token ids (Llama 2's SentencePiece vocabulary, 32,000 tokens) with little of its tokenizer's work.

WordLlama's vector of a text is the mean of its tokens' vectors: only which tokens, and how often, matter. Its
tokenizer (HF `tokenizers`, BPE with byte fallback, no pre-tokenizer) read each 800-token chunk as one word, through
a normalizer that tracks every character's alignment: 3.5-3.8 CPU s on one thread for the 11,630 chunks of the
peers bench, most of the embedding's time. Here, where the tokenizer's configuration is the one this was worked out
for (`LlamaIds` checks it):

- the normalizer's work (a "▁" before the text, each space made one) is done by `str.replace`, in C;
- a character that no token of two or more characters holds (a CJK ideograph: the vocabulary has 723 of them, each
  alone or after "▁"), and which does not follow a "▁", is a token on its own wherever it stands, its id or its
  UTF-8 bytes' fallback ids: counted with numpy from a table, not given to the tokenizer;
- the rest of the text, cut there and joined by newlines (which no token holds: each is one byte token, taken off
  again), goes to a copy of the tokenizer without its normalizer.

The same ids as the tokenizer's (as a multiset, which is all the mean reads) on every chunk of the peers bench, the
eval sets' passages, odd and random text (tests/embeddings); the embedding of those chunks on one thread 4.3 ->
2.8-2.9 CPU s, the same vectors (cutting the rest before each "▁" too, as exact, took 3.0-3.1). A text holding one
of the tokenizer's added tokens ("<s>", "</s>", "<unk>"), which the tokenizer takes out of the text before it
normalises each part apart, goes to the tokenizer whole.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from tokenizers import Encoding, Tokenizer

SPACE_MARK = "\u2581"
"""What the vocabulary writes a space as (▁)."""
_SPACE_CODE = ord(SPACE_MARK)
_SEPARATOR = "\n"
SPACE_NORMALIZER = {
    "type": "Sequence",
    "normalizers": [
        {"type": "Prepend", "prepend": SPACE_MARK},
        {"type": "Replace", "pattern": {"String": " "}, "content": SPACE_MARK},
    ],
}
"""WordLlama l2_supercat's normalizer (its tokenizer.json), which `LlamaIds` does itself."""
_BYTE_TOKEN = re.compile(r"<0x[0-9A-F]{2}>")
_PLANE = 0x10000
"""Characters past the Basic Multilingual Plane (emoji, rare ideographs) go to the tokenizer."""
_NONE = np.empty(0, dtype=np.intp)
"""No ids (never written to: the pooling clips only arrays holding some)."""


class LlamaIds:
    """The token ids of texts, as `tokenizer` (padding and truncation off) gives them, in no particular order."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        from tokenizers import Tokenizer

        self._whole = tokenizer
        text = tokenizer.to_str()
        config = json.loads(text)
        self._added = tuple(token["content"] for token in config.get("added_tokens", ()))
        self._bare: Tokenizer | None = None
        self._tables: _Tables | None = None
        if config.get("normalizer") == SPACE_NORMALIZER and config.get("pre_tokenizer") is None:
            bare = Tokenizer.from_str(text)
            bare.normalizer = None
            self._bare = bare
            self._tables = _tables(config.get("model", {}))

    @property
    def shortcut(self) -> bool:
        """Whether single characters are counted here (else all goes to the tokenizer, normalised here or not)."""
        return self._tables is not None

    def ids(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Each text's token ids (intp), in no particular order."""
        if self._bare is None:
            return [np.array(e.ids, dtype=np.intp) for e in _encode(self._whole, list(texts))]
        out: list[np.ndarray] = [_NONE] * len(texts)
        marked = [any(token in text for token in self._added) for text in texts]
        whole = [i for i, mark in enumerate(marked) if mark]
        rest = [i for i, mark in enumerate(marked) if not mark]
        for i, encoding in zip(whole, _encode(self._whole, [texts[i] for i in whole])):
            out[i] = np.array(encoding.ids, dtype=np.intp)
        normalised = [SPACE_MARK + texts[i].replace(" ", SPACE_MARK) if texts[i] else "" for i in rest]
        tables = self._tables
        parts = [tables.split(text) if tables else (text, 0, _NONE) for text in normalised]
        for i, (_, separators, counted), encoding in zip(rest, parts, _encode(self._bare, [p[0] for p in parts])):
            found = np.array(encoding.ids, dtype=np.intp)
            if tables and separators:
                found = np.delete(found, np.flatnonzero(found == tables.newline)[:separators])
            out[i] = np.concatenate((found, counted)) if counted.size else found
        return out


class _Tables:
    """Per character of the Basic Multilingual Plane: whether it is a token on its own wherever it stands (but after
    a "▁"), and its ids then (its own, or its UTF-8 bytes' fallback tokens; -1 pads)."""

    def __init__(self, alone: np.ndarray, ids: np.ndarray, newline: int) -> None:
        self.alone, self.ids, self.newline = alone, ids, newline

    def split(self, text: str) -> tuple[str, int, np.ndarray]:
        """`text` (normalised) without the characters counted here, its pieces joined by newlines; how many newlines
        were put in; the ids of the characters counted."""
        codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
        inside = codes < _PLANE
        small = np.where(inside, codes, 0)
        take = self.alone[small] & inside
        take[1:] &= codes[:-1] != _SPACE_CODE
        if not take.any():
            return text, 0, _NONE
        counted = self.ids[small[take]].ravel()
        counted = counted[counted >= 0]
        edges = np.flatnonzero(np.diff(np.concatenate(([0], (~take).astype(np.int8), [0])))).reshape(-1, 2)
        pieces = [text[start:end] for start, end in edges.tolist()]
        return _SEPARATOR.join(pieces), max(len(pieces) - 1, 0), counted


def _tables(model: dict[str, Any]) -> _Tables | None:
    """The tables of a BPE vocabulary with byte fallback (every byte's token in it), merges always applied and no
    prefix or suffix for subwords, where no token holds a newline; else None. A character is alone when no token of
    two characters or more (its leading "▁"s aside) holds it: no merge joins it to a neighbour."""
    vocab: dict[str, int] = model.get("vocab") or {}
    plain = not model.get("continuing_subword_prefix") and not model.get("end_of_word_suffix")
    if model.get("type") != "BPE" or not model.get("byte_fallback") or model.get("dropout") or not plain:
        return None
    if model.get("ignore_merges"):  # a piece found whole in the vocabulary would be one token, the text's not
        return None
    names = [f"<0x{b:02X}>" for b in range(256)]
    if any(name not in vocab for name in names) or any(_SEPARATOR in token for token in vocab):
        return None
    bytes_ = [vocab[name] for name in names]
    held: set[str] = {SPACE_MARK, _SEPARATOR}
    for token in vocab:
        core = token.lstrip(SPACE_MARK)
        if len(core) >= 2 and not _BYTE_TOKEN.fullmatch(token):
            held.update(core)
    alone = np.zeros(_PLANE, dtype=bool)
    ids = np.full((_PLANE, 3), -1, dtype=np.intp)
    for code in range(1, _PLANE):
        char = chr(code)
        if 0xD800 <= code < 0xE000 or char in held:
            continue
        alone[code] = True
        if char in vocab:
            ids[code, 0] = vocab[char]
        else:
            raw = char.encode("utf-8")
            ids[code, : len(raw)] = [bytes_[b] for b in raw]
    return _Tables(alone, ids, bytes_[ord(_SEPARATOR)])


def _encode(tokenizer: Tokenizer, texts: list[str]) -> list[Encoding]:
    """`texts` tokenised without special tokens, and without the character offsets where the tokenizers package
    can (>= 0.20: 30 % less of its time, the same ids)."""
    if not texts:
        return []
    encode = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)
    return encode(texts, add_special_tokens=False)
