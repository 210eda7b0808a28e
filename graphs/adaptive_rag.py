"""Adaptive-RAG (Jeong et al. 2024, §3.2): a query-complexity classifier routes each question to
no retrieval (A), single-step retrieval (B) or the multi-step method (C), each run as a
subgraph. Wiring only; the nodes are in nodes/adaptive_rag/steps.py."""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from activerag.graphs.base import LM_RETRY
from activerag.graphs.ircot import graph as ircot_graph
from activerag.graphs.single import no_retrieval_graph, single_graph
from activerag.nodes.adaptive_rag import steps as adaptive
from activerag.nodes.adaptive_rag.context import AdaptiveContext
from activerag.nodes.adaptive_rag.router import Embedder
from activerag.nodes.adaptive_rag.steps import (
    STRATEGIES,
    AdaptiveInput,
    AdaptiveNode,
    AdaptiveOutput,
    AdaptiveState,
)
from activerag.nodes.parts import Parts
from activerag.serving.lm import LM

MULTI_STEP = ircot_graph
"""The multi-step strategy (C) by default: IRCoT, the paper's (§4.2)."""

Compiled = CompiledStateGraph[AdaptiveState, AdaptiveContext, AdaptiveInput, AdaptiveOutput]


def build_adaptive_rag_graph(*, none: Any = None, single: Any = None, multi: Any = None,
                             lm: LM | None = None, embedder: Embedder | None = None,
                             classify: AdaptiveNode | None = None, name: str = "adaptive_rag",
                             checkpointer: Checkpointer = None) -> Compiled:
    """Compile Adaptive-RAG over the three strategies' graphs (defaults: the package's
    no-retrieval and single graphs and MULTI_STEP; any graph that takes a question and gives an
    answer, trace and costs drops in). CLASSIFY replaces the classifier node (default: the
    trained router when the context names one, else the prompt classifier asking LM, by
    default the context's server; EMBEDDER: the router's sentence encoder, default MiniLM)."""
    g = StateGraph(AdaptiveState, context_schema=AdaptiveContext, input_schema=AdaptiveInput,
                   output_schema=AdaptiveOutput)
    g.add_node("start", adaptive.start)
    g.add_node("classify", classify or adaptive.make_classify(Parts(lm=lm), embedder),
               retry_policy=LM_RETRY)
    graphs = {"A": none or no_retrieval_graph, "B": single or single_graph,
              "C": multi or MULTI_STEP}
    for label, node in STRATEGIES.items():
        g.add_node(node, adaptive.make_run_strategy(node, graphs[label]))
        g.add_edge(node, END)
    g.add_edge(START, "start")
    g.add_edge("start", "classify")
    g.add_conditional_edges("classify", adaptive.route, list(STRATEGIES.values()))
    return g.compile(name=name, checkpointer=checkpointer)


def build_router_graph(*, none: Any = None, single: Any = None, multi: Any = None,
                       embedder: Embedder | None = None, name: str = "adaptive_rag",
                       checkpointer: Checkpointer = None) -> Compiled:
    """Adaptive-RAG whose classifier is the trained router, refused without one (adaptive_rag)."""
    return build_adaptive_rag_graph(none=none, single=single, multi=multi,
                                    classify=adaptive.make_router_classify(embedder), name=name,
                                    checkpointer=checkpointer)


def build_prompt_graph(*, none: Any = None, single: Any = None, multi: Any = None,
                       lm: LM | None = None, name: str = "adaptive_rag_prompt",
                       checkpointer: Checkpointer = None) -> Compiled:
    """Adaptive-RAG whose classifier is the served LM (or LM), asked by a prompt
    (adaptive_rag_prompt)."""
    return build_adaptive_rag_graph(none=none, single=single, multi=multi,
                                    classify=adaptive.make_prompt_classify(Parts(lm=lm)),
                                    name=name, checkpointer=checkpointer)


graph = build_router_graph()
prompt_graph = build_prompt_graph()
