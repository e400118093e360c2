"""The published benchmark figures, from one source: bench/figures.json holds each figure with its peer's
(or why the peer has none), its unit and the day it was measured, and the machine; this renders the
README's and the site's summary tables from it, in one ratio direction (ours over the peer's: below 1,
ours is faster or smaller). A `<!-- figures:NAME:short -->` block (the README's) holds only the rows marked
`readme`; the site's the whole table.

    .venv/bin/python bench/figures.py --write         # rewrite the generated tables of README.md and docs/benchmarks.md
    .venv/bin/python bench/figures.py --check         # exit 1 when they are not what figures.json renders
    .venv/bin/python bench/figures.py record bench/results/scale-latest.json   # a scale_bench run's figures

`record` puts a `bench/scale_bench.py` run into figures.json's column of its table size (200,000,
2,000,000 or 20,000,000 files), dated that run's day; then `--write`. tests/docs/test_figures.py fails
when the pages and figures.json disagree.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FIGURES = REPO / "bench" / "figures.json"
PAGES = (REPO / "README.md", REPO / "docs" / "benchmarks.md")
BLOCK = re.compile(r"(<!-- figures:(\w+)(:short)? -->\n)(.*?)(<!-- /figures -->)", re.DOTALL)
SIZES = {200_000: 0, 2_000_000: 1, 20_000_000: 2}
MB = 1024 * 1024  # (as bench/scale_bench.py reports them)


def load() -> dict[str, Any]:
    figures: dict[str, Any] = json.loads(FIGURES.read_text())
    return figures


def render(figures: dict[str, Any], name: str, short: bool = False) -> str:
    """Table `name` of `figures` as Markdown: what it shows and where, then the table (`short`: only the
    rows marked for the README)."""
    table, machine = figures[name], figures["machine"]
    rows = [row for row in table["rows"] if row.get("readme") or not short]
    days = sorted({c["date"] for row in rows for c in row["cells"] if c})
    when = days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
    lines = [
        f"{table['title']}. Measured {when} on one machine of {machine['cpus']} cores ({machine['cpu']}) and "
        f"{machine['memory_gb']} GB; ratios are ours over the peer's: below 1, ours is faster or smaller. "
        "Generated from bench/figures.json (bench/figures.py).",
        "",
        "| | peer | " + " | ".join(table["columns"]) + " |",
        "|---|---|" + "---:|" * len(table["columns"]),
    ]
    for row in rows:
        cells = [_cell(cell, row["peer"]) for cell in row["cells"]]
        lines.append(f"| {row['what']} | {row['peer'] or 'none'} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _cell(cell: dict[str, Any] | None, peer: str) -> str:
    if cell is None:
        return "not measured"
    if "text" in cell:
        return str(cell["text"])
    if "ratios" in cell:
        return " / ".join(_ratio(r) for r in cell["ratios"])
    unit, ours = cell["unit"], _number(cell["ours"])
    if cell.get("peer") is not None:
        text = f"{ours} vs {_number(cell['peer'])} {unit}: {_ratio(cell['ours'] / cell['peer'])}"
    elif cell.get("peer_failed"):
        text = f"{ours} {unit}; the peer: {cell['peer_failed']}"
    else:
        text = f"{ours} {unit}" + ("; the peer: not measured" if peer else "")
    return text + (f" ({cell['note']})" if cell.get("note") else "")


def _failure(message: str) -> str:
    """Why a peer's step failed, in a few words, from its error output."""
    if "OutOfMemoryError" in message or "out of memory" in message.lower():
        return "out of memory"
    if "maxResultSize" in message:
        return "over Spark's 1 GiB result limit"
    return "failed"


def _number(value: float) -> str:
    """Integers with their thousands; other numbers (seconds) to a tenth."""
    return f"{value:,}" if isinstance(value, int) else f"{value:,.1f}"


def _ratio(ratio: float) -> str:
    """Two decimals, or as many as the first significant digit needs (0.003x, 0.00004x); bold below 1."""
    decimals = 2 if ratio >= 0.01 else 1 - math.floor(math.log10(ratio))
    text = f"{ratio:.{decimals}f}x"
    return f"**{text}**" if ratio < 1 else text


def rendered_pages(figures: dict[str, Any]) -> dict[Path, str]:
    """Each page with its generated blocks as `figures` renders them."""
    return {
        page: BLOCK.sub(lambda m: m[1] + render(figures, m[2], bool(m[3])) + m[5], page.read_text()) for page in PAGES
    }


