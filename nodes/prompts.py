"""The library's prompts, as named constants and the functions that fill them: the FLARE
family's (the library's own exemplars and the paper's, read from the evaluation data at run
time, never copied), REPLUG's (FLARE's answer prompt), FB-RAG's reader and sampler; a
family folder's own are in its prompts.py (nodes/ircot/, nodes/adaptive_rag/), the chat
adapters' in messages_prompts.py."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Literal, NamedTuple

from langchain_core.documents import Document

from activerag.errors import ActiveRagError
from activerag.serving.templates import ChatLayout
from activerag.settings import shared_data

PromptFormat = Literal["chatml", "plain", "auto"]
"""A run's setting: ChatML, plain text, or the served model's own template (auto)."""
Layout = Literal["chatml", "plain"] | ChatLayout
"""What a prompt is laid out in: auto resolved to the served model's ChatLayout (or plain)."""


class Exemplar(NamedTuple):
    """A worked example: a question, the full answer an LM should write, its documents."""

    question: str
    answer: str
    documents: tuple[Document, ...] = ()


ANSWER_INSTRUCTION = (
    "Answer the question with short factual sentences, reasoning one step at a time. "
    "Use the search results when they are relevant. "
    "Finish with a sentence of the form: So the answer is <answer>."
)
# Worked examples about well-known real entities, so that an answer copied from them (a small
# model's failure) names Chicago or Walt Disney and never passes for an entity of a made-up
# corpus such as the demo's. Real names alone did not make the 0.5B model copy less; the
# exemplar's own search results (below) did (results/exemplar-copies.md).
EXEMPLAR_ENTITIES = ("The Walt Disney Company", "Walt Disney", "Chicago", "Chicago River")
"""What the library's own exemplars name: an answer naming one copied it."""
EXEMPLAR_DOCUMENTS = (
    Document(page_content="The Walt Disney Company is an entertainment company, founded by "
                          "Walt Disney and his brother Roy in Los Angeles in 1923.",
             metadata={"title": "The Walt Disney Company"}),
    Document(page_content="Walt Disney was an animator and film producer. He was born in the "
                          "city of Chicago in 1901 and grew up in Missouri.",
             metadata={"title": "Walt Disney"}),
)
"""The exemplar's own search results: its answer reads them, as the model's answer should read
the question's (an exemplar without them showed an answer from memory, which a small model
copied where its documents said otherwise)."""
COT_EXEMPLARS: list[Exemplar] = [Exemplar(
    "In which city was the founder of The Walt Disney Company born?",
    "The Walt Disney Company was founded by Walt Disney. Walt Disney was born in the city of "
    "Chicago. So the answer is Chicago.",
    EXEMPLAR_DOCUMENTS,
)]
# StrategyQA (the authors' template): every question is put as a yes/no task.
STRATEGYQA_INSTRUCTION = (
    "Answer the question with short factual sentences, reasoning one step at a time. "
    "Use the search results when they are relevant. "
    "Finish with a sentence of the form: So the final answer is <yes or no>."
)
STRATEGYQA_QUESTION_LINE = (
    "Generate a yes or no answer to the following question.\nQuestion: {question}"
)
ASQA_INSTRUCTION = (
    "Answer the ambiguous question: name its interpretations and answer each one. "
    "Use the search results when they are relevant."
)

# Question decomposition (self-ask, FLARE Prompt 3): sub-questions trigger retrieval.
SELF_ASK_INSTRUCTION = (
    "Answer the question by asking follow up questions, one per line, each answered on the "
    "next line. Use the search results when they are relevant. "
    "Finish with: So the final answer is: <answer>."
)
SELF_ASK_START = "Are follow up questions needed here:"
FOLLOW_UP = "Follow up:"
INTERMEDIATE = "Intermediate answer:"
FINAL_ANSWER = "So the final answer is:"
"""Self-ask's answer line: appended when the model ends its output without one (as the self-ask
authors' code does), so that the model then writes the answer."""
SELF_ASK_EXEMPLARS: list[Exemplar] = [Exemplar(
    COT_EXEMPLARS[0].question,
    f"{SELF_ASK_START} Yes.\n{FOLLOW_UP} Who founded The Walt Disney Company?\n"
    f"{INTERMEDIATE} The Walt Disney Company was founded by Walt Disney.\n"
    f"{FOLLOW_UP} Where was Walt Disney born?\n{INTERMEDIATE} Walt Disney was born in Chicago.\n"
    "So the final answer is: Chicago.",
)]

