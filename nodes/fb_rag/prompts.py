"""The prompts of FB-RAG (Chawla et al. 2025) and its LongBench baselines: the readers'
instruction, stage II's rationale-then-answer, Self-Route's decline, and LongBench's layout."""

from __future__ import annotations

from activerag.nodes.prompts import Layout, neutralise, render

READ = ("Answer the question based on the given passages. Only give me the answer and do not "
        "output any other words.")
"""LongBench's instruction for 2WikiMQA and HotpotQA (Bai et al. 2024), which FB-RAG's stage
III and its baselines use."""
SAMPLE = ("Answer the question based on the given passages. First write a short rationale "
          "that names the facts of the passages you use, starting with \"Rationale:\", then the "
          "answer, starting with \"Answer:\".")
"""Stage II: a rationale, then the answer (FB-RAG's own prompt is an image in the paper; this
asks for what its text describes)."""
SELF_ROUTE = READ + " If the passages do not hold the answer, write \"unanswerable\"."
"""Self-Route's reader may decline; it then falls back to the whole context."""
SYSTEM = "You are a helpful assistant."
READER_STOPS = ["\nQuestion:"]
"""Where a reader's output ends (a base model goes on to write more questions); the answer is
its first non-empty line: Gemma 3 270M often opens with a blank line, so a stop at the first
line break (or blank line) left it no answer at all."""


def reader_prompt(question: str, passages: str, fmt: Layout,
                  instruction: str = READ) -> str:
    """LongBench's layout: the instruction, the passages, the instruction again, the question
    (the question's and the passages' chat-template markers neutralised)."""
    question, passages = neutralise(question), neutralise(passages)
    lead = "Rationale:" if instruction is SAMPLE else "Answer:"
    body = (f"{instruction}\n\nThe following are given passages.\n{passages}\n\n{instruction}"
            f"\n\nQuestion: {question}")
    if fmt != "plain":
        return render(fmt, SYSTEM, [(body, "")], lead)
    return f"{body}\n{lead}"
