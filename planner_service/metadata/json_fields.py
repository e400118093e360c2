"""Typed fields of parsed metadata JSON, checked as Iceberg Java's JsonUtil checks them, with its messages.

Java reads an int only from a JSON integer in range ("2" and 1.5 are refused, not converted), a string only
from a JSON string, and so on; a wrong value is a CorruptMetadataError saying which field holds what, as Java
says it ("Cannot parse to an integer value: format-version: \"2\"").

Messages quote the value only inside `quoting_values()`, which the table metadata parser enters once a file
has shown it is table metadata (its format version and location read): until then the file may be any file
under the roots, whose contents an error must not quote back.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

import orjson

from planner_service.errors import CorruptMetadataError

_INT_RANGE = (-(2**31), 2**31 - 1)
_LONG_RANGE = (-(2**63), 2**63 - 1)
_ECHO_CHARS = 200
_QUOTING = contextvars.ContextVar("quoting_values", default=False)
_KINDS = {str: "a string", dict: "an object", list: "an array", bool: "a boolean", int: "a number", float: "a number"}


@contextlib.contextmanager
def quoting_values() -> Iterator[None]:
    token = _QUOTING.set(True)
    try:
        yield
    finally:
        _QUOTING.reset(token)


def echo(value: Any) -> str:
    """A JSON value as Jackson's JsonNode.toString writes it (compact), cut to a readable length; outside
    quoting_values() only its kind ("a string")."""
    if not _QUOTING.get():
        return "null" if value is None else _KINDS.get(type(value), "a value")
    if isinstance(value, float) and value.is_integer() and abs(value) >= 2**63:
        return str(int(value))  # an integer too big for a long, which the parser read as a float
    try:
        text = orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        text = repr(value)
    return text if len(text) <= _ECHO_CHARS else text[:_ECHO_CHARS] + "..."


def _missing(kind: str, key: str) -> CorruptMetadataError:
    return CorruptMetadataError(f"Cannot parse missing {kind}: {key}")


def _present(value: Any, kind: str, key: str) -> Any:
    if value is None:
        raise _missing(kind, key)
    return value


def _integer(node: dict[str, Any], key: str, kind: str, bounds: tuple[int, int]) -> int | None:
    """The integer at `key` within `bounds`, or None when absent; `kind` names it in Java's message."""
    value = node.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not bounds[0] <= value <= bounds[1]:
        raise CorruptMetadataError(f"Cannot parse to {kind} value: {key}: {echo(value)}")
    return value


def get_int_or_none(key: str, node: dict[str, Any]) -> int | None:
    return _integer(node, key, "an integer", _INT_RANGE)


def get_int(key: str, node: dict[str, Any]) -> int:
    return int(_present(get_int_or_none(key, node), "int", key))


def get_long_or_none(key: str, node: dict[str, Any]) -> int | None:
    return _integer(node, key, "a long", _LONG_RANGE)


def get_long(key: str, node: dict[str, Any]) -> int:
    return int(_present(get_long_or_none(key, node), "long", key))


def get_string(key: str, node: dict[str, Any]) -> str:
    value = _present(node.get(key), "string", key)
    if not isinstance(value, str):
        raise CorruptMetadataError(f"Cannot parse to a string value: {key}: {echo(value)}")
    return value


def get_string_or_none(key: str, node: dict[str, Any]) -> str | None:
    return None if node.get(key) is None else get_string(key, node)


def get_bool(key: str, node: dict[str, Any]) -> bool:
    if node.get(key) is None:
        raise _missing("boolean", key)
    value = node[key]
    if not isinstance(value, bool):
        raise CorruptMetadataError(f"Cannot parse to a boolean value: {key}: {echo(value)}")
    return value


def get_string_map(key: str, node: dict[str, Any]) -> dict[str, str]:
    """A map of strings (Java JsonUtil.getStringMap); absent is empty, null is not a map."""
    if key not in node:
        return {}
    value = node[key]
    if not isinstance(value, dict):
        raise CorruptMetadataError(f"Cannot parse string map from non-object value: {key}: {echo(value)}")
    for name, item in value.items():
        if not isinstance(item, str):
            raise CorruptMetadataError(f"Cannot parse to a string value: {name}: {echo(item)}")
    return dict(value)


def get_object(key: str, node: dict[str, Any], what: str) -> dict[str, Any]:
    value = node.get(key)
    if not isinstance(value, dict):
        raise CorruptMetadataError(f"Cannot parse {what} from non-object: {echo(value)}")
    return value


def get_array(key: str, node: dict[str, Any], what: str | None = None) -> list[Any]:
    """An array (absent is an error: "Cannot parse missing list"); `what` names it in Java's message for a
    value that is not an array ("Cannot parse schemas from non-array: ...")."""
    value = node.get(key)
    if value is None:
        raise _missing("list", key)
    if not isinstance(value, list):
        raise CorruptMetadataError(f"Cannot parse {what or key} from non-array: {echo(value)}")
    return value


def require_object(value: Any, problem: str) -> dict[str, Any]:
    """`value` if it is an object, else an error: `problem` ("Cannot parse struct field from non-object")
    followed by the value."""
    if not isinstance(value, dict):
        raise CorruptMetadataError(f"{problem}: {echo(value)}")
    return value
