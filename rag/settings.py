"""The one place the environment is read: a frozen Settings, built once per process."""
from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_OLLAMA_HOST = "http://localhost:11434"
DEFAULT_OLLAMA_EMBED_MODEL = "nomic-embed-text"


@dataclass(frozen=True)
class Settings:
    database_url: str | None
    """External PostgreSQL; None means the embedded server under `data_dir`."""
    data_dir: Path
    ollama_host: str
    embedder: str
    """`auto`, `local` or `ollama:<model>`."""
    chat_model: str | None
    ollama_timeout: float
    embed_batch_size: int

    @property
    def embedded_database(self) -> bool:
        return self.database_url is None

    @property
    def pgdata(self) -> Path:
        return self.data_dir / "pgdata"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        embedder = env.get("RAG_EMBEDDER", "auto").strip() or "auto"
        if embedder not in ("auto", "local") and not (
            embedder.startswith("ollama:") and len(embedder) > len("ollama:")
        ):
            raise ValueError(
                f"RAG_EMBEDDER={embedder!r} is not understood: use 'auto', 'local' or 'ollama:<model>'"
            )
        host = env.get("OLLAMA_HOST", "").strip() or DEFAULT_OLLAMA_HOST
        if "://" not in host:
            # Ollama's own CLI accepts a bare host or host:port and defaults the port to 11434.
            if ":" not in host.rsplit("]", 1)[-1]:
                host = f"{host}:11434"
            host = f"http://{host}"
        return cls(
            database_url=env.get("DATABASE_URL", "").strip() or None,
            data_dir=Path(env.get("RAG_DATA_DIR", "").strip() or ".rag-data").expanduser().resolve(),
            ollama_host=host.rstrip("/"),
            embedder=embedder,
            chat_model=env.get("RAG_CHAT_MODEL", "").strip() or None,
            ollama_timeout=float(env.get("RAG_OLLAMA_TIMEOUT", "") or 120.0),
            embed_batch_size=int(env.get("RAG_EMBED_BATCH_SIZE", "") or 64),
        )


@functools.cache
def get_settings() -> Settings:
    return Settings.from_env()
