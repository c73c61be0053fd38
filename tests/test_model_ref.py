"""rag/model_ref.py: 'ollama:<model>', 'local' and 'local:<model>' read once into a ModelRef, written
back the same way, and refused in one line that names what was given."""

from __future__ import annotations

import pytest

from rag.model_ref import ModelRef, shown_name
from rag.text import Text


@pytest.mark.parametrize(
    ("text", "provider", "name"),
    [
        ("ollama:qwen2.5:7b-instruct", "ollama", "qwen2.5:7b-instruct"),  # Ollama's tag keeps its colon
        ("ollama:bge-m3", "ollama", "bge-m3"),
        ("local", "local", ""),
        ("local:e5", "local", "e5"),
        ("local:wordllama-l2_supercat-256", "local", "wordllama-l2_supercat-256"),
        ("  ollama: llama3.2 \n", "ollama", "llama3.2"),
    ],
)
def test_a_reference_names_its_provider_and_model(text: str, provider: str, name: str) -> None:
    ref = ModelRef.parse(text)
    assert (ref.provider, ref.name) == (provider, name)
    assert ref.is_ollama == (provider == "ollama") and ref.is_local == (provider == "local")


@pytest.mark.parametrize("text", ["ollama:qwen2.5:7b-instruct", "local", "local:gemma3-270m", "ollama:x:latest"])
def test_written_back_as_it_was_spelt(text: str) -> None:
    assert str(ModelRef.parse(text)) == text
    assert ModelRef.parse(str(ModelRef.parse(text))) == ModelRef.parse(text)


def test_a_bare_name_is_the_provider_the_caller_says() -> None:
    # A chat choice: RAG_CHAT_MODEL=llama3.2 and `rag ask --model qwen2.5:7b` mean Ollama models.
    assert ModelRef.parse("qwen2.5:7b", bare="ollama") == ModelRef("ollama", "qwen2.5:7b")
    assert str(ModelRef.parse("llama3.2", bare="ollama")) == "ollama:llama3.2"
    # Only 'ollama' and 'local' are providers: 'Ollama:x' and 'localfoo' are names.
    assert ModelRef.parse("Ollama:x", bare="ollama") == ModelRef("ollama", "Ollama:x")
    assert ModelRef.parse("localfoo", bare="ollama") == ModelRef("ollama", "localfoo")
    assert ModelRef.parse("ollama", bare="ollama") == ModelRef("ollama", "ollama")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "'' names no model: write 'ollama:<model>', 'local' or 'local:<model>'"),
        ("  ", "'  ' names no model: write 'ollama:<model>', 'local' or 'local:<model>'"),
        ("ollama:", "'ollama:' names no model: write 'ollama:<model>', 'local' or 'local:<model>'"),
        ("local: ", "'local: ' names no model: write 'ollama:<model>', 'local' or 'local:<model>'"),
        (
            "nomic-embed-text",
            "'nomic-embed-text' names no provider: write 'ollama:nomic-embed-text' for an Ollama "
            "model, or 'local' for the embedded one",
        ),
        (
            "bad\nname",
            "'bad\\nname' names no provider: write 'ollama:bad\\nname' for an Ollama model, or 'local' for "
            "the embedded one",
        ),
    ],
)
def test_what_names_no_model_is_refused_in_one_line_naming_it(text: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        ModelRef.parse(text)
    assert str(caught.value) == message and "\n" not in message
    assert isinstance(caught.value.args[0], Text)  # translatable (ui.i18n.tr)
    assert ModelRef.parse_or_none(text) is None


def test_a_bare_name_does_not_excuse_an_empty_one() -> None:
    for text in ("", "ollama:", "local:"):
        with pytest.raises(ValueError, match="names no model"):
            ModelRef.parse(text, bare="ollama")
        assert ModelRef.parse_or_none(text, bare="ollama") is None


def test_a_reference_made_by_hand_is_checked() -> None:
    with pytest.raises(ValueError, match=r"^a model's provider is 'ollama' or 'local', not 'openai'$"):
        ModelRef("openai", "gpt")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^an Ollama model reference needs the model's name$"):
        ModelRef("ollama")
    with pytest.raises(ValueError, match=r"^a model's name has no spaces around it: ' x'$"):
        ModelRef("ollama", " x")
    assert ModelRef("local") == ModelRef.parse("local")


def test_a_reference_is_a_frozen_value() -> None:
    ref = ModelRef.parse("ollama:bge-m3")
    with pytest.raises(AttributeError):
        ref.name = "other"  # type: ignore[misc]
    assert {ref, ModelRef("ollama", "bge-m3")} == {ref}


def test_shown_beside_other_models_an_embedded_one_keeps_local() -> None:
    assert ModelRef.parse("ollama:qwen2.5:7b").shown == "qwen2.5:7b"
    assert ModelRef.parse("local:gemma3-270m").shown == "local:gemma3-270m"
    assert shown_name("ollama:deepseek-r1:1.5b") == "deepseek-r1:1.5b"
    assert shown_name("scripted") == "scripted"  # a bare name: an Ollama model's, as it is
    assert shown_name("") == ""  # no reference: as it is
