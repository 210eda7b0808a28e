"""Every method by name: its graph and the context settings that make it that method."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from activerag.context import FlareContext
from activerag.errors import ActiveRagError
from activerag.graphs.baselines import no_retrieval_graph, single_graph
from activerag.graphs.emitting import instruct_graph, self_ask_graph
from activerag.graphs.flare import Compiled, graph, next_sentence_graph
from activerag.graphs.passive import previous_sentence_graph, previous_window_graph

METHODS: dict[str, tuple[Compiled, dict[str, Any]]] = {
    "none": (no_retrieval_graph, {}),
    "single": (single_graph, {}),
    "previous_window": (previous_window_graph, {}),
    "previous_sentence": (previous_sentence_graph, {}),
    "next_sentence": (next_sentence_graph, {}),
    "self_ask": (self_ask_graph, {}),
    "flare": (graph, {}),
    "flare_explicit": (graph, {"query_formulation": "explicit"}),
    "flare_combined": (graph, {"combine_retrieval": True}),
    "flare_instruct": (instruct_graph, {}),
}


def method(name: str, context: FlareContext) -> tuple[Compiled, FlareContext]:
    """The graph of method NAME and CONTEXT with that method's settings applied."""
    if name not in METHODS:
        raise ActiveRagError(f"unknown method {name!r}; choose from {', '.join(METHODS)}")
    graph, overrides = METHODS[name]
    return graph, replace(context, **overrides)
