"""Filter strings: a SQL WHERE-clause row filter, as people write it on a command line or in curl.

`parse_filter("region = 'eu' AND ts >= TIMESTAMP '2024-01-01 00:00:00'")` returns an unbound expression
(binding to a table's schema happens in binding.py). sqlglot does the lexing and parsing, with a small
dialect of its own (backtick identifiers, X'..' binary, 12.30BD decimals, TIMESTAMP_NS); this module
translates sqlglot's tree into ours with one function per node type and rejects whatever has no meaning
as an Iceberg predicate. Every error is a `FilterSyntaxError` that says where and what.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeGuard

import sqlglot
from sqlglot import exp, parser, tokens
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType  # type: ignore[attr-defined]  # (re-exported, not declared so)

from planner_service.errors import BadRequestError, quoted
from planner_service.expressions.expression import (
    FALSE,
    TRUE,
    Expression,
    Op,
    Reference,
    UnboundTerm,
    UnboundTransform,
    and_,
    not_,
    or_,
    predicate,
)
from planner_service.expressions.literals import Literal, convert, parse_decimal
from planner_service.expressions.nesting import MAX_FILTER_DEPTH, too_deep
from planner_service.metadata.partitioning import MAX_TRANSFORM_WIDTH, parse_transform
from planner_service.metadata.types import PrimitiveType
from planner_service.nesting import depth_of, ensure_recursion_headroom

__all__ = ["FilterSyntaxError", "parse_filter"]

_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_DIGITS = re.compile(r"[0-9]+")
_TRANSFORMS = {
    "bucket": "bucket",
    "truncate": "truncate",
    "year": "year",
    "years": "year",
    "month": "month",
    "months": "month",
    "day": "day",
    "days": "day",
    "hour": "hour",
    "hours": "hour",
}
_NAN_FUNCTIONS = frozenset({"isnan", "is_nan"})


class FilterSyntaxError(BadRequestError):
    """A filter string that cannot be read, or that says something a row filter cannot express."""


class _FilterDialect(Dialect):
    """sqlglot's default dialect, plus the spellings a filter string accepts."""

    NORMALIZE_FUNCTIONS = False  # error messages quote bucket(16, id) as written

    class Tokenizer(tokens.Tokenizer):
        IDENTIFIERS = ['"', "`"]
        HEX_STRINGS = [("x'", "'"), ("X'", "'")]
        NUMERIC_LITERALS = {"BD": "DECIMAL"}  # Spark's 12.30BD: a cast of the number's text to DECIMAL
        KEYWORDS = {**tokens.Tokenizer.KEYWORDS, "TIMESTAMP_NS": TokenType.TIMESTAMP_NS}

    class Parser(parser.Parser):
        # transform and isnan calls stay Anonymous, with their arguments in the order written
        FUNCTIONS = {
            name: build
            for name, build in parser.Parser.FUNCTIONS.items()
            if name.lower() not in _TRANSFORMS and name.lower() not in _NAN_FUNCTIONS
        }


class _Unsupported(Exception):
    """Raised during translation; parse_filter adds the node's position and text."""

    def __init__(self, node: exp.Expr, problem: str) -> None:
        super().__init__(problem)
        self.node = node
        self.problem = problem


def parse_filter(text: str) -> Expression:
    """The unbound expression a filter string denotes; FilterSyntaxError when it has none, or when it
    nests more than MAX_FILTER_DEPTH levels of AND, OR and NOT."""
    ensure_recursion_headroom()
    tree = _parse_tree(text)
    depth = depth_of(
        tree, lambda node: node.iter_expressions(), lambda node: isinstance(node, _LOGICAL), MAX_FILTER_DEPTH
    )
    if depth > MAX_FILTER_DEPTH:
        raise FilterSyntaxError(f"Invalid filter: {too_deep(depth)}")
    try:
        return _condition(tree)
    except _Unsupported as e:
        raise FilterSyntaxError(f"Invalid filter{_position(text, e.node)}: {e.problem}") from e


# --- Parsing and syntax errors ----------------------------------------------------------------------------


def _parse_tree(text: str) -> exp.Expr:
    """sqlglot's tree for the text, its errors turned into FilterSyntaxError with a position."""
    try:
        return sqlglot.parse_one(text, into=exp.Condition, dialect=_FilterDialect)
    except ParseError as e:
        raise FilterSyntaxError(_parse_error_message(e)) from e
    except TokenError as e:
        raise FilterSyntaxError(_token_error_message(text, e)) from e
    except RecursionError:  # parentheses nested beyond what the parser's recursion allows
        raise FilterSyntaxError(
            f"Invalid filter: it nests too deeply to parse (at most {MAX_FILTER_DEPTH} levels)"
        ) from None


