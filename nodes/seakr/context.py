"""SeaKR-lite's settings: the reranking fields over its host method's, FLARE's (SeakrContext)
or IRCoT's (IRCoTSeakrContext)."""

from __future__ import annotations

from dataclasses import dataclass

from activerag.context import FlareContext
from activerag.context_checks import at_least, documented, refuse
from activerag.nodes.ircot.context import IRCoTContext


@documented
@dataclass(kw_only=True)
class SeakrContext(FlareContext):
    """Settings of one SeaKR-lite run (after Yao et al. 2025's self-aware re-ranking): each
    retrieval fetches a larger pool, and the k documents kept are those under which a short
    pseudo-generation is least uncertain; the FLARE fields are the host method's own."""

    rerank_pool: int | None = None
    """Documents retrieved per step before reranking (None: 3·k, the authors' code's ratio:
    it retrieves 3 snippets and keeps 1); at least k."""
    rerank_tokens: int = 8
    """Greedy tokens of each document's pseudo-generation, whose mean top-20 entropy ranks it."""

    def __post_init__(self) -> None:
        super().__post_init__()
        at_least(self, 1, "rerank_tokens")
        if self.rerank_pool is not None and self.rerank_pool < self.k:
            raise refuse("rerank_pool", f"be at least k ({self.k}) or None", self.rerank_pool)


@documented
@dataclass(kw_only=True)
class IRCoTSeakrContext(IRCoTContext, SeakrContext):
    """Settings of one ircot_seakr run: IRCoT's (IRCoTContext) whose every retrieval keeps,
    from a pool of rerank_pool, the k paragraphs under which a short pseudo-generation of the
    next CoT sentence is least uncertain (SeakrContext's fields)."""
