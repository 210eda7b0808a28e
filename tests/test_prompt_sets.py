"""Which exemplars each prompt set gives each method's prompt (context.prompt_set: default,
paper, paper-strategyqa, paper-asqa, none), and which carry documents: the library's own carry
their own fixed documents, the paper's 2WikiMultihopQA ones the documents retrieved with their
own questions (Table 7), the paper's StrategyQA and ASQA ones none, and `none` has no
exemplars. Every method that reads prompt_set (tests/settings_read.json) is run against a fake
vLLM and its first prompt read back. The paper's exemplars come from $ACTIVERAG_DATA; their
tests skip where it is absent, the library's own run without it."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from activerag.context import FlareContext
from activerag.errors import ActiveRagError
from activerag.graphs.registry import method
from activerag.nodes import exemplars
from activerag.nodes.ircot import steps as ircot_steps
from activerag.nodes.ircot.context import IRCoTContext
from activerag.nodes.ircot.prompts import IRCOT_INSTRUCTION
from activerag.nodes.prompts import (
    ANSWER_INSTRUCTION,
    ASQA_INSTRUCTION,
    INSTRUCT_SEARCH_SKILL,
    SELF_ASK_INSTRUCTION,
    STRATEGYQA_INSTRUCTION,
    STRATEGYQA_QUESTION_LINE,
    paper_task,
)
from activerag.stores.corpus import Corpus
from activerag.testing.fake_lm import Backend, backend

SETS = ("default", "paper", "paper-strategyqa", "paper-asqa", "none")
QUESTION = "Where was Alpha Beta born?"
LIBRARY = "In which city was the founder of The Walt Disney Company born?"
WIKI_FIRST, WIKI_LAST = ("When did the director of film Hypocrite (Film) die?",
                         "Who is the grandchild of Krishna Shah (Nepalese Royal)?")
KEYWORDS = ("film", "director", "country", "father", "grandchild", "born")
PAGES = [(f"Page {i}", f"Page {i} names " + ", ".join(
    w for j, w in enumerate(KEYWORDS) if (i + 4 * j) % 24 < 10) + ".") for i in range(24)]
"""The store: each keyword on 10 of the 24 pages (under half, so that BM25 scores it), and each
2Wiki exemplar's question, the library's and the test question hold one, so that every
retrieval finds its full k (10 at most)."""


@dataclass(frozen=True)
class Shots:
    """What a prompt's exemplars must be."""

    count: int
    first: str = ""
    """The first exemplar's question, and the start of its answer."""
    answer: str = ""
    last: str = ""
    docs: str | tuple[str, ...] | None = None
    """None: no exemplar has documents; "retrieved": each has its own question's documents
    from the store; a tuple: the first one's own documents' titles (none from the store)."""
    instruction: str = ANSWER_INSTRUCTION


