"""The index's disk tier (issue 57), from the user's seat: an HTTP client timing POST /plan until it has the whole
body (the default answer: a full plan's id and task count, a one-file plan's tasks), each figure beside the
in-process warm figure of the same run.

    .venv/bin/python bench/index_tier_bench.py [--files 2000000 --manifests 4000] [--repeat 3]

On the bench table (bench/make_table.py; built once with Iceberg Java and cached), one service at a time, each
without a plan cache or spill (every request plans: "warm" is the index warm in the process's memory, not a
plan kept whole):
1. without the tier (index_directory ""): the cold full plan of a fresh service (today's cold plan), then its
   warm full plans (the median of --repeat) and a warm one-file plan (`id = X`: every manifest's statistics read);
2. with the tier, an empty directory: the cold full plan of a never-seen table (decoding, and writing in the
   background), then the one-file plan (statistics decoded and written);
3. restarts: fresh services over the filled directory, each planning first a full plan, or first a one-file
   plan; the full-plan service's RSS and anonymous memory (RssAnon) over its idle figures, per file;
4. a second worker: a second fresh service over the directory while the first still runs (what a worker of
   `serve --workers 2` is: another process sharing the directory), its first full plan, and both processes'
   proportional set sizes (PSS: shared pages counted once between them);
5. the directory's bytes per file.
Prints the table of figures and ratios; writes --out as JSON.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from common import BENCH, REPO, progress, write_json
from service import Service
from service_bench import BENCH_TABLE, bench_service, bench_table

MB = 1024 * 1024


def plan_ms(service: Service, body: dict[str, Any]) -> float:
    """POST /plan until the whole body is received, on a new connection."""
    started = time.perf_counter()
    with httpx.Client(base_url=service.url, timeout=3600) as client:
        answer = client.post("/plan", json=body, headers={"Accept-Encoding": "zstd"})
        answer.read()
    elapsed = (time.perf_counter() - started) * 1000
    if answer.status_code != 200:
        raise RuntimeError(f"/plan answered {answer.status_code}: {answer.text[:300]}")
    return elapsed


def memory(pid: int) -> dict[str, int]:
    """RSS, anonymous RSS and PSS (bytes) of a process."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "RssAnon", "RssFile"):
            out[name] = int(value.split()[0]) * 1024
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("Pss", "Pss_Anon", "Pss_File"):
            out[name] = int(value.split()[0]) * 1024
    return out


def tier_metric(service: Service, what: str) -> float:
    for line in httpx.get(f"{service.url}/metrics", timeout=30).text.splitlines():
        if line.startswith(f'scan_planner_index_tier{{what="{what}"}}'):
            return float(line.split()[-1])
    return -1.0


def settled(service: Service, seconds: float = 900) -> None:
    """Wait until the service's background writes to the tier are done (none pending, the count still)."""
    deadline, last = time.monotonic() + seconds, -2.0
    while time.monotonic() < deadline:
        now = tier_metric(service, "writes")
        if now == last and tier_metric(service, "pending") <= 0:
            return
        last = now
        time.sleep(2)


