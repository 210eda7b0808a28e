"""Every `activerag` subcommand, at every depth, says what it does in the help that lists it,
and every option with a number for its default parses its value to a number of that type (a
default of 200 read back from the command line as "200" would be a string) (issue #38)."""

import argparse
import re

import pytest

from activerag import cli


def subcommands(parser: argparse.ArgumentParser, path: str = "activerag"):
    """(path, parser, help shown for it) of every subcommand below PARSER, depth first."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield f"{path} {name}", sub, helps.get(name)
                yield from subcommands(sub, f"{path} {name}")


SUBCOMMANDS = list(subcommands(cli.parser()))
PARSERS = [("activerag", cli.parser())] + [(path, sub) for path, sub, _ in SUBCOMMANDS]


def test_the_walk_finds_the_subcommands():
    names = {path for path, _, _ in SUBCOMMANDS}
    assert {"activerag doctor", "activerag eval", "activerag train-retriever"} <= names


@pytest.mark.parametrize("path,sub,shown", SUBCOMMANDS, ids=[p for p, _, _ in SUBCOMMANDS])
def test_every_subcommand_has_help_text(path, sub, shown):
    assert shown and shown.strip(), f"`{path}` has no help in its parent's list"


def numeric_options():
    for path, parser in PARSERS:
        for action in parser._actions:
            if action.option_strings and action.nargs != 0 and \
                    type(action.default) in (int, float):
                yield f"{path} {action.option_strings[-1]}", action


NUMERIC = list(numeric_options())


def test_the_walk_finds_numeric_options():
    assert any(name == "activerag train-router --n" for name, _ in NUMERIC), \
        [name for name, _ in NUMERIC][:20]


@pytest.mark.parametrize("name,action", NUMERIC, ids=[n for n, _ in NUMERIC])
def test_a_numeric_default_s_option_parses_to_the_default_s_type(name, action):
    assert action.type is not None, f"{name} would give a string"
    parsed = action.type(str(action.default))
    assert type(parsed) is type(action.default) and parsed == action.default, name


STATED = re.compile(r"\(default:? ([^;()]+?)(?:\)|;)")
NUMBER = re.compile(r"-?\d+(\.\d+)?(e-?\d+)?")


def stated_defaults() -> list[tuple[str, str, str]]:
    """(subcommand, option, stated default) of every hand-written option whose help states a
    plain default: a number, or a lower-case word or comma-separated list (a context's flags
    show their field's default, tests/test_cli_generated.py's)."""
    out = []
    for path, sub in PARSERS:
        for action in sub._actions:
            match = STATED.search(" ".join((action.help or "").split()))
            if not match or not action.option_strings or action.default == argparse.SUPPRESS:
                continue
            said = match.group(1).strip()
            if NUMBER.fullmatch(said) or re.fullmatch(r"[a-z][\w.,-]*", said) and (
                    action.default is not None):
                out.append((path, action.option_strings[-1], said))
    return out


def test_the_stated_defaults_are_found():
    found = stated_defaults()
    assert len(found) >= 9 and ("activerag eval", "--n", "20") in found, found
    assert ("activerag eval", "--methods", "flare,single,none") in found


@pytest.mark.parametrize(("path", "option", "said"), stated_defaults())
def test_every_default_an_option_states_is_the_one_it_parses_to(path, option, said):
    # a parser made here, not the module's: the test is then seen running the code that adds
    # each option (coverage by test, which benchmarks/robustness/mutants.py picks a mutant's
    # tests by)
    top = cli.parser()
    sub = dict([("activerag", top), *((p, s) for p, s, _ in subcommands(top))])[path]
    action = next(a for a in sub._actions if option in a.option_strings)
    value = action.default
    if NUMBER.fullmatch(said):
        assert isinstance(value, (int, float)) and float(said) == value, (path, option, value)
    else:
        assert str(value) == said, (path, option, value)
