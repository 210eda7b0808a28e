"""The messages adapter (graphs/messages.py): a method as one node of a chat app whose state is
a list of messages, driven by scripted LMs."""

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.graph import START, MessagesState, StateGraph

from activerag.context import FlareContext
from activerag.errors import EmptyQuestion
from activerag.graphs.flare import build_flare_graph
from activerag.graphs.messages import for_messages
from activerag.nodes.messages_logic import (
    NoHumanMessage,
    cited,
    costs_of,
    earlier_turns,
    latest_question,
    sources_of,
    standalone_from,
)
from activerag.nodes.messages_prompts import rewrite_prompt
from activerag.sentences import SentenceSplitter
from activerag.testing import ScriptedLM, ends, memory_retriever

UNSURE_FIRST = FlareContext(theta=0.5, k=1, initial_retrieval=False)
"""The first draft sees no passage, so the retrieval its unsure token fires brings one
and the sentence is written again (a retrieval of the draft's own passages would keep it)."""

DOCS = {"Alpha Beta": "Alpha Beta was born in Kelmor.", "Gepu": "Gepu is a small town."}
ASKED = "Where was Alpha Beta born?"


def flare(lm: ScriptedLM):
    return build_flare_graph(lm=lm, retriever=memory_retriever(DOCS), splitter=SentenceSplitter())


def chat_app(node):
    parent = StateGraph(MessagesState)
    parent.add_node("method", node)
    parent.add_edge(START, "method")
    return parent.compile()


def retrieving_lm(*before: list) -> ScriptedLM:
    """FLARE's two requests: a draft unsure of its last word, then the sentence with documents."""
    return ScriptedLM([*before, ends("Alpha Beta was born in Gepu.", low={"Gepu.": 0.2}),
                       ends("Alpha Beta was born in Kelmor.")])


# pure logic

def test_the_question_is_the_latest_human_message():
    messages = [SystemMessage("Be brief."), HumanMessage("Who founded Zaezum Works?"),
                AIMessage("Faegrirk Thuselan."), HumanMessage("  And where was he born? "),
                AIMessage("", tool_calls=[{"name": "flare", "args": {"query": "x"}, "id": "1"}]),
                ToolMessage("Nafun.", tool_call_id="1")]
    assert latest_question(messages) == "And where was he born?"
    blocks = HumanMessage(content=[{"type": "text", "text": "Where is "},
                                   {"type": "image_url", "image_url": {"url": "x"}},
                                   {"type": "text", "text": "Kelmor?"}])
    assert latest_question([blocks]) == "Where is Kelmor?"


def test_no_human_message_is_refused_with_what_to_do():
    with pytest.raises(NoHumanMessage, match=r"no human message to answer \(2 messages: "
                                             r"system, ai\); add the question as a HumanMessage"):
        latest_question([SystemMessage("Be brief."), AIMessage("Hello.")])
    with pytest.raises(NoHumanMessage, match="0 messages: none"):
        latest_question([])
    with pytest.raises(EmptyQuestion, match="question is empty"):
        latest_question([HumanMessage("\u200b ")])


def test_earlier_turns_keep_the_conversation_before_the_question_only():
    messages = [SystemMessage("Be brief."), HumanMessage("Who founded Zaezum Works?"),
                AIMessage("", tool_calls=[{"name": "flare", "args": {"query": "x"}, "id": "1"}]),
                ToolMessage("Faegrirk Thuselan.", tool_call_id="1"),
                AIMessage("Faegrirk Thuselan founded it."), HumanMessage("And where was he born?")]
    assert earlier_turns(messages) == [("human", "Who founded Zaezum Works?"),
                                       ("ai", "Faegrirk Thuselan founded it.")]
    assert earlier_turns([HumanMessage("Who?")]) == []


