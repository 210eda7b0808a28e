"""What the graphs share: the retry policy, and the FLARE family's state schemas, start and
the loop of the methods whose LM asks for retrieval itself (self-ask, FLARE-instruct); and every
shipped trigger registered (the gates' and the margin's live in their family folders), so that
any graph's trigger=NAME finds its function."""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer, RetryPolicy

from activerag.context import FlareContext
from activerag.errors import LMServerUnreachable
from activerag.nodes import loop
from activerag.nodes.gated import triggers as gated_triggers  # noqa: F401 (registers them)
from activerag.nodes.loop import FlareNode
from activerag.nodes.margin import triggers as margin_triggers  # noqa: F401 (registers it)
from activerag.nodes.parts import Parts
from activerag.serving.lm_errors import LMServerError
from activerag.state import FlareInput, FlareOutput, FlareState

# Transient server trouble (restarts, 5xx) is retried; bad requests are not.
LM_RETRY = RetryPolicy(max_attempts=3, initial_interval=1.0,
                       retry_on=(LMServerError, LMServerUnreachable))


def new_graph(context: type[FlareContext] = FlareContext
              ) -> StateGraph[FlareState, FlareContext, FlareInput, FlareOutput]:
    """An empty graph with the family's state, context, input and output schemas.

    Input is just the question and output the answer with its trace, so every graph drops
    into a larger app as a subgraph node. CONTEXT: a FlareContext subclass whose own fields
    the graph's settings form (Studio) shows.
    """
    return StateGraph(FlareState, context_schema=context, input_schema=FlareInput,
                      output_schema=FlareOutput)


def add_start(g: StateGraph[FlareState, FlareContext, FlareInput, FlareOutput], parts: Parts,
              first: str) -> None:
    """Wire START -> begin -> [retrieve_input ->] FIRST: q_1 = x when ctx.initial_retrieval."""
    g.add_node("begin", loop.begin)
    g.add_node("retrieve_input", loop.make_retrieve_input(parts))
    g.add_edge(START, "begin")
    g.add_conditional_edges("begin", loop.route_after_begin,
                            {"retrieve_input": "retrieve_input", "next": first})
    g.add_edge("retrieve_input", first)


Compiled = CompiledStateGraph[FlareState, FlareContext, FlareInput, FlareOutput]


def build_emitting(generate: FlareNode, carry: object, name: str, parts: Parts,
                   checkpointer: Checkpointer, final_only: bool = False) -> Compiled:
    """Wire generate -> accept -> (retrieve -> generate | generate | end): the LM's own output
    asks for the next retrieval (a follow-up question, a search), CARRY moves it to the next
    step."""
    g = new_graph()
    add_start(g, parts, "generate")
    g.add_node("generate", generate, retry_policy=LM_RETRY)
    g.add_node("accept", loop.make_accept(parts, count_sentences=False, final_only=final_only,
                                           carry=carry))  # type: ignore[arg-type]
    g.add_node("retrieve", loop.make_retrieve(parts))
    g.add_edge("generate", "accept")
    g.add_conditional_edges("accept", loop.route_after_emitting,
                            {"retrieve": "retrieve", "next": "generate", "__end__": END})
    g.add_edge("retrieve", "generate")
    return g.compile(name=name, checkpointer=checkpointer)