_LOGICAL = (exp.And, exp.Or, exp.Not, exp.Xor)


def _parse_error_message(error: ParseError) -> str:
    """Line, column (of the token's first character), the token, and what was expected."""
    if not error.errors:
        return "Invalid filter: the filter is empty"
    detail = error.errors[0]
    highlight = detail.get("highlight") or ""
    column = detail["col"]
    if highlight and "\n" not in highlight:
        column -= len(highlight) - 1  # sqlglot reports the column of the token's last character
    near = f" near {highlight!r}" if highlight else ""
    return f"Invalid filter at line {detail['line']}, column {column}{near}: {_describe(detail['description'])}"


_OPERATOR_TEXT = {
    "EQ": "'='",
    "NEQ": "'!='",
    "LT": "'<'",
    "LTE": "'<='",
    "GT": "'>'",
    "GTE": "'>='",
    "And": "AND",
    "Or": "OR",
    "Not": "NOT",
    "Like": "LIKE",
    "In": "IN",
    "Is": "IS",
}


def _describe(description: str) -> str:
    """sqlglot's parser message in the filter's terms."""
    if m := re.fullmatch(r"Required keyword: '\w+' missing for <class '(?:\w+\.)*(\w+)'>", description):
        return f"expected an operand for {_OPERATOR_TEXT.get(m[1], m[1])}"
    if description.startswith("Expecting "):
        return f"expected '{description.removeprefix('Expecting ')}'"
    if description == "Invalid expression / Unexpected token":
        return "unexpected text; expected an operator, AND, OR, or the end of the filter"
    return description


def _token_error_message(text: str, error: TokenError) -> str:
    """The tokenizer reports 'Missing ' from LINE:OFFSET' (its cause) for an unterminated quote."""
    cause = str(error.__cause__ or error)
    if m := re.fullmatch(r"(.*) from \d+:(\d+)", cause):
        line, column = _line_column(text, int(m[2]))
        what = m[1]
        if what.startswith("Missing "):
            what = f"unterminated quote: expected a closing {what.removeprefix('Missing ')}"
        elif what.startswith("Numeric string contains invalid characters"):
            what = "a hexadecimal literal X'..' may contain only the digits 0-9 and A-F"
        return f"Invalid filter at line {line}, column {column}: {what}"
    return f"Invalid filter: cannot read the text {str(error).removeprefix('Error tokenizing ')}"


