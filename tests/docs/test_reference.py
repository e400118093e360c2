"""The reference pages are generated from the code, so every setting, flag, route, metric and PySpark name
must carry its own description there: a missing one fails here, naming it. And each generated page lists
everything its source defines."""

from __future__ import annotations

import argparse
import inspect
from typing import Any

import pytest

import spark_client
from planner_service.cli import build_parser
from planner_service.metrics import METRICS
from planner_service.settings import Settings
from reference_docs import cli_page, http_page, metrics_page, pyspark_page, settings_page


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    return http_page.openapi_document()


def test_every_setting_is_described_and_listed() -> None:
    undescribed = [name for name, field in Settings.model_fields.items() if not (field.description or "").strip()]
    assert undescribed == [], "give these settings a docstring (the line below the field)"
    page = settings_page.render()
    for name in Settings.model_fields:
        assert f"### {name}\n" in page and settings_page.env_var(name) in page
    listed = [name for _, names in settings_page.sections() for name in names]
    assert listed == list(Settings.model_fields)


def test_every_flag_is_described_and_listed() -> None:
    parser = build_parser()
    page = cli_page.render()
    commands = cli_page.subcommands(parser)
    assert set(commands) == {"plan", "aggregate", "serve"}
    for name, (sub, help_text) in commands.items():
        assert help_text, f"scan-planner {name} has no help"
        assert f"## scan-planner {name}" in page
        for action in cli_page.arguments(sub):
            flag = action.option_strings[0] if action.option_strings else action.dest
            assert action.help and action.help != argparse.SUPPRESS, f"scan-planner {name} {flag} has no help"
            assert flag in page or str(action.metavar) in page


def test_every_route_parameter_body_and_answer_field_is_described(openapi: dict[str, Any]) -> None:
    missing: list[str] = []
    for method, path, operation in http_page.operations(openapi):
        if not operation.get("summary"):
            missing.append(f"{method} {path}: a summary")
        for param in operation.get("parameters", ()):
            if not param.get("description"):
                missing.append(f"{method} {path}: parameter {param['name']}")
        for what, schema in (
            ("field", http_page.body_schema(openapi, operation)),
            ("answer field", http_page.answer_schema(openapi, operation)),
        ):
            if schema is not None:
                fields = http_page.body_fields(openapi, schema)
                missing += [f"{method} {path}: {what} {name}" for name, _, text in fields if not text]
    assert missing == [], "describe these in the route, its request model or its response model"


def test_every_route_is_listed(openapi: dict[str, Any]) -> None:
    page = http_page.render()
    for method, path, _ in http_page.operations(openapi):
        assert f"### {method} {path}\n" in page
    assert len(list(http_page.operations(openapi))) >= 20


def test_every_metric_is_declared_described_and_listed() -> None:
    page = metrics_page.render()
    names = [m.name for m in METRICS]
    assert len(names) == len(set(names))
    for metric in METRICS:
        assert metric.help.strip(), f"{metric.name} has no help"
        assert f"`{metric.name}`" in page


def test_every_pyspark_name_and_option_is_described() -> None:
    from spark_client.datasource import OPTIONS

    page = pyspark_page.render()
    for name in pyspark_page.public_names():
        assert (inspect.getdoc(getattr(spark_client, name)) or "").strip(), f"spark_client.{name} has no docstring"
        assert f"## {name}\n" in page
    for option, meaning in OPTIONS.items():
        assert meaning.strip() and f"`{option}`" in page


def test_docstrings_read_as_lists_where_they_list() -> None:
    doc = "What it does.\n\nfilter: a filter\n  continued.\ncolumns: the columns."
    assert (
        pyspark_page.docstring_markdown(doc)
        == "What it does.\n\n- `filter`: a filter continued.\n- `columns`: the columns."
    )


def test_the_reference_says_which_fields_a_body_needs() -> None:
    """/plan needs a table or a metadata location (a oneOf of the schema): the Required column says so;
    /aggregate needs its aggregates."""
    page = http_page.render()
    plan = page[page.index("### POST /plan\n") :]
    assert "| `table` | one of `table`, `metadata-location` |" in plan
    assert "| `metadata-location` | one of `table`, `metadata-location` |" in plan
    aggregate = page[page.index("### POST /aggregate\n") :]
    assert "| `aggregates` | yes |" in aggregate