DISNEY = ("The Walt Disney Company", "Walt Disney")
LIBRARY_ANSWER = "The Walt Disney Company was founded by Walt Disney."
COT = {
    "default": Shots(1, LIBRARY, LIBRARY_ANSWER, LIBRARY, DISNEY),
    "paper": Shots(8, WIKI_FIRST, "The film Hypocrite was directed by Miguel Morayta.",
                   WIKI_LAST, "retrieved"),
    "paper-strategyqa": Shots(6, "Do hamsters provide food for any animals?",
                              "Hamsters are prey animals.", "Would a pear sink in water?",
                              instruction=STRATEGYQA_INSTRUCTION),
    "paper-asqa": Shots(12, "Who played bonnie in gone with the wind?",
                        "We need to consider different versions or adaptations",
                        "Who sings i stand alone in quest for camelot?",
                        instruction=ASQA_INSTRUCTION),
    "none": Shots(0),
}
FOLLOW = "Are follow up questions needed here: Yes.\nFollow up: "
REFUSED_SELF_ASK = "self-ask has exemplars for 2WikiMultihopQA only"
REFUSED_IRCOT = "IRCoT has the paper's exemplars for 2WikiMultihopQA"
WANT: dict[str, dict[str, Shots | str]] = {
    "cot": dict(COT),
    "replug": dict(COT),  # one document per exemplar when they retrieve
    "instruct": {name: replace(shots, docs=None) for name, shots in COT.items()},
    "self_ask": {
        "default": Shots(1, LIBRARY, FOLLOW + "Who founded The Walt Disney Company?", LIBRARY,
                         instruction=SELF_ASK_INSTRUCTION),
        "paper": Shots(8, WIKI_FIRST, FOLLOW + "Who directed", WIKI_LAST, "retrieved",
                       SELF_ASK_INSTRUCTION),
        "paper-strategyqa": REFUSED_SELF_ASK, "paper-asqa": REFUSED_SELF_ASK,
        "none": REFUSED_SELF_ASK},
    "ircot": {
        "default": Shots(1, LIBRARY, LIBRARY_ANSWER, LIBRARY, ("Chicago River", *DISNEY),
                         IRCOT_INSTRUCTION),
        "paper": Shots(15, "Are both Kurram Garhi and Trojkrsti located in the same country?",
                       "Kurram Garhi is located in the country of Pakistan.",
                       "Which album was released more recently, If I Have to Stand Alone or "
                       "Answering Machine Music?",
                       ("Satellite tournament", "Kurram Garhi Hydropower Plant", "Kurram Garhi",
                        "Trojkrsti"), IRCOT_INSTRUCTION),
        "paper-strategyqa": REFUSED_IRCOT, "paper-asqa": REFUSED_IRCOT,
        "none": Shots(0, instruction=IRCOT_INSTRUCTION)},
}
"""Per prompt kind and prompt set: the exemplars, or the words of the refusal."""
KINDS = {"self_ask": "self_ask", "flare_instruct": "instruct", "ircot": "ircot",
         "ircot_chain": "ircot", "ircot_seakr": "ircot", "replug": "replug",
         "replug_rescore": "replug", "replug_token": "replug", "replug_vote": "replug",
         "flare_replug": "replug"}
"""How each method lays its exemplars out, where not as FLARE's answer prompt ("cot")."""
READERS = sorted(name for name, read in json.loads(
    (Path(__file__).parent / "settings_read.json").read_text()).items() if "prompt_set" in read)
"""Every method that reads prompt_set, as the settings test last found them."""


def kind(name: str) -> str:
    return KINDS.get(name, "cot")


@dataclass
class Prompt:
    """One prompt's exemplars as read back from its ChatML text."""

    instruction: str
    questions: list[str]
    answers: list[str]
    docs: list[list[str]]
    """Each exemplar's document titles."""
    test_question: str


def read(prompt: str, how: str) -> Prompt:
    system = re.search(r"^<\|im_start\|>system\n(.*?)<\|im_end\|>", prompt, re.S)
    assert system is not None, prompt[:200]
    users = re.findall(r"<\|im_start\|>user\n(.*?)<\|im_end\|>", prompt, re.S)
    answers = re.findall(r"<\|im_start\|>assistant\n(.*?)<\|im_end\|>", prompt, re.S)
    asked = r"^Q: (.*)$" if how == "ircot" else r"^Question: (.*)$"
    titled = r"^Wikipedia Title: (.*)$" if how == "ircot" else r"^\[\d+\] (.*?): "
    questions = [re.findall(asked, u, re.M)[-1] for u in users]
    docs = [re.findall(titled, u, re.M) for u in users[:-1]]
    if how == "instruct":  # the exemplars are in the system text, after the 2 search ones
        assert len(users) == 1 and not answers
        return Prompt(system.group(1), re.findall(r"^Question: (.*)$", system.group(1),
                                                  re.M)[2:],
                      re.findall(r"^Answer: (.*)$", system.group(1), re.M)[2:],
                      [[] for _ in re.findall(r"^Question: ", system.group(1), re.M)[2:]],
                      questions[-1])
    return Prompt(system.group(1), questions[:-1], answers, docs, questions[-1])


@pytest.fixture(scope="module")
def world(tmp_path_factory):  # type: ignore[no-untyped-def]
    """A fake vLLM and a store of PAGES, for the whole module."""
    root = tmp_path_factory.mktemp("prompt-sets")
    source = root / "pages.jsonl"
    source.write_text("".join(json.dumps({"title": t, "text": x}) + "\n" for t, x in PAGES))
    Corpus(root / "store").ingest(source, dense=False, progress=False)
    b = Backend(reply=" Alpha Beta lies on the Vedria. So the answer is Gepu.")
    with backend(b) as url:
        yield b, url, str(root / "store")


