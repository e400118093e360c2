"""Where a cold full plan's time goes, stage by stage, beside the floor (inflating the manifests alone).

    .venv/bin/python bench/cold_stages.py [--files 200000 --manifests 400] [--repeat 3] [--src DIR]

On the bench table (bench/make_table.py: built with Iceberg Java when missing, then cached), in one
process of the checkout --src:
1. the cold full plan as the service makes it (ScanPlanner.plan, a fresh planner each time, its pool of
   threads): wall and CPU seconds, and the planner's own stage timings; then the same with the planner's
   threads at 1 and at 2, alternated (--threads): the speedup, the serial share it implies (Amdahl:
   s = (2 / speedup - 1)) and what that share allows on 8 and 16 cores;
2. the same work one stage at a time on one thread, each stage's wall time: read (the manifests' bytes from
   the page cache), inflate (Avro framing and deflate), decode (the entries into columns, chunks of
   manifests as the planner groups them), assemble (the chunks as one index, content checked), prune and
   residuals (the filter's mask; none for a full plan), split and pack (plan_tasks), JSON (the inline body);
3. the floor: inflating every manifest's deflate blocks alone (ISA-L, as the codec), on one thread and on two.
The sum of (2) against the wall of (1) says how much the pool overlaps; (3) is what no planner goes below.
Prints a table and writes --out as JSON.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from common import BENCH, load_java_env, progress, read_marker, table_dir, write_json
from plan_bench import ensure_table, java_environment


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=200_000)
    parser.add_argument("--manifests", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measurement; the median is kept")
    parser.add_argument("--src", type=Path, help="the checkout whose planner_service to time (default: this one)")
    parser.add_argument("--out", type=Path, default=BENCH / "results" / "cold-stages.json")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds building the table may take")
    args = parser.parse_args()
    if args.src is not None:
        sys.path.insert(0, str(args.src.resolve()))
    marker = read_marker(table_dir(args.files, args.manifests))
    if marker is None:  # built with Iceberg Java, then cached
        env = load_java_env().ensure_java_env()
        marker = ensure_table(args, {**env, "env": java_environment(env["java_home"])})
    results = measure(marker["metadata_location"], args.repeat)
    results["threads"] = scaling(marker["metadata_location"], args.repeat)
    results["table"] = {"files": args.files, "manifests": args.manifests}
    for line in report(results):
        print(line)
    write_json(args.out, results)
    return 0


def measure(location: str, repeat: int) -> dict[str, Any]:
    plans = []
    for run in range(repeat):
        progress("cold-stages", f"cold plan {run + 1}/{repeat}")
        plans.append(_cold_plan(location, None))
    stages = [_stages(location, run, repeat) for run in range(repeat)]
    return {
        "plan": {
            "wall_s": statistics.median(p[0] for p in plans),
            "cpu_s": statistics.median(p[1] for p in plans),
            "planner_stages_ms": {k: statistics.median(p[2][k] for p in plans) for k in plans[0][2]},
        },
        "stages_s": {k: statistics.median(s[k] for s in stages) for k in stages[0] if not k.startswith("floor")},
        "floor_s": {k: statistics.median(s[k] for s in stages) for k in stages[0] if k.startswith("floor")},
    }


def _cold_plan(location: str, threads: int | None) -> tuple[float, float, dict[str, float]]:
    """A cold full plan by a fresh planner of `threads` threads (None: the default): wall and CPU seconds,
    and the planner's stage timings (ms)."""
    from planner_service.catalog.base import load_by_metadata_location
    from planner_service.io.fileio import FileIO
    from planner_service.planning.planner import ScanPlanner
    from planner_service.planning.scan_request import scan_request

    io = FileIO()
    planner = ScanPlanner(io) if threads is None else ScanPlanner(io, threads=threads)
    table = load_by_metadata_location(io, location)
    wall, cpu = time.perf_counter(), time.process_time()
    plan = planner.plan(table, scan_request())
    out = time.perf_counter() - wall, time.process_time() - cpu, dict(plan.metrics.stage_ms)
    planner.close()
    return out


def scaling(location: str, repeat: int) -> dict[str, Any]:
    """Cold plans on 1 and on 2 threads, alternated (medians); the serial share that speedup implies."""
    walls: dict[int, list[float]] = {1: [], 2: []}
    for run in range(repeat):
        for threads in (1, 2):
            progress("cold-stages", f"cold plan on {threads} thread(s), {run + 1}/{repeat}")
            walls[threads].append(_cold_plan(location, threads)[0])
    one, two = statistics.median(walls[1]), statistics.median(walls[2])
    speedup = one / two
    serial = min(max(2 / speedup - 1, 0.0), 1.0)  # Amdahl: speedup(n) = 1 / (s + (1 - s) / n)
    return {
        "wall_1_s": one,
        "wall_2_s": two,
        "speedup_2": speedup,
        "serial_share": serial,
        "amdahl": {n: 1 / (serial + (1 - serial) / n) for n in (8, 16)},
    }


