"""Methods whose LM asks for retrieval itself: self-ask (§4) and FLARE-instruct (§3.1)."""

from __future__ import annotations

from langchain_core.retrievers import BaseRetriever
from langgraph.graph import END
from langgraph.types import Checkpointer

from activerag.graphs.base import LM_RETRY, add_start, new_graph
from activerag.graphs.flare import Compiled
from activerag.nodes import common, decompose, instruct
from activerag.nodes.common import Node
from activerag.nodes.parts import Parts
from activerag.serving.lm import LM


def _build(generate: Node, carry: object, name: str, parts: Parts,
           checkpointer: Checkpointer, final_only: bool = False) -> Compiled:
    g = new_graph()
    add_start(g, parts, "generate")
    g.add_node("generate", generate, retry_policy=LM_RETRY)
    g.add_node("accept", common.make_accept(parts, count_sentences=False, final_only=final_only,
                                            carry=carry))  # type: ignore[arg-type]
    g.add_node("retrieve", common.make_retrieve(parts))
    g.add_edge("generate", "accept")
    g.add_conditional_edges("accept", common.route_after_emitting,
                            {"retrieve": "retrieve", "next": "generate", "__end__": END})
    g.add_edge("retrieve", "generate")
    return g.compile(name=name, checkpointer=checkpointer)


def build_self_ask_graph(lm: LM | None = None, retriever: BaseRetriever | None = None, *,
                         checkpointer: Checkpointer = None) -> Compiled:
    """Question decomposition: every generated "Follow up:" question retrieves (Prompt 3);
    only "So the final answer is" ends the answer (an intermediate answer may say "the answer
    is")."""
    parts = Parts(lm=lm, retriever=retriever)
    return _build(decompose.make_generate_segment(parts), decompose.carry_follow_up,
                  "self_ask", parts, checkpointer, final_only=True)


def build_instruct_graph(lm: LM | None = None, retriever: BaseRetriever | None = None, *,
                         checkpointer: Checkpointer = None) -> Compiled:
    """FLARE-instruct: a generated "[Search(query)]" retrieves and is removed from the answer."""
    parts = Parts(lm=lm, retriever=retriever)
    return _build(instruct.make_generate_with_search(parts), instruct.carry_search,
                  "flare_instruct", parts, checkpointer)



self_ask_graph = build_self_ask_graph()
instruct_graph = build_instruct_graph()
