"""Several uvicorn worker processes (`serve --workers 2`) plan as one does: settings reach every worker."""

from __future__ import annotations

import httpx

from tests.conformance.reference import Conformance
from tests.conftest import running_service
from tests.plan_wire import splits


def test_workers_plan_like_one(conformance: Conformance) -> None:
    warehouse = str(conformance.dir / "warehouse")
    case = conformance.case("identity_part/partition-and-column")
    with running_service("--warehouse", warehouse, "--workers", "2", "--log-level", "warning") as url:
        for _ in range(4):  # requests spread over both workers
            body = {"table": "db.identity_part", "filter": case["filter"]}
            response = httpx.post(f"{url}/plan", json=body, timeout=30)
            assert response.status_code == 200, response.text[:300]
            planned = [f["data-file"]["file-path"] for f in splits(response.json())]
            assert planned == [t["path"] for combined in case["tasks"] for t in combined]