# FLARE-instruct (§3.1, Prompt 1): skill 1 (search), skill 2 (the task), then both.
SEARCH_OPEN = "[Search("
SEARCH_CLOSE = ")]"
INSTRUCT_SEARCH_SKILL = (
    "Skill 1. Use a search engine when you need a fact you are not sure of: write "
    '"[Search(query)]" where the fact is needed, and the results will be given to you.'
)
SEARCH_EXEMPLARS: list[Exemplar] = [
    Exemplar("Which river flows through Chicago?",
             "Chicago lies on [Search(Which river flows through Chicago?)] the Chicago River."),
    Exemplar("When was Walt Disney born?",
             "Walt Disney was born in [Search(Walt Disney birth year)] 1901."),
]
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
# A unit ends at a blank line (the authors' stop) or where the model starts a new question
# (the FLARE family and REPLUG; FB-RAG's readers stop at READER_STOPS).
ANSWER_STOPS = ("\n\n", "\nQuestion:")


@dataclass(frozen=True)
class Task:
    """What the LM is asked to do: the instruction, how a question is put, worked examples."""

    instruction: str
    exemplars: tuple[Exemplar, ...]
    question_line: str = QUESTION_LINE

    def with_documents(self, documents: Sequence[Sequence[Document]]) -> Task:
        """The same task whose exemplars carry DOCUMENTS (one list per exemplar)."""
        shots = tuple(e._replace(documents=tuple(d))
                      for e, d in zip(self.exemplars, documents, strict=True))
        return replace(self, exemplars=shots)


COT_TASK = Task(ANSWER_INSTRUCTION, tuple(COT_EXEMPLARS))
SELF_ASK_TASK = Task(SELF_ASK_INSTRUCTION, tuple(SELF_ASK_EXEMPLARS))


def format_documents(docs: Sequence[Document]) -> str:
    """FLARE Prompt 2: retrieved documents linearised by rank."""
    if not docs:
        return ""
    lines = [SEARCH_RESULTS_HEADER]
    for n, doc in enumerate(docs, 1):
        text = " ".join(doc.page_content.split())
        lines.append(DOCUMENT_LINE.format(n=n, title=doc.metadata.get("title", ""), text=text))
    return "\n".join(lines) + "\n\n"


_MARKER_OPENING = re.compile(
    r"<(?=[|\uff5c]|/?s>|(?:bos|eos|pad|unk|mask|start_of_turn|end_of_turn)>)")
"""The "<" of a chat-template marker of the prompt formats this library renders or serves:
every <|...|> token (ChatML, Llama 3; DeepSeek's full-width <｜...｜>), SentencePiece's <s>
and </s>, and Gemma's <bos>, <eos>, <start_of_turn>, <end_of_turn> (with <pad>, <unk>,
<mask>)."""


def neutralise(text: str, markers: Sequence[str] = ()) -> str:
    """TEXT with a space after the "<" of every chat-template marker, and after the first
    character of each of MARKERS (a served model's own special tokens, found on its server
    under prompt_format auto), so that the tokenizer reads the marker as plain characters and
    not as its special token.

    The "<" markers are a fixed set, kept under every layout. A special token is only ever
    matched as its exact string, before any merge, so any change breaks it; a plain space is
    chosen over a zero-width joiner (U+2060) because no tokenizer's normaliser deletes a space
    between characters, while some drop format characters (BERT's clean_text) and would
    rebuild the marker. Text without a marker is
    returned as it is, and neutralising twice changes nothing more.
    """
    text = _MARKER_OPENING.sub("< ", text)
    for marker in markers:
        if marker in text:
            text = text.replace(marker, f"{marker[0]} {marker[1:]}")
    return text


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


def render(fmt: Layout, system: str, turns: Sequence[tuple[str, str]],
           reply_prefix: str = "") -> str:
    """Lay out SYSTEM, (user, assistant) TURNS and the start of the reply for a completion;
    the markers any of them holds (a retrieved passage's, a question's) are neutralised, so
    that only the layout's own open turns."""
    if isinstance(fmt, ChatLayout):
        marks = fmt.markers
        return fmt.render(neutralise(system, marks),
                          [(neutralise(u, marks), neutralise(a, marks)) for u, a in turns],
                          neutralise(reply_prefix, marks))
    if fmt == "auto":
        raise ActiveRagError("prompt_format auto is resolved to the served model's template "
                             "before a prompt is laid out (Parts.layout_for)")
    layout = _chatml if fmt == "chatml" else _plain
    return layout(neutralise(system), [(neutralise(u), neutralise(a)) for u, a in turns],
                  neutralise(reply_prefix))


