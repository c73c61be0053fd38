"""Package attributes imported on first use (PEP 562), so that importing a package stays cheap.

`python -m rag --help` must not load pymupdf, psycopg, ollama or llama.cpp (it took ~2 s when it did);
packages whose public names need those serve them through `lazy_exports`."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, table: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: `table` maps a public name to the module that defines it.
    The value is imported when first asked for and then kept in the package, so later look-ups are plain."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
