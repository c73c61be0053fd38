"""rag/gpu/samples.py: the CSV export of the samples, with and without a GPU."""

from __future__ import annotations

import csv
import io
from datetime import datetime

import pynvml

from rag.gpu.samples import CSV_COLUMNS
from tests.gpu.fakes import MIB, FakeGpu, ScriptedNvml, make_sampler


def test_csv_export_has_a_row_per_sample_and_gpu() -> None:
    card = FakeGpu(
        compute=[(4242, 4_700 * MIB)], failures={"nvmlDeviceGetTemperature": pynvml.NVML_ERROR_NOT_SUPPORTED}
    )
    sampler = make_sampler(ScriptedNvml([card]), names={4242: "ollama"}.get)
    sampler.tick()
    card.used = 7000 * MIB
    sampler.tick()
    rows = list(csv.DictReader(io.StringIO(sampler.to_csv())))
    assert list(rows[0]) == list(CSV_COLUMNS)
    assert len(rows) == 2
    assert rows[0]["name"] == "NVIDIA GeForce RTX 4060 Laptop GPU"
    assert (rows[0]["driver"], rows[0]["cuda"]) == ("576.02", "12.9")
    assert [r["vram_used_mib"] for r in rows] == ["2261.0", "7000.0"]
    assert rows[0]["vram_total_mib"] == "8188.0"
    assert rows[0]["temperature_c"] == ""  # not supported: empty, not 0
    assert rows[0]["power_w"] == "24.0" and rows[0]["clock_graphics_mhz"] == "2100"
    assert rows[0]["ollama_vram_mib"] == "4700.0" and rows[0]["gpu_processes"] == "1"
    assert rows[0]["cpu_pct"] == "12.5" and rows[0]["ram_total_mib"] == "16384.0"
    assert rows[0]["epoch"] == "1750000000.000"
    assert rows[0]["time"] == datetime.fromtimestamp(1_750_000_000).isoformat(timespec="milliseconds")


def test_csv_export_without_a_gpu_has_cpu_and_ram() -> None:
    sampler = make_sampler(ScriptedNvml(init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED))
    sampler.tick()
    (row,) = csv.DictReader(io.StringIO(sampler.to_csv()))
    assert row["gpu"] == "" and row["vram_used_mib"] == ""
    assert row["cpu_pct"] == "12.5" and row["ram_used_mib"] == "6144.0"
