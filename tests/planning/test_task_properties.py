"""Properties of the planner's tasks on synthetic tables, for any files hypothesis draws: bounds on the sort
column `id` that overlap, touch, repeat, hold one value or are missing, null counts known or not, empty files,
sizes, split offsets usable or not, partition values with null among them. Planned through ScanPlanner:

- grouping=sort-order (planning/sort_grouping.py): no two files of a task overlap on the key; within each
  partition the tasks come in key order, files without bounds after them, alone; with one task a run, as many
  tasks as the files' deepest overlap (the optimum of interval partitioning, which the min-heap of runs reaches);
- every grouping: each file's bytes are in the tasks exactly once;
- grouping=partition (planning/grouping.py): a task holds one partition value, values ascend with null first,
  and each value's tasks are those combine() packs of that value's files alone (Iceberg's planTaskGroups).

Expected values come from the drawn files, by the rules of sort_ranges.py's docstring (a file may hold nulls
unless counted 0 or the column is required; its values lie between its bounds; a file with values but no
bounds has no range; a file with no values sits with the nulls) and of splits.py's, never from the planner."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner_service.nesting import ensure_recursion_headroom
from planner_service.planning.grouping import GROUPINGS, Grouping
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.scan_plan import ScanPlan
from planner_service.planning.scan_request import ScanRequest
from planner_service.splitting.combine import FileColumns, Packing, combine
from tests.planning.conformance_plans import task_pieces
from tests.planning.factories import Direction, FileEntry, MemoryIO, NullOrder, TableWriter

PROPERTIES = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
MANIFEST = "s3://bucket/wh/db/events/metadata/m0.avro"
ONE_TASK_A_RUN = {"split-size": 2**40, "file-open-cost": 1}
Key = tuple[int, int]  # a key's place in the sort order: (0, 0) nulls first, (1, value or -value for desc), (2, 0)
Piece = tuple[str, int, int]  # a task's byte range of a file: (path, start, length)

# planning raises the recursion limit on its first table; raised here first, hypothesis finds it unchanged
ensure_recursion_headroom()


@dataclass(frozen=True)
class Layout:
    """The table's sort order on id, whether id may hold nulls, and whether spec 0 partitions by `data`."""

    direction: Direction
    null_order: NullOrder
    id_required: bool
    partitioned: bool

    def writer(self, io: MemoryIO) -> TableWriter:
        return TableWriter(
            io,
            partition_by="data" if self.partitioned else None,
            sort_order=(self.direction, self.null_order),
            id_required=self.id_required,
        )


@dataclass(frozen=True)
class Table:
    layout: Layout
    files: tuple[FileEntry, ...]

    def partition(self, f: FileEntry) -> Any:
        return f.partition[0] if self.layout.partitioned else None

    def key_range(self, f: FileEntry) -> tuple[Key, Key] | None:
        """The file's first and last key, or None when it holds values and has no bounds."""
        layout = self.layout
        may_hold_values = f.id_nulls is None or f.record_count > f.id_nulls
        may_hold_nulls = not layout.id_required and (f.id_nulls is None or f.id_nulls > 0)
        if may_hold_values and f.id_range is None:
            return None
        keys: list[Key] = []
        if may_hold_values and f.id_range is not None:
            keys += [(1, v if layout.direction == "asc" else -v) for v in f.id_range]
        if may_hold_nulls or not may_hold_values:  # (a file without rows is placed with the nulls)
            keys.append((0, 0) if layout.null_order == "nulls-first" else (2, 0))
        return min(keys), max(keys)

    def value(self, key: Key) -> tuple[Any, ...]:
        """A key as the grouping states a task's range: the id value, None for null."""
        band, position = key
        return (None,) if band != 1 else (position if self.layout.direction == "asc" else -position,)


