"""docs/reference/cli.md: the `scan-planner` command line, from its argparse parser."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from planner_service.cli import build_parser
from reference_docs.markdown import GENERATED_NOTE, code, sentence, table


def subcommands(parser: argparse.ArgumentParser) -> dict[str, tuple[argparse.ArgumentParser, str]]:
    """Each subcommand's parser and its one-line help."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            return {name: (sub, helps.get(name, "")) for name, sub in action.choices.items()}
    return {}


def arguments(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    """The arguments a person passes (not --help)."""
    for action in parser._actions:
        if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            yield action


def _usage(action: argparse.Action) -> str:
    metavar = action.metavar if isinstance(action.metavar, str) else action.dest.upper()
    if not action.option_strings:
        return metavar
    flags = ", ".join(action.option_strings)
    return flags if action.nargs == 0 else f"{flags} {metavar}"


def _details(action: argparse.Action) -> str:
    text = sentence(action.help or "")
    if action.choices:
        text += " One of " + ", ".join(code(c) for c in action.choices) + "."
    if action.default not in (None, False, [], argparse.SUPPRESS) and action.nargs != 0:
        text += f" Default {code(action.default)}."
    if isinstance(action, argparse._AppendAction):
        text += " May be given more than once."
    return text


def render() -> str:
    parser = build_parser()
    lines = [
        "# Command line",
        "",
        GENERATED_NOTE.format(source="`planner_service/cli.py`'s argument parser"),
        f"{parser.description}. " + "Installed as `scan-planner` (`.venv/bin/scan-planner` after `scripts/setup.sh`).",
        "",
    ]
    for name, (sub, help_text) in subcommands(parser).items():
        lines += [f"## scan-planner {name}", "", sentence(help_text), ""]
        if sub.description and sub.description != help_text:
            lines += [sentence(sub.description), ""]
        lines += ["```text", sub.format_usage().strip(), "```", ""]
        rows = [(code(_usage(a)), _details(a)) for a in arguments(sub)]
        lines += [*table(("Argument", "Meaning"), rows), ""]
    return "\n".join(lines)
