"""The routes' FastAPI dependencies: the runtime, the `pretty` query parameter and the path parameters.

Dependencies are coroutines: FastAPI runs a plain function dependency in the worker-thread pool, where it
would wait behind every blocked or busy thread (slow storage, big plans) and stall even /health."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Query, Request

from planner_service.api.request_models import DOTLESS_NAME, DOTLESS_NAMESPACE, NAME_RULE, NAMESPACE, QUALIFIED_NAME
from planner_service.service.runtime import Runtime


async def get_runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


async def is_pretty(
    pretty: Annotated[str | None, Query(description="indent the JSON (any value but false)")] = None,
) -> bool:
    return pretty is not None and pretty.lower() not in ("false", "0", "no")


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]
PrettyDep = Annotated[bool, Depends(is_pretty)]

# path parameters, described once for every route that takes them; a name's pattern is the catalog's own check
# (catalog/base.py check_name), which answers a name that breaks it 400 in its own words
PlanIdPath = Annotated[str, Path(description="a plan id, as the plan's answer gave it")]
TaskIndexPath = Annotated[int, Path(ge=0, description="a task's position in the plan, from 0")]
TableNamePath = Annotated[
    str, Path(description=f"a table name, `namespace.name`; {NAME_RULE}", json_schema_extra={"pattern": QUALIFIED_NAME})
]
NamespacePath = Annotated[
    str,
    Path(
        description=f"a namespace; nested levels joined by the unit separator (%1F); {NAME_RULE}",
        json_schema_extra={"pattern": NAMESPACE},
    ),
]
_DOTLESS = "without `.` (the service names a table namespace.name, so a dot would name another table)"
TableNamespacePath = Annotated[
    str,
    Path(
        description=f"the table's namespace; nested levels joined by the unit separator (%1F); {_DOTLESS}; {NAME_RULE}",
        json_schema_extra={"pattern": DOTLESS_NAMESPACE},
    ),
]
RestTablePath = Annotated[
    str,
    Path(
        description=f"a table's name within the namespace; {_DOTLESS}; {NAME_RULE}",
        json_schema_extra={"pattern": DOTLESS_NAME},
    ),
]
