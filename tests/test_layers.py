"""The packages of planner_service import only downwards (the layers drawn in docs/design/architecture.md),
route modules do not import each other, and the top-level packages import only what their place allows:
iceberg_io (storage), value_order (Spark's order of values) and read_restrictions (the spec's column masks)
none of the others; planner_client (HTTP) none,
and nothing but httpx beyond the standard library; spark_client those three, never the service; the service
iceberg_io and value_order, never a client (the contract between service and clients is the JSON of the wire)."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SERVICE = ROOT / "planner_service"

# bottom to top; a module may import its own package and any package of a lower layer, nothing else
LAYERS: list[set[str]] = [
    {
        "__init__",
        "_kernels",
        "errors",
        "json_text",
        "nesting",
        "numerals",
        "cache",
        "allocator",
        "logs",
        "metrics",
        "ui",
        "access_rules",
    },
    {"io"},
    {"metadata", "settings"},
    {"expressions"},
    {"pruning", "deletes", "splitting", "catalog"},
    {"access"},
    {"planning"},
    {"wire", "demo"},
    {"service"},
    {"api"},
    {"app", "server"},
    {"cli"},
    {"entry"},
]
RANK = {package: rank for rank, layer in enumerate(LAYERS) for package in layer}
ROUTE_MODULES = {
    "native",
    "aggregates",
    "explore",
    "rest_catalog",
    "rest_scan",
    "ui",
}  # api modules that register routes


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) of every import in a file, also those inside functions."""
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from planner_service.api import native` imports the module planner_service.api.native
            yield from ((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)


def _package(parts: tuple[str, ...]) -> str:
    """The top-level package (or module) of planner_service a dotted path lies in."""
    return parts[1] if len(parts) > 1 else "__init__"


def _service_modules() -> list[Path]:
    return sorted(p for p in SERVICE.rglob("*.py") if "__pycache__" not in p.parts)


def _package_of(path: Path) -> str:
    return _package(("planner_service", *path.relative_to(SERVICE).with_suffix("").parts))


def test_every_package_has_a_layer() -> None:
    packages = {
        _package(("planner_service", *p.relative_to(SERVICE).with_suffix("").parts)) for p in _service_modules()
    }
    assert packages - RANK.keys() == set(), (
        "give each new package or module a layer in LAYERS (and docs/design/architecture.md)"
    )


@pytest.mark.parametrize("path", _service_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_down(path: Path) -> None:
    importer = _package_of(path)
    upward = []
    for line, module in _imports(path):
        parts = tuple(module.split("."))
        if parts[0] != "planner_service":
            continue
        imported = _package(parts)
        if imported not in RANK and len(parts) == 2:
            imported = "__init__"  # a name of the root package itself (__version__)
        if imported == importer:
            continue
        if RANK[imported] >= RANK[importer]:
            upward.append(
                f"line {line}: {module} ({imported}, layer {RANK[imported]} >= {importer}'s {RANK[importer]})"
            )
    assert upward == []


def test_route_modules_do_not_import_each_other() -> None:
    crossings = []
    for name in sorted(ROUTE_MODULES):
        for line, module in _imports(SERVICE / "api" / f"{name}.py"):
            parts = module.split(".")
            if parts[:2] == ["planner_service", "api"] and len(parts) > 2 and parts[2] in ROUTE_MODULES - {name}:
                crossings.append(f"api/{name}.py line {line}: {module}")
    assert crossings == []


# which of the repository's top-level packages each may import
ALLOWED = {
    "iceberg_io": set[str](),
    "value_order": set[str](),
    "read_restrictions": set[str](),
    "planner_client": set[str](),
    "spark_client": {"iceberg_io", "planner_client", "value_order", "read_restrictions"},
    "planner_service": {"iceberg_io", "value_order", "read_restrictions"},
}
# beyond the standard library, what the HTTP client may import: a driver or a tool plans with httpx alone
CLIENT_THIRD_PARTY = {"httpx"}


def _package_modules(package: str) -> list[Path]:
    return sorted(p for p in (ROOT / package).rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_top_level_packages_import_only_what_their_place_allows(package: str) -> None:
    found = [
        f"{path.relative_to(ROOT)} line {line}: {module}"
        for path in _package_modules(package)
        for line, module in _imports(path)
        if module.split(".")[0] in ALLOWED.keys() - {package} - ALLOWED[package]
    ]
    assert found == []


def test_the_planner_client_needs_only_httpx() -> None:
    found = [
        f"{path.relative_to(ROOT)} line {line}: {module}"
        for path in _package_modules("planner_client")
        for line, module in _imports(path)
        if module.split(".")[0] not in sys.stdlib_module_names | CLIENT_THIRD_PARTY | {"planner_client"}
    ]
    assert found == []


def test_the_rule_sees_an_upward_import(tmp_path: Path) -> None:
    source = tmp_path / "probe.py"
    source.write_text("def f():\n    from planner_service.api.native import router\n")
    assert [m for _, m in _imports(source)] == ["planner_service.api.native.router"]
    assert RANK[_package(("planner_service", "api", "native"))] > RANK["metadata"]
