"""The tool adapter (graphs/tools.py) and the example agent (graphs/agent.py), driven by scripted
LMs and a scripted chat model: what the tool says it does, what it answers, an empty query, and
the agent's routing."""

import os
import signal
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from test_server_start import free_port, stand_ins
from test_server_start import stand_in_vllm as vllm_stand_in  # noqa: F401 (the fixture)

from activerag.context import FlareContext
from activerag.graphs import agent as agent_module
from activerag.graphs.agent import build_agent, method_tools
from activerag.graphs.flare import build_flare_graph
from activerag.graphs.replug import build_replug_graph
from activerag.graphs.tools import as_tool
from activerag.nodes.messages_logic import tool_choice_for
from activerag.nodes.replug.context import ReplugContext
from activerag.sentences import SentenceSplitter
from activerag.serving import server
from activerag.serving.server import TOOL_CALL_ARGS, vllm_command
from activerag.settings import Settings
from activerag.testing import ScriptedLM, ScriptedTokenLM, ends, memory_retriever, says
from activerag.testing.chat import RELAY, ScriptedChatModel, call

UNSURE_FIRST = FlareContext(theta=0.5, k=1, initial_retrieval=False)
"""The first draft sees no passage, so the retrieval its unsure token fires brings one
and the sentence is written again (a retrieval of the draft's own passages would keep it)."""

DOCS = {"Alpha Beta": "Alpha Beta was born in Kelmor.", "Gepu": "Gepu is a small town."}
ASKED = "Where was Alpha Beta born?"


def flare_tool(lm: ScriptedLM):
    graph = build_flare_graph(lm=lm, retriever=memory_retriever(DOCS),
                              splitter=SentenceSplitter())
    return as_tool(graph, name="flare", context=UNSURE_FIRST)


def replug_tool(lm: ScriptedTokenLM):
    graph = build_replug_graph(token_lm=lm, retriever=memory_retriever(DOCS, k=2),
                               splitter=SentenceSplitter())
    return as_tool(graph, name="replug", context=ReplugContext(k=2, ensemble="token"))


def answering_lm() -> ScriptedLM:
    return ScriptedLM([ends("Alpha Beta was born in Gepu.", low={"Gepu.": 0.2}),
                       ends("Alpha Beta was born in Kelmor.")])


def tool_call(name: str, query: str, i: str = "c1") -> dict:
    return {"name": name, "args": {"query": query}, "id": i, "type": "tool_call"}


def test_a_registered_methods_tool_says_what_the_method_does_and_takes_the_question():
    tool = as_tool("flare")
    assert tool.name == "flare"
    assert "with flare (FLARE)" in tool.description
    assert "retrieves when a draft token has p < θ" in tool.description
    assert list(tool.args) == ["query"]
    assert as_tool("replug", name="search").name == "search"
    assert "REPLUG" in as_tool("replug").description


async def test_the_tool_answers_with_its_sources_and_hands_over_the_trace_and_costs():
    message = await flare_tool(answering_lm()).ainvoke(tool_call("flare", f"  {ASKED} "))
    assert isinstance(message, ToolMessage) and message.status == "success"
    answer, sources = message.content.split("\n\nSources:\n")
    assert answer == "Alpha Beta was born in Kelmor."
    assert sources.startswith("[1] Alpha Beta (")
    art = message.artifact
    assert art["method"] == "flare" and art["question"] == ASKED
    assert art["sources"][0]["title"] == "Alpha Beta" and art["trace"][0]["retrieved"]
    assert art["costs"]["lm_calls"] == 2


@pytest.mark.parametrize("query", ["", "   ", "\u200b\u200c"])
async def test_an_empty_query_is_a_tool_error_message_not_an_exception(query):
    message = await flare_tool(ScriptedLM([])).ainvoke(tool_call("flare", query))
    assert message.status == "error"
    assert "the question is empty" in message.content
    assert "call flare again with the question written out in full" in message.content


async def test_the_agent_goes_on_after_an_empty_query_and_relays_the_tools_answer():
    model = ScriptedChatModel(script=[call("flare", " "), call("flare", ASKED), RELAY])
    agent = build_agent(model, [flare_tool(answering_lm())])
    out = await agent.ainvoke({"messages": [HumanMessage(ASKED)]})
    tools = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert [m.status for m in tools] == ["error", "success"]
    assert out["messages"][-1].content == "Alpha Beta was born in Kelmor."
    # the model saw the error message before it asked again
    assert "the question is empty" in model.seen[1][-1].content


