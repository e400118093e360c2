"""The glibc allocator controls (planner_service/allocator.py) reach glibc where it is the C library."""

from __future__ import annotations

import platform

import pytest

from planner_service.allocator import release_free_memory, set_mmap_threshold


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_glibc_takes_the_mmap_threshold_and_trims() -> None:
    assert set_mmap_threshold(1 << 20)
    blocks = [bytearray(200_000) for _ in range(200)]  # 40 MB in the arena, under the threshold
    del blocks[:-1]  # freed below the last one: the arena cannot shrink from its top
    assert release_free_memory()  # glibc reports that it gave memory back
