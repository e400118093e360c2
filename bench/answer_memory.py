"""What an answer costs the service to encode, beside another checkout's service in the same run (issue 53):
the peak RSS a fresh service reaches, over its RSS once the plan is made, while a client takes each answer
whole, and how long the answer takes.

    .venv/bin/python bench/answer_memory.py [--files 200000 --manifests 400] [--peer /tmp/old-checkout]

On the bench table (bench/make_table.py, cached), each answer from a fresh service, one after the other:
* `one-task`: the one task a split size of 2^63 - 1 and no open cost make of every file (GET
  /plans/{id}/tasks/0, identity encoding, as Spark's executors ask);
* `one-task-pretty`: the same with ?pretty, as curl users ask;
* `inline-pretty`: the whole plan inline with ?pretty;
* `by-id`: the default answer of the full plan (its id and every task's estimates).
The peer (--peer: a checkout, for instance of the commit before this change, served the same way) takes
the same requests; an answer it refuses is reported as such. Results to --out as JSON and a table on stdout.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import httpx
from common import BENCH, REPO, progress, write_json
from service import Service
from service_bench import BENCH_TABLE, bench_service, bench_table, peer_arguments

ONE_TASK = {"split-size": 2**63 - 1, "file-open-cost": 0}
MB = 1024 * 1024


def _take(service: Service, method: str, path: str, body: dict[str, Any] | None, **params: str) -> dict[str, Any]:
    """One answer taken whole: its status, bytes, seconds and the service's peak RSS growth meanwhile."""
    before = service.rss_bytes()
    service.reset_peak_rss()
    started = time.perf_counter()
    with httpx.Client(base_url=service.url, timeout=1800) as client:
        answer = client.request(method, path, json=body, params=params, headers={"Accept-Encoding": "identity"})
    seconds = time.perf_counter() - started
    return {
        "status": answer.status_code,
        "bytes": len(answer.content),
        "seconds": round(seconds, 3),
        "rss_before_mb": round(before / MB),
        "peak_growth_mb": round((service.peak_rss_bytes() - before) / MB),
        "error": answer.text[:300] if answer.status_code != 200 else None,
    }


def _measure(src: Path, location: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    cases: list[tuple[str, dict[str, Any], str, dict[str, str]]] = [
        ("one-task", {"options": ONE_TASK}, "/tasks/0", {}),
        ("one-task-pretty", {"options": ONE_TASK}, "/tasks/0", {"pretty": ""}),
        ("by-id", {}, "", {}),
    ]
    for name, extra, suffix, params in cases:
        with bench_service(src, location) as service:  # fresh: nothing held from the case before
            plan = httpx.post(f"{service.url}/plan", json={"table": BENCH_TABLE, **extra}, timeout=1800)
            if plan.status_code != 200:
                out[name] = {"status": plan.status_code, "error": plan.text[:300]}
                continue
            if name == "by-id":
                out[name] = _take(service, "POST", "/plan", {"table": BENCH_TABLE, **extra})
            else:
                out[name] = _take(service, "GET", f"/plans/{plan.json()['plan-id']}{suffix}", None, **params)
        progress("answer-memory", f"{src}: {name}: {out[name]}")
    with bench_service(src, location) as service:
        body = {"table": BENCH_TABLE, "inline-task-limit": 10**9}
        httpx.post(f"{service.url}/plan", json=body, timeout=1800)  # planned and kept: only the answer is measured
        out["inline-pretty"] = _take(service, "POST", "/plan", body, pretty="")
    progress("answer-memory", f"{src}: inline-pretty: {out['inline-pretty']}")
    return out


def main() -> int:
    parser = peer_arguments(__doc__)
    parser.add_argument("--out", type=Path, default=BENCH / "results" / "answer-memory.json")
    args = parser.parse_args()
    location = bench_table(args)["metadata_location"]
    results = {"ours": _measure(REPO, location)}
    if args.peer is not None:
        results["peer"] = _measure(args.peer.resolve(), location)
    write_json(args.out, {"files": args.files, "manifests": args.manifests, "results": results})
    print(f"{'answer':<18}{'ours':>40}{'peer':>40}")
    for name in results["ours"]:
        cells = []
        for side in ("ours", "peer"):
            r = results.get(side, {}).get(name)
            if r is None:
                cells.append("")
            elif r.get("status") != 200:
                cells.append(f"refused ({r.get('status')})")
            else:
                cells.append(f"{r['bytes'] / MB:,.0f} MB in {r['seconds']:.1f} s, +{r['peak_growth_mb']} MB peak")
        print(f"{name:<18}{cells[0]:>40}{cells[1]:>40}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
