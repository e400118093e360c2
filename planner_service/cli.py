"""`scan-planner` command line: plan a table and print the /plan response or a summary."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from planner_service.api.error_kinds import error_kind
from planner_service.catalog.base import LoadedTable, TableIdentifier, load_by_metadata_location, missing_table
from planner_service.catalog.hadoop import HadoopCatalog, load_table_directory
from planner_service.catalog.sql import SqlCatalog
from planner_service.errors import BadRequestError, NoSuchTableError, PlannerError
from planner_service.expressions.binding import bind
from planner_service.expressions.filter_text import filter_text
from planner_service.io.fileio import FileIO
from planner_service.planning.grouping import GROUPINGS
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.scan_plan import ScanPlan
from planner_service.planning.scan_request import scan_request, snapshot_fields


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        result: int = args.run(args)
        return result
    except BrokenPipeError:  # `scan-planner plan | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except PlannerError as exc:
        kind = error_kind(exc)
        if getattr(args, "json", False):  # the error as /plan answers it, for scripts
            error = {"error": {"type": kind.type, "message": exc.message, "code": kind.status}}
            print(json.dumps(error), file=sys.stderr)
        else:
            print(f"scan-planner {args.command}: {' '.join(exc.message.split())}", file=sys.stderr)
        return 1


def build_parser() -> argparse.ArgumentParser:
    """The command line, every flag with its help (docs/reference/cli.md is generated from it)."""
    parser = argparse.ArgumentParser(prog="scan-planner", description="Scan planning for Apache Iceberg tables")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    plan = sub.add_parser("plan", help="plan a scan and print the plan (no table given: the demo table)")
    _scan_arguments(plan)
    plan.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help="rows wanted (at least 1): planning may stop once the files that surely match hold them; "
        "the output says whether it did (cut short)",
    )
    plan.add_argument(
        "--parallelism",
        type=int,
        metavar="N",
        help="Spark's parallelism (the larger of spark.default.parallelism and spark.sql.shuffle.partitions): "
        "the split size adapts to it as Spark + Iceberg's does (read.split.adaptive-size.enabled; not with "
        "a split-size option)",
    )
    plan.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="split-size, lookback, file-open-cost (or read.split.* names)",
    )
    plan.add_argument(
        "--grouping",
        choices=GROUPINGS,
        default="none",
        help="partition: each task holds one partition tuple's splits (Iceberg's preserve-data-grouping); "
        "sort-order: also files in the table's sort order, no two of a task overlapping",
    )
    plan.add_argument(
        "--select",
        action="append",
        metavar="COLUMNS",
        help="the columns read, comma-separated (or the flag repeated): the plan's schema holds only them",
    )
    plan.add_argument(
        "--explain",
        action="store_true",
        help="say why each manifest and data file was kept or skipped (with --json: the response's `explain`)",
    )
    plan.add_argument("--json", action="store_true", help="print the /plan response JSON")
    plan.set_defaults(run=_plan)

    aggregate = sub.add_parser(
        "aggregate",
        help="count(*), count(col), min(col), max(col) of a scan from metadata, where exact",
        description="Each aggregate from the data files' record counts and column stats, or why it cannot be "
        "(delete files, a filter that keeps part of a file, missing or truncated stats): then read the rows.",
    )
    aggregate.add_argument("aggregates", nargs="+", metavar="AGGREGATE", help='e.g. "count(*)" "max(ts)"')
    _scan_arguments(aggregate)
    aggregate.add_argument("--json", action="store_true", help="print the /aggregate response JSON")
    aggregate.set_defaults(run=_aggregate)

    serve = sub.add_parser("serve", help="run the HTTP service (no catalog given: the demo warehouse)")
    serve.add_argument("--warehouse", help="a directory of Hadoop-style tables: table ns.name is WAREHOUSE/ns/name")
    serve.add_argument("--catalog-uri", help="a SQL catalog: sqlite path or SQLAlchemy URL")
    serve.add_argument("--catalog-name", help="catalog_name in the SQL catalog (default: default)")
    serve.add_argument(
        "--rest-catalog-uri",
        help="an upstream Iceberg REST catalog's base URI (without /v1); its "
        "warehouse and credentials go in the settings (rest_catalog_*)",
    )
    serve.add_argument("--config", help="a TOML or JSON settings file (see planner_service/settings.py)")
    serve.add_argument("--host", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default 8181)")
    serve.add_argument("--workers", type=int, help="worker processes (default 1)")
    serve.add_argument("--log-level", choices=["debug", "info", "warning", "error"], help="default info")
    serve.set_defaults(run=_serve)
    return parser


def _scan_arguments(parser: argparse.ArgumentParser) -> None:
    """What a scan is, shared by plan and aggregate: the table, the snapshot (or append range), the filter."""
    where = parser.add_argument_group("table (one of)")
    where.add_argument("--metadata-location", help="a metadata.json location (path, file:, s3:)")
    where.add_argument("--table-dir", help="a Hadoop-style table directory (metadata/version-hint.text)")
    where.add_argument(
        "--table", help="table name ns.name: in --warehouse or --catalog-uri, else in the demo warehouse"
    )
    parser.add_argument("--warehouse", help="a directory of Hadoop-style tables WAREHOUSE/ns/name")
    parser.add_argument("--catalog-uri", help="a SQL catalog: sqlite path or SQLAlchemy URL")
    parser.add_argument("--catalog-name", default="default", help="catalog_name in the SQL catalog")
    snap = parser.add_mutually_exclusive_group()
    snap.add_argument("--snapshot-id", type=int, help="plan this snapshot (default: the current one)")
    snap.add_argument(
        "--as-of-timestamp-ms",
        type=int,
        metavar="MS",
        help="plan the snapshot that was current at this time (milliseconds since the epoch)",
    )
    snap.add_argument("--ref", help="a branch or tag name")
    parser.add_argument(
        "--start-snapshot-id",
        type=int,
        help="an incremental append scan: the files appended after this snapshot (exclusive)",
    )
    parser.add_argument(
        "--end-snapshot-id",
        type=int,
        help="with --start-snapshot-id: up to this snapshot (inclusive; default: the current one)",
    )
    rows = parser.add_mutually_exclusive_group()
    rows.add_argument("--filter", help="a row filter string: \"region = 'eu' AND id < 10\"")
    rows.add_argument("--filter-json", help='a row filter as REST JSON: \'{"type": "lt", "term": "id", "value": 10}\'')
    parser.add_argument("--case-insensitive", action="store_true", help="resolve filter columns ignoring case")


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from planner_service.logs import configure_logging
    from planner_service.server import uvicorn_options
    from planner_service.settings import WORKER_SETTINGS, load_settings, worker_settings_file

    settings = load_settings(
        args.config,
        warehouse=args.warehouse,
        catalog_uri=args.catalog_uri,
        catalog_name=args.catalog_name,
        rest_catalog_uri=args.rest_catalog_uri,
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_level=args.log_level,
    )
    configure_logging(settings.log_level.upper())
    settings.check_exposure()
    if settings.access_rules is not None:
        from planner_service.access.policy import Policy

        try:
            Policy(settings.access_rules)  # (what the settings' own checks cannot parse: each rule's row_filter)
        except ValueError as exc:
            print(f"scan-planner: the grants policy does not load: {exc}", file=sys.stderr)
            return 2
    from planner_service.access.control import describe_access
    from planner_service.catalog.sql import sql_catalog_hint

    if settings.serves_demo:
        from planner_service.demo import DEMO_TABLES, ensure_demo_warehouse

        wanted = Path(settings.demo_dir) if settings.demo_dir else None
        try:
            directory = ensure_demo_warehouse(wanted)
        except OSError as exc:
            print(
                f"scan-planner: cannot create the demo warehouse ({exc.strerror or exc}: {exc.filename}). Set "
                "SCAN_PLANNER_HOME (or demo_dir) to a directory the service may write, or serve your own tables "
                "(--warehouse, --catalog-uri, --rest-catalog-uri).",
                file=sys.stderr,
            )
            return 2
        print(f"serving the demo warehouse {directory} (tables {', '.join(DEMO_TABLES)})", file=sys.stderr)
    if settings.warehouse and (hint := sql_catalog_hint(Path(settings.warehouse))):
        print(f"scan-planner: {hint}", file=sys.stderr)
    url = f"http://{settings.host}:{settings.port}"
    print(f"scan-planner on {url}: the plan explorer at {url}/ui, the HTTP API's docs at {url}/docs", file=sys.stderr)
    for line in describe_access(settings):
        print(f"  {line}", file=sys.stderr)
    if settings.workers > 1:
        # worker processes import the app themselves: hand them the settings in a file only this user reads
        # (never the environment, which child processes inherit and /proc shows), for as long as they may start
        with worker_settings_file(settings) as handoff:
            os.environ[WORKER_SETTINGS] = str(handoff)
            uvicorn.run(
                "planner_service.app:create_worker_app",
                factory=True,
                host=settings.host,
                port=settings.port,
                workers=settings.workers,
                **uvicorn_options(settings),
            )
    else:
        from planner_service.app import create_app

        uvicorn.run(create_app(settings), host=settings.host, port=settings.port, **uvicorn_options(settings))
    return 0


def _plan(args: argparse.Namespace) -> int:
    from planner_service.api.request_models import PlanRequest, validated
    from planner_service.wire.plan_json import encode_plan

    options = dict(_split_option(o) for o in args.option)
    # the fields /plan takes too, checked by its own model: the same 400 for the same mistake
    select = None if args.select is None else [c.strip() for given in args.select for c in given.split(",")]
    fields = {
        "limit": args.limit,
        "parallelism": args.parallelism,
        "options": options,
        "grouping": args.grouping,
        "select": select,
        "explain": args.explain,
    }
    checked = validated(PlanRequest, fields)
    plan = _planned(
        args,
        options=checked.options,
        limit=checked.limit,
        parallelism=checked.parallelism,
        grouping=checked.grouping,
        select=checked.select,
        explain=checked.explain,
    )
    raw = b"".join(encode_plan(plan))
    if args.json:
        sys.stdout.buffer.write(raw + b"\n")
        return 0
    body = orjson.loads(raw)
    _print_summary(body, checked.limit)
    if checked.explain:
        _print_explain(body["explain"], _bound_filter_text(plan), plan.table.metadata.location)
    return 0


def _aggregate(args: argparse.Namespace) -> int:
    from planner_service.planning.metadata_aggregates import evaluate_aggregates, parse_aggregates
    from planner_service.wire.aggregates_json import encode_aggregates

    aggregates = parse_aggregates(args.aggregates)
    plan = _planned(args, combine=False, keep_stats=True)
    values = evaluate_aggregates(
        plan.files, plan.schema, plan.table.metadata.properties, aggregates, not args.case_insensitive
    )
    body = encode_aggregates(plan, values)
    if args.json:
        print(orjson.dumps(body).decode())
        return 0
    print(f"table        {body['table']}")
    print(f"snapshot     {body['snapshot-id']}")
    print(f"data files   {body['data-files']}")
    for entry in body["aggregates"]:
        value = json.dumps(entry["value"]) if entry["exact"] else f"not exact: {entry['reason']}"
        print(f"  {entry['name']} = {value}")
    return 0


def _planned(args: argparse.Namespace, **planning: Any) -> ScanPlan:
    """The scan the shared scan arguments describe, with `planning`'s further scan_request() arguments,
    planned on a planner of its own."""
    from planner_service.io.roots import Roots
    from planner_service.service.runtime import file_io
    from planner_service.settings import load_settings

    settings = load_settings()  # S3 endpoint, credentials and allowed roots from SCAN_PLANNER_* variables
    io = file_io(settings, Roots(settings.allowed_roots) if settings.allowed_roots else Roots.everywhere())
    table = _load_table(io, args)
    request = scan_request(
        **snapshot_fields(args), filter=_filter_arg(args), case_sensitive=not args.case_insensitive, **planning
    )
    planner = ScanPlanner(io)
    try:
        return planner.plan(table, request)
    finally:
        planner.close()


def _load_table(io: FileIO, args: argparse.Namespace) -> LoadedTable:
    if args.metadata_location:
        return load_by_metadata_location(io, args.metadata_location)
    if args.table_dir:
        return load_table_directory(io, args.table_dir)
    catalog: SqlCatalog | HadoopCatalog
    if args.table and args.catalog_uri:
        catalog = SqlCatalog(io, args.catalog_uri, args.catalog_name)
    elif args.table and args.warehouse:
        catalog = HadoopCatalog(io, args.warehouse)
    else:
        from planner_service.demo import DEMO_CATALOG_NAME, DEMO_TABLE, demo_catalog_uri, ensure_demo_warehouse

        args.table = args.table or DEMO_TABLE
        directory = ensure_demo_warehouse()
        print(f"planning {args.table} in the demo warehouse {directory}", file=sys.stderr)
        catalog = SqlCatalog(io, demo_catalog_uri(Path(directory)), DEMO_CATALOG_NAME)
    identifier = TableIdentifier.parse(args.table)
    try:
        return catalog.load_table(identifier)
    except NoSuchTableError:  # with the catalog's nearest names, as the service answers
        listed = (table for namespace in catalog.list_namespaces() for table in catalog.list_tables(namespace))
        raise missing_table(identifier, listed) from None


def _filter_arg(args: argparse.Namespace) -> Any:
    """--filter (a filter string) or --filter-json (a REST JSON expression, parsed as JSON here)."""
    if args.filter_json is None:
        return args.filter
    try:
        return json.loads(args.filter_json)
    except ValueError as exc:
        raise BadRequestError(f"--filter-json is not valid JSON: {exc}") from None


def _split_option(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise BadRequestError(f"Invalid --option '{text}': expected KEY=VALUE")
    return key.strip(), value.strip()


def _print_summary(body: dict[str, Any], limit: int | None = None) -> None:
    m = body["metrics"]
    ranges = sum(len(t["splits"]) for t in body["tasks"])
    print(f"table        {body['table']}")
    print(f"snapshot     {body['snapshot-id']}")
    tasks, files = len(body["tasks"]), len(body["files"])
    print(f"tasks        {_count(tasks, 'combined task')}, {_count(ranges, 'file range')} of {_count(files, 'file')}")
    print(f"split size   {body['split-options']['split-size']:,} bytes")
    if limit is not None:
        print(
            f"limit        {limit:,} rows: "
            + (
                "cut short, the files planned hold them"
                if m.get("cut-short")
                else "whole plan, no first files surely hold them (residuals, deletes or too few rows)"
            )
        )
    print(f"data files   {m['scanned-data-files']} ({m['total-file-size-bytes']:,} bytes)")
    print(f"skipped      {m['skipped-data-files']} data files by the filter")
    print(f"delete files {m['total-delete-files']} ({m['total-delete-file-size-bytes']:,} bytes)")
    print(
        f"manifests    data {m['total-data-manifests']} (skipped {m['skipped-data-manifests']}), "
        f"deletes {m['total-delete-manifests']} (skipped {m['skipped-delete-manifests']})"
    )
    print(f"planned in   {m['planning-time-ms']:.1f} ms")
    for i, task in enumerate(body["tasks"]):
        ranges, size, rows = len(task["splits"]), task["size-bytes"], task["estimated-row-count"]
        print(f"  task {i}: {ranges} ranges, {size:,} bytes, ~{rows} rows")


def _count(n: int, thing: str) -> str:
    return f"{n:,} {thing}" if n == 1 else f"{n:,} {thing}s"


EXPLAINED_FILES = 20  # the files whose reasons the summary lists (--json has them all)


def _print_explain(explain: dict[str, Any], filter_string: str, table_location: str) -> None:
    """Why each manifest, and the first data files (the kept ones first), were kept or skipped: the filter as
    a filter string, as the reasons write filters, and paths from the table's location
    (`data/region=eu/00000-0-....parquet`)."""
    print(f"filter       {filter_string}")
    print(f"paths from   {table_location}")
    files = sorted(explain["data-files"], key=lambda f: not f["kept"])  # (stable: each group in planning order)
    decided = [("manifest", m, m["manifest-path"]) for m in explain["manifests"]]
    decided += [("file", f, f["file-path"]) for f in files[:EXPLAINED_FILES]]
    for what, decision, path in decided:
        verdict = "kept   " if decision["kept"] else "skipped"
        print(f"  {what:<8} {verdict} {_relative(path, table_location)}: {decision['reason']}")
    if len(files) > EXPLAINED_FILES:
        print(f"  ... and {len(files) - EXPLAINED_FILES} more data files (--json lists every one)")


def _bound_filter_text(plan: ScanPlan) -> str:
    """The plan's row filter as a filter string, bound to the table's schema as planning binds it (typed
    literals: `ts < TIMESTAMP '2024-01-02 00:00:00'` for a filter given as JSON)."""
    return filter_text(bind(plan.table.metadata.schema, plan.row_filter, plan.case_sensitive))


def _relative(path: str, table_location: str) -> str:
    """`path` from the table's location, or whole when it lies elsewhere (a file added from outside it)."""
    root = table_location.rstrip("/") + "/"
    return path.removeprefix(root) if path.startswith(root) and len(path) > len(root) else path


if __name__ == "__main__":
    raise SystemExit(main())
