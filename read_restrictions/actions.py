"""The spec's column-projection actions, by name, and the Iceberg types each is defined for ("Applicable
to" in the spec; a server must not send an action for another type). Types are Iceberg's JSON forms, as a
table's schema writes them: a primitive's name (`decimal(9,2)`, `fixed[16]`) or a struct, list or map
object. `apply-expression` is the spec's too; it is not among these: this implementation does not apply it,
so nothing asks for it."""

from __future__ import annotations

import datetime as dt
import decimal
import re
from typing import Any, Final

STRINGS: Final = frozenset({"string"})
DATES_AND_TIMESTAMPS: Final = frozenset({"date", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"})
HASHABLE: Final = frozenset({"string", "int", "long", "binary"})
HASHED: Final = frozenset({"sha-256-global", "sha-256-query-local"})
ACTIONS: Final = (
    "mask-alphanum",
    "show-first-4",
    "show-last-4",
    "mask-to-default",
    "replace-with-null",
    "truncate-to-year",
    "truncate-to-month",
    "sha-256-global",
    "sha-256-query-local",
)
_ONLY: Final[dict[str, frozenset[str]]] = {
    "mask-alphanum": STRINGS,
    "show-first-4": STRINGS,
    "show-last-4": STRINGS,
    "truncate-to-year": DATES_AND_TIMESTAMPS,
    "truncate-to-month": DATES_AND_TIMESTAMPS,
    "sha-256-global": HASHABLE,
    "sha-256-query-local": HASHABLE,
}
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)", re.ASCII)
_FIXED = re.compile(r"fixed\[\s*(\d+)\s*\]", re.ASCII)
_UTC = dt.UTC
# mask-to-default's value of each primitive type, as Python values (the spec lists them)
_DEFAULTS: Final[dict[str, Any]] = {
    "boolean": False,
    "int": 999999999,
    "long": 999999999,
    "float": 0.0,
    "double": 0.0,
    "string": "XXXXXXXX",
    "date": dt.date(9999, 12, 31),
    "time": dt.time(0, 0),
    "timestamp": dt.datetime(9999, 12, 31),
    "timestamptz": dt.datetime(9999, 12, 31, tzinfo=_UTC),
    "timestamp_ns": dt.datetime(2261, 12, 31),
    "timestamptz_ns": dt.datetime(2261, 12, 31, tzinfo=_UTC),
    "uuid": bytes(16),
    "binary": b"",
}


def applicable(action: str, typ: Any, required: bool) -> str | None:
    """None when `action` is defined for a column of type `typ` (its JSON form; `required`: it holds no
    null), else why it is not, in words."""
    if action not in ACTIONS:
        known = ", ".join(ACTIONS)
        return f"{action!r} is not an action this service applies (it applies {known})"
    if action == "replace-with-null":
        return "replace-with-null needs a column that may hold nulls, and this one is required" if required else None
    if action == "mask-to-default":
        try:
            default_value(typ)
        except ValueError as exc:
            return str(exc)
        return None
    allowed = _ONLY[action]
    if not isinstance(typ, str) or typ not in allowed:
        return f"{action} applies to {', '.join(sorted(allowed))}, not {_type_text(typ)}"
    return None


def default_value(typ: Any) -> Any:
    """mask-to-default's value for a column of type `typ`, as a Python value (a struct's as a dict of its
    fields' defaults, by name); ValueError for a type the spec's list leaves to no value here."""
    if isinstance(typ, str):
        if typ in _DEFAULTS:
            return _DEFAULTS[typ]
        if m := _DECIMAL.fullmatch(typ):
            return decimal.Decimal(0).scaleb(-int(m[2]))
        if m := _FIXED.fullmatch(typ):
            return bytes(int(m[1]))
        raise ValueError(f"mask-to-default has no value here for {typ} columns")
    kind = typ.get("type")
    if kind == "struct":
        return {f["name"]: default_value(f["type"]) for f in typ["fields"]}
    if kind == "list":
        return []
    if kind == "map":
        return []  # (Arrow's map values are lists of key-value pairs)
    raise ValueError(f"mask-to-default has no value here for {_type_text(typ)} columns")


def _type_text(typ: Any) -> str:
    return typ if isinstance(typ, str) else str(typ.get("type", typ))
