"""The FLARE family (Jiang et al. 2023): FLARE-direct's own steps (steps.py: draft, gate routing,
query formulation), FLARE-instruct (instruct.py), self-ask (self_ask.py), the single-time and
no-retrieval baselines (single.py), the previous-window and previous-sentence baselines
(previous.py) and their pure logic (logic.py). The sentence loop they run in, which the families
built on FLARE share, is nodes/loop.py; its pure logic nodes/loop_logic.py.

This folder was one module, activerag.nodes.flare, which also gave the loop's names: those old paths
still work, with a DeprecationWarning that names each name's home.
"""

from activerag.moved import moved_names

__getattr__ = moved_names(__name__, {
    "TaskKind": "activerag.nodes.exemplars",
    "shots": "activerag.nodes.exemplars",
    "task_for": "activerag.nodes.exemplars",
    "make_draft": "activerag.nodes.flare.steps",
    "make_formulate_query": "activerag.nodes.flare.steps",
    "route_after_gate": "activerag.nodes.flare.steps",
    "whole_draft_query": "activerag.nodes.flare.steps",
    "AnswerCut": "activerag.nodes.loop",
    "FlareNode": "activerag.nodes.loop",
    "PromptFn": "activerag.nodes.loop",
    "RUNAWAY": "activerag.nodes.loop",
    "Unit": "activerag.nodes.loop",
    "begin": "activerag.nodes.loop",
    "generate_unit": "activerag.nodes.loop",
    "make_accept": "activerag.nodes.loop",
    "make_generate": "activerag.nodes.loop",
    "make_retrieve": "activerag.nodes.loop",
    "make_retrieve_input": "activerag.nodes.loop",
    "prompt_documents": "activerag.nodes.loop",
    "route_after_accept": "activerag.nodes.loop",
    "route_after_begin": "activerag.nodes.loop",
    "route_after_emitting": "activerag.nodes.loop",
    "unit_update": "activerag.nodes.loop",
})