def first_prompt(world: Any, name: str, **settings: Any) -> tuple[str, Any]:
    """Method NAME's first prompt under SETTINGS (in ChatML), and its context: for REPLUG's
    kind, the first its ensemble tokenizes (flare_replug's drafts are FLARE's)."""
    b, url, store = world
    graph, ctx = method(name, FlareContext(base_url=url, store_dir=store, max_answer_tokens=2,
                                           prompt_format="chatml", **settings))
    b.requests.clear()
    asyncio.run(graph.ainvoke({"question": QUESTION}, context=ctx))
    # token-level methods send their prompts' text to /tokenize
    paths = ("/tokenize",) if kind(name) == "replug" else ("/v1/completions", "/tokenize")
    texts = [body.get("prompt") for path, body in b.requests if path in paths]
    prompts = [t for t in texts if isinstance(t, str) and t.startswith("<|im_start|>system")]
    assert prompts, f"{name} sent no prompt"
    return prompts[0], ctx


def check(prompt: Prompt, want: Shots, per_exemplar: int) -> None:
    """PROMPT's exemplars are WANT's; PER_EXEMPLAR documents each where they retrieve."""
    assert len(prompt.questions) == want.count
    assert prompt.test_question == QUESTION
    if want.count:
        assert (prompt.questions[0], prompt.questions[-1]) == (want.first, want.last)
        assert prompt.answers[0].startswith(want.answer), prompt.answers[0][:80]
    pages = {title for title, _ in PAGES}
    if want.docs is None:
        assert prompt.docs == [[]] * want.count
    elif want.docs == "retrieved":
        assert all(len(d) == per_exemplar and set(d) <= pages for d in prompt.docs), prompt.docs
    else:
        assert tuple(prompt.docs[0]) == want.docs
        assert all(d and not set(d) & pages for d in prompt.docs)


def instruction_of(prompt: Prompt, how: str) -> str:
    if how == "instruct":
        assert prompt.instruction.startswith(INSTRUCT_SEARCH_SKILL)
        return prompt.instruction.split("Skill 2. ", 1)[1].split("\n\n", 1)[0]
    return prompt.instruction


CASES = [(name, prompt_set) for name in READERS for prompt_set in SETS]


@pytest.mark.parametrize("name,prompt_set", CASES)
def test_each_method_s_prompt_gets_its_prompt_set_s_exemplars(world, name, prompt_set,
                                                              request):
    if prompt_set.startswith("paper"):
        request.getfixturevalue("shared_data_dir")
    want = WANT[kind(name)][prompt_set]
    if isinstance(want, str):
        with pytest.raises(ActiveRagError, match=want):
            first_prompt(world, name, prompt_set=prompt_set)
        return
    text, ctx = first_prompt(world, name, prompt_set=prompt_set)
    prompt = read(text, kind(name))
    assert instruction_of(prompt, kind(name)) == want.instruction
    check(prompt, want, 1 if kind(name) == "replug" else ctx.k)
    if prompt_set == "paper-strategyqa" and kind(name) != "instruct":
        assert STRATEGYQA_QUESTION_LINE.format(question=want.first) in text


RETRIEVING = [name for name in READERS if kind(name) in ("cot", "replug", "self_ask")]


@pytest.mark.parametrize("name", RETRIEVING)
def test_exemplar_retrieval_gives_the_library_s_exemplars_retrieved_documents(world, name):
    text, ctx = first_prompt(world, name, exemplar_retrieval=True)
    want = replace(WANT[kind(name)]["default"], docs="retrieved")
    check(read(text, kind(name)), want, 1 if kind(name) == "replug" else ctx.k)


@pytest.mark.parametrize("name", RETRIEVING)
def test_the_paper_s_exemplars_go_without_documents_when_told(world, name, shared_data_dir):
    text, ctx = first_prompt(world, name, prompt_set="paper", exemplar_retrieval=False)
    want = replace(WANT[kind(name)]["paper"], docs=None)
    check(read(text, kind(name)), want, ctx.k)


def test_every_method_that_reads_prompt_set_is_covered():
    assert len(READERS) >= 20 and set(KINDS) <= set(READERS)
    assert {kind(n) for n in READERS} == set(WANT)


# --- the exemplars each prompt set holds, as tasks ---------------------------------------------

