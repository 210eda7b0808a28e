"""A testing kit: unit-test a trigger, a node or a whole graph without a server.

A scripted LM returns the tokens and probabilities a test chooses, so a test can say "this
draft ends in a token at p = 0.2, so my trigger must fire":

    >>> import asyncio
    >>> from activerag.context import FlareContext
    >>> from activerag.graphs.flare import build_flare_graph
    >>> from activerag.nodes.triggers import fixed_gate
    >>> from activerag.sentences import SentenceSplitter
    >>> from activerag.testing import ScriptedLM, ends, memory_retriever
    >>> def last_token_unsure(tokens, state, ctx):  # the trigger under test
    ...     return bool(tokens) and tokens[-1][1] < ctx.theta
    >>> lm = ScriptedLM([ends("Alpha Beta was born in Gepu.", low={"Gepu.": 0.2}),
    ...                  ends("Alpha Beta was born in Kelmor.")])
    >>> graph = build_flare_graph(
    ...     lm=lm, retriever=memory_retriever({"Alpha Beta": "Alpha Beta was born in Kelmor."}),
    ...     splitter=SentenceSplitter(), gate=fixed_gate(last_token_unsure, "my_gate"))
    >>> out = asyncio.run(graph.ainvoke({"question": "Where was Alpha Beta born?"},
    ...                                 context=FlareContext(theta=0.5, initial_retrieval=False)))
    >>> out["trace"][0]["retrieved"], out["answer"]
    (True, 'Alpha Beta was born in Kelmor.')

Here: ScriptedLM with `sentence` and `ends` (a text LM with logprobs), ScriptedSampler and
WordTokens (FB-RAG's light LM and a tokenizer), ScriptedTokenLM with `says` (REPLUG's
token-level LM), memory_retriever (BM25 over literal passages). For tests against real
components: `activerag.testing.processes` (vLLM servers of one's own, processes killed -9),
`activerag.testing.dev_server` (`langgraph dev` on a free port) and
`activerag.testing.netcheck` (the addresses a port listens on).
"""

from activerag.testing.retriever import memory_retriever
from activerag.testing.scripted import (
    EOS,
    Script,
    ScriptedLM,
    ScriptedSampler,
    WordTokens,
    ends,
    sentence,
)
from activerag.testing.scripted_tokens import Belief, ScriptedTokenLM, says

__all__ = [
    "EOS",
    "Belief",
    "Script",
    "ScriptedLM",
    "ScriptedSampler",
    "ScriptedTokenLM",
    "WordTokens",
    "ends",
    "memory_retriever",
    "says",
    "sentence",
]
