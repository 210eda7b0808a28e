"""One step of any method is one hop from its graph file (issue #39): every node of every
method's graph runs a function defined in a module that a graphs/ file wiring that node (the
one adding it, or one passing it to a shared builder) imports directly, not one reached
through another module's re-export."""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
from typing import Any

import pytest
from langgraph.graph import StateGraph

from activerag.graphs.registry import METHODS


def imported(module: str) -> set[str]:
    """The modules MODULE's source imports (`import a.b`, `from a import b`: a and a.b)."""
    out = set()
    for node in ast.walk(ast.parse(inspect.getsource(importlib.import_module(module)))):
        if isinstance(node, ast.ImportFrom) and node.module:
            out |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return out


def step_function(action: Any) -> Any:
    """What a graph node runs: the function inside any runnable wrapper."""
    while (inner := getattr(action, "func", None) or getattr(action, "afunc", None)) is not None:
        action = inner
    return action


Step = tuple[str, tuple[str, ...], str]
"""A node, the graphs/ modules wiring it (on the stack as it is added), its function's module."""


def steps_built(method: str, monkeypatch: pytest.MonkeyPatch) -> list[Step]:
    """Each node METHOD's builder adds, as a Step."""
    added: list[Step] = []
    add_node = StateGraph.add_node

    def recording(self: Any, node: Any, action: Any = None, **kwargs: Any) -> Any:
        callers: dict[str, None] = {}
        frame = sys._getframe(1)
        while frame is not None:
            if (name := frame.f_globals.get("__name__", "")).startswith("activerag.graphs."):
                callers[name] = None
            frame = frame.f_back
        home = inspect.getmodule(step_function(action))
        added.append((node, tuple(callers), home.__name__ if home else "?"))
        return add_node(self, node, action, **kwargs)

    monkeypatch.setattr(StateGraph, "add_node", recording)
    METHODS[method].build()
    return added


def far(added: list[Step]) -> list[Step]:
    """The steps whose function's module is none of their wiring files nor one they import."""
    return [(node, by, home) for node, by, home in added
            if not any(home == f or home in imported(f) for f in by)]


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_step_is_one_import_from_the_graph_file_that_adds_it(
        method: str, monkeypatch: pytest.MonkeyPatch):
    added = steps_built(method, monkeypatch)
    assert added and all(by for _, by, _ in added)
    assert far(added) == []


def test_a_step_reached_through_a_re_export_is_two_hops(monkeypatch: pytest.MonkeyPatch):
    """A graph file that named the loop's accept through a re-export (nodes/flare.py's, as
    graphs/flare.py did) is found: the step's module is not one the file imports, nor one
    another wiring file imports; one that does import it is near."""
    added: list[Step] = [("accept", ("activerag.graphs.registry",), "activerag.nodes.loop")]
    assert far(added) == added
    assert far([("accept", ("activerag.graphs.registry", "activerag.graphs.flare"),
                 "activerag.nodes.loop")]) == []