@st.composite
def _offsets(draw: st.DrawFn, size: int) -> tuple[int, ...] | None:
    """None, offsets a file can be cut at (ascending, inside it), or offsets it cannot (past its end, unordered)."""
    kind = draw(st.sampled_from(["none", "none", "usable", "any"]))
    if kind == "none":
        return None
    if kind == "usable":
        return tuple(sorted(draw(st.lists(st.integers(0, size - 1), min_size=1, max_size=4, unique=True))))
    return tuple(draw(st.lists(st.integers(0, size + 5), min_size=1, max_size=4)))


@st.composite
def _file(draw: st.DrawFn, number: int, layout: Layout) -> FileEntry:
    records = draw(st.integers(0, 40))
    if layout.id_required:
        nulls = draw(st.sampled_from([0, 0, 0, None]))
    else:
        nulls = draw(st.sampled_from([0, None, None]) | st.integers(0, records))
    no_values = nulls is not None and nulls >= records  # all null or empty: writers leave no bounds
    bounds = None
    if not no_values and draw(st.integers(0, 7)) > 0:
        low, high = draw(st.integers(-12, 12)), draw(st.integers(-12, 12))
        bounds = (min(low, high), max(low, high))
    size = draw(st.integers(1, 3000))
    return FileEntry(
        f"s3://bucket/data/f{number}.parquet",
        record_count=records,
        id_range=bounds,
        id_nulls=nulls,
        partition=(draw(st.sampled_from([None, "a", "b", "B", "ab"])),) if layout.partitioned else (),
        file_size=size,
        split_offsets=draw(_offsets(size)),
    )


@st.composite
def _tables(draw: st.DrawFn, partitioned: bool | None = None) -> Table:
    layout = Layout(
        draw(st.sampled_from(["asc", "desc"])),
        draw(st.sampled_from(["nulls-first", "nulls-last"])),
        draw(st.booleans()),
        draw(st.booleans()) if partitioned is None else partitioned,
    )
    n = draw(st.integers(0, 40))
    return Table(layout, tuple(draw(_file(i, layout)) for i in range(n)))


def _split_options() -> st.SearchStrategy[dict[str, int]]:
    return st.fixed_dictionaries(
        {"split-size": st.integers(1, 4000), "file-open-cost": st.integers(0, 500), "lookback": st.integers(1, 4)}
    )


def _plan(table: Table, grouping: Grouping, options: dict[str, int]) -> ScanPlan:
    io = MemoryIO()
    writer = table.layout.writer(io)
    writer.manifest(MANIFEST, list(table.files))
    writer.snapshot(1, [MANIFEST])
    planner = ScanPlanner(io, threads=1)
    try:
        return planner.plan(writer.table(), ScanRequest(options=options, grouping=grouping))
    finally:
        planner.close()


def _files_of(task: list[Piece]) -> list[str]:
    """The task's files, each once, in the order of their first pieces."""
    return list(dict.fromkeys(path for path, _, _ in task))


def _ascending(value: Any) -> tuple[bool, Any]:
    """Spark's ascending order of one partition value, nulls first."""
    return (value is not None, "" if value is None else value)


def _deepest_overlap(ranges: list[tuple[Key, Key]]) -> int:
    """The most ranges that hold one key (ranges are closed: two that touch share their end)."""
    return max((sum(a <= first <= b for a, b in ranges) for first, _ in ranges), default=0)


def _bytes_read(f: FileEntry) -> tuple[int, int]:
    """The byte range of a file that its splits cover: from its first split offset when its offsets are usable
    (ascending, the last inside the file), else from 0; to its end."""
    offsets = f.split_offsets or ()
    usable = bool(offsets) and offsets[-1] < f.file_size and all(a < b for a, b in itertools.pairwise(offsets))
    return (offsets[0] if usable else 0), f.file_size


