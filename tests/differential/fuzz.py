"""One differential round: a seeded history built by Iceberg Java, seeded requests over it, Java's answers
recorded (ask_java), then ours held to them (judge). The suite caches what ask_java records; run.py does both
in one go and shrinks what it finds.
"""

from __future__ import annotations

import collections
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planner_service.planning.planner import ScanPlanner
from tests.differential.compare import our_answer, verdict
from tests.differential.driver import Built, JavaProcess, applied_ops
from tests.differential.requests import RequestGenerator, TableShape

HERE = Path(__file__).resolve().parent
FINDINGS = HERE / "findings"

# Divergences already minimized and saved under findings/ (see each file): recognized by the finding's text,
# counted and printed but not failing a run, so that the suite stays green until the planner is fixed.
KNOWN: dict[str, re.Pattern[str]] = {
    # with a select, Java's planFiles() binds the filter to the scan's schema too (the snapshot's, when
    # travelling in time): a column the snapshot lacks is refused, and an unknown one is named with its struct
    "select-time-travel-binds-filter-to-snapshot-schema": re.compile(
        r"^(we planned what Java refuses: \S*ValidationException: |another error: Java's .)Cannot find field '"
        r"|^another error: Java's .*, ours \"Cannot find field '"  # (a renamed column: Java's other complaint)
    ),
    # ... and binds it as given, before NOT is pushed down: not(is-nan) is refused as IsNaN, not NotNaN
    "select-binds-filter-before-not-rewrite": re.compile(
        r"^another error: Java's '(IsNaN|NotNaN) cannot be used with a non-floating-point column', "
        r"ours \"(NotNaN|IsNaN)"
    ),
    # Java's select ignores a name the schema lacks; we refuse it
    "select-unknown-column": re.compile(r"^we refused what Java plans: Cannot select unknown column "),
}


@dataclass
class Recorded:
    """A history as Java built it and its requests with Java's answers (what the suite caches)."""

    seed: int
    ops: list[dict[str, Any]]  # each with "skipped"
    metadata_location: str | None
    asked: list[dict[str, Any]]  # {"request": symbolic, "resolved": concrete, "java": Java's answer}
    invalid: int = 0  # requests whose symbols this history could not resolve

    def to_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "ops": self.ops,
            "metadata_location": self.metadata_location,
            "asked": self.asked,
            "invalid": self.invalid,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Recorded:
        return cls(data["seed"], data["ops"], data["metadata_location"], data["asked"], data["invalid"])

    @property
    def history(self) -> list[dict[str, Any]]:
        """The ops Spark applied, without their outcome."""
        return applied_ops(self.ops)


def ask_java(java: JavaProcess, seed: int, requests: int, size: str = "short") -> tuple[Recorded, Built]:
    """Build history `seed` and record Java's answer to each of its `requests` requests."""
    built = java.build(seed, size)
    recorded = Recorded(seed, built.ops, built.metadata_location, [])
    if built.metadata_location is None:
        return recorded, built
    generator = RequestGenerator(seed, TableShape(built.metadata_location))
    for number in range(requests):
        request = generator.request(number)
        reply = java.plan(built.table, request)
        if "invalid" in reply:
            recorded.invalid += 1
            continue
        recorded.asked.append({"request": request, "resolved": reply["request"], "java": reply["answer"]})
    return recorded, built


@dataclass
class Judged:
    """Our answers held to Java's: how many agreed, which tolerated differences, and the findings."""

    requests: int = 0
    tolerated: collections.Counter[str] = field(default_factory=collections.Counter)
    known: collections.Counter[str] = field(default_factory=collections.Counter)
    findings: list[dict[str, Any]] = field(default_factory=list)

    def add(self, other: Judged) -> None:
        self.requests += other.requests
        self.tolerated.update(other.tolerated)
        self.known.update(other.known)
        self.findings += other.findings


def known_as(finding: str) -> str | None:
    """The name of the saved finding (findings/<name>.json) this divergence is, if it is a known one."""
    return next((name for name, pattern in KNOWN.items() if pattern.search(finding)), None)


def judge(planner: ScanPlanner, recorded: Recorded) -> Judged:
    out = Judged()
    if recorded.metadata_location is None:
        return out
    for number, asked in enumerate(recorded.asked):
        ours = our_answer(planner, recorded.metadata_location, asked["resolved"])
        finding, tolerated = verdict(asked["java"], ours, asked["resolved"])
        out.requests += 1
        if tolerated:
            out.tolerated[tolerated] += 1
        if finding is None:
            continue
        name = known_as(finding)
        if name is not None:
            out.known[name] += 1
            continue
        out.findings.append(
            {
                "seed": recorded.seed,
                "request_number": number,
                "finding": finding,
                "history": recorded.history,
                "request": asked["request"],
                "resolved": asked["resolved"],
                "java": asked["java"],
                "ours": ours,
            }
        )
    return out


def signature(finding: str) -> str:
    """What kind of divergence a finding is, so that shrinking keeps the same one: its text before the first
    colon, indexes dropped ("files[3]" and "files[0]" are one kind), plus the field that differs."""
    head, _, rest = finding.partition(":")
    head = re.sub(r"\[\d+\]", "[]", head)
    if head == "another error":  # which error Java gave: its message's first words, values left out
        java = rest.split(", ours ", 1)[0].removeprefix(" Java's ").strip("'\"")
        return f"{head}:{' '.join(re.sub(r'[^A-Za-z ]', ' ', java).split()[:5])}"
    field_name = rest.strip().split(":", 1)[0] if head.startswith(("files", "tasks")) else ""
    return f"{head}:{field_name}" if field_name else head


def save_finding(finding: dict[str, Any], directory: Path = FINDINGS) -> Path:
    """Write a (minimized) finding to directory/<name>.json; the name says the kind and the seed."""
    slug = re.sub(r"[^a-z0-9]+", "-", signature(finding["finding"]).lower()).strip("-")[:60]
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{slug}-seed{finding['seed']}.json"
    path.write_text(json.dumps(finding, indent=1, sort_keys=True) + "\n")
    return path
