"""JSON text of Python values: orjson, and the standard library for values nested deeper than orjson
writes (255 levels; a filter of a few hundred nested ANDs or NOTs is that deep)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import orjson


def dumps(value: Any, *, sort_keys: bool = False, indent: bool = False) -> bytes:
    """Compact JSON (`indent`: two spaces and a final newline); numpy arrays and numbers as JSON."""
    option = orjson.OPT_SERIALIZE_NUMPY
    option |= orjson.OPT_SORT_KEYS if sort_keys else 0
    option |= orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE if indent else 0
    try:
        return orjson.dumps(value, option=option)
    except orjson.JSONEncodeError as exc:
        if "Recursion limit" not in str(exc):
            raise
    text = json.dumps(
        value,
        sort_keys=sort_keys,
        indent=2 if indent else None,
        ensure_ascii=False,
        separators=(",", ": ") if indent else (",", ":"),
        default=_plain,
    )
    return (text + "\n" if indent else text).encode()


MAX_PARSED_DEPTH = 1024  # orjson's limit, checked while parsing: nothing recurses over a deeper value


def parse_json(data: bytes | str) -> Any:
    """Parsed JSON, nested at most MAX_PARSED_DEPTH levels (ValueError otherwise, as for any bad JSON):
    metadata files, catalog answers and requests are parsed so, never by a parser that recurses unbounded."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if "depth limit" in str(exc):
            raise ValueError(f"the JSON nests deeper than {MAX_PARSED_DEPTH:,} levels") from None
        raise


def without_nulls(fields: dict[str, Any]) -> dict[str, Any]:
    """`fields` less the keys whose value is None: the optional fields of a JSON object, in their order."""
    return {key: value for key, value in fields.items() if value is not None}


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")