@PROPERTIES
@given(_tables(), _split_options())
def test_no_two_files_of_a_sort_order_task_overlap_on_the_key(table: Table, options: dict[str, int]) -> None:
    """Closed ranges overlap unless one ends before the other begins: files that share an end key are apart.
    A task's files come in key order, each after the one before; a file without a range is alone."""
    by_path = {f.path: f for f in table.files}
    for t, task in enumerate(task_pieces(_plan(table, "sort-order", options))):
        files = [by_path[p] for p in _files_of(task)]
        ranges = [table.key_range(f) for f in files]
        if None in ranges:
            assert len(files) == 1, f"task {t}: a file without bounds shares a task with {len(files) - 1} more"
            continue
        bounded = [r for r in ranges if r is not None]
        for (a, b), (c, d) in itertools.combinations(bounded, 2):
            assert b < c or d < a, f"task {t}: {files} overlap: {bounded}"
        for (_, before), (after, _) in itertools.pairwise(bounded):
            assert before < after, f"task {t}: its files are out of key order: {bounded}"


@PROPERTIES
@given(_tables(), _split_options())
def test_sort_order_tasks_come_partition_by_partition_in_key_order_files_without_bounds_last(
    table: Table, options: dict[str, int]
) -> None:
    """Partitions ascend (null first) and each task holds one; within a partition, tasks by first key then last
    key, each stated as its range; then the files without bounds, one a task."""
    plan = _plan(table, "sort-order", options)
    grouping = plan.grouping
    tasks = task_pieces(plan)
    assert grouping is not None and grouping.ranges is not None and len(grouping.task_key) == len(tasks)
    by_path = {f.path: f for f in table.files}
    used = sorted({table.partition(f) for f in table.files}, key=_ascending)
    assert list(grouping.keys) == [(v,) if table.layout.partitioned else () for v in used]
    partitions_in_turn: list[Any] = []
    last_range: dict[Any, tuple[Key, Key] | None] = {}  # by partition: its previous task's range (None: unbounded)
    for t, task in enumerate(tasks):
        files = [by_path[p] for p in _files_of(task)]
        partitions = {table.partition(f) for f in files}
        assert len(partitions) == 1, f"task {t} holds partitions {partitions}"
        partition = partitions.pop()
        assert grouping.keys[int(grouping.task_key[t])] == ((partition,) if table.layout.partitioned else ())
        if partitions_in_turn[-1:] != [partition]:
            partitions_in_turn.append(partition)
        ranges = [table.key_range(f) for f in files]
        span = grouping.ranges.task_spans[t]
        bounded = [r for r in ranges if r is not None]
        if len(bounded) < len(ranges):
            assert len(files) == 1 and span is None, f"task {t}: a file without bounds is not alone"
            last_range[partition] = None
            continue
        first, last = min(r[0] for r in bounded), max(r[1] for r in bounded)
        assert span == (table.value(first), table.value(last)), f"task {t}: range {span}, not {first}..{last}"
        if partition in last_range:
            before = last_range[partition]
            assert before is not None, f"task {t}: bounded, after a task of a file without bounds"
            assert before <= (first, last), f"task {t}: keys {first}..{last} after {before}"
        last_range[partition] = (first, last)
    assert partitions_in_turn == used, "partitions are not one after the other, ascending"


@PROPERTIES
@given(_tables())
def test_with_a_task_a_run_the_bounded_tasks_are_as_many_as_the_deepest_overlap(table: Table) -> None:
    """With a split size no run reaches, each run is one task: per partition, the runs are as few as interval
    partitioning allows, the most ranges that hold one key; each file without bounds is a task of its own."""
    tasks = task_pieces(_plan(table, "sort-order", ONE_TASK_A_RUN))
    by_path = {f.path: f for f in table.files}
    bounded_tasks: dict[Any, int] = {}
    unbounded_tasks = 0
    for task in tasks:
        files = [by_path[p] for p in _files_of(task)]
        if table.key_range(files[0]) is None:
            unbounded_tasks += 1
        else:
            partition = table.partition(files[0])
            bounded_tasks[partition] = bounded_tasks.get(partition, 0) + 1
    ranges_by_partition: dict[Any, list[tuple[Key, Key]]] = {}
    for f in table.files:
        key_range = table.key_range(f)
        if key_range is not None:
            ranges_by_partition.setdefault(table.partition(f), []).append(key_range)
    assert bounded_tasks == {p: _deepest_overlap(ranges) for p, ranges in ranges_by_partition.items()}
    assert unbounded_tasks == sum(table.key_range(f) is None for f in table.files)


