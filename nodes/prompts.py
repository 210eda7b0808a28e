"""Every prompt of the library, as named constants and the functions that fill them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from langchain_core.documents import Document

PromptFormat = Literal["chatml", "plain"]

ANSWER_INSTRUCTION = (
    "Answer the question with short factual sentences, reasoning one step at a time. "
    "Use the search results when they are relevant. "
    "Finish with a sentence of the form: So the answer is <answer>."
)
# One worked example of the expected style, about invented entities outside every corpus.
ANSWER_EXAMPLE_QUESTION = "In which city was the founder of Morrow Lamp Works born?"
ANSWER_EXAMPLE_ANSWER = (
    "Morrow Lamp Works was founded by Ilsa Brandt. Ilsa Brandt was born in the city of Kelmor. "
    "So the answer is Kelmor."
)
SEARCH_RESULTS_HEADER = "Search results:"
DOCUMENT_LINE = "[{n}] {title}: {text}"
QUESTION_LINE = "Question: {question}"
# FLARE §3.2.2: the question-generation prompt for a low-confidence span.
ASK_FOR_SPAN = (
    "Given the above passage, ask a question to which the answer is "
    'the term/entity/phrase "{span}".'
)
QUESTION_GEN_INSTRUCTION = "Write one short question and nothing else."


def format_documents(docs: Sequence[Document]) -> str:
    """FLARE Prompt 2: retrieved documents linearised by rank."""
    if not docs:
        return ""
    lines = [SEARCH_RESULTS_HEADER]
    for n, doc in enumerate(docs, 1):
        text = " ".join(doc.page_content.split())
        lines.append(DOCUMENT_LINE.format(n=n, title=doc.metadata.get("title", ""), text=text))
    return "\n".join(lines) + "\n\n"


def _chatml(system: str, turns: Sequence[tuple[str, str]], reply_prefix: str) -> str:
    out = [f"<|im_start|>system\n{system}<|im_end|>\n"]
    for user, assistant in turns:
        out.append(f"<|im_start|>user\n{user}<|im_end|>\n")
        if assistant:
            out.append(f"<|im_start|>assistant\n{assistant}<|im_end|>\n")
    out.append(f"<|im_start|>assistant\n{reply_prefix}")
    return "".join(out)


def _plain(system: str, turns: Sequence[tuple[str, str]], reply_prefix: str) -> str:
    out = [system, "\n\n"]
    for user, assistant in turns:
        out.append(f"{user}\nAnswer:")
        out.append(f" {assistant}\n\n" if assistant else "")
    return "".join(out) + (" " + reply_prefix.lstrip(" ") if reply_prefix else "")


def render(fmt: PromptFormat, system: str, turns: Sequence[tuple[str, str]],
           reply_prefix: str = "") -> str:
    """Lay out SYSTEM, (user, assistant) TURNS and the start of the reply for a completion."""
    return (_chatml if fmt == "chatml" else _plain)(system, turns, reply_prefix)


def answer_prompt(question: str, answer_so_far: str, docs: Sequence[Document],
                  fmt: PromptFormat = "chatml") -> str:
    """FLARE's LM input [D_q, x, y_<t]: documents, the question, the answer so far."""
    example = (QUESTION_LINE.format(question=ANSWER_EXAMPLE_QUESTION), ANSWER_EXAMPLE_ANSWER)
    user = format_documents(docs) + QUESTION_LINE.format(question=question)
    return render(fmt, ANSWER_INSTRUCTION, [example, (user, "")], answer_so_far)


def question_prompt(question: str, passage: str, span: str,
                    fmt: PromptFormat = "chatml") -> str:
    """FLARE §3.2.2: ask for a question whose answer is SPAN, given x and y_<=t."""
    user = f"{question}\n{passage.strip()}\n\n{ASK_FOR_SPAN.format(span=span)}"
    return render(fmt, QUESTION_GEN_INSTRUCTION, [(user, "")])
