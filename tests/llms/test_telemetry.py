"""rag/llms/telemetry.py: the phases of a generation from Ollama's durations, and the bounded
timeline the chat and the GPU page mark them on.
"""

from __future__ import annotations

import pytest

from rag.llms.telemetry import Mark, Timeline, generation_phases
from rag.llms.types import GenerationStats
from tests.gpu.fakes import STATS, FakeGpu, ScriptedNvml, make_sampler


def test_phases_follow_ollamas_durations() -> None:
    started, finished = 100.0, 105.0
    phases = generation_phases(started, finished, STATS, first_token_at=100.5, first_content_at=100.5)
    begin = finished - STATS.total_duration
    assert phases == [
        ("load", begin, begin + STATS.load_duration),
        ("prompt", begin + STATS.load_duration, begin + STATS.load_duration + STATS.prompt_eval_duration),
        ("output", finished - STATS.eval_duration, finished),
    ]
    assert all(started <= a <= b <= finished for _, a, b in phases)


def test_thinking_before_the_answer_is_its_own_phase() -> None:
    phases = generation_phases(100.0, 105.0, STATS, first_token_at=100.5, first_content_at=103.0)
    assert [p for p, _, _ in phases] == ["load", "prompt", "thinking", "output"]
    assert phases[2] == ("thinking", 105.0 - STATS.eval_duration, 103.0)
    assert phases[3] == ("output", 103.0, 105.0)


def test_a_cold_load_takes_the_first_seconds() -> None:
    stats = GenerationStats(
        done_reason="stop",
        total_duration=9.0,
        load_duration=6.0,
        prompt_eval_duration=1.0,
        eval_count=40,
        eval_duration=2.0,
    )
    assert generation_phases(0.0, 9.2, stats) == [
        ("load", pytest.approx(0.2), pytest.approx(6.2)),
        ("prompt", pytest.approx(6.2), pytest.approx(7.2)),
        ("output", pytest.approx(7.2), 9.2),
    ]


def test_a_stopped_generation_is_split_at_the_first_token() -> None:
    stopped = GenerationStats(done_reason="stopped", total_duration=3.0, eval_count=12, eval_duration=1.5)
    assert generation_phases(10.0, 13.0, stopped, first_token_at=11.0, first_content_at=11.0) == [
        ("prompt", 10.0, 11.0),
        ("output", 11.0, 13.0),
    ]
    assert generation_phases(10.0, 13.0, None) == [("prompt", 10.0, 13.0)]
    with pytest.raises(ValueError, match=r"cannot finish \(9.0\) before it started \(10.0\)"):
        generation_phases(10.0, 9.0, None)


def test_server_durations_longer_than_the_wait_are_scaled_to_fit() -> None:
    # A replayed stream: Ollama's 4.88 s arrived within 0.5 s.
    phases = generation_phases(10.0, 10.5, STATS)
    assert [p for p, _, _ in phases] == ["load", "prompt", "output"]
    assert phases[0][1] == pytest.approx(10.0)
    assert phases[-1] == ("output", pytest.approx(10.5 - 0.5 * STATS.eval_duration / STATS.total_duration), 10.5)
    assert all(10.0 <= a <= b <= 10.5 for _, a, b in phases)


def test_marks_are_validated_bounded_and_filtered() -> None:
    timeline = Timeline(maxlen=3)
    for i in range(5):
        timeline.mark("output", float(i), i + 0.5, f"gen {i}")
    assert [m.label for m in timeline.marks()] == ["gen 2", "gen 3", "gen 4"]
    assert [m.label for m in timeline.marks(since=3.6)] == ["gen 4"]
    with pytest.raises(ValueError, match=r"mark 'load' ends before it starts: start=2.0, end=1.0"):
        timeline.mark("load", 2.0, 1.0)
    with pytest.raises(ValueError, match=r"a mark needs a phase name, got ''"):
        timeline.mark("", 1.0, 2.0)
    sampler = make_sampler(ScriptedNvml([FakeGpu()]), timeline=timeline)
    made = sampler.mark("prompt", 7.0, 8.0, "chat: x")
    assert made == Mark("prompt", 7.0, 8.0, "chat: x") and sampler.marks()[-1] is made


def test_mark_generation_marks_every_phase_with_the_label() -> None:
    timeline = Timeline()
    made = timeline.mark_generation("chat: qwen2.5:7b-instruct", 100.0, 105.0, STATS, first_token_at=100.5)
    assert [m.phase for m in made] == ["load", "prompt", "output"]
    assert {m.label for m in timeline.marks()} == {"chat: qwen2.5:7b-instruct"}
