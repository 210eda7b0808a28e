"""IRCoT's prompts (Trivedi et al. 2023, §3.1, §3.2): the paragraphs, question and chain of
thought as the paper lays them out, the library's own exemplar, and the paper's exemplars read
from the evaluation data at run time (never copied)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache

from langchain_core.documents import Document

from activerag.errors import ActiveRagError
from activerag.nodes.prompts import (
    COT_EXEMPLARS,
    EXEMPLAR_DOCUMENTS,
    Exemplar,
    Layout,
    Task,
    neutralise,
    render,
)
from activerag.settings import shared_data

# IRCoT (Trivedi et al. 2023, §3.1): each paragraph as "Wikipedia Title: <title>" over its text,
# the question as "Q: ...", the chain of thought after "A:" (in ChatML, the assistant's turn).
IRCOT_INSTRUCTION = (
    "Answer the question by reasoning step by step, one short factual sentence at a time, "
    "using the Wikipedia paragraphs when they are relevant. "
    "Finish with a sentence of the form: So the answer is: <answer>."
)
IRCOT_PARAGRAPH = "Wikipedia Title: {title}\n{text}"
IRCOT_QUESTION_LINE = "Q: {question}"
IRCOT_ANSWER_LEAD = "A:"
IRCOT_PARAGRAPH_WORDS = 350
"""A paragraph's words shown in a prompt (the authors' max_para_num_words)."""
IRCOT_STOPS = ("\n",)
"""A chain of thought is one line: the authors' generator stops at a line break."""
# The library's own exemplar: FLARE's default question and chain, with short paragraphs of
# well-known facts (its two gold ones and one distractor, the paper's "gold with M distractors"
# layout).
IRCOT_EXEMPLARS: list[Exemplar] = [Exemplar(
    COT_EXEMPLARS[0].question, COT_EXEMPLARS[0].answer, (
        Document(page_content="The Chicago River flows through the city of Chicago, where it "
                              "joins Lake Michigan.",
                 metadata={"title": "Chicago River"}),
        *EXEMPLAR_DOCUMENTS,
    ))]
IRCOT_TASK = Task(IRCOT_INSTRUCTION, tuple(IRCOT_EXEMPLARS), IRCOT_QUESTION_LINE)
IRCOT_FOLDER = "prompts_ircot"
"""The paper's exemplars in the evaluation data (the authors' prompts/ folder)."""
IRCOT_FILE = "{dataset}/gold_with_{distractors}_distractors_context_cot_qa_codex.txt"
"""One dataset's chain-of-thought exemplars with M distractor paragraphs each (the codex
prompts: no instruction line of their own)."""
_IRCOT_METADATA = re.compile(r"^# METADATA: .*$", re.MULTILINE)
_IRCOT_TITLE = "Wikipedia Title: "


def ircot_paragraphs(docs: Sequence[Document]) -> str:
    """Paragraphs as IRCoT shows them (§3.1), blank-line separated, each cut at
    IRCOT_PARAGRAPH_WORDS words."""
    return "\n\n".join(
        IRCOT_PARAGRAPH.format(title=d.metadata.get("title", ""),
                               text=" ".join(d.page_content.split()[:IRCOT_PARAGRAPH_WORDS]))
        for d in docs)


def _ircot_case(question: str, docs: Sequence[Document], question_line: str) -> str:
    paragraphs = ircot_paragraphs(docs)
    asked = question_line.format(question=question)
    return f"{paragraphs}\n\n{asked}" if paragraphs else asked


def ircot_prompt(question: str, answer_so_far: str, docs: Sequence[Document],
                 fmt: Layout = "chatml", task: Task = IRCOT_TASK) -> str:
    """IRCoT's reason step and reader (§3.1, §3.2): each exemplar's paragraphs, question and
    whole chain, then the paragraphs collected so far, the question and the chain so far. plain
    is the authors' text (exemplars three line breaks apart, after the instruction)."""
    cases = [(_ircot_case(e.question, e.documents, task.question_line), e.answer)
             for e in task.exemplars]
    test = _ircot_case(question, docs, task.question_line)
    if fmt != "plain":
        return render(fmt, task.instruction, [*cases, (test, "")], answer_so_far)
    so_far = " " + answer_so_far.lstrip(" ") if answer_so_far else ""
    blocks = [f"{case}\n{IRCOT_ANSWER_LEAD} {answer}" for case, answer in cases]
    return neutralise("\n\n\n".join([task.instruction, *blocks,
                                     f"{test}\n{IRCOT_ANSWER_LEAD}{so_far}"]))


def ircot_paper_task(dataset: str, distractors: int) -> Task:
    """The paper's chain-of-thought exemplars for DATASET with DISTRACTORS (M) distractor
    paragraphs each, read from the evaluation data at run time (never copied)."""
    fix = ("set ACTIVERAG_DATA to the evaluation data folder that holds prompts_ircot/ (the "
           "paper's exemplars), or use prompt_set='default' (the library's own exemplars)")
    try:
        folder = shared_data() / IRCOT_FOLDER
    except ActiveRagError as exc:
        raise ActiveRagError(f"IRCoT's exemplars cannot be found ({exc}); {fix}") from exc
    path = folder / IRCOT_FILE.format(dataset=dataset, distractors=distractors)
    if not folder.is_dir():
        raise ActiveRagError(f"the IRCoT exemplars folder {folder} is missing; {fix}")
    if not path.is_file():
        raise ActiveRagError(f"{path} is missing from the IRCoT exemplars folder; {fix}")
    return _ircot_file(str(path))


@cache
def _ircot_file(path: str) -> Task:
    with open(path, encoding="utf-8") as fh:
        return Task(IRCOT_INSTRUCTION, parse_ircot_exemplars(fh.read(), path),
                    IRCOT_QUESTION_LINE)


def parse_ircot_exemplars(text: str, source: str = "the exemplars") -> tuple[Exemplar, ...]:
    """The exemplars of an IRCoT prompt file: "# METADATA" lines part them; each holds its
    paragraphs ("Wikipedia Title: ..." over the text), then a "Q: " line and an "A: " line."""
    found = []
    for block in _IRCOT_METADATA.split(text):
        if not block.strip():
            continue
        *paragraphs, case = block.strip().split("\n\n")
        lines = dict(line.split(": ", 1) for line in case.split("\n")
                     if line.startswith(("Q: ", "A: ")))
        if set(lines) != {"Q", "A"} or not all(p.startswith(_IRCOT_TITLE) for p in paragraphs):
            raise ActiveRagError(f"{source}: an exemplar is not paragraphs then 'Q: ' and 'A: ' "
                                 f"lines ({block.strip()[:80]!r}...); restore the file from the "
                                 "evaluation data")
        docs = []
        for paragraph in paragraphs:
            title, _, body = paragraph.removeprefix(_IRCOT_TITLE).partition("\n")
            docs.append(Document(page_content=body.strip(), metadata={"title": title.strip()}))
        found.append(Exemplar(lines["Q"].strip(), lines["A"].strip(), tuple(docs)))
    return tuple(found)
