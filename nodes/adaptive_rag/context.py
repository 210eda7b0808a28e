"""Adaptive-RAG's settings (Jeong et al. 2024): the router, over FLARE's, which are its three
strategies' own."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import ClassVar

from activerag.context import FlareContext
from activerag.context_checks import documented
from activerag.errors import SettingError
from activerag.serving.security import check_folder


@documented
@dataclass(kw_only=True)
class AdaptiveContext(FlareContext):
    """Settings of one Adaptive-RAG run (Jeong et al. 2024): which query-complexity classifier
    routes the question; the FLARE fields are the three strategies' own settings."""

    router: str = ""
    """A router folder written by `activerag train-router` (logistic regression on the
    question's MiniLM embedding); empty: the prompt classifier asks the served LM (the
    adaptive_rag method refuses to run without a router, adaptive_rag_prompt never reads one)."""

    ROUTES: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        check_folder("router", self.router)
        if self.router and not os.path.isdir(os.path.expanduser(self.router)):
            raise SettingError(f"router folder {self.router!r} does not exist; train one with "
                               f"`activerag train-router --out {self.router}`, or give the "
                               "folder it wrote")
