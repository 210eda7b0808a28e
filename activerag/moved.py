"""Old import paths kept working for a while: a module whose public names moved elsewhere gives
them from their new home, with a DeprecationWarning that names it, instead of importing them
silently (a silent re-export keeps two paths alive and tells no one which is meant)."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any


def moved_names(module: str, homes: dict[str, str]) -> Callable[[str], Any]:
    """A module-level `__getattr__` for MODULE: each name of HOMES comes from the module HOMES
    gives for it, with a DeprecationWarning; any other name is an AttributeError, as without it.

        __getattr__ = moved_names(__name__, {"record_run": "activerag.page.record"})
    """

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(f"{module}.{name} has moved: import it from {home} (the old path goes in "
                      "a later release)", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(home), name)

    return __getattr__
