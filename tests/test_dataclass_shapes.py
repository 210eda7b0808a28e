"""Every dataclass of the package, pinned whole (issue #38): whether it is frozen, ordered or
compared, and each field, in order (the order positional arguments take), with its declared
type, default (or the factory that makes it), and whether it is in __init__, in repr,
compared, or keyword-only. A context's field that loses its default, a frozen settings class
that thaws, or a field that leaves the constructor fails here whether or not a test of its
effect exists. Read in a process without the environment's ACTIVERAG_ settings (the contexts'
defaults read them at import), and compared with tests/golden/dataclasses.json; a deliberate
change rewrites the file:

    ACTIVERAG_REWRITE_GOLDEN=1 python -m pytest tests/test_dataclass_shapes.py

and the diff of that JSON is the change to review."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from typing import Any

from golden_files import in_clean_process, pinned

GOLDEN = "dataclasses.json"
PACKAGES = ("activerag", "activerag.graphs", "activerag.nodes", "activerag.stores")


def shown(value: Any) -> Any:
    """A default as JSON holds it: plain values as they are, others by their type and text."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list, frozenset)):
        items = [shown(v) for v in value]
        return sorted(items, key=str) if isinstance(value, frozenset) else items
    return f"{type(value).__name__}: {value!r}"


def field_facts(f: dataclasses.Field) -> dict[str, Any]:
    facts: dict[str, Any] = {"type": str(f.type), "init": f.init, "repr": f.repr,
                             "compare": f.compare, "kw_only": bool(f.kw_only)}
    if f.default is not dataclasses.MISSING:
        facts["default"] = shown(f.default)
    if f.default_factory is not dataclasses.MISSING:
        facts["factory"] = getattr(f.default_factory, "__qualname__",
                                   type(f.default_factory).__name__)
    return facts


def class_facts(cls: type) -> dict[str, Any]:
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    return {"frozen": params.frozen, "order": params.order, "eq": params.eq,
            "fields": [[f.name, field_facts(f)] for f in dataclasses.fields(cls)]}


def shapes() -> dict[str, Any]:
    """Every dataclass defined in a module of the package, by module and name."""
    out: dict[str, Any] = {}
    for top in PACKAGES:
        package = importlib.import_module(top)
        for info in pkgutil.walk_packages(package.__path__, top + "."):
            if info.name.endswith("__main__"):
                continue
            module = importlib.import_module(info.name)
            for name, obj in vars(module).items():
                if isinstance(obj, type) and dataclasses.is_dataclass(obj) \
                        and obj.__module__ == module.__name__:
                    out[f"{module.__name__}.{name}"] = class_facts(obj)
    return out


def differences(now: dict[str, Any], was: dict[str, Any]) -> list[str]:
    found = [f"{name}: added" for name in sorted(set(now) - set(was))]
    found += [f"{name}: gone" for name in sorted(set(was) - set(now))]
    for name in sorted(set(now) & set(was)):
        for key in ("frozen", "order", "eq"):
            if now[name][key] != was[name][key]:
                found.append(f"{name}: {key} {was[name][key]} -> {now[name][key]}")
        fields_now, fields_was = dict(now[name]["fields"]), dict(was[name]["fields"])
        if list(fields_now) != list(fields_was):
            found.append(f"{name}: fields {list(fields_was)} -> {list(fields_now)}")
        for field, facts in fields_now.items():
            if field in fields_was and facts != fields_was[field]:
                found.append(f"{name}.{field}: {fields_was[field]} -> {facts}")
    return found


def test_every_dataclass_is_the_pinned_shape():
    now = in_clean_process("test_dataclass_shapes", "shapes")
    assert len(now) >= 40, sorted(now)
    found = differences(now, pinned(GOLDEN, now))
    assert not found, (f"dataclasses changed; if on purpose, rewrite {GOLDEN} (module "
                       "doc):\n" + "\n".join(found[:40]))


def test_the_comparison_sees_a_thawed_class_and_a_lost_default():
    was = {"m.C": {"frozen": True, "order": False, "eq": True,
                   "fields": [["k", {"type": "int", "default": 2}]]}}
    now = {"m.C": {"frozen": False, "order": False, "eq": True,
                   "fields": [["k", {"type": "int"}]]}}
    assert differences(was, was) == []
    found = differences(now, was)
    assert any("frozen" in f for f in found) and any("m.C.k" in f for f in found), found
