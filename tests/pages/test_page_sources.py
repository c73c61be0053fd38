"""What Streamlit does with a page's source that plain Python would not: a bare string or value at
a statement level is written onto the page ("magic"), so a docstring meant for a constant shows up
as a paragraph above the title."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

PAGES = sorted((ROOT / "pages").glob("*.py")) + [ROOT / "app.py"]


def _bare_values(tree: ast.Module) -> list[int]:
    """Lines of expression statements that are not calls (what magic would render), past the
    docstrings; in function bodies too, since magic writes those (not in class bodies: it skips them)."""
    lines = []
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list) or isinstance(node, ast.ClassDef):
            continue
        for index, statement in enumerate(body):
            if not isinstance(statement, ast.Expr) or isinstance(statement.value, (ast.Call, ast.Await, ast.Yield)):
                continue
            is_docstring = (
                index == 0
                and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str)
                and isinstance(node, (ast.Module, ast.FunctionDef))
            )
            if not is_docstring and not (isinstance(statement.value, ast.Constant) and statement.value.value is ...):
                lines.append(statement.lineno)
    return lines


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_no_page_writes_a_stray_value_through_magic(path: Path) -> None:
    assert _bare_values(ast.parse(path.read_text(encoding="utf-8"))) == []


def test_the_check_finds_a_constant_docstring() -> None:
    assert _bare_values(ast.parse('"""Page."""\nKEY = "k"\n"""Meant for KEY."""\n')) == [3]
