"""Every hostile variant of a table Iceberg Java wrote (variants.py), planned through the service on loopback and
held to what Iceberg Java 1.10.2 does with it (java_verdicts.py, cached by the content of its inputs):

- what Java refuses to load, we refuse with a 422 naming the metadata file and carrying Java's message (but
  for the few cases in OUR_MESSAGES, where Java's says less or we refuse for another reason first);
- what Java refuses to plan (a broken manifest list or manifest), we refuse with a 422 naming the file (a
  503 for a manifest that is not there: storage may yet show it);
- what Java plans, we plan the same: the same data files with the same delete files, the same splits. Where
  Java plans from a record that cannot be right (a negative length or count, an empty path, an unknown content
  code: Java skips the manifest, or plans a file "") we refuse with a 422 naming the file and the field:
  STRICTER says why, case by case.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import running_service
from tests.hostile.variants import CASES
from tests.hostile.verdicts import java_files, load_verdicts, planned

# Java refuses these for a reason its message does not say (Jackson's nesting limit: "Failed to read
# file"), or for another reason than ours (format v4 is Java 1.10's work in progress; version 0 trips a
# sequence number check first; a duplicate id's message lists names in a Java HashMap's order, or prints
# whole Java objects), or quotes a value of a file not yet known to be table metadata, which ours does not
# (it could be any file under the roots), or more of it than ours (200 characters): ours must say this.
OUR_MESSAGES = {
    "metadata_not_object": "Cannot parse metadata from a non-object: an array",
    "format_version_text": "Cannot parse to an integer value: format-version: a string",
    "metadata_cut": "Cannot parse table metadata",
    "deep_struct_3000": "nests deeper than",
    "deep_list_3000": "nests deeper than",
    "deep_json_200000": "nests deeper than",
    "format_version_0": "Cannot read unsupported version 0",
    "format_version_4": "Cannot read unsupported version 4",
    "field_id_duplicate": "Multiple entries with same key: 1=id and 1=s",
    "snapshot_ids_twice": "Multiple entries with same key: snapshots with id",
    "schema_type_not_struct": "Cannot parse type from json: ",
    "nested_field_id_duplicate": "Multiple entries with same key: 1=id and 1=nested.a",
}

# What Java plans and we refuse, and the words our 422 must hold.
STRICTER = {
    "list_length_negative": "manifest_length -1",
    "list_counts_negative": "added_files_count -5",
    "list_sequence_negative": "sequence_number -3",
    "list_min_sequence_over": "min_sequence_number",
    "manifest_content_unknown": "content 9",
    "manifest_content_deletes": "content 1",
    "manifest_path_empty": "an empty file_path",
    "manifest_record_count_negative": "record_count -1",
    "manifest_size_negative": "file_size_in_bytes -1",
    "manifest_sequence_negative": "sequence_number -1",
    "partition_source_of_another_type": "s_trunc (decimal(9, 2)) cannot hold: a str value",
    "manifest_entry_ahead": "sequence_number 99, above its manifest's sequence_number",
    "manifest_map_not_a_map": "has field 'column_sizes' (id 108), which is not a map",
}


@pytest.fixture(scope="module")
def verdicts(request: pytest.FixtureRequest) -> dict[str, Any]:
    return load_verdicts(request.config)


@pytest.fixture(scope="module")
def service(verdicts: dict[str, Any]) -> Iterator[str]:
    with running_service("--warehouse", str(verdicts["dir"] / "warehouse")) as url:
        yield url


def _plan(url: str, name: str) -> httpx.Response:
    with httpx.Client(base_url=url, timeout=60) as client:
        return client.post("/plan", json={"table": f"hostile.{name}"})


def test_every_case_has_a_verdict(verdicts: dict[str, Any]) -> None:
    assert set(verdicts["verdicts"]) == set(CASES)
    assert verdicts["verdicts"]["intact"]["stage"] == "planned" and len(verdicts["verdicts"]["intact"]["files"]) > 3


@pytest.mark.parametrize("name", list(CASES))
def test_planned_as_java_plans_it_or_refused_as_java_refuses_it(
    verdicts: dict[str, Any], service: str, name: str
) -> None:
    verdict = verdicts["verdicts"][name]
    response = _plan(service, name)
    assert response.status_code < 500 or response.status_code == 503, response.text
    table_dir = verdicts["dir"] / "warehouse" / "hostile" / name
    if verdict["stage"] == "planned" and name not in STRICTER:
        assert response.status_code == 200, response.text
        files, tasks = planned(response.json())
        assert files == java_files(verdict)
        assert tasks == verdict["tasks"]
        return
    missing = verdict["error"] is not None and verdict["error"]["class"].endswith("NotFoundException")
    assert response.status_code == (503 if missing else 422), response.text  # a missing file may yet appear
    message = response.json()["error"]["message"]
    assert str(table_dir) in message or str(verdicts["base"]) in message, message  # names the file
    if name in STRICTER:
        assert STRICTER[name] in message
    elif verdict["stage"] == "load":
        assert OUR_MESSAGES.get(name, verdict["error"]["message"]) in message


def test_the_service_is_healthy_after_all_of_them(service: str) -> None:
    for name in CASES:
        _plan(service, name)
    with httpx.Client(base_url=service, timeout=10) as client:
        assert client.get("/health").status_code == 200
        assert client.post("/plan", json={"table": "hostile.intact"}).status_code == 200
