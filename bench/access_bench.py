"""What access control costs a warm plan, from an HTTP client's seat: the selective plan (`id = X`, one file
kept, every manifest's summary read) of the bench table (bench/make_table.py, written by Iceberg Java), warm,
answered by services that differ only in their access settings, in one run:

- open: no authentication, no policy (the loopback default);
- tokens: static bearer tokens, no policy (every caller may do everything);
- policy: tokens and a policy whose first rule grants the caller;
- policy-1000: tokens and a policy of 1,000 rules, the caller's the last (every rule tried first);
- oidc (with --oidc, where tests/oidc_provider.py's provider runs): a JWT of an OpenID provider, verified
  on every request, and the policy.

Each service answers --repeat warm plans, alternated in rounds of 50 so that drift in the machine hits them
alike; each figure is the median and 90th percentile of the client's wall time until it has the whole body.

    .venv/bin/python bench/access_bench.py [--files 200000 --manifests 400] [--repeat 1000] [--out FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from common import progress, write_json
from service import Service, served
from service_bench import BENCH_TABLE, bench_table

REPO = Path(__file__).resolve().parent.parent
TOKEN = "bench-token-0123456789abcdef"
ROUND = 50


def _settings(metadata_location: str, variant: str, issuer: str | None) -> dict[str, Any]:
    settings: dict[str, Any] = {"tables": {BENCH_TABLE: metadata_location}}
    if variant == "open":
        return settings
    settings["auth_tokens"] = {"bench": TOKEN}
    grant = {"principals": ["bench", "bench-client"], "tables": [BENCH_TABLE], "privileges": ["plan"]}
    if variant == "policy":
        settings["access_rules"] = [grant]
    elif variant == "policy-1000":
        others = [{"principals": [f"someone-{i}"], "tables": [f"ns{i}.*"], "privileges": ["plan"]} for i in range(999)]
        settings["access_rules"] = [*others, grant]
    elif variant == "oidc":
        settings |= {"oidc_issuer": issuer, "oidc_audience": "scan-planner", "access_rules": [grant]}
    return settings


@contextlib.contextmanager
def _service(metadata_location: str, variant: str, issuer: str | None) -> Iterator[Service]:
    with tempfile.TemporaryDirectory(prefix="access-bench-") as directory:
        config = Path(directory) / "service.json"
        config.write_text(json.dumps(_settings(metadata_location, variant, issuer)))
        home = {"SCAN_PLANNER_HOME": directory}
        with served(["--config", str(config), "--log-level", "warning"], REPO, home) as service:
            yield service


def _timed(client: httpx.Client, body: dict[str, Any], n: int) -> list[float]:
    out = []
    for _ in range(n):
        started = time.perf_counter()
        answer = client.post("/plan", json=body)
        answer.read()
        out.append((time.perf_counter() - started) * 1000)
        if answer.status_code != 200:
            raise RuntimeError(f"the plan was answered {answer.status_code}: {answer.text[:300]}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=200_000, help="data files of the bench table (200000)")
    parser.add_argument("--manifests", type=int, default=400, help="its manifests (400)")
    parser.add_argument("--repeat", type=int, default=1000, help="warm plans per variant (1000)")
    parser.add_argument("--oidc", action="store_true", help="also JWTs of an OpenID provider on loopback")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    parser.add_argument("--timeout", type=float, default=3600, help="building the table, at most (s)")
    args = parser.parse_args()
    table = bench_table(args)
    one = {"type": "eq", "term": "id", "value": table["one_percent"]["id_range"]["min"]}
    body = {"table": BENCH_TABLE, "filter": one}
    variants = ["open", "tokens", "policy", "policy-1000"] + (["oidc"] if args.oidc else [])
    load = os.getloadavg()[0]
    progress("access", f"load average {load:.2f}; {args.repeat} warm plans per variant, rounds of {ROUND}")
    with contextlib.ExitStack() as stack:
        issuer, token_of = None, {v: TOKEN for v in variants}
        if args.oidc:
            sys.path.insert(0, str(REPO))
            from tests.oidc_provider import oidc_provider

            provider = stack.enter_context(oidc_provider({"bench-client": ("bench-secret", [])}))
            issuer, token_of["oidc"] = provider.issuer, provider.token("bench-client", "bench-secret")
        services = {v: stack.enter_context(_service(table["metadata_location"], v, issuer)) for v in variants}
        clients = {}
        for variant, service in services.items():
            headers = {} if variant == "open" else {"Authorization": f"Bearer {token_of[variant]}"}
            clients[variant] = stack.enter_context(httpx.Client(base_url=service.url, headers=headers, timeout=120))
            _timed(clients[variant], body, 5)  # warm: caches filled, the plan kept
        times: dict[str, list[float]] = {v: [] for v in variants}
        while len(times[variants[0]]) < args.repeat:
            for variant in variants:
                times[variant] += _timed(clients[variant], body, min(ROUND, args.repeat - len(times[variant])))
            progress("access", f"{len(times[variants[0]])}/{args.repeat}")
    base = statistics.median(times["open"])
    figures = {
        v: {
            "median_ms": round(statistics.median(t), 3),
            "p90_ms": round(statistics.quantiles(t, n=10)[-1], 3),
            "over_open_ms": round(statistics.median(t) - base, 3),
        }
        for v, t in times.items()
    }
    report = {"files": args.files, "repeat": args.repeat, "load_average": load, "variants": figures}
    print(f"{'variant':<12} {'median ms':>10} {'p90 ms':>8} {'over open':>10}")
    for variant, f in figures.items():
        print(f"{variant:<12} {f['median_ms']:>10.2f} {f['p90_ms']:>8.2f} {f['over_open_ms']:>+10.2f}")
    if args.out:
        write_json(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
