"""What a Python worker does before each task (spark_client/worker.py), on real sockets and the real collector."""

from __future__ import annotations

import gc
import socket
import sys
from collections.abc import Iterator

import pytest

from spark_client.worker import hurry_acks, settle


@pytest.fixture
def connection() -> Iterator[tuple[socket.socket, socket.socket]]:
    """Both ends of a TCP connection on loopback, as a worker and its JVM hold them."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        accepted, _ = server.accept()
    with client, accepted:
        yield client, accepted


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="TCP_QUICKACK and /proc/self/fd are Linux's")
def test_pending_acks_are_sent_on_every_tcp_socket_which_stays_open(
    connection: tuple[socket.socket, socket.socket],
) -> None:
    client, accepted = connection
    unix_a, unix_b = socket.socketpair()  # not TCP: left alone
    with unix_a, unix_b:
        assert hurry_acks() >= 2
        for end in (client, accepted):
            assert end.getsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK) == 1
        client.sendall(b"input")  # the descriptors were borrowed, not closed
        assert accepted.recv(16) == b"input"
        unix_a.sendall(b"x")
        assert unix_b.recv(1) == b"x"


def test_settle_freezes_what_is_alive_each_time() -> None:
    try:
        settle()
        first = gc.get_freeze_count()
        assert first > 0
        kept = [[i] for i in range(100)]  # tracked containers alive at the next task's start: long-lived, frozen then
        assert {id(k) for k in kept} <= {id(o) for o in gc.get_objects()}  # in the collector's generations
        settle()
        # frozen: out of every generation (the freeze count itself moves with what other threads free meanwhile)
        assert not {id(k) for k in kept} & {id(o) for o in gc.get_objects()}
    finally:
        gc.unfreeze()
