"""Splitting text into chunks: Spring AI's TokenTextSplitter, token windows, recursive.

The text is tokenised once (`tokenize`, in tokens.py); every strategy (strategies.py) then cuts
from the token array and its token-to-character offsets, so moving a slider never re-encodes the
document. settings.py holds the settings, their presets and the one description of their fields;
stats.py what the Chunk Lab and the Upload page report about a split.

The settings are imported here; what needs tiktoken on first use, so that the CLI can build its
options (from FIELDS) without loading the encoder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag.chunking.chunks import Chunk, ChunkSet, chunks_in_span
from rag.chunking.settings import (
    CUSTOM,
    DEFAULT,
    DEFAULT_PRESET,
    FIELD_BY_NAME,
    FIELDS,
    HELP,
    PRESET_HELP,
    PRESETS,
    SEED_PROJECT,
    SPRING_DEFAULT,
    SPRING_SEPARATORS,
    SPRING_STRATEGIES,
    STRATEGIES,
    STRATEGY_LABELS,
    ChunkSettings,
    Field,
    custom_label,
    from_widget_values,
    is_spring,
    label,
    preset_choice,
    preset_name,
    settings_from_dict,
    summary,
)
from rag.chunking.stats import ChunkStats, ends_mid_sentence, stats
from rag.lazy import lazy_exports

if TYPE_CHECKING:
    from rag.chunking.long import LongText
    from rag.chunking.strategies import PagesForSpan, split, spring_split_reference, tokens_for_split
    from rag.chunking.tokens import TokenizedText, count_tokens, encoding, tokenize, warm_up

_LAZY = {
    "LongText": "rag.chunking.long",
    **dict.fromkeys(("PagesForSpan", "split", "spring_split_reference", "tokens_for_split"), "rag.chunking.strategies"),
    **dict.fromkeys(("TokenizedText", "count_tokens", "encoding", "tokenize", "warm_up"), "rag.chunking.tokens"),
}
__getattr__ = lazy_exports(__name__, _LAZY)

__all__ = [
    "CUSTOM",
    "DEFAULT",
    "DEFAULT_PRESET",
    "FIELDS",
    "FIELD_BY_NAME",
    "HELP",
    "PRESETS",
    "PRESET_HELP",
    "SEED_PROJECT",
    "SPRING_DEFAULT",
    "SPRING_SEPARATORS",
    "SPRING_STRATEGIES",
    "STRATEGIES",
    "STRATEGY_LABELS",
    "Chunk",
    "ChunkSet",
    "ChunkSettings",
    "ChunkStats",
    "Field",
    "LongText",
    "PagesForSpan",
    "TokenizedText",
    "chunks_in_span",
    "count_tokens",
    "custom_label",
    "encoding",
    "ends_mid_sentence",
    "from_widget_values",
    "is_spring",
    "label",
    "preset_choice",
    "preset_name",
    "settings_from_dict",
    "split",
    "spring_split_reference",
    "stats",
    "summary",
    "tokenize",
    "tokens_for_split",
    "warm_up",
]
