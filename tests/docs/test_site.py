"""The documentation site builds with MkDocs in strict mode (a broken link, a missing anchor or a page left
out of the navigation fails it), holds every guide and the generated reference, and reads offline from the
built folder; the README is short and its links lead to pages that exist."""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

import pytest

from reference_docs.pages import PAGES
from tests.docs.examples import DOCS, REPO

README_MAX_LINES = 100  # a newcomer's one screen or two
GUIDES = (
    "get-started.md",
    "guides/pyspark.md",
    "guides/rest-clients.md",
    "guides/curl-and-cli.md",
    "guides/explorer.md",
    "guides/filters.md",
    "guides/grouping.md",
    "guides/storage-and-catalogs.md",
    "guides/auth.md",
    "guides/deploying.md",
    "guides/when-things-fail.md",
    "concepts/glossary.md",
    "concepts/how-a-plan-is-made.md",
    "concepts/matching-iceberg-java.md",
    "benchmarks.md",
    "design/architecture.md",
    "scale.md",
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built as `mkdocs build --strict` builds it."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    from mkdocs.exceptions import Abort

    os.environ["NO_MKDOCS_2_WARNING"] = "1"
    out = tmp_path_factory.mktemp("site")
    warnings: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.WARNING:
                warnings.append(record.getMessage())

    handler = Collect()
    logging.getLogger("mkdocs").addHandler(handler)
    try:
        build(load_config(str(REPO / "mkdocs.yml"), site_dir=str(out)))
    except Abort as exc:
        pytest.fail(f"the site does not build strictly: {exc}\n" + "\n".join(warnings))
    finally:
        logging.getLogger("mkdocs").removeHandler(handler)
    assert warnings == []
    return out


def test_every_guide_and_generated_page_is_built(site: Path) -> None:
    for page in (*GUIDES, *PAGES, "index.md"):
        built = site / page.replace(".md", ".html")
        assert built.exists(), f"{page} is not in the site"
        assert "<h1" in built.read_text()


def test_the_reference_is_generated_not_written() -> None:
    written = [page for page in PAGES if (DOCS / page).exists()]
    assert written == [], "the reference pages are generated (reference_docs/): remove these files"


def test_the_built_site_reads_offline(site: Path) -> None:
    """Links between pages are relative files, and nothing is fetched from elsewhere (fonts, scripts)."""
    for html in site.rglob("*.html"):
        if html.name == "404.html":  # a web server's page, with links from the site's root
            continue
        text = html.read_text()
        fetched = re.findall(r'<(?:script|link|img)[^>]+(?:src|href)="(https?://[^"]+)"', text)
        assert fetched == [], f"{html.relative_to(site)} fetches {fetched[:3]}"
        for target in re.findall(r'<a [^>]*href="([^"#?]+\.html)', text):
            if not target.startswith(("http://", "https://")):
                assert (html.parent / target).resolve().exists(), f"{html.relative_to(site)}: {target}"
    assert (site / "search" / "search_index.js").exists(), "search works from file:// (the offline plugin)"


def test_the_readme_is_short_and_links_into_the_site() -> None:
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= README_MAX_LINES
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert any(link.startswith("docs/") for link in links)
    missing = [link for link in links if not link.startswith("http") and not (REPO / link).exists()]
    assert missing == []
