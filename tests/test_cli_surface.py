"""The command line as a user meets it, pinned whole (issue #38): for every `activerag`
subcommand at every depth, its description and each option's names, destination, default,
type, choices, count of values, metavar, whether it is required, and its help text. They are
compared with tests/golden/cli_options.json, so that an option whose type, default, choices or
help is dropped or changed fails here, whether or not a test of its effect exists (the
generated flags' effects are tests/test_cli_flag_effects.py's and tests/test_cli_generated.py's).

A deliberate change to the command line rewrites the file:

    ACTIVERAG_REWRITE_GOLDEN=1 python -m pytest tests/test_cli_surface.py

and the diff of that JSON is the change to review. The parsers are made in a process with
none of the environment's ACTIVERAG_ settings, whose values the generated flags' help states."""

from __future__ import annotations

import argparse
from typing import Any

from golden_files import in_clean_process, pinned
from test_contract_cli_parser import subcommands

from activerag import cli

GOLDEN = "cli_options.json"


def plain(value: Any) -> Any:
    """VALUE as JSON can hold it: a callable or class by its name, a path or other object by
    its text, containers element by element."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [plain(v) for v in value]
        return sorted(items, key=str) if isinstance(value, (set, frozenset)) else items
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if callable(value):
        return getattr(value, "__qualname__", type(value).__name__)
    return str(value)


def option_facts(action: argparse.Action) -> dict[str, Any]:
    return {"options": list(action.option_strings), "dest": action.dest,
            "action": type(action).__name__, "default": plain(action.default),
            "type": plain(action.type), "choices": plain(action.choices),
            "nargs": plain(action.nargs), "const": plain(action.const),
            "metavar": plain(action.metavar), "required": action.required,
            "help": action.help}


def surface() -> dict[str, Any]:
    """Every parser's description and options, by its command path (a parser made here, so that
    a test is seen running the code that adds each option)."""
    top = cli.parser()
    parsers = [("activerag", top)] + [(path, sub) for path, sub, _ in subcommands(top)]
    return {path: {"description": sub.description, "epilog": sub.epilog,
                   "options": [option_facts(a) for a in sub._actions
                               if not isinstance(a, argparse._SubParsersAction)]}
            for path, sub in parsers}


def differences(now: dict[str, Any], was: dict[str, Any]) -> list[str]:
    """Each way NOW's command line differs from WAS's, one line each."""
    found = [f"`{path}`: added" for path in sorted(set(now) - set(was))]
    found += [f"`{path}`: gone" for path in sorted(set(was) - set(now))]
    for path in sorted(set(now) & set(was)):
        for key in ("description", "epilog"):
            if now[path][key] != was[path][key]:
                found.append(f"`{path}`: its {key} changed")
        dests = [[o["dest"] for o in side[path]["options"]] for side in (now, was)]
        if dests[0] != dests[1]:
            found.append(f"`{path}`: options added, gone or reordered: {dests[0]} / {dests[1]}")
        pinned = {o["dest"]: o for o in was[path]["options"]}
        for option in now[path]["options"]:
            for key, value in option.items():
                if option["dest"] in pinned and value != pinned[option["dest"]].get(key):
                    found.append(f"`{path} {option['options'] or option['dest']}`: its {key} "
                                 f"changed: {pinned[option['dest']].get(key)!r} -> {value!r}")
    return found


def test_the_command_line_is_the_pinned_one():
    now = in_clean_process("test_cli_surface", "surface")
    found = differences(now, pinned(GOLDEN, now))
    assert not found, (f"the command line changed; if on purpose, rewrite {GOLDEN} "
                       "(module doc):\n" + "\n".join(found[:40]))


def test_the_comparison_sees_a_changed_type_and_a_dropped_option():
    was = {"a": {"description": "d", "epilog": None, "options": [
        {"dest": "seed", "options": ["--seed"], "type": "int"},
        {"dest": "n", "options": ["--n"], "type": "int"}]}}
    now = {"a": {"description": "d", "epilog": None, "options": [
        {"dest": "seed", "options": ["--seed"], "type": None}]}}
    assert differences(was, was) == []
    found = differences(now, was)
    assert any("--seed" in f and "type" in f for f in found), found
    assert any("reordered" in f for f in found), found
