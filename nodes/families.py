"""The method families in folders of their own: each folder of activerag.nodes with a
methods.py declares its Family there (activerag.method_record). Finding them imports those
modules and their contexts, no graph and no node, so that the CLI's flags and the registry's
list are made from them at once."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import pkgutil

from activerag.method_record import Family


def folder_modules(module: str) -> list[str]:
    """The import names of MODULE ("methods", "triggers") in every folder of activerag.nodes
    that has one, in folder name order."""
    import activerag.nodes

    found = []
    for folder in sorted(pkgutil.iter_modules(activerag.nodes.__path__), key=lambda m: m.name):
        name = f"activerag.nodes.{folder.name}.{module}"
        if folder.ispkg and importlib.util.find_spec(name) is not None:
            found.append(name)
    return found


@functools.cache
def family_folders() -> tuple[Family, ...]:
    """The Family each family folder declares (its methods.py's FAMILY), by folder name, those
    marked `last` (the app) after the rest."""
    found = [importlib.import_module(name).FAMILY for name in folder_modules("methods")]
    return tuple(sorted(found, key=lambda family: family.last))


@functools.cache
def own_fields() -> dict[type, frozenset[str]]:
    """Each folder context's fields that its flag group renames or leaves unread: the parent
    group's flag does not set them there, and a run's FLARE context does not carry them over
    (FB-RAG's strong reader is not FLARE's LM)."""
    found: dict[type, set[str]] = {}
    for group in (g for family in family_folders() for g in family.groups):
        first = group.contexts[0]
        found.setdefault(first, set()).update(
            f.name for f in dataclasses.fields(first) if group.own(f.name))
    return {cls: frozenset(names) for cls, names in found.items()}


@functools.cache
def folder_triggers() -> None:
    """Import each family folder's triggers.py that no import brought in yet. The shipped
    folders' are imported by graphs/base.py, for every graph; a folder a user adds registers its
    triggers here, when one of their names is first asked for (they import nodes/triggers.py,
    so it cannot import them)."""
    for name in folder_modules("triggers"):
        importlib.import_module(name)
