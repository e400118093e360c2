"""Plans by `metadata-location` decided on the file storage reads: every spelling of one metadata file (a
`file:` URI, `..`, `.`, `//`, percent-encoding, a symbolic link) is decided as the file itself, a grant on one
directory reaches no other, a deny on a table covers its metadata files, and the answer of a location the
caller may not plan never tells whether a file is there. A running service over the conformance warehouse
(tables written by Iceberg Java), with static tokens and a grants policy."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conformance.reference import Conformance
from tests.conftest import running_service

DENIED, OPEN = "identity_part", "unpartitioned"
TOKENS = {"alice": "alice-token", "mallory": "mallory-token", "dave": "dave-token"}


def _metadata_file(warehouse: Path, table: str) -> Path:
    metadata = warehouse / "db" / table / "metadata"
    found = metadata / f"v{(metadata / 'version-hint.text').read_text().strip()}.metadata.json"
    assert found.is_file(), found
    return found


@pytest.fixture(scope="module")
def lake(conformance: Conformance, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    warehouse = (conformance.dir / "warehouse").resolve()
    directory = tmp_path_factory.mktemp("spellings").resolve()
    links = directory / "links"
    links.mkdir()
    (links / "innocent").symlink_to(warehouse / "db" / DENIED)  # a link, under a root, to a denied table
    rules = [
        {"principals": ["*"], "locations": [f"{warehouse}/db/{DENIED}/*"], "privileges": []},
        {"principals": ["alice"], "privileges": ["plan"]},
        {
            "principals": ["mallory"],
            "locations": [f"{warehouse}/db/{OPEN}/metadata/*", f"{links}/*"],
            "privileges": ["plan"],
        },
        {"principals": ["dave"], "tables": [f"db.{DENIED}"], "privileges": []},
        {"principals": ["dave"], "privileges": ["plan"]},
    ]
    audit_log = directory / "audit.jsonl"
    settings = {
        "warehouse": str(warehouse),
        "allowed_roots": [str(warehouse), str(links)],
        "auth_tokens": TOKENS,
        "access_rules": rules,
        "audit_log": str(audit_log),
    }
    config = directory / "service.json"
    config.write_text(json.dumps(settings))
    with running_service("--config", str(config), "--log-level", "warning") as url:
        yield {"url": url, "warehouse": warehouse, "links": links, "audit": audit_log}


def _plan(lake: dict[str, Any], principal: str, location: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {TOKENS[principal]}"}
    with httpx.Client(base_url=lake["url"], headers=headers, timeout=60) as client:
        return client.post("/plan", json={"metadata-location": location})


def _spellings(path: Path) -> dict[str, str]:
    """The same file, written as a client might: each is read as `path` by the service."""
    text = str(path)
    db, _, rest = text.partition("/db/")
    table, _, tail = rest.partition("/")
    return {
        "plain": text,
        "file URI": f"file://{text}",
        "file: without authority": f"file:{text}",
        "file://localhost": f"file://localhost{text}",
        "dot-dot": f"{db}/db/{OPEN}/../{table}/{tail}",
        "dot": f"{db}/db/./{table}/{tail}",
        "double slash": f"{db}/db//{table}/{tail}",
        "percent-encoded": f"file://{db}/db/%{ord(table[0]):02x}{table[1:]}/{tail}",
        "trailing dot-dot back": f"{db}/db/{table}/metadata/../metadata/{Path(tail).name}",
    }


def _is_missing(response: httpx.Response) -> bool:
    return response.status_code == 404 and response.json()["error"]["type"] == "NoSuchTableException"


def test_a_denied_location_is_denied_however_it_is_spelled(lake: dict[str, Any]) -> None:
    denied = _metadata_file(lake["warehouse"], DENIED)
    for way, location in _spellings(denied).items():
        answer = _plan(lake, "alice", location)
        assert _is_missing(answer), (way, location, answer.status_code, answer.text[:300])
    allowed = _metadata_file(lake["warehouse"], OPEN)
    for way, location in _spellings(allowed).items():
        if way != "dot-dot":  # (through the denied directory's name: still the open table's file)
            assert _plan(lake, "alice", location).status_code == 200, (way, location)


def test_a_grant_on_one_directory_reaches_no_other(lake: dict[str, Any]) -> None:
    """mallory may plan the metadata files of one table: `..` out of it, a link into another table, reach
    nothing; the same file spelled otherwise is still hers."""
    warehouse, mine = lake["warehouse"], _metadata_file(lake["warehouse"], OPEN)
    assert _plan(lake, "mallory", str(mine)).status_code == 200
    assert _plan(lake, "mallory", f"file://{mine.parent}/./{mine.name}").status_code == 200
    assert _plan(lake, "mallory", f"{mine.parent}//{mine.name}").status_code == 200
    for other in ("bucket_part", DENIED):
        theirs = _metadata_file(warehouse, other)
        escaped = f"{mine.parent}/../../{other}/metadata/{theirs.name}"
        assert _is_missing(_plan(lake, "mallory", escaped)), escaped
    linked = lake["links"] / "innocent" / "metadata" / _metadata_file(warehouse, DENIED).name
    assert _is_missing(_plan(lake, "mallory", str(linked))), linked


def test_a_deny_on_a_table_covers_its_metadata_files(lake: dict[str, Any]) -> None:
    """dave is denied db.identity_part by name and may plan everything else, by name or location."""
    denied, allowed = _metadata_file(lake["warehouse"], DENIED), _metadata_file(lake["warehouse"], OPEN)
    for way, location in _spellings(denied).items():
        assert _is_missing(_plan(lake, "dave", location)), (way, location)
    assert _plan(lake, "dave", str(allowed)).status_code == 200


def test_a_location_one_may_not_plan_never_tells_whether_a_file_is_there(lake: dict[str, Any]) -> None:
    """Outside mallory's grant: a file that exists, one that does not, one outside the roots: one answer."""
    mine = _metadata_file(lake["warehouse"], OPEN)
    answers = [
        _plan(lake, "mallory", location)
        for location in (
            f"{mine.parent}/../../{DENIED}/metadata/v1.metadata.json",  # exists
            f"{mine.parent}/../../{DENIED}/metadata/v999.metadata.json",  # does not
            f"{mine.parent}/../../no_such_table/metadata/v1.metadata.json",
            "/etc/hostname",  # outside the roots
        )
    ]
    assert {(a.status_code, a.json()["error"]["type"]) for a in answers} == {(404, "NoSuchTableException")}


def test_the_audit_records_the_location_read(lake: dict[str, Any]) -> None:
    denied = _metadata_file(lake["warehouse"], DENIED)
    sent = f"{lake['warehouse']}/db/{OPEN}/../{DENIED}/metadata/{denied.name}"
    assert _is_missing(_plan(lake, "alice", sent))
    lines = [json.loads(line) for line in lake["audit"].read_text().splitlines()]
    denials = [line for line in lines if line.get("principal") == "alice" and line.get("outcome") == "denied"]
    assert denials and denials[-1]["table"] == f"file://{denied}", denials[-1:]
