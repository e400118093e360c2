"""The differential fuzzer's long run: seeded histories and requests for N minutes, findings shrunk and saved.

    .venv/bin/python -m tests.differential.run --minutes 10 --seed 1000
    .venv/bin/python -m tests.differential.run --replay tests/differential/findings/<name>.json [--save]

History seeds run from --seed upwards; each history gets --requests requests. Progress (histories and
requests per minute) goes to stderr; a JSON summary to stdout at the end; the exit status is 1 when a new
divergence was found. Each new kind of divergence (fuzz.signature) is shrunk once (shrink.py) and written to
tests/differential/findings/ (--findings); known ones (fuzz.KNOWN) are counted. One JVM for the whole run.
--replay builds a saved case's history (a finding or a regression: "history" and "request") again, plans its
request on both sides and prints both answers and the verdict; --save writes them back into the file.
"""

from __future__ import annotations

import argparse
import json
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path

from planner_service.io.fileio import FileIO
from planner_service.planning.index_tier import IndexTier
from planner_service.planning.planner import ScanPlanner
from tests.differential.compare import our_answer, verdict
from tests.differential.driver import JavaProcess, log
from tests.differential.fuzz import FINDINGS, Judged, ask_java, judge, save_finding, signature
from tests.differential.shrink import Shrinker


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0, help="how long to run (at least one history)")
    parser.add_argument("--seed", type=int, default=1000, help="the first history's seed")
    parser.add_argument("--requests", type=int, default=25, help="requests per history")
    parser.add_argument("--size", choices=("short", "long"), default="long", help="history length")
    parser.add_argument("--findings", type=Path, default=FINDINGS, help="where minimized findings go")
    parser.add_argument("--no-shrink", action="store_true", help="save findings as found")
    parser.add_argument("--shrink-seconds", type=float, default=300.0, help="budget per finding")
    parser.add_argument("--replay", type=Path, help="a saved case to build and plan again")
    parser.add_argument("--save", action="store_true", help="with --replay: write the answers into the case")
    parser.add_argument(
        "--index-tier", action="store_true", help="plan through the index's disk tier, with no manifest cache"
    )
    args = parser.parse_args()
    if args.replay is not None:
        return replay(args.replay, args.save)
    warehouse = Path(tempfile.mkdtemp(prefix="differential-"))
    if args.index_tier:  # manifests and snapshots come back from the tier's files between requests
        tier = IndexTier(warehouse / "index-tier", 10**11, secrets.token_bytes(32))
        planner = ScanPlanner(FileIO(), cache_bytes=1, tier=tier)
    else:
        planner = ScanPlanner(FileIO())
    total = Judged()
    histories = skipped_ops = ops = 0
    saved: dict[str, str] = {}
    seed = args.seed
    try:
        with JavaProcess(warehouse) as java:
            started = time.monotonic()  # the rates leave the JVM's start out
            deadline = started + args.minutes * 60
            while histories == 0 or time.monotonic() < deadline:
                recorded, built = ask_java(java, seed, args.requests, args.size)
                judged = judge(planner, recorded)
                histories += 1
                ops += len(recorded.ops)
                skipped_ops += sum(1 for op in recorded.ops if op["skipped"] is not None)
                total.add(judged)
                for finding in judged.findings:
                    kind = signature(finding["finding"])
                    log(f"seed {seed} request {finding['request_number']}: {finding['finding'][:300]}")
                    if kind in saved:
                        continue
                    if not args.no_shrink:
                        finding = Shrinker(java, planner, finding, args.shrink_seconds).shrink()
                    saved[kind] = str(save_finding(finding, args.findings))
                    log(f"saved {saved[kind]}")
                java.drop(built.table)
                minutes = (time.monotonic() - started) / 60
                log(
                    f"{histories} histories, {total.requests} requests in {minutes:.1f} min "
                    f"({histories / minutes:.1f} histories/min, {total.requests / minutes:.0f} requests/min; "
                    f"{total.grouped} grouped, {total.read} read, {total.restricted} read restricted): "
                    f"{len(total.findings)} findings, known {dict(total.known)}, tolerated {dict(total.tolerated)}"
                )
                seed += 1
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)
    minutes = (time.monotonic() - started) / 60
    summary = {
        "seeds": [args.seed, seed - 1],
        "minutes": round(minutes, 2),
        "histories": histories,
        "ops": ops,
        "ops_skipped": skipped_ops,
        "requests": total.requests,
        "grouped": total.grouped,
        "rows_read": total.read,
        "restricted_reads": total.restricted,
        "histories_per_minute": round(histories / minutes, 1),
        "requests_per_minute": round(total.requests / minutes),
        "tolerated": dict(total.tolerated),
        "known": dict(total.known),
        "findings": len(total.findings),
        "saved": saved,
    }
    print(json.dumps(summary, indent=1))
    return 1 if total.findings else 0


def replay(path: Path, save: bool) -> int:
    """Build and plan a saved case again; exit status 1 when the sides still differ (tolerated: 0)."""
    case = json.loads(path.read_text())
    warehouse = Path(tempfile.mkdtemp(prefix="differential-replay-"))
    try:
        with JavaProcess(warehouse) as java:
            built = java.replay(case["history"])
            if built.metadata_location is None:
                raise SystemExit(f"Spark refused the create: {built.ops[0]['skipped']}")
            reply = java.plan(built.table, case["request"])
            if "invalid" in reply:
                raise SystemExit(f"the request does not resolve on this history: {reply['invalid']}")
            ours = our_answer(ScanPlanner(FileIO()), built.metadata_location, reply["request"])
            finding, tolerated = verdict(reply["answer"], ours, reply["request"])
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)
    skipped = [op for op in built.ops if op["skipped"] is not None]
    result = {"finding": finding, "tolerated": tolerated, "skipped_ops": skipped, "java": reply["answer"], "ours": ours}
    print(json.dumps(result, indent=1))
    if save:
        case.update(resolved=reply["request"], java=reply["answer"], ours=ours, finding=finding, tolerated=tolerated)
        path.write_text(json.dumps(case, indent=1, sort_keys=True) + "\n")
    return 1 if finding else 0


if __name__ == "__main__":
    sys.exit(main())