async def test_the_agent_routes_each_call_to_the_tool_it_names():
    replug_lm = ScriptedTokenLM({"Kelmor": says("Kelmor."), "Gepu": says("Kelmor.")})
    model = ScriptedChatModel(script=[call("replug", ASKED), RELAY,
                                      call("flare", ASKED), RELAY])
    agent = build_agent(model, [flare_tool(answering_lm()), replug_tool(replug_lm)])
    first = await agent.ainvoke({"messages": [HumanMessage(ASKED)]})
    [replug_message] = [m for m in first["messages"] if isinstance(m, ToolMessage)]
    assert replug_message.name == "replug" and replug_message.artifact["method"] == "replug"
    assert replug_message.artifact["trace"][0]["weights"]
    second = await agent.ainvoke({"messages": [*first["messages"], HumanMessage(ASKED)]})
    last_tool = [m for m in second["messages"] if isinstance(m, ToolMessage)][-1]
    assert last_tool.name == "flare" and last_tool.artifact["method"] == "flare"
    assert isinstance(second["messages"][-1], AIMessage)
    assert second["messages"][-1].content == "Alpha Beta was born in Kelmor."


def test_the_shipped_agent_calls_flare_and_replug_and_asks_no_server_when_built():
    assert [t.name for t in method_tools()] == ["flare", "replug"]
    assert {"agent", "tools"} <= set(agent_module.graph.get_graph().nodes)


def test_tool_call_flags_reach_vllms_command_line_only_when_asked(tmp_path, vllm_stand_in,  # noqa: F811
                                                                  allow_port):
    settings = Settings(home=tmp_path / "home", port=free_port(), host="127.0.0.1")
    assert "--enable-auto-tool-choice" not in vllm_command(
        vllm_stand_in, settings, 512, False, None)
    allow_port(settings.port)
    try:
        server.start_server(settings, vllm_stand_in, 512, timeout=30, extra_args=TOOL_CALL_ARGS)
        pid = int((tmp_path / "home" / f"vllm-{settings.port}.pid").read_text().split()[0])
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        assert argv[-4:] == ["--enable-auto-tool-choice", "--tool-call-parser", "hermes", ""]
    finally:
        server.stop_server(settings)
        for started in stand_ins(settings.port):
            os.killpg(started, signal.SIGKILL)


@pytest.mark.parametrize(("flag", "passed"), [([], ()), (["--tool-calls"], TOOL_CALL_ARGS)])
def test_serve_passes_the_tool_call_flags_only_when_asked(monkeypatch, capsys, flag, passed):
    from activerag import cli
    from activerag.serving import server

    seen = []
    monkeypatch.setattr(server, "start_server",
                        lambda *a, **kw: seen.append(tuple(kw["launch"].extra_args))
                        or "http://x/v1")
    assert cli.main(["serve", "--engine", "vllm", "--port", "1", *flag]) == 0
    assert seen == [passed]


def test_the_served_model_must_call_a_tool_for_a_new_question_and_answers_after_the_tools():
    asked, answered = [HumanMessage(ASKED)], [HumanMessage(ASKED), AIMessage(""),
                                               ToolMessage("Kelmor.", tool_call_id="1")]
    assert tool_choice_for(asked, "required", "none") == "required"
    assert tool_choice_for(answered, "required", "none") == "none"
    assert tool_choice_for(answered, "auto", "auto") == "auto"


async def test_the_shipped_agent_binds_its_tools_as_the_tool_choice_says(monkeypatch):
    class Chat(ScriptedChatModel):
        def bind_tools(self, tools, **kwargs):
            self.seen.append([AIMessage(f"bound {[t.name for t in tools]} {kwargs}")])
            return self

    chat = Chat(script=[call("flare", ASKED), "It is Kelmor."])
    made = []
    monkeypatch.setattr(agent_module, "chat_model", lambda ctx: made.append(ctx) or chat)
    agent = build_agent(tools=[flare_tool(answering_lm())], context=FlareContext(k=1))
    out = await agent.ainvoke({"messages": [HumanMessage(ASKED)]})
    assert out["messages"][-1].content == "It is Kelmor."
    assert len(made) == 1 and made[0].k == 1  # one chat model, made at the first call
    binds = [m[0].content for m in chat.seen if m[0].content.startswith("bound")]
    assert binds == ["bound ['flare'] {'tool_choice': 'required'}"]  # "none": nothing bound
