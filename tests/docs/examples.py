"""The code examples of the README and the documentation site, as their readers see them: each fenced block
with its language and page, and the comment above it that says why it is not run, if it is not.

A block runs in the tests by its language: `bash` against a demo service (tests/docs/test_examples.py),
`python` in a Spark session against the same (tests/spark_client/test_doc_examples.py), `toml` as settings
the service accepts, `json` as JSON. A block that cannot run here says so on the line before it, naming the
test that checks what it shows instead:

    <!-- not run: a cluster's spark-submit; tests/clients/test_spark_rest.py runs this configuration -->

A shell example that shows the service's errors says so (`<!-- shows errors -->`): its curl commands may be
answered 4xx, and each answer must be the service's JSON error. `text` blocks (outputs, trees, usage lines) are prose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
RUNNABLE = frozenset({"bash", "python", "toml", "json"})
PROSE = frozenset({"text"})
DEMO_URLS = ("http://127.0.0.1:8181", "127.0.0.1:8181", "localhost:8181")
DEMO_HOME = "~/.local/share/scan-planner"

_FENCE = re.compile(
    r"^(?P<indent> *)```(?P<info>[^`\n]*)\n(?P<code>.*?)^(?P=indent)```[ \t]*$", re.MULTILINE | re.DOTALL
)
_NOT_RUN = re.compile(r"<!-- not run: (?P<why>.+?) -->\s*$")
SHOWS_ERRORS = "<!-- shows errors -->"
_TEST_FILE = re.compile(r"\btests/[\w/]+\.py\b")


@dataclass(frozen=True)
class Example:
    page: str  # relative to the repository, e.g. docs/guides/pyspark.md
    line: int
    language: str
    code: str
    not_run: str | None  # why it is not run, when it is not
    shows_errors: bool = False  # its requests are meant to be refused

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def checked_by(self) -> list[str]:
        """The tests a not-run example names as checking what it shows."""
        return _TEST_FILE.findall(self.not_run or "")


def pages() -> list[Path]:
    """The README and every page of the site written by hand (the reference pages are generated)."""
    return [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]


def examples_of(path: Path) -> list[Example]:
    text = path.read_text()
    found = []
    for match in _FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        why = _NOT_RUN.search(before)
        found.append(
            Example(
                page=str(path.relative_to(REPO)),
                line=line,
                language=match["info"].strip().split(" ")[0],
                code=match["code"],
                not_run=why["why"] if why else None,
                shows_errors=before.strip() == SHOWS_ERRORS,
            )
        )
    return found


def all_examples() -> list[Example]:
    return [example for path in pages() for example in examples_of(path)]


def runnable(language: str) -> dict[str, list[Example]]:
    """The examples of one language that run, by page (in page order)."""
    by_page: dict[str, list[Example]] = {}
    for example in all_examples():
        if example.language == language and example.not_run is None:
            by_page.setdefault(example.page, []).append(example)
    return by_page


def for_service(code: str, url: str, home: Path) -> str:
    """An example's code pointed at a test's demo service (its base URL) and demo home."""
    for printed in DEMO_URLS:  # the full URL first, then the bare addresses
        code = code.replace(printed, url if printed.startswith("http") else url.removeprefix("http://"))
    return code.replace(DEMO_HOME, str(home))
