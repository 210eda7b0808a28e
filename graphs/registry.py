"""Every method by name: its graph and the context settings that make it that method."""

from __future__ import annotations

import difflib
from dataclasses import fields, replace
from typing import Any

from activerag.context import (
    AppContext,
    FBRagContext,
    FlareContext,
    ReplugContext,
    ServingContext,
)
from activerag.errors import ActiveRagError
from activerag.graphs.app import graph as app_graph
from activerag.graphs.fb_rag import graph as fb_rag_graph
from activerag.graphs.fb_rag import (
    long_context_graph,
    op_rag_graph,
    self_route_graph,
    vanilla_rag_graph,
)
from activerag.graphs.flare import graph, next_sentence_graph
from activerag.graphs.flare_instruct import instruct_graph
from activerag.graphs.previous import previous_sentence_graph, previous_window_graph
from activerag.graphs.replug import flare_replug_graph
from activerag.graphs.replug import graph as replug_graph
from activerag.graphs.self_ask import self_ask_graph
from activerag.graphs.single import no_retrieval_graph, single_graph

METHODS: dict[str, tuple[Any, dict[str, Any]]] = {
    "none": (no_retrieval_graph, {}),
    "single": (single_graph, {}),
    # REPLUG's Table 3 baselines: the top document alone, and k documents concatenated
    "single_k1": (single_graph, {"k": 1}),
    "single_k10": (single_graph, {"k": 10}),
    "previous_window": (previous_window_graph, {}),
    "previous_sentence": (previous_sentence_graph, {}),
    "next_sentence": (next_sentence_graph, {}),
    "self_ask": (self_ask_graph, {}),
    "flare": (graph, {}),
    "flare_explicit": (graph, {"query_formulation": "explicit"}),
    "flare_combined": (graph, {"combine_retrieval": True}),
    "flare_instruct": (instruct_graph, {}),
    # FLARE's gate and queries, REPLUG's ensemble writing the regenerated sentence
    "flare_replug": (flare_replug_graph, {}),
    # REPLUG (ReplugContext: k=10 documents ensembled, whatever FLARE's k)
    "replug": (replug_graph, {"ensemble": "agree"}),
    "replug_token": (replug_graph, {"ensemble": "token"}),
    "replug_vote": (replug_graph, {"ensemble": "vote"}),
    "replug_rescore": (replug_graph, {"ensemble": "rescore"}),
    # FB-RAG (FBRagContext: a light sampler and a strong reader) and its baselines
    "fb_rag": (fb_rag_graph, {}),
    "fb_rag_fb": (fb_rag_graph, {"eta_b": 0.5, "eta_f": 0.5}),
    "long_context": (long_context_graph, {}),
    "vanilla_rag": (vanilla_rag_graph, {}),
    "op_rag": (op_rag_graph, {}),
    "self_route": (self_route_graph, {}),
    # the adaptive app: FB-RAG for a long context, else single-time retrieval, then FLARE
    # when single's answer is unsure (graphs/apps.py)
    "app": (app_graph, {}),
}
OWN_GRAPHS = frozenset(id(g) for g, _ in METHODS.values())
"""The graphs above, which make their LM clients from the run's context (by id: one built
with its own LM, as a test's, is not among them)."""
FB_RAG_GRAPHS = (fb_rag_graph, long_context_graph, vanilla_rag_graph, op_rag_graph,
                 self_route_graph)
# The settings every family shares, carried from the run's FLARE context to REPLUG's.
_SERVING = [f.name for f in fields(ServingContext) if f.name != "k"]


def unknown_method_error(names: list[str]) -> ActiveRagError:
    """The error for the mistyped method NAMES: each with its nearest known names, then all."""
    said = []
    for name in names:
        near = difflib.get_close_matches(name, METHODS, n=3)
        said.append(repr(name) + (f" (did you mean {' or '.join(map(repr, near))}?)"
                                  if near else ""))
    what = "method" if len(names) == 1 else "methods"
    return ActiveRagError(f"unknown {what} {', '.join(said)}; choose from {', '.join(METHODS)}")


def method(name: str, context: FlareContext,
           fb_context: FBRagContext | None = None) -> tuple[Any, ServingContext]:
    """The graph of method NAME and CONTEXT with that method's settings applied (a REPLUG
    method gets a ReplugContext with CONTEXT's endpoint, store and prompts; an FB-RAG one
    FB_CONTEXT, whose two endpoints are its own, with CONTEXT's store)."""
    if name not in METHODS:
        raise unknown_method_error([name])
    graph, overrides = METHODS[name]
    if graph in FB_RAG_GRAPHS:
        base = fb_context or FBRagContext(store_dir=context.store_dir)
        return graph, replace(base, **overrides)
    if graph is app_graph:
        given = {f.name: getattr(context, f.name) for f in fields(AppContext)
                 if f.name != "fb" and hasattr(context, f.name)}
        return graph, AppContext(**{**given, **overrides}, fb=fb_context)
    if graph is replug_graph:
        return graph, ReplugContext(**{f: getattr(context, f) for f in _SERVING}, **overrides)
    return graph, replace(context, **overrides)
