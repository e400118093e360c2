"""docs/reference/pyspark.md: the PySpark client's public names (`spark_client.__all__`) with their
signatures and docstrings, and the data source's read options (`spark_client.datasource.OPTIONS`)."""

from __future__ import annotations

import inspect
import re

import spark_client
from reference_docs.markdown import GENERATED_NOTE, code, sentence, table

_LABEL = re.compile(r"^(?P<label>[a-z_]\w*[^:]{0,100}?): (?P<text>.*)$")


def public_names() -> list[str]:
    return list(spark_client.__all__)


def docstring_markdown(doc: str) -> str:
    """A docstring as Markdown: its first paragraph as written; a paragraph of `name: meaning` lines (each
    continued by lines indented two spaces) as a list with the names in code; 4-space indented lines as code."""
    out: list[str] = []
    for number, block in enumerate(re.split(r"\n\s*\n", inspect.cleandoc(doc))):
        lines = block.splitlines()
        if all(line.startswith("    ") for line in lines):
            out.append("```python\n" + "\n".join(line[4:] for line in lines) + "\n```")
        elif number > 0 and _LABEL.match(lines[0]):
            items: list[str] = []
            for line in lines:
                if (match := _LABEL.match(line)) and not line.startswith(" "):
                    items.append(f"- {_label(match['label'])}: {match['text']}")
                else:
                    items[-1] += " " + line.strip()
            out.append("\n".join(items))
        else:
            out.append(" ".join(line.strip() for line in lines))
    return "\n\n".join(out)


def _label(label: str) -> str:
    """`snapshot_id / as_of (epoch ms) / ref`: each name in code, the words between as written."""
    return re.sub(r"\b([a-z_][a-z0-9_]*)\b(?![^(]*\))", lambda m: code(m.group(1)), label)


def _signature(name: str, obj: object) -> str:
    try:
        signature = str(inspect.signature(obj))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return name
    return re.sub(r"(: |-> )'([^']*)'", r"\1\2", f"{name}{signature}")  # annotations without their quotes


def render() -> str:
    from spark_client.datasource import FORMAT, OPTIONS

    lines = [
        "# PySpark API",
        "",
        GENERATED_NOTE.format(source="`spark_client`'s docstrings and the data source's `OPTIONS`"),
        "`from spark_client import ...`: importing the package loads nothing heavy; each name loads on first use.",
        "",
    ]
    for name in public_names():
        obj = getattr(spark_client, name)
        kind = "class" if inspect.isclass(obj) else "function"
        lines += [f"## {name}", "", f"```python\n{kind} {_signature(name, obj)}\n```", ""]
        lines += [docstring_markdown(inspect.getdoc(obj) or ""), ""]
    rows = [(code(option), sentence(meaning)) for option, meaning in OPTIONS.items()]
    lines += [
        f'## Read options of `spark.read.format("{FORMAT}")`',
        "",
        "The data source (pyspark 4) takes these options (`.option(name, value)`), named as Iceberg's Spark",
        "reads name them where Iceberg has them:",
        "",
        *table(("Option", "Meaning"), rows),
        "",
    ]
    return "\n".join(lines)
