"""What every context class (activerag/context.py, nodes/<family>/context.py) is checked and
described with: the refusal of a setting, the lower bounds, finite floats, the deployment's
limits on endpoints and folders, and each field's description from its attribute docstring
(`documented`, which Studio's settings form shows)."""

from __future__ import annotations

import ast
import functools
import inspect
import math
import sys
import textwrap
from dataclasses import fields
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from activerag.errors import SettingError
from activerag.serving.security import check_endpoint, check_folder

C = TypeVar("C", bound=type)


def refuse(name: str, rule: str, value: object) -> SettingError:
    """The error for setting NAME at VALUE, which breaks RULE ("be at least 1")."""
    return SettingError(f"{name} must {rule}, got {value!r}; give {name} a value that does")


def at_least(ctx: object, minimum: int, *names: str) -> None:
    """Refuse any of the settings NAMES of CTX that is below MINIMUM."""
    for name in names:
        if getattr(ctx, name) < minimum:
            raise refuse(name, f"be at least {minimum}", getattr(ctx, name))


def finite_floats(ctx: Any) -> None:
    """Refuse a float setting of CTX that is NaN or infinite: NaN passes every range check
    written as a comparison (`nan < 0` is false), and an infinite one breaks the arithmetic."""
    for f in fields(ctx):
        value = getattr(ctx, f.name)
        if isinstance(value, float) and not math.isfinite(value):
            raise refuse(f.name, "be a finite number", value)


ENDPOINTS = ("base_url", "light_base_url")
"""Settings that name an LM server: a client must not send the runs to any URL it likes."""
FOLDERS = ("store_dir", "query_encoder")
"""Settings that name a folder the run opens."""


def within_deployment(ctx: Any) -> None:
    """Refuse CTX's endpoints and folders that the deployment's ACTIVERAG_ALLOWED_BASE_URLS
    and ACTIVERAG_STORE_ROOT leave out: the LangGraph server takes a run's context from any
    client, so the limits hold here, where every entry point builds its context."""
    for name in ENDPOINTS:
        if hasattr(ctx, name):
            check_endpoint(name, getattr(ctx, name))
    for name in FOLDERS:
        check_folder(name, getattr(ctx, name))


@functools.cache
def _module_attribute_docs(path: str) -> dict[str, dict[str, str]]:
    """For each top-level class of the module at PATH, the docstrings written under its
    annotated attributes (the module is parsed once, however many classes it documents)."""
    try:
        tree = ast.parse(Path(path).read_text())
    except (OSError, SyntaxError):
        return {}
    return {cls.name: _class_docs(cls) for cls in tree.body if isinstance(cls, ast.ClassDef)}


def _class_docs(cls: ast.ClassDef) -> dict[str, str]:
    return {stmt.target.id: " ".join(doc.value.value.split())
            for stmt, doc in zip(cls.body, cls.body[1:], strict=False)
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
            and isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
            and isinstance(doc.value.value, str)}


def _attribute_docs(cls: type) -> dict[str, str]:
    """The docstrings written under the annotated attributes of CLS's own body."""
    path = getattr(sys.modules.get(cls.__module__), "__file__", None)
    if path and cls.__qualname__ == cls.__name__:  # a module's own class
        return _module_attribute_docs(path).get(cls.__name__, {})
    try:  # a class made in a function: its own source
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):
        return {}
    return _class_docs(tree.body[0]) if isinstance(tree.body[0], ast.ClassDef) else {}


def documented(cls: C) -> C:
    """Give each field of dataclass CLS its attribute docstring (the nearest class's that has
    one) as its description, so that the JSON schema, which Studio renders as the settings
    form, says what the field means; the docstring stays the one source."""
    docs: dict[str, str] = {}
    for base in reversed(cls.__mro__):
        docs.update(_attribute_docs(base))
    for f in fields(cls):
        if f.name in docs:
            f.metadata = MappingProxyType({**f.metadata, "description": docs[f.name]})
    return cls
