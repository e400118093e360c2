"""Bodies rendered ahead of their compression: the same chunks in the same order, errors where they
happen, and a consumer that stops early (a client gone) stops the rendering thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Generator, Iterator

import pytest
import zstandard

from planner_service.api.encoding import compressed, rendered_ahead


def test_chunks_arrive_in_order_and_compress_the_same() -> None:
    chunks = [f"chunk {i};".encode() * (i + 1) for i in range(50)]
    assert list(rendered_ahead(iter(chunks))) == chunks
    body = b"".join(compressed(rendered_ahead(iter(chunks)), "zstd"))
    assert zstandard.ZstdDecompressor().decompressobj().decompress(body) == b"".join(chunks)


def test_an_error_is_raised_after_the_chunks_before_it() -> None:
    def failing() -> Iterator[bytes]:
        yield b"a"
        yield b"b"
        raise ValueError("rendering failed")

    seen = []
    with pytest.raises(ValueError, match="rendering failed"):
        for chunk in rendered_ahead(failing()):
            seen.append(chunk)
    assert seen == [b"a", b"b"]


def test_a_consumer_that_stops_stops_the_producer() -> None:
    produced = []

    def endless() -> Iterator[bytes]:
        while True:
            produced.append(1)
            yield b"x"

    before = threading.active_count()
    stream = rendered_ahead(endless(), depth=2)
    assert isinstance(stream, Generator)  # closable, as Starlette expects of a streamed body
    assert next(stream) == b"x"
    stream.close()  # what Starlette does when the client disconnects
    deadline = time.monotonic() + 5
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() == before
    assert len(produced) <= 5  # at most depth ahead (and one in hand), not an endless render
