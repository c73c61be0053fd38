"""benchmarks/peers.py: the bound printed beside an unmet ingest ratio, from the work no pipeline can skip."""

from __future__ import annotations

from benchmarks import peers


def test_the_bound_counts_the_embedders_cpu_and_plain_extraction_over_every_core(monkeypatch) -> None:
    monkeypatch.setattr(peers, "usable_cores", lambda: 2)
    langchain = peers.Run("LangChain", 54.5, 12_409, 0.56, {"load": 10.5, "split": 4.4, "embed + insert": 39.6})
    line = peers._bound(18.2, peers.Floor(seconds=21.8, cpu=22.0, chunks=11_074, write=7.7), langchain)
    assert line.startswith("3x needs our whole ingest in 18.2 s; the same embedder alone, on our 11,074 chunks")
    assert "(22.0 CPU s)" in line and "(LangChain's load and split) 14.9 s" in line and "bare table 7.7 s" in line
    assert line.endswith(
        "on all 2 cores at best 22.3 s (so 3x cannot be met by ingest code with this embedder on this machine)"
    )
    line = peers._bound(18.2, peers.Floor(seconds=8.0, cpu=8.0, chunks=11_074), langchain)
    assert line.endswith("at best 11.4 s (below the bound: the rest of the pipeline is what costs)")
