"""What a Spark Python worker does before each task it reads: two fixed costs of pyspark's workers, cut.

* The cycle collector. A reused worker runs gc.collect() after every task (pyspark/daemon.py), a walk of
  every object pyspark, pyarrow, pandas, numpy and this package leave in the worker (about 90,000 after
  the first read): 35 ms of every task when nothing is frozen, 18 ms when only what existed before the
  reader's imports is. settle() freezes what is alive out of the collector before each task: the first
  time after importing the reader's modules and collecting the garbage; later, what is alive at a task's
  start has survived the collection after the last one, so it is long-lived (modules, caches). Frozen
  objects are still freed by reference counting; only a cycle among objects alive at a task's start
  would stay.
* Delayed acknowledgements. On pyspark 4's TCP connection between the JVM and its worker (the default
  until spark.python.unix.domain.socket.enabled), a task's header and its input leave the JVM as two
  writes; Nagle's algorithm holds the second until the first is acknowledged, and the worker's kernel
  delays that acknowledgement for its 40 ms timer, since the worker sends nothing while it waits for the
  input. Every task then waits 40 ms before its first row (measured here: 50 ms per task of nothing, 12 ms
  with the acknowledgement sent at once). hurry_acks() asks the kernel (TCP_QUICKACK, Linux) to send the
  pending acknowledgements of the worker's TCP sockets now, so the input follows at once. pyspark 3.5's
  worker has the same wait before any code of ours runs, where nothing here can reach it.
"""

from __future__ import annotations

import gc
import os
import socket
import stat

__all__ = ["hurry_acks", "settle"]

_SETTLED: list[bool] = []  # whether this process has collected its garbage once


def settle() -> None:
    """Before each task in a Python worker: the cycle collector spared what is alive, pending acks sent."""
    if not _SETTLED:
        _SETTLED.append(True)
        import spark_client.reader
        import spark_client.schema  # noqa: F401

        gc.collect()
    gc.freeze()
    hurry_acks()


def hurry_acks() -> int:
    """Send the pending acknowledgements of this process's TCP sockets now (TCP_QUICKACK on each, which
    changes nothing else); how many sockets took it. 0 where the platform has no TCP_QUICKACK or no
    /proc/self/fd (not Linux)."""
    quickack = getattr(socket, "TCP_QUICKACK", None)
    if quickack is None:
        return 0
    try:
        descriptors = os.listdir("/proc/self/fd")
    except OSError:
        return 0
    done = 0
    for name in descriptors:
        fd = int(name)
        try:
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue
            sock = socket.socket(fileno=fd)  # the same descriptor, detached below: never closed here
        except OSError:  # gone meanwhile, or not a socket Python can wrap
            continue
        try:
            if sock.family in (socket.AF_INET, socket.AF_INET6) and sock.type == socket.SOCK_STREAM:
                sock.setsockopt(socket.IPPROTO_TCP, quickack, 1)
                done += 1
        except OSError:
            pass
        finally:
            sock.detach()
    return done
