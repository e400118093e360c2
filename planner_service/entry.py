"""The `scan-planner` command. It sets the process's allocator policy before anything loads polars, then
runs the CLI (planner_service.cli).

polars allocates through its own jemalloc, which by default keeps freed pages for seconds; a planning
service frees hundreds of MB between plans (decoded manifests, splits, encoding buffers), so it returns
them after 200 ms instead: about 50 MB less peak memory over a few full plans of a 200,000-file table, at
no measurable cost to a plan. glibc's malloc (the compiled decoder's buffers, numpy's arrays) raises its
mmap threshold as large blocks are freed, up to 32 MB, and then keeps freed blocks in its heap: a fixed
1 MB threshold returns every larger block to the system when it is freed, 30 MB less at the peak of a
full plan and 30-70 MB less held between plans, at no measurable cost (256 KB cost a cold plan 70 ms in
page faults). numpy's OpenBLAS starts a thread per core that spins after each BLAS call; the service
makes no call worth threading, so it runs one (spinning threads took 4-8% of the CPU while manifests
decoded). Whatever the environment already sets wins.
"""

from __future__ import annotations

import os

from planner_service.allocator import set_mmap_threshold

JEMALLOC_CONF = "_RJEM_MALLOC_CONF"  # read by polars' jemalloc when it first allocates
BLAS_THREADS = "OPENBLAS_NUM_THREADS"  # read when numpy loads
MMAP_THRESHOLD = "MALLOC_MMAP_THRESHOLD_"  # read by glibc when a process starts (uvicorn's worker processes)


def main() -> int:
    os.environ.setdefault(JEMALLOC_CONF, "dirty_decay_ms:200,muzzy_decay_ms:200")
    os.environ.setdefault(BLAS_THREADS, "1")
    if MMAP_THRESHOLD not in os.environ:
        os.environ[MMAP_THRESHOLD] = str(1 << 20)
        set_mmap_threshold(1 << 20)  # this process started before the variable was set
    from planner_service.cli import main as cli_main

    return cli_main()
