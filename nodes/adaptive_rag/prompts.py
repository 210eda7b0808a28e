"""Adaptive-RAG's prompt classifier (adaptive_rag_prompt): the served LM asked for the
query-complexity label the paper's trained classifier gives."""

from __future__ import annotations

from activerag.nodes.prompts import QUESTION_LINE, Layout, render

# Adaptive-RAG (Jeong et al. 2024): the zero-training query-complexity classifier, asking the
# served LM for the label the paper's trained classifier gives (§3.2), with one invented
# example of each label
COMPLEXITY_INSTRUCTION = (
    "Rate how complex the question is to answer. Reply with one letter: "
    "A if it can be answered from general knowledge, without searching; "
    "B if it needs one search for one fact; "
    "C if it needs several searches, each fact leading to the next."
)
COMPLEXITY_EXEMPLARS: tuple[tuple[str, str], ...] = (
    ("What is the capital of France?", "A"),
    ("Who founded The Walt Disney Company?", "B"),
    ("In which city was the founder of The Walt Disney Company born?", "C"),
)
COMPLEXITY_STOPS = ("\n",)
"""The classifier's reply is its first line."""


def complexity_prompt(question: str, fmt: Layout = "chatml") -> str:
    """Adaptive-RAG's prompt classifier: the instruction, the examples, then the question."""
    turns = [(QUESTION_LINE.format(question=q), label) for q, label in COMPLEXITY_EXEMPLARS]
    return render(fmt, COMPLEXITY_INSTRUCTION,
                  [*turns, (QUESTION_LINE.format(question=question), "")])
