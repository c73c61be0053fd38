"""rag.llms.choice: the model picker's rules (what is offered, how it reads, why a choice cannot answer)."""

from __future__ import annotations

from rag.llms.choice import (
    LOCAL,
    QWEN_MODEL_NAME,
    SUGGESTED_CHAT_MODELS,
    choice_label,
    cites_by_itself,
    default_local_name,
    is_pulled,
    model_label,
    model_options,
    normalise_choice,
    ollama_unavailable,
)

HOST = "http://127.0.0.1:11434"


def test_normalise_choice_spells_each_model_one_way() -> None:
    # 'local' is the embedded model installed first in EMBEDDED_NAMES (the test install has both).
    assert default_local_name() == QWEN_MODEL_NAME
    assert normalise_choice("local") == normalise_choice(QWEN_MODEL_NAME) == LOCAL
    assert normalise_choice(" local:gemma3-270m") == "local:gemma3-270m"
    assert model_label("local:gemma3-270m") == "gemma3-270m · embedded"
    assert model_label(LOCAL) == "qwen2.5-coder-1.5b · embedded"
    assert cites_by_itself(QWEN_MODEL_NAME)
    assert normalise_choice(" qwen2.5:latest ") == normalise_choice("ollama:qwen2.5") == "ollama:qwen2.5"
    assert normalise_choice("ollama:") == LOCAL
    assert model_label("ollama:qwen2.5") == "qwen2.5 · Ollama" and model_label(LOCAL).endswith("· embedded")
    assert cites_by_itself("ollama:qwen2.5") and not cites_by_itself("local:gemma3-270m")


def test_options_offer_pulled_configured_suggested_typed_then_the_embedded_model() -> None:
    pulled = ["llama3.1:latest", SUGGESTED_CHAT_MODELS[0]]
    options, default = model_options("mistral", pulled, extra=["ollama:phi4"])
    assert options[:3] == ["ollama:llama3.1:latest", f"ollama:{SUGGESTED_CHAT_MODELS[0]}", "ollama:mistral"]
    # Suggested models already pulled are not offered twice; the others are, for the Pull button.
    assert options.count(f"ollama:{SUGGESTED_CHAT_MODELS[0]}") == 1
    assert f"ollama:{SUGGESTED_CHAT_MODELS[1]}" in options
    assert options[-2:] == ["ollama:phi4", LOCAL]
    assert default == "ollama:mistral"
    assert model_options(None, pulled)[1] == "ollama:llama3.1:latest"


def test_options_without_ollama_suggest_nothing_to_pull() -> None:
    options, default = model_options(None, None)
    assert options == [LOCAL] and default == LOCAL
    assert model_options("local", [])[1] == LOCAL
    assert model_options("local:gemma3-270m", None) == (["local:gemma3-270m", LOCAL], "local:gemma3-270m")


def test_labels_say_what_cannot_answer() -> None:
    assert choice_label(LOCAL, None, local_ok=False).endswith("· unavailable")
    assert choice_label(LOCAL, None, local_ok=True) == model_label(LOCAL)
    assert choice_label("ollama:qwen2.5", ["llama3.1"], local_ok=True).endswith("· not pulled")
    assert choice_label("ollama:qwen2.5", ["qwen2.5:latest"], local_ok=True) == "qwen2.5 · Ollama"
    assert choice_label("ollama:qwen2.5", None, local_ok=True) == "qwen2.5 · Ollama"  # unknown, not "not pulled"
    assert is_pulled("qwen2.5", ["qwen2.5:latest"]) and not is_pulled("qwen2.5", None)


def test_an_ollama_choice_that_cannot_answer_says_what_to_do() -> None:
    down = ollama_unavailable("ollama:qwen2.5", None, HOST, local_ok=True)
    assert down is not None and down.pull == ""
    assert down.problem == (
        f"Ollama is not reachable at {HOST}: start it with 'ollama serve' (or set OLLAMA_HOST), "
        "then run 'ollama pull qwen2.5'. Or choose the embedded model."
    )
    assert "embedded" not in ollama_unavailable("ollama:qwen2.5", None, HOST, local_ok=False).problem
    missing = ollama_unavailable("ollama:qwen2.5", ["llama3.1"], HOST, local_ok=True)
    assert missing is not None and missing.pull == "qwen2.5" and "press Pull" in missing.problem
    assert ollama_unavailable("ollama:qwen2.5", ["qwen2.5:latest"], HOST, local_ok=True) is None