def _turns(task: Task, question: str, docs: Sequence[Document]) -> list[tuple[str, str]]:
    """Each exemplar (after its own documents, Prompt 2), then the test case after D_q."""
    shots = [(format_documents(e.documents) + task.question_line.format(question=e.question),
              e.answer) for e in task.exemplars]
    return [*shots, (format_documents(docs) + task.question_line.format(question=question), "")]


def answer_prompt(question: str, answer_so_far: str, docs: Sequence[Document],
                  fmt: Layout = "chatml", task: Task = COT_TASK) -> str:
    """FLARE's LM input [D_q, x, y_<t]: documents, the question, the answer so far."""
    return render(fmt, task.instruction, _turns(task, question, docs), answer_so_far)


def self_ask_prompt(question: str, answer_so_far: str, docs: Sequence[Document],
                    fmt: Layout = "chatml", task: Task = SELF_ASK_TASK) -> str:
    """Self-ask (FLARE Prompt 3): the reply starts by asking whether follow-ups are needed."""
    return render(fmt, task.instruction, _turns(task, question, docs),
                  SELF_ASK_START + answer_so_far)


def instruct_prompt(question: str, answer_so_far: str, docs: Sequence[Document],
                    fmt: Layout = "chatml", task: Task = COT_TASK) -> str:
    """FLARE-instruct (Prompt 1): search skill, task skill, then the test case."""
    search = "\n".join(f"{QUESTION_LINE.format(question=e.question)}\nAnswer: {e.answer}"
                       for e in SEARCH_EXEMPLARS)
    shots = "\n".join(f"{task.question_line.format(question=e.question)}\nAnswer: {e.answer}"
                      for e in task.exemplars)
    system = "\n\n".join([INSTRUCT_SEARCH_SKILL, search, "Skill 2. " + task.instruction, shots,
                          INSTRUCT_COMBINE])
    return render(fmt, system, _turns(replace(task, exemplars=()), question, docs),
                  answer_so_far)


def question_prompt(question: str, passage: str, span: str,
                    fmt: Layout = "chatml") -> str:
    """FLARE §3.2.2: ask for a question whose answer is SPAN, given x and y_<=t."""
    user = f"{question}\n{passage.strip()}\n\n{ASK_FOR_SPAN.format(span=span)}"
    return render(fmt, QUESTION_GEN_INSTRUCTION, [(user, "")])


EXEMPLARS_FILE = "prompts_flare/flare_exemplars.json"
"""The FLARE paper's exemplars in the evaluation data (Prompts 3 and 5-7)."""


@cache
def paper_task(kind: Literal["cot", "self_ask", "strategyqa", "asqa"]) -> Task:
    """The paper's exemplars as a task: 2WikiMultihopQA chain of thought (Prompt 5) or self-ask
    (Prompt 3), StrategyQA (Prompt 6, the authors' yes/no template) or ASQA (Prompt 7, without
    the hint)."""
    path = shared_data() / EXEMPLARS_FILE
    if not path.exists():
        raise ActiveRagError(f"{path} is missing; set ACTIVERAG_DATA or use prompt_set='default'")
    data = json.loads(path.read_text())
    if kind == "cot":
        return Task(ANSWER_INSTRUCTION, tuple(
            Exemplar(e["question"], f"{e['cot']} So the answer is {e['answer']}.")
            for e in data["WikiMultiHopQA.cot_examplars"]))
    if kind == "self_ask":
        return Task(SELF_ASK_INSTRUCTION, tuple(
            Exemplar(e["question"], f"{e['cot']}\nSo the final answer is: {e['answer']}.")
            for e in data["WikiMultiHopQA.sa_examplars"]))
    if kind == "strategyqa":
        return Task(STRATEGYQA_INSTRUCTION, tuple(
            Exemplar(e["question"],
                     "".join(e["cot"]).strip() + f" So the final answer is {e['answer']}.")
            for e in data["StrategyQA.cot_examplars"]), STRATEGYQA_QUESTION_LINE)
    lead = "we need to consider "
    return Task(ASQA_INSTRUCTION, tuple(
        Exemplar(e["question"],
                 f"We need to consider {e['subq_cot'].removeprefix(lead)} {e['answer']}")
        for e in data["ASQA.general_hint_in_input_examplars"]))
