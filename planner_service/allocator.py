"""glibc's malloc, tuned from Python through ctypes (a no-op where the C library is not glibc).

The compiled decoder's buffers, the inflated manifest blocks and numpy's arrays come from glibc's malloc.
Blocks under the mmap threshold live in per-thread arenas, which return freed memory to the system only
from their top: a chunk of manifests inflated and decoded by a thread leaves its arena holding tens of MB
that the next plan may never reuse. `release_free_memory` (malloc_trim) hands the free pages of every arena
back after a batch of decoding.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache
from typing import Any

M_MMAP_THRESHOLD = -3  # mallopt's parameter number (glibc malloc.h)


@cache
def _libc() -> Any:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None


def set_mmap_threshold(size: int) -> bool:
    """mallopt(M_MMAP_THRESHOLD, size): blocks of `size` bytes or more are mapped on their own and
    returned to the system when freed. False where the C library is not glibc."""
    libc = _libc()
    return bool(libc is not None and libc.mallopt(M_MMAP_THRESHOLD, size))


def release_free_memory() -> bool:
    """malloc_trim(0): the free pages of every arena back to the system. False where not glibc."""
    libc = _libc()
    return bool(libc is not None and libc.malloc_trim(0))
