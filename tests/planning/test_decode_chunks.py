"""How the planner cuts the manifests it must decode into chunks for its threads."""

from __future__ import annotations

import pytest

from planner_service.planning.manifest_reader import MAX_DECODE_CHUNK, MAX_STATS_CHUNK, chunk_size


@pytest.mark.parametrize(
    ("manifests", "threads", "size"),
    [
        (0, 4, 1),
        (1, 4, 1),
        (7, 4, 1),  # fewer manifests than two per thread: one each
        (9, 4, 2),
        (400, 4, 50),  # two chunks per thread
        (400, 1, MAX_DECODE_CHUNK),
        (4000, 4, MAX_DECODE_CHUNK),
        (10, 0, 5),  # (a pool of no threads is not made; the rule still divides)
    ],
)
def test_about_two_chunks_per_thread_and_no_more_than_the_maximum(manifests: int, threads: int, size: int) -> None:
    assert chunk_size(manifests, threads) == size
    if manifests:
        chunks = -(-manifests // size)
        assert chunks <= max(2 * max(threads, 1), -(-manifests // MAX_DECODE_CHUNK))


def test_statistics_are_added_in_smaller_chunks() -> None:
    """Statistics joining indexes decoded without them: chunks of at most MAX_STATS_CHUNK manifests."""
    assert MAX_STATS_CHUNK < MAX_DECODE_CHUNK
    assert chunk_size(400, 2, MAX_STATS_CHUNK) == MAX_STATS_CHUNK
    assert chunk_size(400, 2) == MAX_DECODE_CHUNK
    assert chunk_size(20, 2, MAX_STATS_CHUNK) == 5  # still two chunks a thread when they are small
