"""FLARE-instruct (§3.1): the LM asks for retrieval with "[Search(query)]": wiring only."""

from __future__ import annotations

from langchain_core.retrievers import BaseRetriever
from langgraph.types import Checkpointer

from activerag.graphs.base import Compiled, build_emitting
from activerag.nodes.flare import instruct as flare_instruct
from activerag.nodes.parts import Parts
from activerag.sentences import SentenceSplitter
from activerag.serving.lm import LM


def build_instruct_graph(*, lm: LM | None = None, retriever: BaseRetriever | None = None,
                         splitter: SentenceSplitter | None = None,
                         checkpointer: Checkpointer = None) -> Compiled:
    """FLARE-instruct: a generated "[Search(query)]" retrieves and is removed from the answer."""
    parts = Parts(lm=lm, retriever=retriever, splitter=splitter)
    return build_emitting(flare_instruct.make_generate_with_search(parts),
                          flare_instruct.carry_search, "flare_instruct", parts, checkpointer)


instruct_graph = build_instruct_graph()