def record(figures: dict[str, Any], results: dict[str, Any]) -> list[str]:
    """A scale_bench run's figures into their column of the planning table; what was recorded."""
    r, day = results["results"], results["environment"]["date"][:10]
    column = SIZES.get(int(r["table"]["data_files"]))
    if column is None:
        raise SystemExit(f"figures: a run of {r['table']['data_files']} files has no column ({sorted(SIZES)})")
    java_warm = r["java_full"]["warm"]  # None where it ran out of its heap: its cold plan then
    java_full = java_warm["median_ms"] if java_warm else r["java_full"]["cold"]["plan_ms"]
    java_one = r["java_one"]["warm"]["median_ms"]
    svc, mem, ours = r["service"], r["service_memory"], r["spark_ours"]
    theirs = r.get("spark_iceberg", {})
    scale = 1000.0 if column else 1.0  # seconds from 2,000,000 files on
    unit = "s" if column else "ms"

    def timed(ours_ms: float, peer_ms: float | None) -> dict[str, Any]:
        def shown(ms: float) -> float:  # whole milliseconds, or seconds to a tenth
            return round(ms / scale, 1) if column else round(ms)

        peer = None if peer_ms is None else shown(peer_ms)
        return {"ours": shown(ours_ms), "peer": peer, "unit": unit, "date": day}

    cold_note = {} if java_warm else {"note": f"Java's cold plan: its warm one runs out of its heap, {r.get('heap')}"}
    found: dict[str, dict[str, Any]] = {
        "cold_by_id": {**timed(svc["full_by_id_cold_ms"], java_full), **cold_note},
        "selective_warm": {"ours": round(svc["one_warm_ms"]), "peer": round(java_one), "unit": "ms", "date": day},
        "bytes_per_file": {"ours": round(mem["bytes_per_file"]), "unit": "B", "date": day},
        "cache_growth": {"ours": round(mem["small_caches"]["growth_bytes"] / MB), "unit": "MB", "date": day},
    }
    if not r.get("no_inline"):
        found["cold_inline"] = timed(svc["full_cold_ms"], java_full)
    if theirs and "failed" not in theirs:
        found["driver_first"] = timed(ours["full"]["first_ms"], theirs["full"]["first_ms"])
        warm = ours["full"]["warm_median_ms"] / theirs["full"]["warm_median_ms"]
        one = ours["one"]["warm_median_ms"] / theirs["one"]["warm_median_ms"]
        found["driver_warm_selective"] = {"ratios": [round(warm, 3), round(one, 3)], "date": day}
        rss = theirs["driver_peak_rss_bytes"], ours["driver_peak_rss_bytes"]
        found["driver_rss"] = {"ours": round(rss[1] / MB), "peer": round(rss[0] / MB), "unit": "MB", "date": day}
    elif theirs:  # the peer's driver failed (out of memory): ours alone, and why
        why = _failure(theirs["failed"])
        found["driver_first"] = {**timed(ours["full"]["first_ms"], None), "peer_failed": why}
        warm, one = round(ours["full"]["warm_median_ms"]), round(ours["one"]["warm_median_ms"])
        found["driver_warm_selective"] = {"text": f"{warm:,} ms / {one:,} ms; Spark + Iceberg: {why}", "date": day}
        rss = round(ours["driver_peak_rss_bytes"] / MB)
        found["driver_rss"] = {"ours": rss, "peer": None, "unit": "MB", "date": day, "peer_failed": why}
    distributed = r.get("spark_iceberg_distributed")
    if distributed and "failed" not in distributed:
        first = ours["full"]["first_ms"] / distributed["full"]["first_ms"]
        found["driver_first_distributed"] = {"ratios": [round(first, 3)], "date": day}
    elif distributed:
        why = _failure(distributed["failed"])
        found["driver_first_distributed"] = {**timed(ours["full"]["first_ms"], None), "peer_failed": why}
    pyiceberg = (r.get("pyiceberg") or {}).get("peak_rss_bytes")
    peer_peak = round(pyiceberg / MB) if pyiceberg else None
    found["service_peak"] = {"ours": round(mem["peak_rss_bytes"] / MB), "peer": peer_peak, "unit": "MB", "date": day}
    rows = {row.get("key"): row for row in figures["planning"]["rows"]}
    for key, cell in found.items():
        rows[key]["cells"][column] = cell
    machine = results["environment"]["machine"]
    figures["machine"] = {
        "cpus": machine["cpus"],
        "cpu": machine["cpu"],
        "memory_gb": round(machine["memory_bytes"] / 2**30),
    }
    return sorted(found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", nargs="?", choices=["record"], help="record a scale_bench results file")
    parser.add_argument("results", nargs="?", type=Path, help="bench/scale_bench.py's --out JSON")
    parser.add_argument("--write", action="store_true", help="rewrite the pages' generated tables")
    parser.add_argument("--check", action="store_true", help="exit 1 when a page's tables are out of date")
    args = parser.parse_args()
    figures = load()
    if args.command == "record":
        if args.results is None:
            parser.error("record needs the results file")
        keys = record(figures, json.loads(args.results.read_text()))
        FIGURES.write_text(json.dumps(figures, indent=1) + "\n")
        print(f"[figures] recorded {', '.join(keys)} from {args.results}; now --write", file=sys.stderr)
    pages = rendered_pages(figures)
    stale = [page for page, text in pages.items() if text != page.read_text()]
    if args.write:
        for page in stale:
            page.write_text(pages[page])
        print(f"[figures] wrote {', '.join(str(p.relative_to(REPO)) for p in stale) or 'nothing (up to date)'}")
        return 0
    if stale:
        print(f"[figures] out of date: {', '.join(str(p.relative_to(REPO)) for p in stale)}: run --write")
        return 1
    print("[figures] the pages are up to date")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