def run(args: argparse.Namespace) -> dict[str, Any]:
    table = bench_table(args)
    location, files = table["metadata_location"], args.files
    full = {"table": BENCH_TABLE}
    one = {
        "table": BENCH_TABLE,
        "filter": {"type": "eq", "term": "id", "value": table["one_percent"]["id_range"]["min"]},
    }
    src = args.src.resolve()
    out: dict[str, Any] = {"files": files, "manifests": args.manifests}
    with tempfile.TemporaryDirectory(prefix="bench-index-tier-") as directory:
        replans = {"SCAN_PLANNER_PLAN_CACHE_BYTES": "1", "SCAN_PLANNER_PLAN_SPILL_DIRECTORY": ""}
        tier = {**replans, "SCAN_PLANNER_INDEX_DIRECTORY": str(Path(directory) / "index")}
        off = {**replans, "SCAN_PLANNER_INDEX_DIRECTORY": ""}
        progress("bench", "--- without the tier: cold, warm full plans; a warm one-file plan")
        with bench_service(src, location, off) as service:
            out["off_cold_full_ms"] = plan_ms(service, full)
            out["off_warm_full_ms"] = statistics.median(plan_ms(service, full) for _ in range(args.repeat))
            plan_ms(service, one)
            out["off_warm_one_ms"] = statistics.median(plan_ms(service, one) for _ in range(args.repeat))
        progress("bench", "--- with the tier, never seen: cold full plan (writing), then a one-file plan")
        with bench_service(src, location, tier) as service:
            out["tier_cold_full_ms"] = plan_ms(service, full)
            settled(service)
            out["tier_cold_one_ms"] = plan_ms(service, one)
            settled(service)
            out["tier_writes"] = tier_metric(service, "writes")
        index = Path(directory) / "index"
        out["disk_bytes"] = sum(p.stat().st_size for p in index.glob("seg-*"))  # (the links: inodes, no blocks)
        out["disk_core_bytes"] = sum(p.stat().st_size for p in index.glob("seg-*.core"))
        out["disk_assembly_bytes"] = sum(p.stat().st_size for p in index.glob("asm-*"))
        progress("bench", "--- restarted: a one-file plan first")
        with bench_service(src, location, tier) as service:
            out["restart_one_ms"] = plan_ms(service, one)
        progress("bench", "--- restarted: a full plan first; a second process beside it")
        with bench_service(src, location, tier) as service:
            idle = memory(service.pid)
            out["restart_full_ms"] = plan_ms(service, full)
            after = memory(service.pid)
            out["restart_warm_full_ms"] = statistics.median(plan_ms(service, full) for _ in range(args.repeat))
            out["memory_idle"], out["memory_after_full"] = idle, after
            with bench_service(src, location, tier) as second:
                out["second_full_ms"] = plan_ms(second, full)
                out["memory_two"] = [memory(service.pid), memory(second.pid)]
            out["tier_hits"] = tier_metric(service, "hits")
    return out


def report(r: dict[str, Any]) -> None:
    files = r["files"]
    warm = r["off_warm_full_ms"]
    anon = (r["memory_after_full"]["RssAnon"] - r["memory_idle"]["RssAnon"]) / files
    rss = (r["memory_after_full"]["VmRSS"] - r["memory_idle"]["VmRSS"]) / files
    rows = [
        ("full plan after a restart", r["restart_full_ms"], warm, 1.5),
        ("full plan, a second process's first", r["second_full_ms"], warm, 1.5),
        ("full plan, warm, restarted from the tier", r["restart_warm_full_ms"], warm, None),
        ("one-file plan after a restart", r["restart_one_ms"], r["off_warm_one_ms"], None),
        ("never-seen table, cold full plan, tier on", r["tier_cold_full_ms"], r["off_cold_full_ms"], 1.0),
        ("full plan without the tier, cold", r["off_cold_full_ms"], warm, None),
    ]
    print(f"\n{files:,} files in {r['manifests']:,} manifests; peer: the warm in-process plan of the same run\n")
    print(f"| {'':45} | {'ms':>10} | {'peer ms':>10} | ratio | target |")
    for name, ours, peer, target in rows:
        goal = "" if target is None else f"<= {target}x"
        print(f"| {name:45} | {ours:10,.0f} | {peer:10,.0f} | {ours / peer:5.2f} | {goal:6} |")
    print(
        f"\nafter the full plan from the tier: RSS +{rss:,.0f} B a file, anonymous +{anon:,.0f} B a file "
        "(target <= 100); "
        f"disk {r['disk_bytes'] / files:,.0f} B a file in segments ({r['disk_core_bytes'] / files:,.0f} B without "
        f"statistics; assemblies {r.get('disk_assembly_bytes', 0) / files:,.0f} B; "
        f"target <= 150); two processes' PSS "
        f"{sum(m['Pss'] for m in r['memory_two']) / MB:,.0f} MB (anonymous "
        f"{sum(m['Pss_Anon'] for m in r['memory_two']) / MB:,.0f} MB)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=2_000_000)
    parser.add_argument("--manifests", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds building the table may take")
    parser.add_argument("--src", type=Path, default=REPO, help="the checkout whose service is measured")
    parser.add_argument("--out", type=Path, default=BENCH / "results" / "index-tier.json")
    args = parser.parse_args()
    results = run(args)
    write_json(args.out, results)
    report(results)


if __name__ == "__main__":
    sys.exit(main())
