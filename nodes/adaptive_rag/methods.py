"""Adaptive-RAG's registry rows and CLI flag group (read by graphs/registry.py and the CLI; no
graph is imported here)."""

from __future__ import annotations

from activerag.method_record import Family, FlagGroup, Method
from activerag.nodes.adaptive_rag.context import AdaptiveContext

FAMILY = Family(
    name="Adaptive-RAG",
    line="Jeong et al. 2024: a query-complexity classifier routes the question to no, "
         "single-step or multi-step retrieval (AdaptiveContext)",
    methods=(
        Method("adaptive_rag", "adaptive_rag:graph", AdaptiveContext, {}, "Adaptive-RAG",
               "a router trained here (`train-router`: logistic regression on the question's "
               "MiniLM embedding) sends it to `none` (A), `single` (B) or the multi-step method "
               "(C) (§3.2)", "adaptive_rag:build_router_graph",
               answer_rule="whole"),
        Method("adaptive_rag_prompt", "adaptive_rag:prompt_graph", AdaptiveContext,
               {"router": ""}, "Adaptive-RAG", "as `adaptive_rag`, the served LM rating the "
               "complexity A/B/C from a prompt (C when its reply names none)",
               "adaptive_rag:build_prompt_graph", answer_rule="whole"),
    ),
    groups=(FlagGroup("Adaptive-RAG", "AdaptiveContext: adaptive_rag (its strategies' "
                      "settings are the FLARE flags above)", (AdaptiveContext,)),),
)
"""The authors score an output without "answer is" as the whole output (their configs'
match_all_on_failure): answer_rule "whole"."""
