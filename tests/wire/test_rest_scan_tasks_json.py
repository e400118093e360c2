"""A REST scan page rendered from the plan's columns is the JSON of its task objects, page for page, on every
conformance table (partitions and their evolution, deletes of every kind, v1 to v3, ORC/Avro/Parquet) and
several filters: the objects' encoding is the reference (tests/api/test_rest_scan.py holds it to Java's
planFiles()), and nothing but the encoding changes."""

from __future__ import annotations

import json

import orjson
import pytest

from planner_service.expressions.expression import TRUE
from planner_service.expressions.expression_json import expression_from_json
from planner_service.io.fileio import FileIO
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.scan_request import ScanRequest
from planner_service.service.rest_plans import Pages
from planner_service.wire.rest_scan_tasks_json import encode_scan_task_rows, encode_scan_tasks, residuals_json
from tests.conformance.reference import Conformance
from tests.planning.conformance_plans import conformance_table

FILTERS = (None, {"type": "lt", "term": "id", "value": 30}, {"type": "eq", "term": "category", "value": "a"})


@pytest.mark.parametrize("page_size", [1, 3, 1000])
def test_pages_from_columns_are_the_objects_json(conformance: Conformance, page_size: int) -> None:
    planner = ScanPlanner(FileIO())
    compared = 0
    for name in conformance.tables:
        table = conformance_table(conformance, planner, name)
        for row_filter in FILTERS:
            try:
                request = ScanRequest(row_filter=expression_from_json(row_filter) if row_filter else TRUE)
                plan = planner.plan(table, request)
            except Exception:  # a filter on a column the table lacks: nothing to compare
                continue
            if plan.files is None:
                continue
            meta = table.metadata
            pages, residuals = Pages(len(plan.files), page_size), residuals_json(plan.files)
            objects = plan.file_tasks
            for number in range(pages.count):
                begin, end = pages.bounds(number)
                ours = encode_scan_task_rows(plan.files, begin, end, meta.specs, meta.schema, residuals)
                expected = encode_scan_tasks(objects[begin:end], meta.specs, meta.schema)
                assert json.loads(orjson.dumps(ours)) == expected, (name, row_filter, number)
                compared += 1
    assert compared > len(conformance.tables)
