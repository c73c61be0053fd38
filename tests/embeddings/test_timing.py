"""Honest ingest estimates (issue 29, item 3): from the rate this process measured in its latest
batches, a first guess said as such before any, and a note when the machine is busy. The load and
the cores are given as values, so nothing of the machine running the tests leaks in."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from rag.embeddings import e5, timing
from rag.embeddings.timing import Estimate, Load, Rates, estimate, machine_load
from rag.ingest import duration_note, plan_notes


class Paced:
    """An embedder that counts tokens (one per word) and has e5's kind of prior."""

    name = "fake:paced"
    dimension = 4
    max_input_tokens = None
    tokens_per_second = 300.0  # the prior: what it assumes before anything is measured

    def count_tokens(self, texts: Sequence[str]) -> int:
        return sum(len(t.split()) for t in texts)

    def embed(self, texts: Sequence[str], progress=None, *, cancel=None) -> np.ndarray:
        return np.ones((len(texts), 4), dtype=np.float32)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)


class Unpaced(Paced):
    """One whose time is not counted in tokens (WordLlama, Ollama)."""

    name = "fake:unpaced"

    def __getattribute__(self, name: str):  # noqa: ANN204 - hides the Paced members
        if name in ("count_tokens", "tokens_per_second"):
            raise AttributeError(name)
        return super().__getattribute__(name)


TEXTS = ["word " * 100] * 30  # 3,000 tokens, 30 chunks


def test_before_any_batch_the_estimate_is_the_priors_first_guess() -> None:
    rates = Rates()
    first = estimate(Paced(), TEXTS, rates)
    assert first == Estimate(10.0, False, 300.0, "tokens")
    assert estimate(Unpaced(), TEXTS, rates) is None  # nothing known of it yet

    note = duration_note("fake:paced", first, len(TEXTS))
    assert note is not None and "about 10 s" in note
    assert "first guess (300 tokens/s)" in note


def test_the_estimate_follows_the_rate_measured_in_the_latest_batches() -> None:
    rates = Rates(keep=3)
    rates.record("fake:paced", texts=10, seconds=10.0, tokens=1000)  # 100 tokens/s: a loaded machine
    measured = estimate(Paced(), TEXTS, rates)
    assert measured is not None and measured.measured
    assert measured.seconds == pytest.approx(30.0)  # 3,000 tokens at 100/s, not 10 s at the prior 300
    note = duration_note("fake:paced", measured, len(TEXTS))
    assert note is not None and "about 30 s" in note and "100 tokens/s measured in this process" in note
    assert "first guess" not in note

    # Only the latest batches count: the machine got quiet again.
    for _ in range(3):
        rates.record("fake:paced", texts=10, seconds=2.0, tokens=1000)
    assert estimate(Paced(), TEXTS, rates).seconds == pytest.approx(6.0)  # 500 tokens/s

    # An embedder that does not count tokens is estimated in chunks/s once measured.
    rates.record("fake:unpaced", texts=5, seconds=10.0)
    by_chunks = estimate(Unpaced(), TEXTS, rates)
    assert by_chunks == Estimate(60.0, True, 0.5, "chunks")
    assert "0.5 chunks/s measured" in duration_note("fake:unpaced", by_chunks, len(TEXTS))


def test_an_untimed_batch_is_ignored_and_the_record_is_per_embedder() -> None:
    rates = Rates()
    rates.record("a", texts=0, seconds=1.0)
    rates.record("a", texts=3, seconds=0.0)
    assert rates.rate("a") is None
    rates.record("a", texts=4, seconds=2.0, tokens=40)
    rates.record("a", texts=6, seconds=2.0)  # not counted in tokens: only in texts/s
    assert rates.rate("a") == timing.Rate(2.5, 20.0, 2)
    assert rates.rate("b") is None