def _stages(location: str, run: int, repeat: int) -> dict[str, float]:
    """Each stage of a cold full plan alone, on this thread, in seconds; and the inflate floor."""
    from planner_service.catalog.base import load_by_metadata_location
    from planner_service.io.fileio import FileIO
    from planner_service.metadata.avro_columns import read_container
    from planner_service.metadata.manifest import ManifestBlocks, live_entries
    from planner_service.metadata.manifest_list import DATA_MANIFEST
    from planner_service.planning import manifest_reader
    from planner_service.planning.options import resolve_split_options
    from planner_service.planning.planned_files import FileTaskColumns
    from planner_service.planning.planner import ScanPlanner
    from planner_service.planning.row_filter import RowFilter
    from planner_service.planning.scan_request import scan_request
    from planner_service.planning.task_planning import GroupBy, plan_tasks
    from planner_service.splitting.combine import Packing
    from planner_service.wire.plan_json import encode_plan

    progress("cold-stages", f"stages one at a time {run + 1}/{repeat}")
    io = FileIO()
    table = load_by_metadata_location(io, location)
    meta = table.metadata
    planner = ScanPlanner(io, threads=1)
    assert meta.current_snapshot is not None
    manifests = [m for m in planner.manifests.manifest_list(meta.current_snapshot) if m.content == DATA_MANIFEST]
    out: dict[str, float] = {}

    def timed(name: str, work: Any) -> Any:
        start = time.perf_counter()
        result = work()
        out[name] = time.perf_counter() - start
        return result

    data = timed("read", lambda: [planner.io.read(m.manifest_path, m.manifest_length) for m in manifests])
    containers = timed("inflate", lambda: [read_container(d, io.max_inflated) for d in data])
    blocks = [ManifestBlocks(m, m.manifest_path, c) for m, c in zip(manifests, containers, strict=True)]
    size = manifest_reader.chunk_size(len(blocks), 4)
    chunks = [blocks[i : i + size] for i in range(0, len(blocks), size)]
    indexes = timed("decode", lambda: [index for chunk in chunks for index in live_entries(chunk, False)])
    index = timed("assemble", lambda: manifest_reader._of_their_content(manifests, indexes))
    row_filter = RowFilter(scan_request().row_filter, meta.schema, meta.specs, True)

    def prune() -> FileTaskColumns:
        import numpy as np

        rows = np.flatnonzero(row_filter.file_mask(index)).astype(np.int64)
        return FileTaskColumns(index, rows, *row_filter.residuals(index, rows))

    files = timed("prune_and_residuals", prune)
    options = resolve_split_options(None, meta.properties)
    packing = Packing(split_size=options.split_size, lookback=options.lookback, open_file_cost=options.open_file_cost)
    timed("split_and_pack", lambda: plan_tasks(files, packing, GroupBy("none", meta.specs, meta.schema)))
    plan = planner.plan(table, scan_request())
    timed("json_inline", lambda: sum(len(chunk) for chunk in encode_plan(plan)))
    planner.close()

    from isal import isal_zlib

    from planner_service import _kernels

    raw = [bytes(memoryview(d)[start : start + size]) for d in data for _, start, size in _kernels.avro_framing(d)[2]]

    def inflate(blocks: list[bytes]) -> None:  # raw deflate alone, as the codec does it (ISA-L)
        for block in blocks:
            isal_zlib.decompress(block, -15)

    timed("floor_inflate_1_thread", lambda: inflate(raw))
    with ThreadPoolExecutor(2) as pool:
        halves = [raw[0::2], raw[1::2]]
        timed("floor_inflate_2_threads", lambda: list(pool.map(inflate, halves)))
    return out


def report(results: dict[str, Any]) -> list[str]:
    plan, stages, floor = results["plan"], results["stages_s"], results["floor_s"]
    table = results.get("table", {})
    lines = [
        f"Cold full plan of {table.get('files', '?'):,} files in {table.get('manifests', '?'):,} manifests "
        f"(ScanPlanner.plan, fresh): {plan['wall_s'] * 1000:,.0f} ms wall, {plan['cpu_s'] * 1000:,.0f} ms CPU",
        "  the planner's stages: " + ", ".join(f"{k} {v:,.0f} ms" for k, v in plan["planner_stages_ms"].items()),
        "One stage at a time, one thread:",
    ]
    lines += [f"  {name:<22} {seconds * 1000:>9,.0f} ms" for name, seconds in stages.items()]
    total = sum(v for k, v in stages.items() if k != "json_inline")
    lines.append(f"  {'sum (to the tasks)':<22} {total * 1000:>9,.0f} ms")
    lines.append("Floor:")
    lines += [f"  {name:<22} {seconds * 1000:>9,.0f} ms" for name, seconds in floor.items()]
    threads = results.get("threads")
    if threads:
        lines.append(
            f"Threads: 1 {threads['wall_1_s'] * 1000:,.0f} ms, 2 {threads['wall_2_s'] * 1000:,.0f} ms: "
            f"{threads['speedup_2']:.2f}x; serial share {threads['serial_share']:.2f} (Amdahl: "
            + ", ".join(f"{n} cores {v:.1f}x" for n, v in threads["amdahl"].items())
            + ")"
        )
    lines.append(
        f"Cold plan / floor (2 threads): {plan['wall_s'] / floor['floor_inflate_2_threads']:.1f}x; "
        f"/ floor (1 thread): {plan['wall_s'] / floor['floor_inflate_1_thread']:.1f}x"
    )
    return lines


if __name__ == "__main__":
    sys.exit(main())
