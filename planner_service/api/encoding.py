"""Content-Encoding for large bodies: zstd or gzip, chosen from Accept-Encoding, applied while streaming."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator

import zstandard

SUPPORTED = ("zstd", "gzip")  # in our order of preference when the client weighs them equally


def negotiate(accept_encoding: str | None) -> str | None:
    """The coding to use for an Accept-Encoding header, or None for the body as it is."""
    if not accept_encoding:
        return None
    weights: dict[str, float] = {}
    for part in accept_encoding.split(","):
        name, _, params = part.strip().partition(";")
        q = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        weights[name.strip().lower()] = q
    best = None
    for coding in SUPPORTED:
        q = weights.get(coding, weights.get("*", 0.0))
        if q > 0 and (best is None or q > weights.get(best, weights.get("*", 0.0))):
            best = coding
    return best


def compressed(chunks: Iterable[bytes], coding: str | None) -> Iterator[bytes]:
    """`chunks` encoded with `coding` (None: unchanged), flushed at the end."""
    if coding is None:
        yield from chunks
        return
    compress: Callable[[bytes], bytes]
    finish: Callable[[], bytes]
    if coding == "zstd":
        zstd = zstandard.ZstdCompressor(level=3).compressobj()
        compress, finish = zstd.compress, zstd.flush
    elif coding == "gzip":
        gzip = zlib.compressobj(1, zlib.DEFLATED, 31)  # level 1: several times faster, a few % larger
        compress, finish = gzip.compress, gzip.flush
    else:
        raise ValueError(f"unsupported coding {coding}")
    for chunk in chunks:
        out = compress(chunk)
        if out:
            yield out
    yield finish()
