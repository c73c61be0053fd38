"""How long generating questions should take, said before the model is asked."""

from __future__ import annotations

from rag.llms.choice import LOCAL_MODEL_NAME, QWEN_MODEL_NAME
from rag.llms.types import ChatModel

PROMPT_TOKENS = {"en": 220, "zh": 430}
"""Prompt tokens of one question for Qwen2.5 (template and a ~400-character passage, WINDOW_CHARS): measured
200-235 for English passages of en_race, 373-533 for Chinese ones of zh_cmrc_trial (20 questions)."""
ANSWER_TOKENS = 30
"""Tokens of one reply, cut after its answer line: measured 11-76, mean 29 (the long ones quote a sentence or
two, and are dropped as too long)."""
RATES: dict[str, tuple[float, float]] = {
    # (prompt tokens/s, generated tokens/s) on 2 quiet cores (README's model table: Qwen prompt ~35-45, answer
    # ~12-15 tokens/s; gemma-3-270m ~45 tokens/s). Under a load of 6-7 (other processes on the 2 cores) Qwen
    # read prompts at 10-45 and wrote 3-6 tokens/s: 20 questions took 1,289 s, 64 s each, against 8-13 s
    # estimated here.
    QWEN_MODEL_NAME: (40.0, 13.0),
    LOCAL_MODEL_NAME: (150.0, 45.0),
}
OTHER_RATE = (200.0, 20.0)
"""An Ollama model: nothing measured here; a 7B model on a small GPU, roughly, so that the estimate is said
as a guess rather than not at all."""


def estimate_seconds(n: int, model: ChatModel, language: str = "en") -> float:
    """Seconds `n` questions about passages in `language` ('en' or 'zh') should take with `model` on quiet
    cores (its load not counted): each prompt read at the model's prompt rate, ~`ANSWER_TOKENS` written."""
    prompt_rate, answer_rate = RATES.get(model.name, OTHER_RATE)
    return n * (PROMPT_TOKENS.get(language, PROMPT_TOKENS["en"]) / prompt_rate + ANSWER_TOKENS / answer_rate)
