"""The adaptive QA app: one graph whose nodes are method graphs, run as subgraphs.

A question that comes with its own long context goes to FB-RAG. Any other is answered by
single-time retrieval first; when that answer's tokens are less sure than the context's
min_confidence, FLARE answers instead.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from activerag.graphs.fb_rag import graph as fb_rag_graph
from activerag.graphs.flare import graph as flare_graph
from activerag.graphs.single import single_graph
from activerag.nodes.app import steps as app
from activerag.nodes.app.context import AppContext
from activerag.nodes.app.state import AppInput, AppOutput, AppState


def build_app_graph(*, single: Any = None, flare: Any = None, fb_rag: Any = None,
                    name: str = "app", checkpointer: Checkpointer = None
                    ) -> CompiledStateGraph[AppState, AppContext, AppInput, AppOutput]:
    """Compile the app over the given method graphs (defaults: the package's single, flare
    and fb_rag graphs); any graph with the same input and output drops in."""
    g = StateGraph(AppState, context_schema=AppContext, input_schema=AppInput,
                   output_schema=AppOutput)
    g.add_node("start", app.start)
    g.add_node("single", app.make_run_method("single", single or single_graph, lambda c: c,
                                             judged=True))
    g.add_node("flare", app.make_run_method("flare", flare or flare_graph, lambda c: c))
    g.add_node("fb_rag", app.make_run_method("fb_rag", fb_rag or fb_rag_graph, app.fb_context))
    g.add_edge(START, "start")
    g.add_conditional_edges("start", app.route_question, ["fb_rag", "single"])
    g.add_conditional_edges("single", app.route_after_single, ["flare", END])
    g.add_edge("flare", END)
    g.add_edge("fb_rag", END)
    return g.compile(name=name, checkpointer=checkpointer)


graph = build_app_graph()
