"""The benchmark's tables and ratios, per scenario, from the per-implementation results plan_bench.py collects."""

from __future__ import annotations

from typing import Any

# (key in results, label); ours first, every other one is compared with it
ROWS = (
    ("ours", "ours (scan-planner) plan()"),
    ("java", "Iceberg Java planTasks()"),
    ("java_no_pool", "Iceberg Java, no worker pool"),
    ("pyiceberg", "PyIceberg plan_files()"),
)
MB = 1024 * 1024


def ratios(results: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Theirs / ours for cold and warm plan time and peak RSS: above 1, ours is faster (or smaller).

    Peak RSS after the cold plan and over the whole run differ most for Java: its heap grows towards -Xmx
    over the warm repeats rather than collecting early, so its run peak says more about the heap limit.
    """
    ours = results["ours"]
    out = {}
    for key, _ in ROWS[1:]:
        if key in results:
            theirs = results[key]
            out[key] = {
                "cold": theirs["cold"]["plan_ms"] / ours["cold"]["plan_ms"],
                "warm": theirs["warm"]["median_ms"] / ours["warm"]["median_ms"],
                "cold_rss": theirs["cold"]["peak_rss_bytes"] / ours["cold"]["peak_rss_bytes"],
                "peak_rss": theirs["peak_rss_bytes"] / ours["peak_rss_bytes"],
            }
    return out


def _tasks(result: dict[str, Any]) -> str:
    seen = result.get("seen", {}).get("tasks")
    if not seen:
        return "-"
    return f"{seen[0]:,}" if len(seen) == 1 else f"{seen[0]:,}-{seen[-1]:,}"


def render(report: dict[str, Any]) -> str:
    """Every scenario's table, then the ratios of all scenarios side by side."""
    table, chosen = report["table"], report["scenarios"]
    lines = [
        f"Scans of {table['data_files']:,} data files in {table['data_manifests']:,} manifests "
        f"({table['snapshots']:,} snapshots, format v{table['format_version']}, metadata only)"
    ]
    for name, scenario in chosen.items():
        lines += ["", *render_scenario(name, scenario)]
    return "\n".join([*lines, "", *render_summary(chosen)])


def render_scenario(name: str, scenario: dict[str, Any]) -> list[str]:
    """One scenario: each implementation's times, memory and counts, the ratios, and our stages."""
    results = scenario["results"]
    warm_counts = {len(r["warm"]["plan_ms"]) for r in results.values()}
    lines = [
        f"== {name}: {scenario['title']}; warm = median of {'/'.join(str(n) for n in sorted(warm_counts))} repeats",
        f"{'':32} {'cold plan':>10} {'warm plan':>10} {'RSS cold':>9} {'RSS peak':>9} {'tasks':>15} {'files':>9}",
    ]
    for key, label in ROWS:
        if key in results:
            r = results[key]
            lines.append(
                f"{label:32} {r['cold']['plan_ms']:>7,.0f} ms {r['warm']['median_ms']:>7,.0f} ms "
                f"{r['cold']['peak_rss_bytes'] / MB:>6,.0f} MB {r['peak_rss_bytes'] / MB:>6,.0f} MB "
                f"{_tasks(r):>15} {r['files']:>9,}"
            )
    lines += [f"{'theirs / ours (>1: ours better)':32} {'cold':>10} {'warm':>10} {'RSS cold':>9} {'RSS peak':>9}"]
    for key, label in ROWS[1:]:
        if key in scenario["ratios"]:
            x = scenario["ratios"][key]
            lines.append(
                f"{label:32} {x['cold']:>9.2f}x {x['warm']:>9.2f}x {x['cold_rss']:>8.2f}x {x['peak_rss']:>8.2f}x"
            )
    ours = results["ours"]
    for when, sample in (("cold", ours["cold"]), ("warm", ours["warm"]["last"])):
        stages = ", ".join(f"{k} {v:,.0f} ms" for k, v in sample["stage_ms"].items())
        lines.append(f"ours, stages ({when}; manifests read: {sample['manifests_read']}): {stages}")
    return lines


SUMMARY = (("java", "Java"), ("java_no_pool", "no pool"), ("pyiceberg", "PyIceberg"))


def render_summary(chosen: dict[str, dict[str, Any]]) -> list[str]:
    """Our cold and warm plan per scenario, and each other implementation's time as a multiple of ours."""
    header = f"{'theirs / ours (>1: ours faster)':32} {'ours cold':>10} {'ours warm':>10}"
    header += "".join(f" {label + ' cold':>14} {label + ' warm':>14}" for _, label in SUMMARY)
    lines = [header]
    for name, scenario in chosen.items():
        ours = scenario["results"]["ours"]
        line = f"{name:32} {ours['cold']['plan_ms']:>7,.0f} ms {ours['warm']['median_ms']:>7,.0f} ms"
        for key, _ in SUMMARY:
            x = scenario["ratios"].get(key)
            line += f" {x['cold']:>13.2f}x {x['warm']:>13.2f}x" if x else f" {'-':>14} {'-':>14}"
        lines.append(line)
    return lines
