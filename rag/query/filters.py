"""Metadata filters in Spring AI's filter-expression syntax, compiled to parameterised SQL.

Syntax (keywords are case-insensitive, whitespace is free)::

    knowledge == 'finance' && year >= 2020
    author in ['john', 'jill']          genre nin ['drama']      genre not in ['drama']
    NOT (year < 2000 || draft == true)  !(year < 2000)           country != "BG"
    author.name == 'Ann'                'odd key!' == 1          summary IS NOT NULL

* Comparisons: ``==  !=  <  <=  >  >=``; lists: ``in``, ``nin`` / ``not in``; ``IS [NOT] NULL``.
* Boolean: ``&&``/``AND`` binds tighter than ``||``/``OR``; ``NOT``/``!`` binds tightest
  (so ``NOT a == 1 && b == 2`` is ``(NOT a == 1) && b == 2``; use parentheses to negate more).
* Keys: ``[A-Za-z_][A-Za-z0-9_.-]*`` where dots separate a nested path (``author.name`` is
  ``{"author": {"name": ...}}``), or a single- or double-quoted string naming ONE top-level
  key verbatim (``'author.name'`` is the key ``"author.name"``).  Unlike Spring AI, which
  treats a dotted key as one flat name, we follow JSON nesting because our metadata nests.
* Values: quoted strings (escapes ``\\'``, ``\\"``, ``\\\\`` only, so a Windows path typo is
  an error rather than a silent control character), integers (optional sign, Spring's
  ``L`` suffix accepted), decimals (``1.5``, ``-.5``, ``5.``; kept exact as ``Decimal``),
  ``true``/``false``.  ``null`` is rejected as a value: write ``KEY IS NULL``.
* ``in []`` is a syntax error (as in Spring AI's grammar): an always-false filter is almost
  certainly a mistake.
* Ordering operators (``<`` ...) need a number or a string; ``year < true`` is an error.

Semantics (two-valued: every condition is exactly true or false for every row; no row ever
raises a SQL error):

* ``KEY op VALUE`` for ``== < <= > >=`` is true only when the key exists and holds a value
  of the same JSON type (number/string/boolean) satisfying the comparison.  A missing key,
  a JSON null, or a type mismatch (``year == '2020'`` against the number 2020, or
  ``year < 5`` against a string) is simply false.  Numbers compare numerically (``1 == 1.0``),
  strings by Unicode code point.
* ``KEY != VALUE`` is defined as ``NOT (KEY == VALUE)``; ``KEY nin [...]`` as
  ``NOT (KEY in [...])``.  So a missing key or a value of another type counts as "not
  equal" and IS selected.  (Spring AI's pgvector converter makes ``!=`` false on a missing
  key but ``nin`` true; we prefer the consistent rule ``!=`` == ``NOT ==``.)
* ``KEY IS NULL`` is true when the key is missing or JSON null (by the array rule below,
  also an empty array or one holding only nulls); ``IS NOT NULL`` is its negation.
* A key holding an array matches when ANY element matches (SQL/JSON lax mode, which also
  lets ``author.name`` reach into an array of objects): ``tags in ['a']`` selects
  ``{"tags": ["a", "b"]}``, and therefore ``tags != 'a'`` does not select it.
* A NULL metadata column behaves exactly like ``{}``.

SQL shape: the whole expression becomes ONE SQL/JSON path predicate, passed as a parameter,
with every value passed as a jsonpath variable in a second parameter::

    jsonb_path_match(coalesce(metadata::jsonb, '{}'::jsonb), %s::jsonpath, %s::jsonb, true)
    params = ('(exists($."year" ? (@ >= $v0)) && exists($."knowledge" ? (@ == $v1)))',
              '{"v0": 2020, "v1": "finance"}')

The SQL text is therefore a constant that depends only on ``column``: no key or value can
reach it.  Keys live inside the jsonpath parameter as JSON-escaped quoted member names;
values never enter the jsonpath text at all.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal, TypeAlias

from rag.errors import FilterSyntaxError
from rag.text import Text

__all__ = [
    "And",
    "Comparison",
    "InList",
    "IsNull",
    "Node",
    "Not",
    "Or",
    "Scalar",
    "SqlFilter",
    "caret",
    "parse",
    "to_sql",
]

Scalar: TypeAlias = str | bool | int | float | Decimal
Key: TypeAlias = tuple[str, ...]
CompareOp: TypeAlias = Literal["==", "!=", "<", "<=", ">", ">="]

_COMPARE_OPS: frozenset[str] = frozenset({"==", "!=", "<", "<=", ">", ">="})
_ORDERING_OPS: frozenset[str] = frozenset({"<", "<=", ">", ">="})


@dataclass(frozen=True)
class Comparison:
    """``key op value``; ``key`` is the nested path, e.g. ``("author", "name")``."""

    key: Key
    op: CompareOp
    value: Scalar


@dataclass(frozen=True)
class InList:
    """``key in [...]``, or ``key nin [...]`` when ``negated``."""

    key: Key
    values: tuple[Scalar, ...]
    negated: bool = False


@dataclass(frozen=True)
class IsNull:
    """``key IS NULL``, or ``key IS NOT NULL`` when ``negated``."""

    key: Key
    negated: bool = False


@dataclass(frozen=True)
class And:
    # n-ary so that long chains stay flat: no recursion limit when compiling `a && b && ...`.
    children: tuple[Node, ...]


@dataclass(frozen=True)
class Or:
    children: tuple[Node, ...]


@dataclass(frozen=True)
class Not:
    child: Node


Node: TypeAlias = Comparison | InList | IsNull | And | Or | Not


@dataclass(frozen=True)
class SqlFilter:
    """A boolean SQL fragment using psycopg ``%s`` placeholders only, and its parameters."""

    sql: str
    params: tuple[object, ...]


# --------------------------------------------------------------------------- lexer

_KEYWORDS: frozenset[str] = frozenset({"and", "or", "not", "in", "nin", "is", "null", "true", "false"})
# Beyond this, a hostile or generated expression would exhaust Python's recursion (and the
# jsonpath parser's stack) long before it could mean anything to a person.
_MAX_DEPTH = 64
_ESCAPES = {"'": "'", '"': '"', "\\": "\\"}
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")


@dataclass(frozen=True)
class _Token:
    # kind: "(" ")" "[" "]" "," "op" "&&" "||" "!" "word" "string" "number" "eof"
    kind: str
    text: str
    pos: int
    value: Scalar | None = None

    def describe(self) -> str:
        if self.kind == "eof":
            return Text("end of expression")
        text = self.text if len(self.text) <= 30 else self.text[:27] + "..."
        # Strings already carry their own quotes; wrapping them again reads badly.
        return text if self.kind == "string" else f"'{text}'"


def _is_key_start(ch: str) -> bool:
    return ch == "_" or (ch.isalpha() and ch.isprintable())


def _is_key_char(ch: str) -> bool:
    return ch in "_.-" or (ch.isalnum() and ch.isprintable())


class _Lexer:
    """Produces tokens on demand so that the first problem in reading order is reported."""

    def __init__(self, expression: str) -> None:
        self.src = expression
        self.i = 0

    def error(self, pos: int, reason: str) -> FilterSyntaxError:
        return FilterSyntaxError(self.src, pos, reason)

    def next(self) -> _Token:
        src, n = self.src, len(self.src)
        while self.i < n and src[self.i].isspace():
            self.i += 1
        start = self.i
        if start >= n:
            # The end of what was typed, trailing blanks aside: "page >= " and "page >=" (as a
            # page that strips the text hands it on) report the same position.
            return _Token("eof", "", len(src.rstrip()))
        ch = src[start]
        two = src[start : start + 2]
        if two in ("==", "!=", "<=", ">="):
            self.i += 2
            return _Token("op", two, start)
        if two in ("&&", "||"):
            self.i += 2
            return _Token(two, two, start)
        if ch in "<>":
            self.i += 1
            return _Token("op", ch, start)
        if ch in "()[],!":
            self.i += 1
            return _Token(ch, ch, start)
        if ch in "=&|":
            raise self.error(start, Text("unknown operator '{operator}'", operator=ch))
        if ch in "'\"":
            return self._string(start)
        number = _NUMBER.match(src, start)
        if number:
            return self._number(start, number.end())
        if _is_key_start(ch):
            end = start + 1
            while end < n and _is_key_char(src[end]):
                end += 1
            self.i = end
            return _Token("word", src[start:end], start)
        shown = ch if ch.isprintable() else repr(ch)
        raise self.error(start, Text("unexpected character '{character}'", character=shown))

    def _string(self, start: int) -> _Token:
        src, quote = self.src, self.src[start]
        out: list[str] = []
        i = start + 1
        while i < len(src):
            ch = src[i]
            if ch == quote:
                self.i = i + 1
                return _Token("string", src[start : i + 1], start, "".join(out))
            if ch == "\\":
                if i + 1 >= len(src):
                    break
                escaped = src[i + 1]
                if escaped not in _ESCAPES:
                    raise self.error(
                        i, Text("unknown escape '\\{escape}'; write '\\\\' for a backslash", escape=escaped)
                    )
                out.append(_ESCAPES[escaped])
                i += 2
                continue
            out.append(ch)
            i += 1
        raise self.error(start, Text("unclosed string"))

    def _number(self, start: int, end: int) -> _Token:
        src = self.src
        text = src[start:end]
        is_integer = "." not in text
        if is_integer and end < len(src) and src[end] in "lL":
            end += 1  # Spring AI's Long suffix: accepted for compatibility, meaningless here.
        # `12abc` or `1.2.3` is one mistyped token, not a number followed by a key.
        if end < len(src) and (_is_key_char(src[end]) or src[end] == "."):
            bad_end = end
            while bad_end < len(src) and _is_key_char(src[bad_end]):
                bad_end += 1
            raise self.error(start, Text("invalid number '{number}'", number=src[start:bad_end]))
        self.i = end
        value: Scalar = int(text) if is_integer else Decimal(text)
        return _Token("number", src[start:end], start, value)


# --------------------------------------------------------------------------- parser


class _Parser:
    def __init__(self, expression: str) -> None:
        self.src = expression
        self.lexer = _Lexer(expression)
        self.prev: _Token | None = None
        self.tok = self.lexer.next()
        self.depth = 0

    def error(self, pos: int, reason: str) -> FilterSyntaxError:
        return FilterSyntaxError(self.src, pos, reason)

    def advance(self) -> _Token:
        current = self.tok
        self.prev = current
        self.tok = self.lexer.next()
        return current

    def at_word(self, *words: str) -> bool:
        return self.tok.kind == "word" and self.tok.text.lower() in words

    def previous(self) -> str | None:
        """The token before the current one, as an error names it (None at the start)."""
        return self.prev.describe() if self.prev is not None else None

    def parse(self) -> Node:
        node = self.or_expr()
        if self.tok.kind != "eof":
            if self.tok.kind == ")":
                raise self.error(self.tok.pos, Text("unexpected ')'"))
            raise self.error(
                self.tok.pos, Text("unexpected {token}; join conditions with && or ||", token=self.tok.describe())
            )
        return node

    def or_expr(self) -> Node:
        children = [self.and_expr()]
        while self.tok.kind == "||" or self.at_word("or"):
            self.advance()
            children.append(self.and_expr())
        return children[0] if len(children) == 1 else Or(tuple(children))

    def and_expr(self) -> Node:
        children = [self.unary()]
        while self.tok.kind == "&&" or self.at_word("and"):
            self.advance()
            children.append(self.unary())
        return children[0] if len(children) == 1 else And(tuple(children))

    def enter(self) -> None:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise self.error(self.tok.pos, Text("expression nested more than {depth} levels deep", depth=_MAX_DEPTH))

    def unary(self) -> Node:
        if self.tok.kind == "!" or self.at_word("not"):
            self.enter()
            self.advance()
            node: Node = Not(self.unary())
            self.depth -= 1
            return node
        if self.tok.kind == "(":
            self.enter()
            self.advance()
            node = self.or_expr()
            if self.tok.kind != ")":
                raise self.error(self.tok.pos, Text("expected ')'"))
            self.advance()
            self.depth -= 1
            return node
        return self.condition()

    def key(self) -> Key:
        tok = self.tok
        if tok.kind == "string":
            self.advance()
            assert isinstance(tok.value, str)
            return (tok.value,)
        if tok.kind == "word":
            word = tok.text.lower()
            if word in _KEYWORDS and word not in ("and", "or"):
                raise self.error(tok.pos, Text("'{word}' is a keyword; quote it to use it as a key", word=tok.text))
            if word not in _KEYWORDS:
                parts = tok.text.split(".")
                offset = tok.pos
                for part in parts[:-1]:
                    offset += len(part) + 1
                    if not part:
                        raise self.error(offset - 1, Text("unexpected '.' in key"))
                if not parts[-1]:
                    raise self.error(tok.pos + len(tok.text) - 1, Text("unexpected '.' in key"))
                self.advance()
                return tuple(parts)
        if tok.kind == ")" and (self.prev is None or self.prev.kind != "("):
            raise self.error(tok.pos, Text("unexpected ')'"))
        prev = self.previous()
        if prev is None:
            raise self.error(tok.pos, Text("unexpected {token}; a filter starts with a key", token=tok.describe()))
        raise self.error(tok.pos, Text("expected a key after {token}", token=prev))

    def value(self) -> Scalar:
        tok = self.tok
        if tok.kind in ("string", "number"):
            assert tok.value is not None
            self.advance()
            return tok.value
        if tok.kind == "word":
            word = tok.text.lower()
            if word in ("true", "false"):
                self.advance()
                return word == "true"
            if word == "null":
                raise self.error(tok.pos, Text("null is not a value; use KEY IS NULL or KEY IS NOT NULL"))
            prev = self.previous()
            raise self.error(
                tok.pos,
                Text("expected a value; put text in quotes: '{word}'", word=tok.text)
                if prev is None
                else Text("expected a value after {token}; put text in quotes: '{word}'", token=prev, word=tok.text),
            )
        prev = self.previous()
        raise self.error(
            tok.pos, Text("expected a value") if prev is None else Text("expected a value after {token}", token=prev)
        )

    def condition(self) -> Node:
        key = self.key()
        tok = self.tok
        if tok.kind == "op":
            self.advance()
            value_tok = self.tok
            value = self.value()
            if tok.text in _ORDERING_OPS and isinstance(value, bool):
                raise self.error(value_tok.pos, Text("'{operator}' needs a number or a string", operator=tok.text))
            return Comparison(key, tok.text, value)  # type: ignore[arg-type]
        if self.at_word("in", "nin"):
            negated = self.advance().text.lower() == "nin"
            return InList(key, self.list_values(), negated)
        if self.at_word("not"):
            self.advance()
            if not self.at_word("in"):
                raise self.error(self.tok.pos, Text("expected 'in' after 'not'"))
            self.advance()
            return InList(key, self.list_values(), True)
        if self.at_word("is"):
            self.advance()
            negated = self.at_word("not")
            if negated:
                self.advance()
            if not self.at_word("null"):
                prev = self.previous()
                raise self.error(
                    self.tok.pos,
                    Text("expected NULL") if prev is None else Text("expected NULL after {token}", token=prev),
                )
            self.advance()
            return IsNull(key, negated)
        prev = self.previous()
        raise self.error(
            tok.pos,
            Text("expected an operator") if prev is None else Text("expected an operator after {token}", token=prev),
        )

    def list_values(self) -> tuple[Scalar, ...]:
        if self.tok.kind != "[":
            prev = self.previous()
            raise self.error(
                self.tok.pos, Text("expected '['") if prev is None else Text("expected '[' after {token}", token=prev)
            )
        self.advance()
        if self.tok.kind == "]":
            raise self.error(self.tok.pos, Text("empty list; give at least one value"))
        values = [self.value()]
        while self.tok.kind == ",":
            self.advance()
            values.append(self.value())
        if self.tok.kind != "]":
            raise self.error(self.tok.pos, Text("expected ']'"))
        self.advance()
        return tuple(values)


def caret(expression: str, position: int) -> str:
    """The expression as typed and, under it, '^' at `position` (two lines for a monospaced font).

    Line breaks and tabs become spaces so that the caret stays under its character, and a wide
    (CJK) character takes two columns, as terminals and code blocks draw it.
    """
    line = "".join(" " if ch.isspace() else ch for ch in expression)
    column = sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in line[:position])
    return f"{line}\n{' ' * column}^"


def parse(expression: str) -> Node:
    """Parse a Spring AI filter expression; raise ``FilterSyntaxError`` when malformed.

    An empty or whitespace-only expression is an error: callers mean "no filter" by passing
    no expression at all, not an empty one.
    """
    if not isinstance(expression, str):
        raise TypeError(f"filter expression must be a str, not {type(expression).__name__}")
    # Neither PostgreSQL text nor the UTF-8 wire encoding can carry these, so reject them
    # here with a position instead of failing later inside the driver.
    for pos, ch in enumerate(expression):
        if ch == "\x00":
            raise FilterSyntaxError(expression, pos, Text("NUL character is not allowed"))
        if "\ud800" <= ch <= "\udfff":
            raise FilterSyntaxError(expression, pos, Text("invalid character (lone surrogate)"))
    if not expression.strip():
        raise FilterSyntaxError(expression, 0, Text("empty expression"))
    return _Parser(expression).parse()


# --------------------------------------------------------------------------- compiler

_COLUMN = re.compile(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*")


def _json_scalar(value: Scalar) -> str:
    # bool first: it is an int subclass and would otherwise serialise as 1/0.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError("filter values cannot contain NUL characters")
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"filter values must be finite numbers, not {value}")
        return str(value)  # exact; `1E+5` style is valid JSON too
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"filter values must be finite numbers, not {value}")
        return repr(value)
    raise TypeError(f"unsupported filter value type {type(value).__name__}")


def _json_path(key: Key) -> str:
    if not key:
        raise ValueError("a filter key needs at least one segment")
    parts = []
    for segment in key:
        if not isinstance(segment, str) or "\x00" in segment:
            raise ValueError(f"invalid filter key segment {segment!r}")
        # Quoted member names accept exactly JSON string escapes, so json.dumps is a
        # complete and correct quoting function for them (raw non-ASCII is fine).
        parts.append(json.dumps(segment, ensure_ascii=False))
    return "$." + ".".join(parts)


class _Compiler:
    def __init__(self) -> None:
        self.vars: list[str] = []

    def var(self, value: Scalar) -> str:
        name = f"v{len(self.vars)}"
        self.vars.append(f'"{name}": {_json_scalar(value)}')
        return "$" + name

    def node(self, node: Node) -> str:
        # `exists(path ? (@ op $v))` rather than `path op $v`: the bare comparison is
        # *unknown* on a type mismatch, and `!unknown` stays unknown, so NOT/!= would silently
        # drop rows. `exists` of a filter is always plainly true or false.
        if isinstance(node, Comparison):
            if node.op not in _COMPARE_OPS:
                raise ValueError(f"unknown comparison operator {node.op!r}")
            path = _json_path(node.key)
            if node.op == "!=":
                return f"!(exists({path} ? (@ == {self.var(node.value)})))"
            return f"exists({path} ? (@ {node.op} {self.var(node.value)}))"
        if isinstance(node, InList):
            if not node.values:
                raise ValueError("an in/nin list needs at least one value")
            path = _json_path(node.key)
            test = f"exists({path} ? ({_balanced_or([f'@ == {self.var(v)}' for v in node.values])}))"
            return f"!({test})" if node.negated else test
        if isinstance(node, IsNull):
            # `@ != null` is true for every non-null value, including objects and arrays.
            test = f"exists({_json_path(node.key)} ? (@ != null))"
            return test if node.negated else f"!({test})"
        if isinstance(node, Not):
            return f"!({self.node(node.child)})"
        if isinstance(node, (And, Or)):
            if not node.children:
                raise ValueError(f"{type(node).__name__} needs at least one child")
            joiner = " && " if isinstance(node, And) else " || "
            return "(" + joiner.join(self.node(child) for child in node.children) + ")"
        raise TypeError(f"not a filter node: {type(node).__name__}")


def _balanced_or(tests: list[str]) -> str:
    """`a || b || c ...` grouped as a balanced tree: PostgreSQL evaluates a flat chain as a tree as deep
    as the list is long, and a 16,000-value `in` list failed with "stack depth limit exceeded"; balanced,
    the depth is log2 of the length (14 for 16,000)."""
    if len(tests) <= 2:
        return " || ".join(tests)
    middle = len(tests) // 2
    return f"({_balanced_or(tests[:middle])}) || ({_balanced_or(tests[middle:])})"


def to_sql(expression: str | Node, column: str = "metadata") -> SqlFilter:
    """Compile a filter (text or parsed tree) into a boolean SQL fragment on ``column``.

    ``column`` is an identifier chosen by our code, never by a user; it is still validated.
    The returned SQL text depends only on ``column``; keys and values travel in ``params``.
    """
    if not isinstance(column, str) or not _COLUMN.fullmatch(column):
        raise ValueError(f"invalid metadata column name {column!r}")
    node = parse(expression) if isinstance(expression, str) else expression
    compiler = _Compiler()
    path = compiler.node(node)
    variables = "{" + ", ".join(compiler.vars) + "}"
    # coalesce: a NULL metadata column then behaves like {} (so `x != 1` holds) instead of
    # making the whole predicate NULL. `::jsonb` also accepts a `json` column, as Spring AI's
    # own vector_store schema uses. `silent => true` guarantees no row can raise.
    sql = f"jsonb_path_match(coalesce({column}::jsonb, '{{}}'::jsonb), %s::jsonpath, %s::jsonb, true)"
    return SqlFilter(sql=sql, params=(path, variables))
