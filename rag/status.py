"""What the sidebar reports: database, model server, embedder, GPU, each with a one-line fix."""

from __future__ import annotations

from dataclasses import dataclass

from rag.llms.ollama.admin import ollama_has_model, ollama_models, ollama_version
from rag.llms.ollama.names import SUGGESTED_OLLAMA_MODEL
from rag.model_ref import ModelRef
from rag.settings import DEFAULT_OLLAMA_EMBED_MODEL, Settings
from rag.text import Text


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    summary: str
    """One line: what is in use."""
    fix: str = ""
    """One line: what to do when something is missing (empty when all is well)."""


@dataclass(frozen=True)
class OllamaStatus:
    reachable: bool
    host: str
    version: str | None
    models: tuple[str, ...]


def ollama_status(settings: Settings, timeout: float = 2.0) -> OllamaStatus:
    models = ollama_models(settings.ollama_host, timeout=timeout)
    if models is None:
        return OllamaStatus(False, settings.ollama_host, None, ())
    version = ollama_version(settings.ollama_host, timeout=timeout)
    return OllamaStatus(True, settings.ollama_host, version, tuple(models))


def embedded_chat_is_default(settings: Settings, status: OllamaStatus) -> bool:
    """Whether the chat's default model is the embedded one: RAG_CHAT_MODEL says local, or it is
    unset and Ollama (as `status` saw it) has no model to chat with."""
    if settings.chat_model:
        ref = ModelRef.parse_or_none(settings.chat_model, bare="ollama")
        return ref is not None and ref.is_local
    return not status.reachable or not status.models


def ollama_check(settings: Settings, status: OllamaStatus) -> Check:
    if not status.reachable:
        return Check(
            "Model server",
            False,
            Text("Ollama not reachable: using the embedded local models"),
            Text("start Ollama ('ollama serve') or set OLLAMA_HOST (now {host})", host=settings.ollama_host),
        )
    if not status.models:
        return Check(
            "Model server",
            True,
            Text("Ollama {version} at {host}: no models pulled", version=status.version or "?", host=status.host),
            Text(
                "pull a model: ollama pull {chat} && ollama pull {embed}",
                chat=SUGGESTED_OLLAMA_MODEL,
                embed=DEFAULT_OLLAMA_EMBED_MODEL,
            ),
        )
    return Check(
        "Model server",
        True,
        Text(
            "Ollama {version} at {host}: {names}",
            version=status.version or "?",
            host=status.host,
            names=", ".join(status.models),
        ),
    )


def embedder_check(settings: Settings, status: OllamaStatus, embedder_name: str) -> Check:
    """Which embedder new knowledge bases get and why (existing ones keep the one they were built with)."""
    from rag.embeddings import E5_NAME, local_fallback_reason

    ref = ModelRef.parse_or_none(embedder_name)
    if ref is not None and ref.is_ollama:
        return Check("Embedder", True, embedder_name)
    fix = ""
    if embedder_name == E5_NAME:
        summary = Text("{embedder} (multilingual-e5-small, embedded, offline)", embedder=embedder_name)
    else:
        reason = local_fallback_reason()
        if settings.embedder in ("auto", "local") and reason is not None:
            summary = Text(
                "{embedder} (embedded, offline): the fallback, as e5 cannot run here: {reason}",
                embedder=embedder_name,
                reason=reason,
            )
        else:
            summary = Text(
                "{embedder} (embedded, offline): the fast choice, weaker in retrieval", embedder=embedder_name
            )
            if reason is None:
                fix = Text(
                    "for better retrieval (Chinese above all): RAG_EMBEDDER={e5}, hundreds of times slower to ingest",
                    e5=E5_NAME,
                )
    if settings.embedder == "auto":
        if status.reachable and not ollama_has_model(status.models, DEFAULT_OLLAMA_EMBED_MODEL):
            fix = fix or Text("to embed with Ollama: ollama pull {model}", model=DEFAULT_OLLAMA_EMBED_MODEL)
        elif not status.reachable:
            fix = fix or Text(
                "to embed with Ollama: start Ollama and ollama pull {model}", model=DEFAULT_OLLAMA_EMBED_MODEL
            )
    return Check("Embedder", True, summary, fix)


@dataclass(frozen=True)
class GpuPresence:
    found: bool
    names: tuple[str, ...]
    reason: str | Text
    """Why no GPU was found (NVML's own words, a `Text` the UI translates where it knows them), or the driver
    version when one was."""


def gpu_presence() -> GpuPresence:
    try:
        import pynvml
    except ImportError:
        return GpuPresence(False, (), Text("nvidia-ml-py is not installed"))
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return GpuPresence(False, (), _nvml_error(exc))
    try:
        count = pynvml.nvmlDeviceGetCount()
        names = tuple(str(pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i))) for i in range(count))
        driver = pynvml.nvmlSystemGetDriverVersion()
        return GpuPresence(bool(names), names, f"driver {driver}")
    except pynvml.NVMLError as exc:
        return GpuPresence(False, (), _nvml_error(exc))
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass


def _nvml_error(exc: Exception) -> Text:
    """NVML's words for why it failed ("NVML Shared Library Not Found"), as a text a UI may translate: the Chinese
    sidebar said "（NVML: NVML Shared Library Not Found）" on every machine without an NVIDIA driver."""
    from rag.gpu.nvml import NVML_MESSAGES

    words = str(exc)
    return Text("NVML: {error}", error=Text(words) if words in NVML_MESSAGES else words)


def gpu_check(presence: GpuPresence) -> Check:
    if presence.found:
        return Check("GPU", True, f"{', '.join(presence.names)} ({presence.reason})")
    return Check(
        "GPU",
        False,
        Text("no NVIDIA GPU found ({reason})", reason=presence.reason),
        Text("models run on the CPU; for a GPU install the NVIDIA driver (and the Container Toolkit for Docker)"),
    )
