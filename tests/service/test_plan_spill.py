"""Plans too big for the plan-result cache, kept on disk (service/plan_spill.py): fetched by id they are read
back, not planned again, and answer exactly as the plan made in memory; a damaged or foreign file is never
trusted; the directory is bounded, cleaned at start and removed at close."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from planner_service.catalog.base import LoadedTable, load_by_metadata_location
from planner_service.io.fileio import FileIO
from planner_service.planning.admission import Admission
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.scan_request import scan_request
from planner_service.service.cached_plan import CachedPlan
from planner_service.service.plan_cache import PlanCache
from planner_service.service.plan_ids import CanonicalRequest
from planner_service.service.plan_spill import MAGIC, PlanSpill
from planner_service.wire.native_tasks_json import TaskRange, encode_tasks
from planner_service.wire.plan_json import encode_plan
from tests.conformance.reference import Conformance

# tables with deletes of every kind, several specs, nested types, and ORC and Avro data
TABLES = ["mor_position_deletes", "equality_deletes", "spec_evolution", "v3_dv", "mixed_formats", "all_types"]


@pytest.fixture
def planner() -> Iterator[ScanPlanner]:
    planner = ScanPlanner(FileIO())
    yield planner
    planner.close()


def _results(planner: ScanPlanner, spill: PlanSpill | None) -> PlanCache:
    """Plan results whose cache holds no plan (2 bytes): every plan with files goes to the spill."""
    return PlanCache(planner, 2, Admission(2, 1 << 30, 5, 2), spill)


def _request(conformance: Conformance, planner: ScanPlanner, name: str, **fields: Any) -> CanonicalRequest:
    table = load_by_metadata_location(planner.io, conformance.tables[name]["metadata_location"])
    return CanonicalRequest(f"db.{name}", table.metadata_location, scan_request(**fields))


def _answers(result: CachedPlan, timings: bool = True) -> tuple[bytes, list[Any]]:
    """The /plan body (without its metrics when not `timings`: a plan made again took another time) and
    every task fetched by index: what a client sees of a plan."""
    body = b"".join(encode_plan(result.plan, result.request.cache_id))
    if not timings:
        body = orjson.dumps({k: v for k, v in orjson.loads(body).items() if k != "metrics"})
    tasks = [
        orjson.loads(
            b"".join(
                encode_tasks(
                    result.plan, result.request.cache_id, result.reader_context, TaskRange.of(result.plan, t, None)
                )
            )
        )
        for t in range(len(result.plan.combined or ()))
    ]
    return body, tasks


@pytest.mark.parametrize("name", TABLES)
@pytest.mark.parametrize("filtered", [False, True])
def test_a_spilled_plan_answers_as_the_plan_made_in_memory(
    conformance: Conformance, planner: ScanPlanner, tmp_path: Path, name: str, filtered: bool
) -> None:
    spill = PlanSpill(tmp_path, 1 << 30)
    results = _results(planner, spill)
    request = _request(
        conformance, planner, name, filter=("i > 2" if name == "all_types" else "id > 2") if filtered else None
    )
    writing = threading.Event()
    spill._writer.submit(writing.wait, 60)  # the one writer thread is busy until the check below: the plan waits
    made, fresh = results.plan(request, _table(planner, request))
    assert fresh
    assert results.get(request) is made  # served from memory while being written
    writing.set()
    spill.flush()
    expected = _answers(made)
    planned = _count_plans(results)
    spilled = results.get(request)
    assert spilled is not made and planned == [0]  # read back from disk, not planned again
    assert _answers(spilled) == expected
    assert spill.spilled == 1 and spill.bytes > 0
    spill.close()
    assert not spill.directory.exists()


@pytest.mark.parametrize("damage", ["body", "header", "truncated"])
def test_a_damaged_or_foreign_spill_file_is_never_trusted(
    conformance: Conformance, planner: ScanPlanner, tmp_path: Path, damage: str
) -> None:
    """A flipped bit in the body, a header whose sizes point past the file (parsed before the signature is
    checked), a file cut short: each refused and forgotten, never an error to the client."""
    spill = PlanSpill(tmp_path, 1 << 30)
    results = _results(planner, spill)
    request = _request(conformance, planner, "mor_position_deletes")
    expected = _answers(results.plan(request, _table(planner, request))[0], timings=False)
    spill.flush()
    spill._loaded.clear()  # read from disk again
    (binary,) = spill.directory.glob("*.bin")
    data = bytearray(binary.read_bytes())
    if damage == "body":
        data[len(data) // 2] ^= 1
    elif damage == "header":
        data[len(MAGIC) : len(MAGIC) + 8] = (1 << 62).to_bytes(8, "little")  # the head's size
    else:
        del data[len(MAGIC) + 4 :]
    binary.write_bytes(bytes(data))
    assert spill.get(request.cache_id) is None  # refused and forgotten: the plan is rebuilt
    assert spill.bytes == 0 and not list(spill.directory.iterdir())
    planned = _count_plans(results)
    assert _answers(results.get(request), timings=False) == expected
    assert planned == [1]


def test_the_spill_is_bounded_least_recently_used_first(
    conformance: Conformance, planner: ScanPlanner, tmp_path: Path
) -> None:
    probe = PlanSpill(tmp_path / "probe", 1 << 30)
    first = _request(conformance, planner, "mor_position_deletes")
    _results(planner, probe).plan(first, _table(planner, first))
    probe.flush()
    one_plan = probe.bytes
    spill = PlanSpill(tmp_path / "bounded", one_plan * 2 + one_plan // 2)
    results = _results(planner, spill)
    requests = [_request(conformance, planner, "mor_position_deletes", filter=f"id > {i}") for i in range(4)]
    for request in requests:
        results.plan(request, _table(planner, request))
    spill.flush()
    assert spill.evicted >= 1 and spill.bytes <= spill.max_bytes
    assert spill.get(requests[0].cache_id) is None and spill.get(requests[-1].cache_id) is not None
    assert len(list(spill.directory.glob("*.bin"))) == len(spill._files)


def test_directories_of_processes_gone_are_removed_at_start(tmp_path: Path) -> None:
    gone = tmp_path / f"{_a_pid_not_running()}-0badc0de"
    gone.mkdir()
    (gone / "x.bin").write_bytes(b"left by a crash")
    mine = tmp_path / f"{os.getpid()}-cafef00d"  # a running process's (another service's) stays
    mine.mkdir()
    unrelated = tmp_path / "notes.txt"
    unrelated.write_text("not ours")
    spill = PlanSpill(tmp_path, 1 << 20)
    assert not gone.exists() and mine.exists() and unrelated.exists()
    assert spill.directory.stat().st_mode & 0o777 == 0o700
    spill.close()


def test_without_a_spill_a_big_plan_is_rebuilt_by_id(
    conformance: Conformance, planner: ScanPlanner, tmp_path: Path
) -> None:
    results = _results(planner, None)
    request = _request(conformance, planner, "mor_position_deletes")
    results.plan(request, _table(planner, request))
    planned = _count_plans(results)
    results.get(request)
    assert planned == [1]


def _table(planner: ScanPlanner, request: CanonicalRequest) -> LoadedTable:
    loaded = load_by_metadata_location(planner.io, request.metadata_location)
    return LoadedTable(request.table, loaded.metadata_location, loaded.metadata)


def _count_plans(results: PlanCache) -> list[int]:
    made = [0]
    plan = results._plan

    def counted(*args: Any, **kwargs: Any) -> Any:
        made[0] += 1
        return plan(*args, **kwargs)

    results._plan = counted  # type: ignore[method-assign]
    return made


def _a_pid_not_running() -> int:
    pid = 4_000_000
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            pass
        pid += 1


def test_spilled_json_is_the_same_text(conformance: Conformance, planner: ScanPlanner, tmp_path: Path) -> None:
    """The spilled plan's task JSON parses to the same objects (a guard on the bytes comparison above)."""
    spill = PlanSpill(tmp_path, 1 << 30)
    results = _results(planner, spill)
    request = _request(conformance, planner, "spec_evolution")
    made = results.plan(request, _table(planner, request))[0]
    spill.flush()
    spilled = results.get(request)
    assert orjson.loads(b"".join(encode_plan(spilled.plan))) == orjson.loads(b"".join(encode_plan(made.plan)))


@pytest.mark.parametrize(("limit", "spilled"), [(0, True), (10**9, False), (None, True)])
def test_only_plans_answered_by_id_go_to_disk(
    conformance: Conformance, planner: ScanPlanner, tmp_path: Path, limit: int | None, spilled: bool
) -> None:
    """/plan passes its inline limit: a plan sent whole is not written out (its tasks are in its answer); one
    answered by id is, and a plan made for a task fetch (no limit) is."""
    spill = PlanSpill(tmp_path, 1 << 30)
    results = _results(planner, spill)
    request = _request(conformance, planner, "mor_position_deletes")
    results.plan(request, _table(planner, request), inline_limit=limit)
    spill.flush()
    assert (spill.spilled == 1) is spilled
    spill.close()
