"""docs/reference/http-api.md: every route of the service, from its OpenAPI document (the one `/docs` and
`/openapi.json` serve): summary, parameters, request body fields and responses."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import Any

from planner_service.app import create_app
from planner_service.settings import load_settings
from reference_docs.markdown import GENERATED_NOTE, cell, code, sentence, table

TAG_TITLES = {
    "planning": "Planning",
    "debugging": "Debugging and explaining",
    "operations": "Operations",
    "iceberg-rest-catalog": "Iceberg REST catalog",
    "iceberg-rest-scan-planning": "Iceberg REST scan planning",
}
Operation = tuple[str, str, dict[str, Any]]


def openapi_document() -> dict[str, Any]:
    """The service's OpenAPI document, as a demo service serves it (made without starting the service)."""
    with tempfile.TemporaryDirectory() as home:
        return create_app(load_settings(demo=True, demo_dir=home)).openapi()


def operations(doc: dict[str, Any]) -> Iterator[Operation]:
    """(method, path, operation) of every route the document lists (the explorer's page is not in it)."""
    for path, methods in doc["paths"].items():
        for method, operation in methods.items():
            yield method.upper(), path, operation


def resolved(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """A schema with its $ref followed."""
    while "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def body_schema(doc: dict[str, Any], operation: dict[str, Any]) -> dict[str, Any] | None:
    content = operation.get("requestBody", {}).get("content", {})
    for media in ("application/json", "application/x-www-form-urlencoded"):
        if media in content:
            return resolved(doc, content[media]["schema"])
    return None


def answer_schema(doc: dict[str, Any], operation: dict[str, Any]) -> dict[str, Any] | None:
    """The documented JSON model of an operation's 200 answer, when it has one."""
    content = operation["responses"].get("200", {}).get("content", {})
    if "application/json" not in content:
        return None
    schema = resolved(doc, content["application/json"]["schema"])
    return schema if schema.get("properties") else None


def body_fields(doc: dict[str, Any], schema: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(name, required, description) of a request or answer body's top-level fields: required is "yes", or
    "one of a, b" for a field of a `oneOf` whose alternatives each require one field (PlanRequest's table or
    metadata-location), or ""."""
    required = dict.fromkeys(schema.get("required", ()), "yes")
    for group in (schema, *schema.get("allOf", ())):
        names = [alt.get("required", []) for alt in group.get("oneOf", ())]
        if names and all(len(n) == 1 for n in names):
            choice = "one of " + ", ".join(code(n[0]) for n in names)
            required.update({n[0]: choice for n in names})
    fields = []
    for name, prop in schema.get("properties", {}).items():
        text = prop.get("description") or resolved(doc, prop).get("description", "")
        fields.append((name, required.get(name, ""), text))
    return fields


def _type(doc: dict[str, Any], schema: dict[str, Any]) -> str:
    if "anyOf" in schema:
        return " or ".join(_type(doc, s) for s in schema["anyOf"] if s.get("type") != "null")
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[1]
    return str(schema.get("type", "any"))


def _operation(doc: dict[str, Any], method: str, path: str, operation: dict[str, Any]) -> list[str]:
    lines = [f"### {method} {path}", "", sentence(operation.get("summary", "")), ""]
    if description := operation.get("description"):
        lines += [cell(description), ""]
    params = [
        (code(p["name"]), p["in"], _type(doc, p.get("schema", {})), sentence(p.get("description", "")))
        for p in operation.get("parameters", ())
    ]
    if params:
        lines += [*table(("Parameter", "In", "Type", "Meaning"), params), ""]
    schema = body_schema(doc, operation)
    if schema is not None:
        title = schema.get("title", "")
        about = f", {cell(schema['description'])}" if schema.get("description") else ""
        lines += [f"Body: {code(title)}{about}", ""]
        fields = body_fields(doc, schema)
        if fields:
            rows = [(code(n), req, sentence(text)) for n, req, text in fields]
            lines += [*table(("Field", "Required", "Meaning"), rows), ""]
    answer = answer_schema(doc, operation)
    if answer is not None:
        about = f", {cell(answer['description'])}" if answer.get("description") else ""
        lines += [f"Answer: {code(answer.get('title', ''))}{about}", ""]
        answer_rows = [(code(n), sentence(text)) for n, _, text in body_fields(doc, answer)]
        lines += [*table(("Field", "Meaning"), answer_rows), ""]
    answers = [(code(status), sentence(r.get("description", ""))) for status, r in operation["responses"].items()]
    lines += [*table(("Status", "Answer"), answers), ""]
    return lines


def render() -> str:
    doc = openapi_document()
    lines = [
        "# HTTP API",
        "",
        GENERATED_NOTE.format(source="the service's OpenAPI document (`GET /openapi.json`)"),
        f"{cell(doc['info']['description'])} A running service serves the same document at `/openapi.json`",
        'and lets you try each route at `/docs`. Errors are JSON, `{"error": {"message", "type", "code"}}`,',
        "as the Iceberg REST spec's ErrorModel; `?pretty` indents any JSON answer.",
        "",
    ]
    by_tag: dict[str, list[Operation]] = {}
    for method, path, operation in operations(doc):
        by_tag.setdefault(operation.get("tags", ["other"])[0], []).append((method, path, operation))
    for tag, ops in by_tag.items():
        lines += [f"## {TAG_TITLES.get(tag, tag)}", ""]
        for method, path, operation in ops:
            lines += _operation(doc, method, path, operation)
    return "\n".join(lines)
