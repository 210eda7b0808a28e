"""Every swappable node of every builder runs when given (issue #38), generated from the
builders' signatures: each node parameter gets a node that raises a sentinel, and a run of the
method (the fake vLLM of the setting-effect test) must raise it. A builder that silently drops
a node it was handed fails here."""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import fields, replace
from typing import Any

import pytest
from test_settings_take_effect import CONTEXT, QUESTION, base_context, world  # noqa: F401

from activerag.errors import ActiveRagError
from activerag.graphs.registry import METHODS

PARTS = {"lm", "token_lm", "light_lm", "retriever", "splitter", "retrieval", "unit", "name",
         "checkpointer", "kind", "embedder", "context"}
"""Builder parameters that are not nodes: the components and the graph's options."""
NOT_REACHED = {
    ("adaptive_rag_prompt", "none"): "the fake's reply names no complexity label, so the "
                                     "prompt classifier routes every question to C (multi)",
    ("adaptive_rag_prompt", "single"): "as for none: every question goes to C",
}
"""(method, node) a run under the fake never reaches, with the reason."""
SKIPPED = {"adaptive_rag"}
"""Needs a router trained by `activerag train-router` (tests/test_adaptive_rag.py swaps its
strategies)."""


class NodeRan(Exception):
    """Raised by a swapped-in node: it was run."""


def sentinel(name: str) -> Any:
    """A node (or a strategy graph: anything with ainvoke) that raises NodeRan(NAME)."""

    async def node(state: Any, runtime: Any = None) -> Any:
        raise NodeRan(name)

    class Graph:
        async def ainvoke(self, *args: Any, **kwargs: Any) -> Any:
            raise NodeRan(name)

    return Graph() if name in ("none", "single", "multi", "flare", "fb_rag") else node


def cases() -> dict[tuple[str, str], list[str]]:
    """Each (builder, node parameter), with the methods built by that builder: the node must
    run in one of them (REPLUG's combine runs only in its answer modes, say)."""
    out: dict[tuple[str, str], list[str]] = {}
    for name, m in METHODS.items():
        if m.build is None or name in SKIPPED:
            continue
        builder = getattr(m.build, "func", m.build)
        for param in inspect.signature(m.build).parameters:
            if param not in PARTS:
                out.setdefault((builder.__qualname__, param), []).append(name)
    return out


REACHING = {"etc_threshold": -1.0, "min_confidence": 0.99}
"""Settings that make a run reach every node under the fake, for the contexts that have them:
ETC fires (its entropies are flat there), the app goes on from single to FLARE."""


def ran(world: Any, name: str, node: str) -> bool:  # noqa: F811
    record = METHODS[name]
    _, ctx = base_context(name, *world[1:])
    ctx = replace(ctx, **{k: v for k, v in REACHING.items()
                          if k in {f.name for f in fields(ctx)}})
    try:
        graph = record.build(**{node: sentinel(node)})
    except ActiveRagError:  # refused for this method (long_context's reader): another may run it
        return False
    state: dict[str, Any] = {"question": QUESTION}
    if record.family == "FB-RAG" or node == "fb_rag":
        state["context"] = CONTEXT
    try:
        asyncio.run(graph.ainvoke(state, context=ctx))
    except NodeRan as exc:
        return str(exc) == node
    return False


def reachable() -> dict[tuple[str, str], list[str]]:
    """cases() less the methods a run under the fake cannot take to the node (NOT_REACHED)."""
    found = {key: [n for n in names if (n, key[1]) not in NOT_REACHED]
             for key, names in cases().items()}
    return {key: names for key, names in found.items() if names}


@pytest.mark.parametrize(("builder", "node"), list(reachable()))
def test_a_swapped_node_runs(world, builder, node):  # noqa: F811
    names = reachable()[builder, node]
    assert any(ran(world, name, node) for name in names), (builder, node, names)


def test_every_node_not_reached_under_the_fake_is_one_a_builder_has():
    known = {(n, node) for (_, node), names in cases().items() for n in names}
    assert set(NOT_REACHED) <= known


def test_every_builder_has_its_nodes_listed():
    assert len(cases()) >= 25
    assert {node for _, node in cases()} >= {"gate", "formulate_query", "regenerate", "retrieve",
                                             "ensemble", "combine", "sample", "rerank",
                                             "generate", "reason", "answer", "estimate"}


def test_a_reader_handed_to_long_context_is_refused_not_dropped():
    from activerag.graphs.fb_rag import build_baseline_graph

    with pytest.raises(ActiveRagError, match="long_context reads the whole context"):
        build_baseline_graph("long_context", generate=sentinel("generate"))