@pytest.fixture
def no_data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No evaluation data: ACTIVERAG_DATA names a file, so any read of it fails."""
    (tmp_path / "not-a-folder").write_text("")
    monkeypatch.setenv("ACTIVERAG_DATA", str(tmp_path / "not-a-folder"))
    paper_task.cache_clear()


def test_the_library_s_exemplars_need_no_evaluation_data(no_data):
    cot = exemplars.task_for(FlareContext(), "cot")
    self_ask = exemplars.task_for(FlareContext(), "self_ask")
    ircot = ircot_steps.task_for(IRCoTContext())
    assert [(e.question, e.answer[:len(LIBRARY_ANSWER)], tuple(d.metadata["title"]
                                                               for d in e.documents))
            for e in cot.exemplars] == [(LIBRARY, LIBRARY_ANSWER, DISNEY)]
    assert [(e.question, e.documents) for e in self_ask.exemplars] == [(LIBRARY, ())]
    assert self_ask.exemplars[0].answer.startswith(FOLLOW + "Who founded")
    assert [tuple(d.metadata["title"] for d in e.documents) for e in ircot.exemplars] == [
        ("Chicago River", *DISNEY)]
    assert (cot.instruction, self_ask.instruction, ircot.instruction) == (
        ANSWER_INSTRUCTION, SELF_ASK_INSTRUCTION, IRCOT_INSTRUCTION)


def test_none_is_the_instruction_alone(no_data):
    assert exemplars.task_for(FlareContext(prompt_set="none"), "cot").exemplars == ()
    assert exemplars.task_for(FlareContext(prompt_set="none"), "cot").instruction == \
        ANSWER_INSTRUCTION
    assert ircot_steps.task_for(IRCoTContext(prompt_set="none")).exemplars == ()
    with pytest.raises(ActiveRagError, match=REFUSED_SELF_ASK):
        exemplars.task_for(FlareContext(prompt_set="none"), "self_ask")


@pytest.mark.parametrize("prompt_set", ["paper", "paper-strategyqa", "paper-asqa"])
def test_a_paper_set_without_the_data_says_what_to_set(no_data, prompt_set):
    with pytest.raises(ActiveRagError, match="ACTIVERAG_DATA"):
        exemplars.task_for(FlareContext(prompt_set=prompt_set), "cot")


def test_ircot_s_paper_set_without_the_data_says_what_to_set(no_data):
    with pytest.raises(ActiveRagError, match="ACTIVERAG_DATA"):
        ircot_steps.task_for(IRCoTContext(prompt_set="paper"))


def test_only_the_paper_s_2wiki_set_retrieves_for_its_exemplars_by_default():
    assert {s: FlareContext(prompt_set=s).exemplars_retrieve for s in SETS} == {
        "default": False, "paper": True, "paper-strategyqa": False, "paper-asqa": False,
        "none": False}
    assert {s: FlareContext(prompt_set=s, exemplar_retrieval=True).exemplars_retrieve
            for s in SETS} == dict.fromkeys(SETS, True)
    assert FlareContext(prompt_set="paper", exemplar_retrieval=False).exemplars_retrieve is False


@pytest.mark.parametrize("how,prompt_set", [("cot", "paper"), ("self_ask", "paper"),
                                            ("cot", "paper-strategyqa"), ("cot", "paper-asqa")])
def test_each_paper_set_s_task_holds_its_exemplars(shared_data_dir, how, prompt_set):
    paper_task.cache_clear()
    task = exemplars.task_for(FlareContext(prompt_set=prompt_set), how)
    want = WANT["self_ask" if how == "self_ask" else "cot"][prompt_set]
    assert isinstance(want, Shots)
    assert len(task.exemplars) == want.count and task.instruction == want.instruction
    assert (task.exemplars[0].question, task.exemplars[-1].question) == (want.first, want.last)
    assert task.exemplars[0].answer.startswith(want.answer)
    assert all(not e.documents for e in task.exemplars)  # retrieved at run time, if at all


@pytest.mark.parametrize("shots,count", [(15, 15), (3, 3), (0, 0)])
def test_ircot_s_paper_set_is_cut_to_ircot_shots(shared_data_dir, shots, count):
    task = ircot_steps.task_for(IRCoTContext(prompt_set="paper", ircot_shots=shots))
    assert len(task.exemplars) == count
    if count:
        assert task.exemplars[0].question == WANT["ircot"]["paper"].first