@PROPERTIES
@given(_tables(), st.sampled_from(GROUPINGS), _split_options())
def test_each_files_bytes_are_in_the_tasks_exactly_once(
    table: Table, grouping: Grouping, options: dict[str, int]
) -> None:
    """Every file planned (no filter: all of them) is read, range after range with no gap and no repeat, from
    its first usable split offset (or 0) to its end, whatever the grouping, split size and open cost."""
    plan = _plan(table, grouping, options)
    assert plan.files is not None
    assert sorted(plan.files.index.paths(plan.files.rows)) == sorted(f.path for f in table.files)
    read: dict[str, list[tuple[int, int]]] = {}
    for task in task_pieces(plan):
        assert task, "an empty task"
        for path, start, length in task:
            assert length > 0, f"{path}: an empty piece at {start}"
            read.setdefault(path, []).append((start, start + length))
    for f in table.files:
        pieces = sorted(read.get(f.path, []))
        assert pieces, f"{f.path} is in no task"
        assert (pieces[0][0], pieces[-1][1]) == _bytes_read(f), f"{f.path}: {pieces}"
        for (_, end), (start, _) in itertools.pairwise(pieces):
            assert end == start, f"{f.path}: pieces {pieces} leave a gap or overlap"


def _file_columns(files: list[FileEntry]) -> FileColumns:
    offsets = [f.split_offsets or () for f in files]
    none = np.zeros(len(files), np.int64)
    return FileColumns(
        np.array([f.file_size for f in files], np.int64),
        np.ones(len(files), np.bool_),  # Parquet
        np.array([len(o) for o in offsets], np.int64),
        np.array([o for of_file in offsets for o in of_file], np.int64),
        np.array([f.record_count for f in files], np.int64),
        none,
        none,
    )


@PROPERTIES
@given(_tables(partitioned=True), _split_options())
def test_partition_tasks_hold_one_value_ascending_each_packed_as_its_files_alone(
    table: Table, options: dict[str, int]
) -> None:
    """Each partition value's tasks, in the plan's order, are combine()'s tasks of that value's files alone in
    planFiles() order (one manifest: its entries' order), with the scan's split size, lookback and open cost."""
    plan = _plan(table, "partition", options)
    tasks = task_pieces(plan)
    assert plan.files is not None
    assert plan.files.index.paths(plan.files.rows) == [f.path for f in table.files], "planFiles() order"
    if not table.files:
        assert plan.grouping is None and tasks == []
        return
    grouping = plan.grouping
    assert grouping is not None and grouping.ranges is None and len(grouping.task_key) == len(tasks)
    values = sorted({table.partition(f) for f in table.files}, key=_ascending)
    assert list(grouping.keys) == [(v,) for v in values]
    by_path = {f.path: f for f in table.files}
    task_values = []
    for t, task in enumerate(tasks):
        held = {table.partition(by_path[p]) for p in _files_of(task)}
        assert held == {grouping.keys[int(grouping.task_key[t])][0]}, f"task {t} holds {held}"
        task_values.append(held.pop())
    assert task_values == sorted(task_values, key=_ascending), "partition values out of order"
    for value in values:
        files = [f for f in table.files if table.partition(f) == value]
        packing = Packing(
            split_size=options["split-size"], lookback=options["lookback"], open_file_cost=options["file-open-cost"]
        )
        alone = combine(_file_columns(files), packing)
        expected = [
            [(files[int(alone.file[p])].path, int(alone.start[p]), int(alone.length[p])) for p in alone.pieces(t)]
            for t in range(len(alone))
        ]
        assert [task for task, v in zip(tasks, task_values, strict=True) if v == value] == expected, value
