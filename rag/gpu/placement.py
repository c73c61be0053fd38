"""Where Ollama put its models (GET /api/ps, through rag.llms.ollama) and what to tell the user about it.

The commonest GPU pitfall is Ollama silently running a model on the CPU: `placement_advice` turns
Ollama's placement and the sampler's readings into a warning with the checks that find the cause,
or a calm note when this machine has no GPU anyway.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from rag.gpu.samples import GpuStatus, Sample
from rag.llms.ollama.admin import ollama_loaded_models
from rag.llms.types import LoadedModel
from rag.text import Text


@dataclass(frozen=True)
class PlacementAdvice:
    severity: str
    """'error' (a model runs on the CPU although a GPU exists), 'info' (on the CPU, no GPU here)."""
    title: str
    causes: tuple[str, ...] = ()


def placement_advice(
    models: Sequence[LoadedModel], status: GpuStatus, latest: Sample | None = None
) -> PlacementAdvice | None:
    """What to tell the user about where Ollama put its models; None when all is on the GPU."""
    on_cpu = [m for m in models if m.share_on_gpu == "100% CPU"]
    split = [m for m in models if m.share_on_gpu not in ("100% GPU", "100% CPU")]
    if not on_cpu and not split:
        return None
    names = ", ".join(f"{m.name} ({m.share_on_gpu})" for m in (*on_cpu, *split))
    if not status.available:
        return PlacementAdvice(
            "info",
            Text(
                "{names}: on the CPU, as expected, since this app sees no NVIDIA GPU ({reason}). "
                "If Ollama runs on another machine or container that has a GPU, check there with 'ollama ps'.",
                names=names,
                reason=status.reason,
            ),
        )
    devices = latest.devices if latest else ()
    free = [
        (d.memory_total - d.memory_used) for d in devices if d.memory_total is not None and d.memory_used is not None
    ]
    total = [d.memory_total for d in devices if d.memory_total is not None]
    others = [p for p in (latest.processes if latest else ()) if not p.is_ollama and p.gpu_memory]
    gpu_names = ", ".join(d.name for d in status.devices)
    vram = (
        Text("free VRAM now {free} of {total}", free=_gib(sum(free)), total=_gib(sum(total)))
        if free and total
        else Text("free VRAM unknown")
    )
    causes: list[str] = []
    if on_cpu:
        causes += [
            Text(
                "Ollama was not given the GPU: 'docker compose exec ollama nvidia-smi' must list it; the "
                "compose file must reserve it (deploy.resources.reservations.devices with driver: nvidia, "
                "capabilities: [gpu]) and you must not be using the CPU-only override."
            ),
            Text(
                "The NVIDIA Container Toolkit is missing or Docker is not set up for it (on Windows: "
                "Docker Desktop's WSL2 integration): 'docker run --rm --gpus all ubuntu nvidia-smi' must "
                "show the GPU."
            ),
            Text(
                "Ollama found no usable GPU backend: 'docker compose logs ollama' showing only "
                "'loaded CPU backend', or 'no compatible GPUs were discovered', means it fell back to the "
                "CPU; a driver older than Ollama's CUDA needs (see 'nvidia-smi') does this too."
            ),
        ]
    largest = max((*on_cpu, *split), key=lambda m: m.size)
    if largest.context_length:
        causes.append(
            Text(
                "Not enough VRAM for the model and its context: {model} needs {size}, context {tokens} tokens; "
                "{vram}. Use a smaller model or quantisation, a smaller context (num_ctx), or unload other "
                "models (keep-alive control below).",
                model=largest.name,
                size=_gib(largest.size),
                tokens=largest.context_length,
                vram=vram,
            )
        )
    else:
        causes.append(
            Text(
                "Not enough VRAM for the model and its context: {model} needs {size}; "
                "{vram}. Use a smaller model or quantisation, a smaller context (num_ctx), or unload other "
                "models (keep-alive control below).",
                model=largest.name,
                size=_gib(largest.size),
                vram=vram,
            )
        )
    if others:
        listed = ", ".join(f"{p.name or 'pid ' + str(p.pid)} ({_gib(p.gpu_memory or 0)})" for p in others[:5])
        causes.append(Text("Other programs hold VRAM: {programs}.", programs=listed))
    if on_cpu and not split:
        title = Text("{names} runs on the CPU although this machine has a GPU ({gpus}).", names=names, gpus=gpu_names)
    else:
        title = Text(
            "{names} runs partly or wholly on the CPU although this machine has a GPU ({gpus}).",
            names=names,
            gpus=gpu_names,
        )
    return PlacementAdvice("error", title, tuple(causes))


def _gib(n: int | float) -> str:
    return f"{n / 1024**3:.1f} GiB"


@dataclass(frozen=True)
class Placement:
    """Ollama's loaded models now, with the advice about them."""

    models: tuple[LoadedModel, ...] | None
    """None when Ollama is not reachable."""
    advice: PlacementAdvice | None
    """None when every model runs wholly on the GPU (or none is loaded)."""


def ollama_placement(host: str, status: GpuStatus, latest: Sample | None = None) -> Placement:
    """Ask Ollama at `host` what it holds in memory (never raises: unreachable gives models None)."""
    models = ollama_loaded_models(host)
    if models is None:
        return Placement(None, None)
    return Placement(tuple(models), placement_advice(models, status, latest))


def unloads_in(expires_at: datetime | None, now: datetime) -> str:
    """When Ollama will unload a model by its keep-alive, for a table cell ('4 min 59 s')."""
    if expires_at is None:
        return "?"
    seconds = (expires_at - now).total_seconds()
    if seconds > 365 * 86400:  # Ollama writes keep_alive -1 as an expiry centuries away
        return Text("never (keep_alive -1)")
    if seconds <= 0:
        return Text("now")
    return Text("{minutes} min {seconds} s", minutes=int(seconds // 60), seconds=int(seconds % 60))
