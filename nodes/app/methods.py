"""The adaptive app's registry row and CLI flag group (read by graphs/registry.py and the CLI;
no graph is imported here). Listed last: it composes the methods above it."""

from __future__ import annotations

from activerag.method_record import Family, FlagGroup, Method
from activerag.nodes.app.context import AppContext

FAMILY = Family(
    name="app",
    line="the adaptive app of the methods above (AppContext)",
    methods=(Method("app", "app:graph", AppContext, {}, "app",
                    "FB-RAG for a question with its own long context; else single-time "
                    "retrieval, then FLARE when single's answer is unsure",
                    "app:build_app_graph"),),
    groups=(FlagGroup("app", "AppContext: --method app only (the app's other settings are the "
                             "FLARE and FB-RAG flags above)", (AppContext,)),),
    last=True,
)
