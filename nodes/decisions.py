"""What the FLARE family's nodes show of what they decided, as the `decision` of their updates
(Studio and the run page read it; docs/studio.md lists each node's) and the `sources` a
retrieval adds to."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.documents import Document

from activerag.nodes.base import Update, node_name
from activerag.nodes.studio_logic import add_sources, marked_draft, source_of
from activerag.serving.generation import Generation
from activerag.state import Decision


def retrieved(state: object, queries: Sequence[str], docs: Sequence[Document],
              fallback: bool = False, node: str = "") -> Update:
    """The sources and the decision of a retrieval: the run's sources with DOCS added, and what
    the node (NODE, else the running one) searched for and what it found."""
    old = state.get("sources", []) if isinstance(state, dict) else []
    decision: Decision = {"node": node or node_name() or "retrieve", "queries": list(queries),
                          "fallback": fallback, "documents": [source_of(d) for d in docs]}
    return {"sources": add_sources(old, docs), "decision": decision}


def written(gen: Generation) -> Decision:
    """The decision of a node that wrote a unit (a draft, a sentence): its text and its lowest
    token probability (None: no tokens)."""
    return {"node": node_name() or "generate", "text": gen.text,
            "min_prob": min((t.prob for t in gen.tokens), default=None)}


def masks(tokens: Sequence[tuple[str, float, int]], masked: Sequence[bool]) -> Decision:
    """The part of formulate_query's decision that shows the draft: the node, the draft with its
    masked tokens marked (~~...~~), and the masked tokens with their probabilities."""
    return {"node": node_name() or "formulate_query", "marked": marked_draft(tokens, masked),
            "masked": [[t, p] for (t, p, _), m in zip(tokens, masked, strict=True) if m]}
