"""The audit log: one structured line per decision that matters (a plan made, credentials vended, a request
denied) with the principal, the table, the snapshot, the privilege, the outcome and the files planned.
Logger `planner_service.audit` (INFO), in the service's log unless `audit_log` names a file of its own."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from planner_service.logs import JsonFormatter

log = logging.getLogger("planner_service.audit")


def audit(event: str, principal: str, privilege: str, outcome: str, table: str | None = None, **fields: Any) -> None:
    """`event` (plan, credentials, denied, ...) by `principal` on `table`: `outcome` (allowed, denied)."""
    extra = {"principal": principal, "privilege": privilege, "outcome": outcome, "table": table}
    extra.update({k.replace("_", "-"): v for k, v in fields.items() if v is not None})
    log.info(event, extra=extra)


def write_audit_to(path: str | None) -> None:
    """Send the audit lines to their own file (appended, JSON lines), not the service's log."""
    for handler in [h for h in log.handlers if getattr(h, "scan_planner_audit", False)]:
        log.removeHandler(handler)
        handler.close()
    log.setLevel(logging.INFO)
    if path is None:
        log.propagate = True
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(JsonFormatter())
    handler.scan_planner_audit = True  # type: ignore[attr-defined]
    log.addHandler(handler)
    log.propagate = False
