"""The run flags of `ask`, `eval` and `sweep`, made from the fields of the method contexts: a
flag per field, with the field's own description, type and default.

The scheme: the settings of the one LM, the store and the prompts that every family but
FB-RAG shares are one flag each (`--base-url`, `--store`, ...); every other field is
`--field-name` in its family's group, with a family prefix only where two families have the
field with different defaults (`--k` FLARE's, `--replug-k`, `--fb-k`) and FB-RAG's two LMs
named by role (`--strong-url`, `--light-url`, ...). A flag that is not given leaves the
field at the context's default: nothing is restated here.
"""

from __future__ import annotations

import argparse
import dataclasses
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from types import NoneType, UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from activerag.context import FlareContext, ServingContext, composites
from activerag.nodes.families import family_folders, own_fields

SERVING, FLARE = "LM, store and prompts", "FLARE"
GROUPS = {
    SERVING: "the one LM, the corpus and the exemplars of every family but FB-RAG (--store "
             "is FB-RAG's corpus too)",
    FLARE: "FlareContext: the FLARE family's methods, flare_replug, single_k1/single_k10, and "
           "the app's single-time and FLARE steps",
}
"""Each group of flags: the context it sets and the methods that read it."""
FAMILY_CONTEXTS: dict[str, tuple[type[ServingContext], ...]] = {
    SERVING: (FlareContext,), FLARE: (FlareContext,)}
"""The contexts each group's flags set."""
FOLDERS = family_folders()
FOLDER_GROUPS = [g.name for f in FOLDERS for g in f.groups]
"""The groups of the families in a folder of their own (nodes/<family>/methods.py): each
group's flags are its first context's own fields, and each of its contexts also joins every
group that sets one of its base classes, for the fields it does not set itself (a context over
the gates' takes the LM, FLARE and gate flags; REPLUG's context, over ServingContext alone, the
LM, store and prompts flags; FB-RAG's only --store, its two LMs having flags of their own)."""
_GROUP_OF = {g.name: g for f in FOLDERS for g in f.groups}
FOLDER_RENAMED = {(g.contexts[0], field): option for g in _GROUP_OF.values()
                  for field, option in g.renamed}
"""The folder groups' flags of their own for fields spelled otherwise (--replug-k,
--strong-url)."""
for _group_of_folder in _GROUP_OF.values():
    GROUPS[_group_of_folder.name] = _group_of_folder.line
    for _group, _held in FAMILY_CONTEXTS.items():
        _bases = (ServingContext,) if _group == SERVING else _held
        FAMILY_CONTEXTS[_group] += tuple(
            c for c in _group_of_folder.contexts
            if c not in _held and any(issubclass(c, h) for h in _bases))
    FAMILY_CONTEXTS[_group_of_folder.name] = _group_of_folder.contexts
OPTIONS: dict[tuple[type[ServingContext], str], str] = {
    (FlareContext, "store_dir"): "--store", (FlareContext, "prompt_set"): "--prompts",
    (FlareContext, "query_formulation"): "--query", (FlareContext, "window_tokens"): "--window",
}
"""The flags not spelled --field-name (by the first context of their group): short names the
docs already use, and the family prefixes."""
OPTIONS.update(FOLDER_RENAMED)
ENV_DEFAULTS = {
    "--base-url": "ACTIVERAG_BASE_URL, else http://ACTIVERAG_HOST:ACTIVERAG_PORT/v1",
    "--model": "ACTIVERAG_MODEL", "--store": "ACTIVERAG_STORE_DIR, else ACTIVERAG_HOME/store",
    "--strong-url": "ACTIVERAG_STRONG_URL, else ACTIVERAG_BASE_URL",
    "--light-url": "ACTIVERAG_LIGHT_URL",
}
"""The environment variables that set a flag's default (read when the command runs)."""


@dataclass(frozen=True)
class Flag:
    """One run flag: the context field it sets, in every context of its group."""

    option: str
    field: str
    group: str
    contexts: tuple[type[ServingContext], ...]

    @property
    def dest(self) -> str:
        return self.option[2:].replace("-", "_")

    @property
    def default(self) -> Any:
        """The field's default in the first context the flag sets (see other_defaults)."""
        return _field(self.contexts[0], self.field).default

    @property
    def other_defaults(self) -> dict[Any, list[str]]:
        """The contexts whose default differs from `default` (DRAGIN's and ETC's k), by
        default, their class names in order."""
        found: dict[Any, list[str]] = {}
        for cls in self.contexts[1:]:
            value = _field(cls, self.field).default
            if value != self.default:
                found.setdefault(value, []).append(cls.__name__)
        return found

    @property
    def description(self) -> str:
        return str(_field(self.contexts[0], self.field).metadata.get("description", ""))


_FIELDS: dict[tuple[type, str], dataclasses.Field[Any]] = {}
_HINTS: dict[type, dict[str, Any]] = {}
"""Each context's fields and resolved field types, found once (the parser asks hundreds of
times: resolving the types each time was most of `ask --help`'s time)."""


