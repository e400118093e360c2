"""`?pretty` bodies of any size: compact JSON indented as it streams, in a compiled loop
(planner_service/csrc/json_indent.c), in the layout orjson's OPT_INDENT_2 writes."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from planner_service import _kernels


def indented(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The compact JSON text of `chunks` (cut anywhere) as json_text.dumps(indent=True) writes the whole, a chunk
    at a time: a `?pretty` body of any size costs what its chunks cost, never the body parsed whole."""
    state = bytearray(8)
    for chunk in chunks:
        if out := _kernels.json_indent(chunk, state):
            yield out
    yield b"\n"
