"""Self-ask (Press et al. 2022; FLARE §4's question-decomposition baseline): wiring only."""

from __future__ import annotations

from langchain_core.retrievers import BaseRetriever
from langgraph.types import Checkpointer

from activerag.graphs.base import Compiled, build_emitting
from activerag.nodes.flare import self_ask
from activerag.nodes.parts import Parts
from activerag.sentences import SentenceSplitter
from activerag.serving.lm import LM


def build_self_ask_graph(*, lm: LM | None = None, retriever: BaseRetriever | None = None,
                         splitter: SentenceSplitter | None = None,
                         checkpointer: Checkpointer = None) -> Compiled:
    """Question decomposition: every generated "Follow up:" question retrieves (Prompt 3);
    only "So the final answer is" ends the answer (an intermediate answer may say "the answer
    is")."""
    parts = Parts(lm=lm, retriever=retriever, splitter=splitter)
    return build_emitting(self_ask.make_generate_segment(parts), self_ask.carry_follow_up,
                          "self_ask", parts, checkpointer, final_only=True)


self_ask_graph = build_self_ask_graph()
