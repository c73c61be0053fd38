"""The search modes' names: light, so that the CLI can offer them without importing the store."""

from __future__ import annotations

MODES = ("vector", "keyword", "hybrid")
DEFAULT_MODE = "hybrid"
