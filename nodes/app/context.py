"""The adaptive app's settings: FLARE's and single-time retrieval's, when FLARE takes over, and
FB-RAG's for a question that brings its own long context."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from activerag.context import FlareContext, Server
from activerag.context_checks import at_least, documented
from activerag.nodes.fb_rag.context import FBRagContext


@documented
@dataclass(kw_only=True)
class AppContext(FlareContext):
    """Settings of the adaptive QA app (graphs/app.py): FLARE's and single-time retrieval's
    (the fields it shares with FlareContext), when FLARE takes over, and FB-RAG's settings for
    questions that bring their own long context."""

    min_confidence: float = 0.5
    """Keep single-time retrieval's answer when the geometric mean of its tokens'
    probabilities is at least this; below it FLARE answers instead (0: never FLARE; above 1:
    always)."""
    fb: FBRagContext | None = None
    """FB-RAG's settings for a question that comes with a long context (None: FBRagContext's
    defaults over this run's store)."""

    ROUTES: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        at_least(self, 0, "min_confidence")

    def servers(self, with_context: bool = False) -> list[Server]:
        """The one LM server, and FB-RAG's WITH_CONTEXT (its route for a long context)."""
        fb = self.fb if with_context and isinstance(self.fb, FBRagContext) else None
        return super().servers() + (fb.servers() if fb is not None else [])
