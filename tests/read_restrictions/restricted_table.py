"""A small table read under read restrictions: its raw rows (the oracle), Parquet files written from them by
pyarrow (one per region, two rows a row group, so that statistics judge several ranges), a /plan response
around them that carries `read-restrictions`, and what a reader must return, computed here from the raw
rows with the spec's definitions written out by hand (not with read_restrictions).

The restrictions: the required row filter `region != 'apac' AND amount >= 10`, and masks on email
(mask-alphanum), region (mask-alphanum; the identity partition column, whose partition value the service
masked), card (show-last-4), ssn (sha-256-query-local) and the nested info.city (show-first-4). An
equality delete removes bob's row by its raw email."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tests.spark_client.plans import field, file_task, plan, schema, write_rows

SPEC_EMAIL = "prashant010696@gmail.com"  # the spec's example: mask-alphanum gives "xxxxxxxxnnnnnn@xxxxx.xxx"
LOOKALIKE = "abcdefgh123456@yahoo.com"  # another address of the same shape: the same mask
DELETED_EMAIL = "bob@example.org"  # the equality delete's key
SCHEMA = schema(
    field(1, "id", "long", required=True),
    field(2, "email", "string"),
    field(3, "region", "string"),
    field(4, "card", "string"),
    field(5, "ssn", "string"),
    field(6, "amount", "long"),
    field(7, "info", {"type": "struct", "fields": [field(8, "city", "string"), field(9, "zip", "string")]}),
)
SPEC = {"spec-id": 0, "fields": [{"source-id": 3, "field-id": 1000, "name": "region", "transform": "identity"}]}
ROW_FILTER = {
    "type": "and",
    "left": {"type": "not-eq", "term": "region", "value": "apac"},
    "right": {"type": "gt-eq", "term": "amount", "value": 10},
}
MASKS = [
    {"action": "mask-alphanum", "field-id": 2},
    {"action": "mask-alphanum", "field-id": 3},
    {"action": "show-last-4", "field-id": 4},
    {"action": "sha-256-query-local", "field-id": 5},
    {"action": "show-first-4", "field-id": 8},
]
RESTRICTIONS = {"required-row-filter": ROW_FILTER, "required-column-projections": MASKS}


def _row(i: int, email: Any, region: str, card: Any, ssn: Any, amount: Any, info: Any) -> dict[str, Any]:
    return {"id": i, "email": email, "region": region, "card": card, "ssn": ssn, "amount": amount, "info": info}


RAW = [
    _row(1, SPEC_EMAIL, "eu", "4111-1111-1111-4444", "123-45-6789", 120, {"city": "Zürich", "zip": "8001"}),
    _row(2, "carol@example.fr", "eu", "5500 0000 0000 0004", "987-65-4321", 5, {"city": "Lyon", "zip": "69001"}),
    _row(3, DELETED_EMAIL, "eu", None, "555-55-5555", 300, None),
    _row(4, None, "eu", "1234", None, None, {"city": None, "zip": "1000"}),
    _row(5, "chen@example.cn", "apac", "3782-822463-10005", "111-22-3333", 900, {"city": "東京", "zip": "100"}),
    _row(6, "dev@example.in", "apac", "6011", "444-55-6666", 15, {"city": "Pune", "zip": "411001"}),
    _row(7, "zoe1999@mail.com", "us", "6011000990139424", "123-45-6789", 10, {"city": "NYC", "zip": "10001"}),
    _row(8, LOOKALIKE, "us", "30569309025904", "222-33-4444", 50, {"city": "Boston", "zip": "02101"}),
    _row(9, "max@example.com", "us", "4000 0566 5566 5556", "999-99-9999", 9, None),
]
REGIONS = ("eu", "apac", "us")


# --- The spec's definitions, by hand ----------------------------------------------------------------------


def mask_alphanum(value: str) -> str:
    """Digits become n; ( ) , . - @ stay; every other code point becomes x."""
    return "".join("n" if c in "0123456789" else c if c in "(),.-@" else "x" for c in value)


def show_first_4(value: str) -> str:
    return value if len(value) <= 4 else value[:4] + mask_alphanum(value[4:])


def show_last_4(value: str) -> str:
    return value if len(value) <= 4 else mask_alphanum(value[:-4]) + value[-4:]


def sha_256_query_local(salt: bytes, value: str) -> str:
    """SHA-256 of the salt followed by the UTF-8 bytes, as 64 lowercase hex characters."""
    return hashlib.sha256(salt + value.encode()).hexdigest()


def _null_safe(fn: Callable[[str], str]) -> Callable[[str | None], str | None]:
    return lambda value: None if value is None else fn(value)


def masked_row(row: dict[str, Any], salt: bytes) -> dict[str, Any]:
    """A raw row as the restrictions present it."""
    info = row["info"]
    return {
        **row,
        "email": _null_safe(mask_alphanum)(row["email"]),
        "region": _null_safe(mask_alphanum)(row["region"]),
        "card": _null_safe(show_last_4)(row["card"]),
        "ssn": _null_safe(lambda v: sha_256_query_local(salt, v))(row["ssn"]),
        "info": None if info is None else {**info, "city": _null_safe(show_first_4)(info["city"])},
    }


def kept_by_row_filter(row: dict[str, Any]) -> bool:
    """`region != 'apac' AND amount >= 10` on the raw values, false or null dropping the row (a null
    operand makes a comparison null)."""
    return row["region"] is not None and row["region"] != "apac" and row["amount"] is not None and row["amount"] >= 10


def expected_rows(
    salt: bytes, keep: Callable[[dict[str, Any]], bool] = lambda row: True, deleted: str | None = DELETED_EMAIL
) -> list[dict[str, Any]]:
    """What a reader must return, by id: the rows the row filter keeps on raw values, less the `deleted`
    email's, masked, then those `keep` (the user's filter, on masked values) keeps."""
    rows = [masked_row(r, salt) for r in RAW if kept_by_row_filter(r) and (deleted is None or r["email"] != deleted)]
    return sorted((r for r in rows if keep(r)), key=lambda r: r["id"])


# --- Files and the plan ----------------------------------------------------------------------------------


def write_table(directory: Path, partition: Callable[[str], Any] = mask_alphanum) -> dict[str, Any]:
    """The files, one task each, and the plan (plans.plan's form: tasks with their files written out),
    restricted. `partition(region)` is the partition value the plan carries for a file: by default what
    the service sends for a masked identity source, the masked value."""
    tasks = []
    for region in REGIONS:
        rows = [r for r in RAW if r["region"] == region]
        columns = {name: [r[name] for r in rows] for name in RAW[0]}
        path = write_rows(directory / f"{region}.parquet", SCHEMA, columns, row_group_size=2)
        tasks.append([file_task(path, partition=[partition(region)], deletes=[0])])
    deletes = directory / "email-deletes.parquet"
    email = pa.field("email", pa.string(), True, {b"PARQUET:field_id": b"2"})
    pq.write_table(pa.table({"email": [DELETED_EMAIL]}, schema=pa.schema([email])), deletes)
    delete = {"content": "equality-deletes", "file-format": "parquet", "file-path": str(deletes), "equality-ids": [2]}
    restricted = plan(SCHEMA, tasks, specs=[SPEC], delete_files=[delete])
    restricted["filter"] = True
    restricted["non-null-field-ids"] = [1, 3]  # id is required; no region is null
    restricted["read-restrictions"] = copy.deepcopy(RESTRICTIONS)
    return restricted


def with_filter(restricted: dict[str, Any], user_filter: Any) -> dict[str, Any]:
    """The plan with the user's filter (its "filter", what the reader applies to masked values)."""
    return {**restricted, "filter": user_filter}


def rows_of(batches: list[pa.RecordBatch]) -> list[dict[str, Any]]:
    """The reader's batches as rows, by id."""
    rows = pa.Table.from_batches(batches).to_pylist() if batches else []
    return sorted(rows, key=lambda r: r["id"])
