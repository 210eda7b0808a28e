"""Every prompt of the library, as named constants and the functions that fill them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from langchain_core.documents import Document

PromptFormat = Literal["chatml", "plain"]
# (question, the full answer an LM should write for it)
Exemplar = tuple[str, str]

ANSWER_INSTRUCTION = (
    "Answer the question with short factual sentences, reasoning one step at a time. "
    "Use the search results when they are relevant. "
    "Finish with a sentence of the form: So the answer is <answer>."
)
# Worked examples about invented entities that stand in no corpus.
COT_EXEMPLARS: list[Exemplar] = [(
    "In which city was the founder of Morrow Lamp Works born?",
    "Morrow Lamp Works was founded by Ilsa Brandt. Ilsa Brandt was born in the city of Kelmor. "
    "So the answer is Kelmor.",
)]

# Question decomposition (self-ask, FLARE Prompt 3): sub-questions trigger retrieval.
SELF_ASK_INSTRUCTION = (
    "Answer the question by asking follow up questions, one per line, each answered on the "
    "next line. Use the search results when they are relevant. "
    "Finish with: So the final answer is: <answer>."
)
SELF_ASK_START = "Are follow up questions needed here:"
FOLLOW_UP = "Follow up:"
INTERMEDIATE = "Intermediate answer:"
SELF_ASK_EXEMPLARS: list[Exemplar] = [(
    "In which city was the founder of Morrow Lamp Works born?",
    f"{SELF_ASK_START} Yes.\n{FOLLOW_UP} Who founded Morrow Lamp Works?\n"
    f"{INTERMEDIATE} Morrow Lamp Works was founded by Ilsa Brandt.\n"
    f"{FOLLOW_UP} Where was Ilsa Brandt born?\n{INTERMEDIATE} Ilsa Brandt was born in Kelmor.\n"
    "So the final answer is: Kelmor.",
)]

# FLARE-instruct (§3.1, Prompt 1): skill 1 (search), skill 2 (the task), then both.
SEARCH_OPEN = "[Search("
SEARCH_CLOSE = ")]"
INSTRUCT_SEARCH_SKILL = (
    "Skill 1. Use a search engine when you need a fact you are not sure of: write "
    '"[Search(query)]" where the fact is needed, and the results will be given to you.'
)
SEARCH_EXEMPLARS: list[Exemplar] = [
    ("Which river flows through Kelmor?",
     "Kelmor lies on [Search(Which river flows through Kelmor?)] the Vedria River."),
    ("When was Ilsa Brandt born?",
     "Ilsa Brandt was born in [Search(Ilsa Brandt birth year)] 1871."),
]
INSTRUCT_TASK_SKILL = "Skill 2. " + ANSWER_INSTRUCTION
INSTRUCT_COMBINE = (
    "Now combine skill 1 and skill 2: answer the question, and search whenever you need a fact."
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


def _turns(exemplars: Sequence[Exemplar], question: str,
           docs: Sequence[Document]) -> list[tuple[str, str]]:
    shots = [(QUESTION_LINE.format(question=q), a) for q, a in exemplars]
    return [*shots, (format_documents(docs) + QUESTION_LINE.format(question=question), "")]


def answer_prompt(question: str, answer_so_far: str, docs: Sequence[Document],
                  fmt: PromptFormat = "chatml",
                  exemplars: Sequence[Exemplar] = COT_EXEMPLARS) -> str:
    """FLARE's LM input [D_q, x, y_<t]: documents, the question, the answer so far."""
    return render(fmt, ANSWER_INSTRUCTION, _turns(exemplars, question, docs), answer_so_far)


def self_ask_prompt(question: str, answer_so_far: str, docs: Sequence[Document],
                    fmt: PromptFormat = "chatml",
                    exemplars: Sequence[Exemplar] = SELF_ASK_EXEMPLARS) -> str:
    """Self-ask (FLARE Prompt 3): the reply starts by asking whether follow-ups are needed."""
    return render(fmt, SELF_ASK_INSTRUCTION, _turns(exemplars, question, docs),
                  SELF_ASK_START + answer_so_far)


def instruct_prompt(question: str, answer_so_far: str, docs: Sequence[Document],
                    fmt: PromptFormat = "chatml",
                    exemplars: Sequence[Exemplar] = COT_EXEMPLARS) -> str:
    """FLARE-instruct (Prompt 1): search skill, task skill, then the test case."""
    search = "\n".join(f"{QUESTION_LINE.format(question=q)}\nAnswer: {a}"
                       for q, a in SEARCH_EXEMPLARS)
    task = "\n".join(f"{QUESTION_LINE.format(question=q)}\nAnswer: {a}" for q, a in exemplars)
    system = "\n\n".join([INSTRUCT_SEARCH_SKILL, search, INSTRUCT_TASK_SKILL, task,
                          INSTRUCT_COMBINE])
    return render(fmt, system, _turns([], question, docs), answer_so_far)


def question_prompt(question: str, passage: str, span: str,
                    fmt: PromptFormat = "chatml") -> str:
    """FLARE §3.2.2: ask for a question whose answer is SPAN, given x and y_<=t."""
    user = f"{question}\n{passage.strip()}\n\n{ASK_FOR_SPAN.format(span=span)}"
    return render(fmt, QUESTION_GEN_INSTRUCTION, [(user, "")])