@pytest.mark.parametrize(("reply", "kept"), [
    ("Where was Faegrirk Thuselan born?", "Where was Faegrirk Thuselan born?"),
    ("\n  Question: \"Where was Faegrirk Thuselan born?\"\nmore", "Where was Faegrirk Thuselan "
                                                                 "born?"),
    ("Standalone question: Where is Nafun?", "Where is Nafun?"),
    ("", "and where was he born?"), (" \u200b\n''", "and where was he born?"),
])
def test_the_standalone_question_is_the_replys_first_line_else_the_users_own(reply, kept):
    assert standalone_from(reply, "and where was he born?") == kept


def test_the_rewrite_prompt_shows_the_conversation_then_the_question():
    prompt = rewrite_prompt([("human", "Who founded Zaezum Works?"), ("ai", "Faegrirk.")],
                            "And where was he born?", "plain")
    assert ("User: Who founded Zaezum Works?\nAssistant: Faegrirk.\n\n"
            "Last question: And where was he born?") in prompt


def test_sources_are_the_outputs_own_when_it_has_them():
    out = {"sources": [{"id": "a1", "title": "A", "text": "A is."}],
           "trace": [{"doc_ids": ["b2"], "doc_titles": ["B"]}], "retrieved_titles": ["C"]}
    assert sources_of(out) == [{"id": "a1", "title": "A", "text": "A is."}]


def test_sources_fall_back_to_the_trace_then_the_titles_each_once_in_order():
    out = {"trace": [{"doc_ids": ["b2", "a1"], "doc_titles": ["B", "A"]},
                     {"doc_ids": ["a1", "c3"], "doc_titles": ["A", "C"]}],
           "retrieved_titles": ["B", "A", "B", "A", "D", "D"]}
    assert sources_of(out) == [{"id": "b2", "title": "B", "text": None},
                               {"id": "a1", "title": "A", "text": None},
                               {"id": "c3", "title": "C", "text": None},
                               {"id": None, "title": "D", "text": None}]
    app = {"runs": {"single": {"retrieved_titles": ["E", "E"]}}, "trace": []}
    assert sources_of(app) == [{"id": None, "title": "E", "text": None}]


def test_fb_rag_sources_are_the_chunks_read_of_the_questions_own_context():
    out = {"selected": [3, 0], "selected_spans": [(300, 400), (0, 100)], "retrieved_titles": []}
    assert sources_of(out) == [
        {"id": "chunk-3", "title": "words 300-400 of the context", "text": None},
        {"id": "chunk-0", "title": "words 0-100 of the context", "text": None}]
    assert sources_of({**out, "retrieved_titles": ["Store doc"]}) == [
        {"id": None, "title": "Store doc", "text": None}]


def test_costs_add_the_rewrite_to_the_methods_counters():
    out = {"lm_calls": 2, "generated_tokens": 12, "prompt_tokens": 100, "retrievals": 1,
           "retrieval_steps": 1, "answer_tokens": 6, "answer": "x"}
    assert costs_of(out, {"lm_calls": 1, "prompt_tokens": 30, "generated_tokens": 8,
                          "question": "q"}) == {
        "lm_calls": 3, "generated_tokens": 20, "prompt_tokens": 130, "retrievals": 1,
        "retrieval_steps": 1, "answer_tokens": 6}


def test_cited_numbers_the_sources_under_the_answer():
    assert cited(" Kelmor. ", [{"id": "a1", "title": "A"}, {"id": None, "title": "B"}]) == (
        "Kelmor.\n\nSources:\n[1] A (a1)\n[2] B")
    assert cited("Kelmor.", []) == "Kelmor.\n\nSources: none retrieved."


# the graph

