"""The fuzzer's long run: as many mutations as asked (mutations.py), in chunks, each chunk judged by Iceberg
Java (java_verdicts.py --fuzz-only, in the Java environment) and planned through a fresh service on
loopback (fuzzing.plan_all, as the suite's fast share is). Prints progress, then a JSON summary: mutations
judged, what Java and the service did, the service's peak RSS, and every finding (exit status 1 if any).

    .venv/bin/python -m tests.hostile.fuzz_run --count 20000 --seed 7

Each chunk is written to a scratch directory and removed after it is planned; a chunk takes about a minute
per 1,000 mutations on two cores.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.conftest import running_service
from tests.hostile.fuzzing import peak_rss_mb, plan_all, service_pid
from tests.hostile.verdicts import SCRIPT

LIMIT_MIB = 32


def log(message: str) -> None:
    print(f"[fuzz] {message}", file=sys.stderr, flush=True)


def java_env() -> dict[str, object]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    import java_env as env_module  # the same environment the suite builds

    return dict(env_module.ensure_java_env())


def judge_chunk(env: dict[str, object], seed: int, start: int, count: int, out: Path) -> dict[str, object]:
    cmd = [
        str(env["python"]),
        str(SCRIPT),
        "--out",
        str(out),
        "--jars",
        ",".join(env["jars"]),  # type: ignore[arg-type]
        "--fuzz-only",
        "--fuzz-seed",
        str(seed),
        "--fuzz-start",
        str(start),
        "--fuzz-count",
        str(count),
    ]
    environment = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "PYSPARK_SUBMIT_ARGS")}
    done = subprocess.run(cmd, env={**environment, "JAVA_HOME": str(env["java_home"])}, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"java_verdicts.py failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return json.loads((out / "verdicts.json").read_text())  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=20_000, help="mutations in all")
    parser.add_argument("--seed", type=int, default=7, help="the fuzzer's seed (the suite uses 1)")
    parser.add_argument("--chunk", type=int, default=2_000, help="mutations per Java run and service")
    parser.add_argument("--deadline", type=float, default=30.0, help="seconds a plan may take")
    parser.add_argument("--keep", action="store_true", help="keep the chunks that have findings")
    args = parser.parse_args()
    env = java_env()
    started = time.monotonic()
    findings: dict[str, str] = {}
    totals: collections.Counter[str] = collections.Counter()
    peak = 0.0
    for start in range(0, args.count, args.chunk):
        count = min(args.chunk, args.count - start)
        scratch = Path(tempfile.mkdtemp(prefix="fuzz-chunk-"))
        found: dict[str, str] = {}
        outcomes: collections.Counter[str] = collections.Counter()
        try:
            verdicts = judge_chunk(env, args.seed, start, count, scratch)
            judged = {n: v for n, v in verdicts["fuzz"].items() if v["stage"] != "unwritable"}  # type: ignore[attr-defined]
            totals["unwritable"] += count - len(judged)
            limit = {"SCAN_PLANNER_MAX_INFLATED_BYTES": str(LIMIT_MIB * 1024 * 1024)}
            log_path = scratch / "service.log"
            with running_service("--warehouse", str(scratch / "warehouse"), env=limit, log_path=log_path) as url:
                found, outcomes = plan_all(url, judged, args.deadline)
                peak = max(peak, peak_rss_mb(service_pid(url), "VmHWM"))
        finally:
            if not (args.keep and found):
                shutil.rmtree(scratch, ignore_errors=True)
        if args.keep and found:
            log(f"kept {scratch} (findings)")
        findings.update(found)
        totals.update(outcomes)
        log(
            f"{start + count} of {args.count} mutations in {time.monotonic() - started:.0f}s: "
            f"{len(findings)} findings, {dict(totals)}"
        )
    print(
        json.dumps(
            {
                "seed": args.seed,
                "mutations": args.count,
                "outcomes": dict(totals),
                "service_peak_rss_mb": round(peak),
                "max_inflated_mib": LIMIT_MIB,
                "findings": findings,
            },
            indent=1,
        )
    )
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
