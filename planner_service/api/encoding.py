"""Content-Encoding for large bodies: zstd or gzip, chosen from Accept-Encoding, applied while streaming;
and bodies rendered ahead of their compression by a thread of their own."""

from __future__ import annotations

import queue
import threading
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
        zstd = zstandard.ZstdCompressor(level=1).compressobj()
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


_END = object()


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def rendered_ahead(chunks: Iterator[bytes], depth: int = 2) -> Iterator[bytes]:
    """`chunks`, made by a thread of their own up to `depth` chunks ahead of the consumer: rendering the
    next chunk overlaps compressing and sending this one (both release the GIL). An error is raised where
    the chunk would have been; a consumer that stops early (the client went away) stops the thread."""
    ready: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: object) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for chunk in chunks:
                if not put(chunk):
                    return
            put(_END)
        except BaseException as exc:  # handed to the consumer, raised there
            put(_Failed(exc))

    threading.Thread(target=produce, name="render-ahead", daemon=True).start()
    try:
        while (item := ready.get()) is not _END:
            if isinstance(item, _Failed):
                raise item.error
            assert isinstance(item, bytes)
            yield item
    finally:
        stop.set()
