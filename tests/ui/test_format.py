"""ui/format.py and ui/routing.py outside a running app (no Streamlit session needed)."""

from __future__ import annotations

from ui import format as fmt
from ui import routing


def test_markdown_is_escaped_so_names_show_as_typed() -> None:
    assert fmt.md("q3_*final*.pdf") == "q3\\_\\*final\\*.pdf"
    assert fmt.md("a [b](c) <d> #e |f ~g $h `i \\") == "a \\[b\\](c) \\<d\\> \\#e \\|f \\~g \\$h \\`i \\\\"


def test_a_documents_markdown_table_becomes_cells_as_its_text() -> None:
    from rag.documents.sections import markdown_table

    rows = [["name", "", "name"], ["![](http://127.0.0.1:9999/x)", "a | b", "[x](http://h/y)"], ["short"]]
    names, cells = fmt.table_cells(markdown_table(rows))
    assert names == ["name", "(2)", "name (2)"]
    assert cells == [["![](http://127.0.0.1:9999/x)", "a | b", "[x](http://h/y)"], ["short", "", ""]]
    assert fmt.table_cells("| a | b |\n|:--|--:|\n| 1 | 2 | 3 |") == (["a", "b"], [["1", "2"]])


def test_sizes_counts_words_lines_and_clips() -> None:
    assert [fmt.size(n) for n in (0, 999, 1536, 2.5 * 1024**2, 3 * 1000**4)] == [
        "0 bytes",
        "999 bytes",
        "1.5 KB",
        "2.6 MB",  # 2.5 MiB, which the file uploader shows as 2.6MB
        "3000.0 GB",
    ]
    assert (fmt.plural(1, "page"), fmt.plural(0, "page"), fmt.plural(2, "chunk")) == ("1 page", "0 pages", "2 chunks")
    assert fmt.first_words("one two three", words=2) == "one two…"
    assert fmt.first_words("one two") == "one two"
    assert fmt.first_words("x" * 200, chars=10) == "x" * 9 + "…"
    assert fmt.first_line("\n  Search the docs.\nMore.") == "Search the docs."
    assert fmt.first_line("") == "no description"
    assert fmt.first_line("y" * 200) == "y" * 139 + "…"
    assert fmt.clip("abc", 5) == "abc" and fmt.clip("abcdef", 3) == "abc …"


def test_outside_a_script_run_nothing_is_rerouted() -> None:
    assert routing.started_without_router() is False
    routing.through_router()  # a no-op, not a rerun