def test_a_busy_machine_is_said_with_its_load_and_cores() -> None:
    first = Estimate(120.0, False, 300.0, "tokens")
    busy = duration_note("local:e5", first, 40, Load(6.2, 2))
    assert busy is not None and busy.endswith("The machine is busy (load 6.2 on 2 cores): this may take longer.")
    quiet = duration_note("local:e5", first, 40, Load(1.5, 2))
    assert quiet is not None and "busy" not in quiet
    assert "busy" not in duration_note("local:e5", first, 40, Load(2.0, 2))  # at the core count: not above it
    assert "on 1 core)" in duration_note("local:e5", first, 40, Load(1.2, 1))
    assert plan_notes("local:e5", first, 40, "", Load(9.0, 4)).duration.endswith("this may take longer.")
    assert duration_note("local:e5", Estimate(3.0, True, 300.0, "tokens"), 1, Load(9.0, 2)) is None  # too short

    assert machine_load(average=3.0, cores=2) == Load(3.0, 2)
    assert machine_load(average=3.0, cores=2).busy and not machine_load(average=1.0, cores=2).busy
    now = machine_load()
    assert now is None or (now.average >= 0 and now.cores >= 1)


def test_bare_seconds_still_give_the_old_note() -> None:
    expected = "Embedding 1 chunk with local:e5 should take about 45 s on this machine."
    assert duration_note("local:e5", 45.0, 1) == expected


def test_the_estimate_notes_are_in_chinese_too() -> None:
    from ui.zh import ZH

    note = duration_note("local:e5", Estimate(600.0, False, 300.0, "tokens"), 40, Load(6.2, 2))
    assert note is not None and note.template == "{first} {second}"
    for template in (
        note.values["first"].values["second"].template,  # the first guess
        note.values["second"].template,  # the busy machine
    ):
        assert template in ZH


@pytest.mark.skipif(e5.unavailable_reason() is not None, reason="e5 cannot run here")
def test_e5_passages_feed_the_record_and_questions_do_not() -> None:
    model = e5.E5Embedder()
    before = timing.RATES.rate(model.NAME)
    model.embed_queries(["how long does it take?"])
    assert timing.RATES.rate(model.NAME) == before
    model.embed(["The lighthouse keeper wrote in his log every evening."] * 3)
    after = timing.RATES.rate(model.NAME)
    assert after is not None and after.tokens_per_second and after.tokens_per_second > 0
    assert model.tokens_per_second == after.tokens_per_second  # what the estimate uses
    found = estimate(model, ["a passage of a few words"])
    assert found is not None and found.measured


def test_e5s_first_guess_shares_its_idle_rate_by_the_machines_load() -> None:
    # The rate on idle cores (929 tok/s measured on 2) shared out by the load: half of it beside 2 other tasks.
    assert e5.prior_tokens_per_second(Load(0.0, 2)) == pytest.approx(e5.QUIET_TOKENS_PER_SECOND)
    assert e5.prior_tokens_per_second(Load(2.0, 2)) == pytest.approx(e5.QUIET_TOKENS_PER_SECOND / 2)
    assert e5.prior_tokens_per_second(Load(5.5, 2)) < e5.prior_tokens_per_second(Load(2.0, 2))
    assert e5.prior_tokens_per_second(Load(2.0, 8)) > e5.prior_tokens_per_second(Load(2.0, 2))
    assert e5.prior_tokens_per_second(None) == e5.PRIOR_TOKENS_PER_SECOND  # no load average (Windows)


def test_before_any_batch_e5_guesses_from_the_load_now(monkeypatch: pytest.MonkeyPatch) -> None:
    timing.RATES.clear()
    monkeypatch.setattr(timing, "machine_load", lambda: Load(6.0, 2))
    busy = e5.E5Embedder().tokens_per_second
    monkeypatch.setattr(timing, "machine_load", lambda: Load(0.0, 2))
    idle = e5.E5Embedder().tokens_per_second
    assert idle == pytest.approx(4 * busy)  # 2 / (2 + 0) against 2 / (2 + 6)


def test_a_first_guess_stays_as_shown_until_a_measured_rate_replaces_it() -> None:
    """Pressing Ingest redrew the plan's first guess under the load the upload's own parsing raised ("about 56 s"
    became "about 66 s" for an ingest of 45 s, issue 29's Chromium check)."""
    steady = timing.steady
    shown = Estimate(56.0, False, 793.0, "tokens")
    later = Estimate(66.0, False, 680.0, "tokens")
    measured = Estimate(48.0, True, 920.0, "tokens")
    assert steady(None, later) == later  # nothing shown yet for these chunks
    assert steady(shown, later) == shown
    assert steady(shown, measured) == measured  # a rate measured here replaces the guess
    assert steady(measured, later) == later and steady(shown, None) is None
