"""A model reference: which provider serves a model and its name there, read once from the one
spelling the settings, the pickers, the CLI and the knowledge bases share: 'ollama:<model>',
'local' (the embedded model this machine runs) or 'local:<model>'.

Ollama's own names hold colons ('qwen2.5:7b-instruct'), so only the text before the first colon can
name a provider, and only when it is one: 'qwen2.5:7b-instruct' alone is a bare name. A chat choice
reads a bare name as an Ollama model (RAG_CHAT_MODEL=llama3.2, `rag ask --model llama3.2`); an
embedder's may not (RAG_EMBEDDER must say which): hence `parse`'s `bare`.

A leaf module (it imports rag.text only), not one of rag.llms: rag.settings reads RAG_EMBEDDER with
it, and rag.llms imports rag.settings, so a home in rag.llms would make the two import each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from rag.text import Text, printable

Provider = Literal["ollama", "local"]
PROVIDERS: tuple[Provider, ...] = get_args(Provider)

__all__ = ["PROVIDERS", "ModelRef", "Provider", "shown_name"]


@dataclass(frozen=True)
class ModelRef:
    """`provider` serves the model called `name`; `ModelRef("local")` (no name) is the embedded model
    that `local` means here (rag.llms.choice.default_local_name)."""

    provider: Provider
    name: str = ""

    def __post_init__(self) -> None:
        if self.provider not in PROVIDERS:
            raise ValueError(f"a model's provider is 'ollama' or 'local', not {self.provider!r}")
        if self.name != self.name.strip():
            raise ValueError(f"a model's name has no spaces around it: {self.name!r}")
        if self.provider == "ollama" and not self.name:
            raise ValueError("an Ollama model reference needs the model's name")

    @classmethod
    def parse(cls, text: str, *, bare: Provider | None = None) -> ModelRef:
        """The reference `text` spells; a name with no provider is `bare`'s (None: an error).

        ValueError (one line, naming `text`) when it names no model ('', 'ollama:', 'local:') or, with
        no `bare`, no provider."""
        stripped = text.strip()
        head, colon, rest = stripped.partition(":")
        if head == "local" or (colon and head in PROVIDERS):
            provider: Provider = "local" if head == "local" else "ollama"
            name = rest.strip()
            if colon and not name:
                raise ValueError(_no_model(text))
            return cls(provider, name)
        if not stripped:
            raise ValueError(_no_model(text))
        if bare is None:
            raise ValueError(
                Text(
                    "{ref} names no provider: write 'ollama:{name}' for an Ollama model, or 'local' "
                    "for the embedded one",
                    ref=repr(text),
                    name=printable(stripped),
                )
            )
        return cls(bare, stripped)

    @classmethod
    def parse_or_none(cls, text: str, *, bare: Provider | None = None) -> ModelRef | None:
        """`parse`, or None where `text` is no reference ('auto', '', a bare name without `bare`)."""
        try:
            return cls.parse(text, bare=bare)
        except ValueError:
            return None

    @property
    def is_ollama(self) -> bool:
        return self.provider == "ollama"

    @property
    def is_local(self) -> bool:
        return self.provider == "local"

    @property
    def shown(self) -> str:
        """The name beside other models' on a chart or a label: an Ollama model as `ollama list` writes
        it, an embedded one with its 'local:', so that it is not taken for an Ollama model."""
        return self.name if self.is_ollama else str(self)

    def __str__(self) -> str:
        return f"{self.provider}:{self.name}" if self.name else self.provider


def shown_name(model_name: str) -> str:
    """`ModelRef.shown` of a chat model's name (bare names are Ollama's); any other text as it is."""
    ref = ModelRef.parse_or_none(model_name, bare="ollama")
    return ref.shown if ref is not None else model_name


def _no_model(text: str) -> Text:
    return Text("{ref} names no model: write 'ollama:<model>', 'local' or 'local:<model>'", ref=repr(text))