async def test_a_method_answers_in_a_messages_state_parent_with_sources_trace_and_costs():
    lm = retrieving_lm()
    app = chat_app(for_messages(flare(lm), context=UNSURE_FIRST))
    out = await app.ainvoke({"messages": [HumanMessage("Where is Gepu?"), AIMessage("In Vesk."),
                                          HumanMessage(ASKED)]})
    *_, reply = out["messages"]
    assert len(out["messages"]) == 4 and isinstance(reply, AIMessage)
    assert reply.content == "Alpha Beta was born in Kelmor."
    meta = reply.response_metadata["activerag"]
    assert meta["method"] == "flare" and meta["question"] == ASKED
    assert [s["title"] for s in meta["sources"]] == ["Alpha Beta"] and meta["sources"][0]["id"]
    assert meta["trace"][0]["retrieved"] is True
    assert meta["costs"]["lm_calls"] == 2 and meta["costs"]["retrievals"] >= 1
    assert reply.usage_metadata["input_tokens"] == meta["costs"]["prompt_tokens"] > 0
    usage = reply.usage_metadata
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"] > 0
    # the method was asked the latest human message, not an earlier one
    assert f"Question: {ASKED}" in lm.prompts[0] and "Where is Gepu?" not in lm.prompts[0]


async def test_a_registered_method_by_name_runs_under_the_runs_own_context():
    adapter = for_messages("flare_explicit")
    assert adapter.name == "flare_explicit" and adapter.context_schema is FlareContext


async def test_a_chat_state_without_a_human_message_is_refused():
    app = chat_app(for_messages(flare(ScriptedLM([])), context=FlareContext()))
    with pytest.raises(NoHumanMessage, match="no human message"):
        await app.ainvoke({"messages": [SystemMessage("Be brief.")]})


async def test_a_method_added_directly_to_a_messages_parent_points_to_the_adapter():
    app = chat_app(flare(ScriptedLM([])))
    with pytest.raises(EmptyQuestion, match=r"the state has no 'question'.*for_messages"):
        await app.ainvoke({"messages": [HumanMessage(ASKED)]}, context=FlareContext())


FOLLOW_UP = [HumanMessage("Who is Alpha Beta?"), AIMessage("A painter."),
             HumanMessage("and where was he born?")]


async def test_the_rewrite_is_off_by_default_so_the_follow_up_is_asked_as_written():
    lm = retrieving_lm()  # no reply for a rewrite: a rewrite request would fail the test
    out = await chat_app(for_messages(flare(lm), context=UNSURE_FIRST)).ainvoke(
        {"messages": FOLLOW_UP})
    assert "Question: and where was he born?" in lm.prompts[0]
    assert "rewrite" not in out["messages"][-1].response_metadata["activerag"]


async def test_the_rewrite_node_asks_the_lm_for_a_standalone_question_when_on():
    lm = retrieving_lm(ends("Where was Alpha Beta born?\n"))
    adapter = for_messages(flare(lm), context=UNSURE_FIRST, rewrite=True, lm=lm)
    out = await chat_app(adapter).ainvoke({"messages": FOLLOW_UP})
    assert "User: Who is Alpha Beta?\nAssistant: A painter." in lm.prompts[0]
    assert lm.calls[0]["stop"] == ["\n"]
    assert f"Question: {ASKED}" in lm.prompts[1]
    meta = out["messages"][-1].response_metadata["activerag"]
    assert meta["question"] == ASKED and meta["rewrite"]["question"] == "and where was he born?"
    assert meta["costs"]["lm_calls"] == 3  # the rewrite's request counted with FLARE's two


async def test_a_first_question_is_not_rewritten():
    lm = retrieving_lm()
    adapter = for_messages(flare(lm), context=UNSURE_FIRST, rewrite=True, lm=lm)
    out = await chat_app(adapter).ainvoke({"messages": [HumanMessage(ASKED)]})
    assert len(lm.prompts) == 2 and out["messages"][-1].content.endswith("Kelmor.")


async def test_the_rewrite_node_is_swappable():
    async def by_rule(state, runtime):
        return {"question": state["question"].replace(" he ", " Alpha Beta ")}

    lm = retrieving_lm()
    adapter = for_messages(flare(lm), context=UNSURE_FIRST, rewrite=by_rule)
    await chat_app(adapter).ainvoke({"messages": [HumanMessage("Where was he born?")]})
    assert "Question: Where was Alpha Beta born?" in lm.prompts[0]
