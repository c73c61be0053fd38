"""The bench's timing helpers."""

from __future__ import annotations

from benchmarks import report


def test_interleaved_runs_take_turns_and_keep_each_sides_fastest(monkeypatch) -> None:
    clock = iter([0.0, 3.0, 3.0, 4.0, 4.0, 5.0, 5.0, 9.0]).__next__
    monkeypatch.setattr(report.time, "perf_counter", clock)
    calls: list[str] = []

    def ours() -> str:
        calls.append("ours")
        return f"ours {len(calls)}"

    def peer() -> str:
        calls.append("peer")
        return f"peer {len(calls)}"

    (ours_t, ours_out), (peer_t, peer_out) = report.best_of_interleaved(ours, peer, 2)
    assert calls == ["ours", "peer", "ours", "peer"]
    assert (ours_t, peer_t) == (1.0, 1.0)  # ours took 3 s then 1 s; the peer 1 s then 4 s
    assert (ours_out, peer_out) == ("ours 3", "peer 4")


def test_a_ratio_just_short_of_its_goal_never_reads_as_the_goal() -> None:
    import io

    out = io.StringIO()
    assert not report.Report(out).ratio("cold spring", 0.1285, 0.3818, 3)
    assert "-> 2.9x (goal >= 3x: NOT met)" in out.getvalue()
    out = io.StringIO()
    assert report.Report(out).ratio("cold spring", 0.125, 0.375, 3)
    assert "-> 3.0x (goal >= 3x: met)" in out.getvalue()
