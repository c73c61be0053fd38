"""The one place the environment is read: a frozen Settings, built once per process."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.model_ref import ModelRef
from rag.text import Text

DEFAULT_OLLAMA_HOST = "http://localhost:11434"
DEFAULT_OLLAMA_EMBED_MODEL = "nomic-embed-text"


@dataclass(frozen=True)
class Settings:
    database_url: str | None
    """External PostgreSQL; None means the embedded server under `data_dir`."""
    data_dir: Path
    ollama_host: str
    embedder: str
    """`auto`, `local` (e5, or WordLlama where e5 cannot run), `local:e5`, `local:wordllama` or `ollama:<model>`."""
    chat_model: str | None
    ollama_timeout: float
    embed_batch_size: int
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    """BM25's k1 and b for keyword search (RAG_BM25_K1, RAG_BM25_B)."""
    preload_chat_model: bool = True
    """RAG_PRELOAD_MODEL (default 1): the app loads the embedded chat model in the background at start
    when it is the one the chat will use, so the first question does not wait for it."""
    web_search_url: str | None = None
    """RAG_WEB_SEARCH_URL: an OpenAI-compatible base URL (…/v1) whose model searches the web; None: no
    web search tool."""
    web_search_model: str = ""
    web_search_api_key: str | None = field(default=None, repr=False)
    """RAG_WEB_SEARCH_API_KEY: sent in the Authorization header only; never shown, logged or repeated."""
    web_search_extra_body: str = '{"enable_search": true}'
    """RAG_WEB_SEARCH_EXTRA_BODY: a JSON object merged into the request body at the top level
    (DashScope's private `enable_search` flag by default: the reason for plain HTTP, frameworks drop
    such fields). Kept as checked JSON text so that Settings stays hashable; `extra_body()` parses it."""
    app_password: str | None = field(default=None, repr=False)
    """RAG_APP_PASSWORD: asked for before any page opens (for a demo on a network); None: no login, and
    the app listens on 127.0.0.1 only (.streamlit/config.toml)."""
    web_search_timeout: float = 30.0
    routes_file: Path | None = None
    """RAG_ROUTES_FILE: the agent's routes (default: routes.toml in the working folder, if any)."""

    def extra_body(self) -> dict[str, Any]:
        return dict(json.loads(self.web_search_extra_body))

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
        # local:<name> is checked when the embedder is built (rag.embeddings): the names recorded by
        # knowledge bases (local:wordllama-l2_supercat-256) are accepted as well as local:e5.
        if embedder != "auto" and ModelRef.parse_or_none(embedder) is None:
            raise ValueError(
                Text(
                    "RAG_EMBEDDER={embedder} is not understood: use 'auto', 'local', 'local:e5', "
                    "'local:wordllama' or 'ollama:<model>'",
                    embedder=repr(embedder),
                )
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
            preload_chat_model=env.get("RAG_PRELOAD_MODEL", "1").strip().lower() not in ("0", "false", "no", "off"),
            ollama_timeout=float(env.get("RAG_OLLAMA_TIMEOUT", "") or 120.0),
            embed_batch_size=int(env.get("RAG_EMBED_BATCH_SIZE", "") or 64),
            bm25_k1=_bm25_parameter(env, "RAG_BM25_K1", 1.2, 3.0),
            bm25_b=_bm25_parameter(env, "RAG_BM25_B", 0.75, 1.0),
            web_search_url=(env.get("RAG_WEB_SEARCH_URL", "").strip().rstrip("/") or None),
            web_search_model=env.get("RAG_WEB_SEARCH_MODEL", "").strip(),
            web_search_api_key=env.get("RAG_WEB_SEARCH_API_KEY", "").strip() or None,
            web_search_extra_body=_extra_body(env.get("RAG_WEB_SEARCH_EXTRA_BODY", "")),
            web_search_timeout=float(env.get("RAG_WEB_SEARCH_TIMEOUT", "") or 30.0),
            routes_file=Path(env["RAG_ROUTES_FILE"]).expanduser() if env.get("RAG_ROUTES_FILE", "").strip() else None,
            app_password=env.get("RAG_APP_PASSWORD", "") or None,
        )


_EXAMPLE_BODY = '{"enable_search": true}'


def _extra_body(raw: str) -> str:
    if not raw.strip():
        return '{"enable_search": true}'
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(
            Text(
                "RAG_WEB_SEARCH_EXTRA_BODY is not JSON ({error} at character {position}): "
                "give an object such as {example}",
                error=exc.msg,
                position=exc.pos,
                example=_EXAMPLE_BODY,
            )
        ) from None
    if not isinstance(value, dict):
        raise ValueError(
            Text("RAG_WEB_SEARCH_EXTRA_BODY must be a JSON object, such as {example}", example=_EXAMPLE_BODY)
        )
    return raw.strip()


def _bm25_parameter(env: Mapping[str, str], name: str, default: float, highest: float) -> float:
    raw = env.get(name, "").strip()
    try:
        value = float(raw) if raw else default
    except ValueError:
        value = float("nan")
    if not 0 <= value <= highest:  # also refuses nan
        raise ValueError(
            Text(
                "{name}={value} is not understood: use a number from 0 to {highest}",
                name=name,
                value=repr(raw),
                highest=f"{highest:g}",
            )
        )
    return value


@functools.cache
def get_settings() -> Settings:
    return Settings.from_env()