def _field(cls: type, name: str) -> dataclasses.Field[Any]:
    if (cls, name) not in _FIELDS:
        _FIELDS[cls, name] = next(f for f in fields(cls) if f.name == name)
    return _FIELDS[cls, name]


def _hints(cls: type) -> dict[str, Any]:
    """CLS's field types, resolved once per class."""
    if cls not in _HINTS:
        _HINTS[cls] = get_type_hints(cls)
    return _HINTS[cls]


def _group_fields(group: str) -> list[str]:
    shared = [f.name for f in fields(ServingContext) if f.name != "k"]
    if group == SERVING:
        return shared
    if group == FLARE:
        return [f.name for f in fields(FlareContext) if f.name not in shared]
    # a family over another's context (REPLUG, FB-RAG, the app, Adaptive-RAG, SeaKR-lite,
    # IRCoT, the gates, ETC, DRAGIN-lite, a new family folder's): the fields its context adds
    # to its parent's and those it sets with a flag of its own, less those no node reads and
    # those that hold another family's context (the app's fb, which that family's flags make)
    own = FAMILY_CONTEXTS[group][0]
    parent = next(c for c in own.__mro__[1:] if dataclasses.is_dataclass(c))
    unread = _GROUP_OF[group].unread
    return [f.name for f in fields(own)
            if (f.name not in {g.name for g in fields(parent)} or (own, f.name) in FOLDER_RENAMED)
            and f.name not in unread and f.name not in composites(own)]


def _types(kind: Any) -> tuple[Any, ...]:
    return get_args(kind) if get_origin(kind) in (Union, UnionType) else (kind,)


def make_flags() -> list[Flag]:
    """Every run flag, group by group (a group's fields that another group's flag already
    sets join that flag only where OPTIONS names them so)."""
    made: dict[str, Flag] = {}
    for group in GROUPS:
        for name in _group_fields(group):
            first, *joined = FAMILY_CONTEXTS[group]
            contexts = (first, *(c for c in joined if name not in own_fields().get(c, ())))
            option = OPTIONS.get((first, name), "--" + name.replace("_", "-"))
            group_of = group
            if option in made:
                old = made[option]
                if old.field != name or old.group != group_of:
                    raise TypeError(f"{option} would set {old.field} ({old.group}) and {name} "
                                    f"({group}); give one of them its own name in OPTIONS")
                made[option] = dataclasses.replace(old, contexts=old.contexts + contexts)
            else:
                made[option] = Flag(option, name, group_of, contexts)
    return list(made.values())


FLAGS = make_flags()


def option_of(cls: type, name: str) -> str:
    """The flag that sets field NAME of context class CLS (FB-RAG's base_url: --strong-url)."""
    return next((f.option for f in FLAGS if f.field == name and cls in f.contexts),
                "--" + name.replace("_", "-"))


def shown(value: Any) -> str:
    """A default as the help shows it (None as "none", which the flag also accepts)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    return repr(value) if value == "" else str(value)


def _or_none(kind: type) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        return None if text.strip().lower() == "none" else kind(text)

    parse.__name__ = f"{kind.__name__} or none"
    return parse


def _kind(flag: Flag) -> dict[str, Any]:
    """The argparse keywords that parse FLAG's field as its type says."""
    declared = _types(_hints(flag.contexts[0])[flag.field])
    kind, *rest = [t for t in declared if t is not NoneType]
    optional = NoneType in declared
    if kind is bool and not rest:
        return {"action": argparse.BooleanOptionalAction}  # bool | None: None when not given
    if get_origin(kind) is Literal and not rest and not optional:
        return {"choices": list(get_args(kind))}
    if kind in (int, float, str) and not rest:
        metavar = {int: "N", float: "X"}.get(kind) or flag.option.rsplit("-", 1)[-1].upper()
        return {"type": _or_none(kind) if optional else kind,
                "metavar": f"{metavar}|none" if optional else metavar}
    raise TypeError(f"no flag parses {flag.field}'s type {' | '.join(map(str, declared))}")


def help_text(flag: Flag) -> str:
    """The field's description and its default (with the variable that sets it, if any)."""
    env = ENV_DEFAULTS.get(flag.option)
    default = shown(flag.default) + (f"; set by {env}" if env else "") + "".join(
        f"; {', '.join(names)}: {shown(value)}" for value, names in flag.other_defaults.items())
    return f"{flag.description} (default: {default})".replace("%", "%%")


def add_flags(p: argparse.ArgumentParser, groups: Iterable[str]) -> None:
    """Add the run flags of GROUPS to P, one argument group each."""
    for group in groups:
        g = p.add_argument_group(f"{group} settings", textwrap.fill(GROUPS[group], 78))
        for flag in (f for f in FLAGS if f.group == group):
            g.add_argument(flag.option, dest=flag.dest, default=argparse.SUPPRESS,
                           help=help_text(flag), **_kind(flag))


def given(args: argparse.Namespace, cls: type[ServingContext]) -> dict[str, Any]:
    """The fields of context CLS that ARGS set by flag."""
    return {flag.field: getattr(args, flag.dest) for flag in FLAGS
            if cls in flag.contexts and hasattr(args, flag.dest)}