def _line_column(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of a character offset."""
    before = text[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


def _position(text: str, node: exp.Expr) -> str:
    """' at line L, column C: <the node as SQL>', from the first token under the node that sqlglot placed."""
    starts = [n.meta["start"] for n in node.walk() if "start" in n.meta]
    where = " at line {}, column {}".format(*_line_column(text, min(starts))) if starts else ""
    return f"{where} in {quoted(node.sql(dialect=_FilterDialect))}"


# --- Conditions: one function per sqlglot node type -------------------------------------------------------


def _condition(node: exp.Expr) -> Expression:
    """Translate a boolean-valued node."""
    translate = _CONDITIONS.get(type(node))
    if translate is None:
        raise _Unsupported(
            node,
            "unsupported syntax; a filter combines comparisons, IN, IS [NOT] NULL/NAN and LIKE with AND, OR, NOT",
        )
    return translate(node)


def _and(node: exp.Expr) -> Expression:
    return and_(_condition(node.this), _condition(node.expression))


def _or(node: exp.Expr) -> Expression:
    return or_(_condition(node.this), _condition(node.expression))


def _not(node: exp.Expr) -> Expression:
    """NOT x; `x NOT IN`, `x IS NOT NULL/NAN` and `NOT x LIKE` become the negated predicate itself."""
    child = node.this
    if isinstance(child, exp.In | exp.Is | exp.Like | exp.Escape) or _is_nan_call(child):
        return _condition(child).negate()
    return not_(_condition(child))


def _paren(node: exp.Expr) -> Expression:
    return _condition(node.this)


def _boolean(node: exp.Expr) -> Expression:
    return TRUE if node.this else FALSE


def _bare_column(node: exp.Expr) -> Expression:
    """A boolean column on its own: `flag` means flag = true."""
    return predicate(Op.EQ, _term(node), Literal("boolean", True))


_COMPARISONS: dict[type[exp.Expr], tuple[Op, Op]] = {  # (op, op with the sides swapped)
    exp.EQ: (Op.EQ, Op.EQ),
    exp.NEQ: (Op.NOT_EQ, Op.NOT_EQ),
    exp.LT: (Op.LT, Op.GT),
    exp.LTE: (Op.LT_EQ, Op.GT_EQ),
    exp.GT: (Op.GT, Op.LT),
    exp.GTE: (Op.GT_EQ, Op.LT_EQ),
}


def _comparison(node: exp.Expr) -> Expression:
    """term OP value, or value OP term (5 < id is id > 5)."""
    op, swapped = _COMPARISONS[type(node)]
    left, right = node.this, node.expression
    if isinstance(left, exp.Null) or isinstance(right, exp.Null):
        hint = "IS NOT NULL" if op is Op.NOT_EQ else "IS NULL"
        raise _Unsupported(node, f"NULL cannot be compared with an operator; use {hint}")
    if _is_nan_column(left) or _is_nan_column(right):
        raise _Unsupported(node, "NaN cannot be compared with an operator; use IS NAN")
    if _is_term(left) and _is_term(right):
        meant = _quoted_column(right) or _quoted_column(left)
        hint = _single_quotes(meant) if meant is not None else "one side must be a literal value"
        raise _Unsupported(node, f"both sides are columns: {hint}")
    if _is_term(left):
        return predicate(op, _term(left), _value(right))
    if _is_term(right):
        return predicate(swapped, _term(right), _value(left))
    raise _Unsupported(node, "a comparison needs a column, or a transform such as bucket(16, id), on one side")


def _in(node: exp.Expr) -> Expression:
    """term IN (v1, v2, ...); NOT IN arrives as Not(In)."""
    if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
        raise _Unsupported(node, "IN takes a list of literal values")
    if not node.expressions:
        raise _Unsupported(node, "IN needs at least one value")
    for item in node.expressions:
        if isinstance(item, exp.Null):
            raise _Unsupported(node, "NULL cannot be an IN value; use IS NULL")
    return predicate(Op.IN, _term(node.this), *(_value(item) for item in node.expressions))


def _is(node: exp.Expr) -> Expression:
    """term IS NULL / IS NAN; IS NOT arrives as Not(Is)."""
    target = node.expression
    if isinstance(target, exp.Null):
        return predicate(Op.IS_NULL, _term(node.this))
    if _is_nan_column(target):
        return predicate(Op.IS_NAN, _term(node.this))
    raise _Unsupported(node, "IS takes NULL or NAN (for a boolean column write col = true)")


def _is_nan_column(node: exp.Expr) -> bool:
    """The word NAN, which sqlglot reads as a column."""
    ident = node.this if isinstance(node, exp.Column) and not node.table else None
    return isinstance(ident, exp.Identifier) and not ident.quoted and ident.name.upper() == "NAN"


def _like(node: exp.Expr, escape: str | None = None) -> Expression:
    """term LIKE 'prefix%' is starts-with; NOT LIKE is not-starts-with."""
    pattern = node.expression
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        raise _Unsupported(node, "LIKE takes a quoted pattern such as 'abc%'")
    op = Op.NOT_STARTS_WITH if node.args.get("negate") else Op.STARTS_WITH
    return predicate(op, _term(node.this), Literal("string", _like_prefix(node, pattern.this, escape)))


def _escape(node: exp.Expr) -> Expression:
    """LIKE 'pattern' ESCAPE 'c': c before % or _ (or itself) makes it an ordinary character."""
    char = node.expression
    if not (isinstance(char, exp.Literal) and char.is_string and len(char.this) == 1):
        raise _Unsupported(node, "ESCAPE takes a single quoted character")
    if not isinstance(node.this, exp.Like):
        raise _Unsupported(node, "ESCAPE applies only to LIKE")
    return _like(node.this, char.this)


def _like_prefix(node: exp.Expr, pattern: str, escape: str | None) -> str:
    """The prefix of a pattern that is literal text followed by exactly one trailing %."""
    prefix: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == escape:
            if i + 1 == len(pattern):
                raise _Unsupported(node, "the LIKE pattern ends with its escape character")
            prefix.append(pattern[i + 1])
            i += 2
            continue
        if char == "%" and i == len(pattern) - 1:
            return "".join(prefix)
        if char in "%_":
            raise _Unsupported(
                node,
                f"unsupported LIKE pattern {pattern!r}: only a prefix followed by one trailing % (e.g. 'abc%') "
                "is supported; '_' and other '%' wildcards are not",
            )
        prefix.append(char)
        i += 1
    raise _Unsupported(node, f"unsupported LIKE pattern {pattern!r}: it must end with % (use = for an exact match)")


def _function(node: exp.Expr) -> Expression:
    """isnan(term) is the one function that is a condition."""
    if _is_nan_call(node):
        return predicate(Op.IS_NAN, _term(node.expressions[0]))
    raise _Unsupported(node, f"{node.name}(...) is not a condition")


def _is_nan_call(node: exp.Expr) -> bool:
    return isinstance(node, exp.Anonymous) and node.name.lower() in _NAN_FUNCTIONS and len(node.expressions) == 1


_CONDITIONS: dict[type[exp.Expr], Callable[[exp.Expr], Expression]] = {
    exp.And: _and,
    exp.Or: _or,
    exp.Not: _not,
    exp.Paren: _paren,
    exp.Boolean: _boolean,
    exp.Column: _bare_column,
    exp.Dot: _bare_column,
    **dict.fromkeys(_COMPARISONS, _comparison),
    exp.In: _in,
    exp.Is: _is,
    exp.Like: _like,
    exp.Escape: _escape,
    exp.Anonymous: _function,
}


# --- Terms: columns and transforms ------------------------------------------------------------------------


def _is_column(node: exp.Expr) -> TypeGuard[exp.Column | exp.Dot]:
    return isinstance(node, exp.Column | exp.Dot) and all(isinstance(p, exp.Identifier) for p in node.parts)


def _is_term(node: exp.Expr) -> bool:
    """A column, a transform call, or either in parentheses."""
    if isinstance(node, exp.Paren):
        return _is_term(node.this)
    return _is_column(node) or (isinstance(node, exp.Anonymous) and node.name.lower() in _TRANSFORMS)


def _term(node: exp.Expr) -> UnboundTerm:
    """A Reference by dotted name (a.b.c; quoted parts keep their spelling), or an UnboundTransform."""
    if isinstance(node, exp.Paren):
        return _term(node.this)
    if _is_column(node):
        return Reference(".".join(part.name for part in node.parts))
    if isinstance(node, exp.Anonymous) and node.name.lower() in _TRANSFORMS:
        return _transform(node, _TRANSFORMS[node.name.lower()])
    raise _Unsupported(node, "expected a column name or a transform such as bucket(16, id)")


def _transform(node: exp.Expr, name: str) -> UnboundTransform:
    """bucket(N, col) and truncate(W, col) as Spark writes them; year/month/day/hour(col)."""
    args = node.expressions
    if name in ("bucket", "truncate"):
        width = args[0] if len(args) == 2 else None
        text = width.this if isinstance(width, exp.Literal) and not width.is_string else ""
        try:
            if not _DIGITS.fullmatch(text):
                raise ValueError(text)
            transform, column = parse_transform(f"{name}[{text}]"), args[1]
        except ValueError:
            raise _Unsupported(
                node,
                f"{name} takes a positive integer (at most {MAX_TRANSFORM_WIDTH}) and a column, e.g. {name}(16, id)",
            ) from None
    elif len(args) == 1:
        transform, column = parse_transform(name), args[0]
    else:
        raise _Unsupported(node, f"{name} takes one column, e.g. {name}(ts)")
    if not _is_column(column):
        raise _Unsupported(node, f"{name} applies to a column")
    return UnboundTransform(Reference(".".join(part.name for part in column.parts)), transform)


# --- Values -----------------------------------------------------------------------------------------------


_LONG_DIGITS = len(str(2**63))  # no long has more digits


def _value(node: exp.Expr) -> Literal:
    """A literal value, its long range checked after any minus sign."""
    lit = _raw_value(node)
    if lit.kind == "long" and not _LONG_MIN <= lit.value <= _LONG_MAX:
        raise _Unsupported(node, "integer out of range for a long; write it as DECIMAL '...'")
    return lit


def _raw_value(node: exp.Expr) -> Literal:
    translate = _VALUES.get(type(node))
    if translate is None:
        meant = _quoted_column(node)
        raise _Unsupported(node, "expected a literal value" + (f": {_single_quotes(meant)}" if meant else ""))
    return translate(node)


def _quoted_column(node: exp.Expr) -> str | None:
    """The name of a column written in quotes ("eu" or `eu`), where a string ('eu') may have been meant."""
    ident = node.this if isinstance(node, exp.Column) and not node.table else None
    return ident.name if isinstance(ident, exp.Identifier) and ident.quoted else None


def _single_quotes(meant: str) -> str:
    """The hint for a value written in double quotes: SQL's strings take single quotes."""
    written = "'" + meant.replace("'", "''") + "'"
    return f"string values take single quotes ({written}), double quotes and backticks name columns"


def _literal(node: exp.Expr) -> Literal:
    """'text' is a string; 10 a long; 1.5 or 1e3 a double (as Iceberg's JSON parser types numbers)."""
    if node.is_string:
        return Literal("string", node.this)
    if _DIGITS.fullmatch(node.this):
        if len(node.this.lstrip("0")) > _LONG_DIGITS:  # (and int() refuses texts of over 4,300 digits)
            raise _Unsupported(
                node, f"integer of {len(node.this)} digits out of range for a long; write it as DECIMAL '...'"
            )
        return Literal("long", int(node.this))
    try:
        return Literal("double", float(node.this))
    except ValueError:
        raise _Unsupported(node, "not a number") from None


def _negative(node: exp.Expr) -> Literal:
    lit = None if isinstance(node.this, exp.Neg) else _raw_value(node.this)
    if lit is None or lit.kind not in ("long", "double", "decimal"):
        raise _Unsupported(node, "a minus sign applies only to a number")
    return Literal(lit.kind, -lit.value)


def _boolean_value(node: exp.Expr) -> Literal:
    return Literal("boolean", bool(node.this))


def _binary(node: exp.Expr) -> Literal:
    try:
        return Literal("binary", bytes.fromhex(node.this))
    except ValueError:
        raise _Unsupported(node, "a binary literal X'..' needs an even number of hex digits") from None


def _paren_value(node: exp.Expr) -> Literal:
    return _raw_value(node.this)


# kind of the literal, the type its text converts as (Literals.convert), the format for messages
_TYPED: dict[exp.DType, tuple[str, str]] = {
    exp.DataType.Type.DATE: ("date", "'YYYY-MM-DD'"),
    exp.DataType.Type.TIME: ("time", "'HH:MM:SS[.ffffff]'"),
    exp.DataType.Type.TIMESTAMP: ("timestamp", "'YYYY-MM-DD HH:MM:SS[.ffffff][Z|+HH:MM]'"),
    exp.DataType.Type.TIMESTAMPTZ: ("timestamp", "'YYYY-MM-DD HH:MM:SS[.ffffff][Z|+HH:MM]'"),
    exp.DataType.Type.TIMESTAMP_NS: ("timestamp_ns", "'YYYY-MM-DD HH:MM:SS[.fffffffff][Z|+HH:MM]'"),
    exp.DataType.Type.DECIMAL: ("decimal", "'12.30' or 12.30BD"),
    exp.DataType.Type.UUID: ("uuid", "'f79c3e09-677c-4bbd-a479-3f349cb785e7'"),
}
_OFFSET = re.compile(r"(Z|[+-]\d{2}:\d{2}(?::\d{2})?)$", re.ASCII)


def _typed(node: exp.Expr) -> Literal:
    """DATE '...', TIME, TIMESTAMP, TIMESTAMP_NS, DECIMAL, UUID, 12.30BD (sqlglot parses them all as casts)."""
    to, text_node = node.args["to"], node.this
    if to.this not in _TYPED or to.expressions:
        raise _Unsupported(node, f"unsupported typed literal {to.sql(dialect=_FilterDialect)}")
    kind, form = _TYPED[to.this]
    if not isinstance(text_node, exp.Literal) or not (text_node.is_string or kind == "decimal"):
        raise _Unsupported(node, f"a {to.this.value} literal takes quoted text: {form}")
    lit = _typed_value(kind, text_node.this)
    if lit is None:
        raise _Unsupported(text_node, f"invalid {to.this.value} value, expected {form}")
    return lit


def _typed_value(kind: str, text: str) -> Literal | None:
    """The text as `kind`, parsed as Iceberg Java parses strings bound to that type; None if invalid."""
    if kind == "decimal":
        try:
            return Literal("decimal", parse_decimal(text))  # the scale is the text's: 12.30 keeps two digits
        except ValueError:
            return None
    target = kind
    if kind.startswith("timestamp"):
        text = text.replace(" ", "T", 1)
        if _OFFSET.search(text):  # an offset: Java's timestamptz parsing converts the instant to UTC
            target = kind.replace("timestamp", "timestamptz")
    converted = convert(Literal("string", text), PrimitiveType(target))
    return converted if isinstance(converted, Literal) else None


_VALUES: dict[type[exp.Expr], Callable[[exp.Expr], Literal]] = {
    exp.Literal: _literal,
    exp.Neg: _negative,
    exp.Boolean: _boolean_value,
    exp.HexString: _binary,
    exp.Cast: _typed,
    exp.Paren: _paren_value,
}
