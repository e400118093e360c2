"""docs/reference/settings.md: every setting of `planner_service.settings.Settings`, with its environment
variable, config-file key, type, default and meaning (the field's docstring)."""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from typing import Any, Literal

from annotated_types import Ge, Gt, Le, Lt
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from planner_service.settings import Settings
from reference_docs.markdown import GENERATED_NOTE, code, paragraph

# each section runs from the setting named here to the next section's first
SECTIONS: tuple[tuple[str, str], ...] = (
    ("Tables and catalogs", "warehouse"),
    ("Storage", "allowed_roots"),
    ("Vended credentials", "vend_credentials"),
    ("Serving", "host"),
    ("Authentication", "auth_tokens"),
    ("Plans: caches, limits and admission", "plan_cache_bytes"),
    ("REST scan planning", "plan_task_page_size"),
)
_SHOWN_FACTORIES: dict[Any, str] = {dict: "`{}`", list: "`[]`"}


def env_var(name: str) -> str:
    """The environment variable of a setting."""
    return f"{Settings.model_config.get('env_prefix', '')}{name}".upper()


def type_text(annotation: Any) -> str:
    """A field's type in the words of a config file: string, integer, list of strings, one of ..."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        text = " or ".join(type_text(a) for a in inner)
        return f"{text} (optional)" if len(inner) < len(args) else text
    if origin is Literal:
        return "one of " + ", ".join(code(a) for a in args)
    if origin is list:
        return f"list of {type_text(args[0])}s (JSON in the environment)"
    if origin is dict:
        return f"table of {type_text(args[1])}s (JSON in the environment)"
    names = {str: "string", int: "integer", float: "number", bool: "boolean"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def default_text(info: FieldInfo) -> str:
    if info.default_factory is not None:
        return _SHOWN_FACTORIES.get(info.default_factory, "computed at start, as said below")
    if info.default is PydanticUndefined or info.default is None:
        return "unset"
    value = info.default
    if isinstance(value, bool):
        return code(str(value).lower())
    if isinstance(value, int) and value >= 1024 * 1024 and value % (1024 * 1024) == 0:
        return f"{code(value)} ({value // (1024 * 1024):,} MiB)"
    return code(f'"{value}"' if isinstance(value, str) else value)


def bounds_text(info: FieldInfo) -> str:
    parts = []
    for item in info.metadata:
        if isinstance(item, Gt):
            parts.append(f"more than {item.gt}")
        elif isinstance(item, Ge):
            parts.append(f"at least {item.ge}")
        elif isinstance(item, Lt):
            parts.append(f"less than {item.lt}")
        elif isinstance(item, Le):
            parts.append(f"at most {item.le}")
    return ", ".join(parts)


def sections() -> Iterator[tuple[str, list[str]]]:
    """(title, setting names) in the model's order."""
    names = list(Settings.model_fields)
    starts = [names.index(first) for _, first in SECTIONS]
    for (title, _), start, end in zip(SECTIONS, starts, [*starts[1:], len(names)], strict=True):
        yield title, names[start:end]


def render() -> str:
    lines = [
        "# Settings",
        "",
        GENERATED_NOTE.format(source="`planner_service/settings.py` (the `Settings` model and its docstrings)"),
        "Settings come from, in order of precedence: `scan-planner serve` flags, `SCAN_PLANNER_*` environment",
        "variables, a TOML or JSON file named by `--config`, and the defaults. In the file, keys are the names",
        'below (`warehouse = "/data"`; a `-` may stand for `_`); in the environment, lists and tables are JSON',
        '(`SCAN_PLANNER_ALLOWED_ROOTS=\'["/data", "s3://lake"]\'`). An unknown key or a value of the wrong',
        "shape stops the service at start with a message naming the setting.",
        "",
    ]
    for title, names in sections():
        lines += [f"## {title}", ""]
        for name in names:
            info = Settings.model_fields[name]
            facts = [f"environment {code(env_var(name))}", type_text(info.annotation), f"default {default_text(info)}"]
            if bounds := bounds_text(info):
                facts.append(bounds)
            lines += [f"### {name}", "", " · ".join(facts), "", paragraph(info.description or ""), ""]
    return "\n".join(lines)
