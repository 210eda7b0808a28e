"""A method's own overrides survive the chat adapters (issue #38): for_messages and as_tool
given a context of the method's class run it with the method's settings applied over it
(flare_explicit stays explicit, replug_vote votes), and a run's own context of that class gets
them too. Generated from the registry: every method with overrides."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from langgraph.runtime import Runtime

from activerag.graphs import registry
from activerag.graphs.messages import method_parts
from activerag.nodes.fb_rag.context import FBRagContext
from activerag.nodes.replug.context import ReplugContext

WITH_OVERRIDES = [name for name, m in registry.METHODS.items() if m.overrides]


def own_context(name: str):  # type: ignore[no-untyped-def]
    """A context of NAME's class, every overridden field at a value other than the override."""
    record = registry.METHODS[name]
    cls = record.context
    base = cls(store_dir="/corpus") if cls in (FBRagContext, ReplugContext) else cls()
    other = {}
    for key, value in record.overrides.items():
        field = next(f for f in dataclasses.fields(cls) if f.name == key)
        default = getattr(base, key)
        other[key] = default if default != value else _another(field, value)
    return dataclasses.replace(base, **other)


def _another(field: dataclasses.Field, value):  # type: ignore[no-untyped-def, type-arg]
    """A value of FIELD other than VALUE (the field's default when that differs)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    # a router is a folder that must exist (never loaded here)
    return {"estimator": "entropy_max", "router": str(Path(__file__).parent)}[field.name]


@pytest.mark.parametrize("name", WITH_OVERRIDES)
def test_a_given_context_gets_the_methods_own_overrides(name):
    overrides = registry.METHODS[name].overrides
    given = own_context(name)
    parts = method_parts(name, given)
    assert {k: getattr(parts.context, k) for k in overrides} == overrides
    for k in {f.name for f in dataclasses.fields(given)} - set(overrides):
        assert getattr(parts.context, k) == getattr(given, k), k  # the rest as given
    ran = parts.pick(Runtime(context=own_context(name)))
    assert {k: getattr(ran, k) for k in overrides} == overrides


@pytest.mark.parametrize("name", WITH_OVERRIDES)
def test_without_a_context_the_method_runs_under_its_defaults_and_overrides(name):
    parts = method_parts(name)
    overrides = registry.METHODS[name].overrides
    assert {k: getattr(parts.context, k) for k in overrides} == overrides
    assert {k: getattr(parts.pick(Runtime(context=None)), k) for k in overrides} == overrides
