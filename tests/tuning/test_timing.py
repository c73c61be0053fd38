"""The time said before generating: the embedded models' measured rates, a guess for others."""

from __future__ import annotations

from typing import Any

import pytest

from rag.llms.choice import LOCAL_MODEL_NAME, QWEN_MODEL_NAME
from rag.tuning import estimate_seconds


class Named:
    def __init__(self, name: str) -> None:
        self.name = name


def test_qwen_on_two_quiet_cores_takes_8_to_13_seconds_a_question() -> None:
    qwen: Any = Named(QWEN_MODEL_NAME)
    assert estimate_seconds(10, qwen) == pytest.approx(10 * (220 / 40 + 30 / 13))
    assert estimate_seconds(10, qwen, "zh") == pytest.approx(10 * (430 / 40 + 30 / 13))  # Chinese: twice the tokens
    gemma: Any = Named(LOCAL_MODEL_NAME)
    ollama: Any = Named("ollama:qwen2.5:7b-instruct")
    assert estimate_seconds(10, gemma) < estimate_seconds(10, qwen)
    assert estimate_seconds(0, ollama) == 0 and estimate_seconds(1, ollama) > 0
