"""Each fresh plan's ScanReport (planning/scan_report.py): logged as JSON ("scan report"), and, with
rest_catalog_report_metrics, POSTed to the upstream REST catalog's metrics endpoint for the tables it
serves, as Iceberg's RESTMetricsReporter sends them. The POSTs run on one background thread, at most
MAX_PENDING waiting (more are dropped and counted): a slow catalog never slows planning."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from planner_service.catalog.base import TableIdentifier
from planner_service.catalog.rest import RestCatalog
from planner_service.errors import PlannerError
from planner_service.metrics import SCAN_REPORTS
from planner_service.planning.scan_plan import ScanPlan
from planner_service.planning.scan_report import REPORT_TYPE, scan_report

log = logging.getLogger(__name__)
MAX_PENDING = 100


class ScanReports:
    def __init__(self, catalog: RestCatalog | None, metrics: Any) -> None:
        self.catalog = catalog  # where reports go (None: logged only)
        self.metrics = metrics
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="scan-reports") if catalog is not None else None
        self._pending = threading.BoundedSemaphore(MAX_PENDING)

    def publish(self, plan: ScanPlan) -> None:
        report = scan_report(plan)
        if report is None:
            return
        log.info("scan report", extra={"scan-report": report})
        if self._pool is None or self.catalog is None:
            return
        try:
            identifier = TableIdentifier.parse(plan.table.name)
        except PlannerError:
            return  # loaded by location: no catalog table to report to
        if identifier not in self.catalog.loaded:
            return
        if not self._pending.acquire(blocking=False):
            self.metrics.inc(SCAN_REPORTS, outcome="dropped")
            return
        self._pool.submit(self._send, identifier, {"report-type": REPORT_TYPE, **report})

    def _send(self, identifier: TableIdentifier, body: dict[str, Any]) -> None:
        try:
            assert self.catalog is not None
            self.catalog.report_metrics(identifier, body)
            outcome = "sent"
        except PlannerError as exc:
            log.warning("scan report not sent", extra={"table": str(identifier), "error": exc.message})
            outcome = "failed"
        finally:
            self._pending.release()
        self.metrics.inc(SCAN_REPORTS, outcome=outcome)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
