"""The generated pages of the site: where each goes under docs/ and the function that writes it."""

from __future__ import annotations

from collections.abc import Callable

from reference_docs import cli_page, http_page, metrics_page, pyspark_page, settings_page

PAGES: dict[str, Callable[[], str]] = {
    "reference/settings.md": settings_page.render,
    "reference/cli.md": cli_page.render,
    "reference/http-api.md": http_page.render,
    "reference/metrics.md": metrics_page.render,
    "reference/pyspark.md": pyspark_page.render,
}
