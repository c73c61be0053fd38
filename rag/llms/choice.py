"""What a chat-model choice names, and how it is shown: the rules a model picker and the prompt
packer share, so that no page keeps its own copy.

A choice is 'local' (the embedded model), 'local:<model>' or 'ollama:<model>' (rag.model_ref reads
it); it imports no client, so comparing names costs nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rag.llms.ollama.names import SUGGESTED_OLLAMA_MODEL, same_model, strip_latest
from rag.model_ref import ModelRef
from rag.text import Text

LOCAL = "local"
"""The choice that names the embedded model."""
LOCAL_MODEL_NAME = "local:gemma3-270m"
"""The small embedded base model's name (LocalChatModel.NAME): the fallback."""
QWEN_MODEL_NAME = "local:qwen2.5-coder-1.5b"
"""The embedded instruct model's name (QwenChatModel.NAME): the default where installed."""
EMBEDDED_NAMES = (QWEN_MODEL_NAME, LOCAL_MODEL_NAME)


def default_local_name() -> str:
    """The model `local` means here: Qwen when its weight parts are installed (a cheap check)."""
    from rag.llms import qwen_weights

    return QWEN_MODEL_NAME if qwen_weights.installed()[0] else LOCAL_MODEL_NAME


__all__ = [
    "EMBEDDED_NAMES",
    "LOCAL",
    "LOCAL_MODEL_NAME",
    "QWEN_MODEL_NAME",
    "SUGGESTED_CHAT_MODELS",
    "Unavailable",
    "choice_label",
    "cites_by_itself",
    "default_local_name",
    "is_pulled",
    "model_label",
    "model_options",
    "normalise_choice",
    "ollama_unavailable",
    "same_model",
]


def normalise_choice(value: str) -> str:
    """One spelling of a choice: 'local' for the embedded model `local` means, 'local:<model>' for another
    embedded one, else 'ollama:<model>' without ':latest' (a bare name is an Ollama model; an empty one
    falls back to the embedded model)."""
    ref = ModelRef.parse_or_none(value, bare="ollama")
    if ref is None:  # '' or 'ollama:'
        return LOCAL
    if ref.is_local:
        return LOCAL if str(ref) in (LOCAL, default_local_name()) else str(ref)
    name = strip_latest(ref.name)
    return str(ModelRef("ollama", name)) if name else LOCAL


def model_label(choice: str) -> str:
    """How a normalised choice reads in a picker: 'gemma3-270m · embedded', 'qwen2.5:7b · Ollama'."""
    ref = ModelRef.parse(choice, bare="ollama")
    if ref.is_local:
        return Text("{model} · embedded", model=ref.name or ModelRef.parse(default_local_name()).name)
    return f"{ref.name} · Ollama"


def cites_by_itself(model_name: str) -> bool:
    """Whether a model can be asked to cite: the embedded base model only completes text."""
    return model_name != LOCAL_MODEL_NAME


SUGGESTED_CHAT_MODELS = (SUGGESTED_OLLAMA_MODEL, "deepseek-r1:1.5b")
"""Offered in the picker with a Pull button while Ollama does not have them."""


def is_pulled(name: str, pulled: Sequence[str] | None) -> bool:
    """Whether Ollama's list of pulled models holds `name` (':latest' or not)."""
    return pulled is not None and any(same_model(name, p) for p in pulled)


def model_options(
    configured: str | None, pulled: Sequence[str] | None, extra: Sequence[str] = ()
) -> tuple[list[str], str]:
    """(choices, default) for a picker: Ollama's pulled models, the configured one, the suggested ones
    not pulled yet (only while Ollama answers), `extra` (typed in earlier), and the embedded model last.
    The default is the configured model, else Ollama's first, else the embedded one."""
    options = [_ollama(m) for m in pulled or []]
    wanted = normalise_choice(configured) if configured else ""
    if wanted and wanted != LOCAL and wanted not in options:
        options.append(wanted)
    if pulled is not None:
        options += [_ollama(m) for m in SUGGESTED_CHAT_MODELS if not is_pulled(m, pulled) and _ollama(m) not in options]
    options += [c for c in extra if c not in options]
    options.append(LOCAL)
    return options, wanted or (_ollama(pulled[0]) if pulled else LOCAL)


def _ollama(model: str) -> str:
    """The choice naming Ollama's `model`."""
    return str(ModelRef("ollama", model))


def choice_label(choice: str, pulled: Sequence[str] | None, local_ok: bool) -> str:
    """`model_label`, marked 'unavailable' (embedded model that cannot run) or 'not pulled'."""
    text = model_label(choice)
    if choice == LOCAL and not local_ok:
        return Text("{label} · unavailable", label=text)
    ref = ModelRef.parse(choice, bare="ollama")
    if ref.is_ollama and pulled is not None and not is_pulled(ref.name, pulled):
        return Text("{label} · not pulled", label=text)
    return text


@dataclass(frozen=True)
class Unavailable:
    """Why an Ollama choice cannot answer now, with what to do; `pull` names a model to pull."""

    problem: str
    pull: str = ""


def ollama_unavailable(choice: str, pulled: Sequence[str] | None, host: str, local_ok: bool) -> Unavailable | None:
    """None when Ollama at `host` has the chosen model; else the reason, one line with the fix."""
    name = ModelRef.parse(choice, bare="ollama").name
    if pulled is None:
        if local_ok:
            return Unavailable(
                Text(
                    "Ollama is not reachable at {host}: start it with 'ollama serve' (or set "
                    "OLLAMA_HOST), then run 'ollama pull {model}'. Or choose the embedded model.",
                    host=host,
                    model=name,
                )
            )
        return Unavailable(
            Text(
                "Ollama is not reachable at {host}: start it with 'ollama serve' (or set "
                "OLLAMA_HOST), then run 'ollama pull {model}'.",
                host=host,
                model=name,
            )
        )
    if not is_pulled(name, pulled):
        return Unavailable(
            Text(
                "Ollama at {host} has no '{model}' yet: press Pull, or run 'ollama pull {model}'.",
                host=host,
                model=name,
            ),
            pull=name,
        )
    return None
