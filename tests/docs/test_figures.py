"""One source for the published benchmark figures: the README's and the site's summary tables are what
bench/figures.py renders from bench/figures.json (run `.venv/bin/python bench/figures.py --write` after
changing it), every figure has its day and, where the row names a peer, the peer's figure or why there is
none; a scale_bench run's results land in their column (`record`)."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from tests.docs.examples import REPO


def _bench_module(name: str) -> Any:
    """A module of bench/ (scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, REPO / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


figures = _bench_module("figures")

RUN = Path(__file__).with_name("data") / "scale_bench_200000.json"  # a real bench/scale_bench.py run's --out


def test_the_pages_show_what_figures_json_renders() -> None:
    pages = figures.rendered_pages(figures.load())
    for page, text in pages.items():
        assert "<!-- figures:planning" in text and "<!-- figures:reading -->" in text, page
        assert text == page.read_text(), f"{page.name} is out of date: .venv/bin/python bench/figures.py --write"


def test_every_figure_has_its_day_and_its_peer_or_why_not() -> None:
    loaded = figures.load()
    for name in ("planning", "reading"):
        for row in loaded[name]["rows"]:
            assert len(row["cells"]) == len(loaded[name]["columns"]), row["what"]
            for cell in filter(None, row["cells"]):
                assert len(cell["date"]) == 10 and cell["date"].startswith("20"), row["what"]
                if "ours" in cell and row["peer"]:
                    rendered = figures._cell(cell, row["peer"])
                    assert " vs " in rendered or "the peer: " in rendered, (row["what"], rendered)
    assert "ratios are ours over the peer's" in figures.render(loaded, "reading")
    short, whole = figures.render(loaded, "planning", short=True), figures.render(loaded, "planning")
    assert short.count("\n|") < whole.count("\n|") and "cold full plan, by plan id" in short


def test_a_scale_bench_run_lands_in_its_column() -> None:
    results = json.loads(RUN.read_text())
    r = results["results"]
    loaded = copy.deepcopy(figures.load())
    recorded = figures.record(loaded, results)
    assert {"cold_by_id", "selective_warm", "driver_first", "service_peak"} <= set(recorded)
    rows = {row.get("key"): row for row in loaded["planning"]["rows"]}
    cold = rows["cold_by_id"]["cells"][0]  # 200,000 files: the first column
    assert cold == {
        "ours": round(r["service"]["full_by_id_cold_ms"]),
        "peer": round(r["java_full"]["warm"]["median_ms"]),
        "unit": "ms",
        "date": results["environment"]["date"][:10],
    }
    peak = rows["service_peak"]["cells"][0]
    assert peak["ours"] == round(r["service_memory"]["peak_rss_bytes"] / 2**20)
    assert peak["peer"] == round(r["pyiceberg"]["peak_rss_bytes"] / 2**20)
    assert loaded["machine"]["cpus"] == results["environment"]["machine"]["cpus"]
    other = copy.deepcopy(results)
    other["results"]["table"]["data_files"] = 12345
    with pytest.raises(SystemExit, match="12345 files has no column"):
        figures.record(copy.deepcopy(figures.load()), other)
