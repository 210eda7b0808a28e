"""Every graph builder keeps what it is given (issue #38), generated from the registry:

- each component a builder takes (lm, token_lm, light_lm, retriever, splitter) is the one its
  run uses: handed a component that raises when touched, a run under the fake vLLM raises it;
- each served graph is named as langgraph.json names it, and a builder's NAME is the graph's;
- each graph's input schema is its family's (the question, and FB-RAG's and the app's own
  context), its output schema the run's results, never the whole state;
- each Adaptive-RAG strategy handed in is the one run for its label;
- the chat adapters' parts of a compiled graph keep the graph and its context class.

A builder that silently drops a component, a strategy, its name or a schema fails here
(tests/test_node_overrides.py does the same for the nodes)."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
from pathlib import Path
from typing import Any

import pytest
from test_adaptive_rag import Q, scripted_lms, strategies
from test_settings_take_effect import (  # noqa: F401
    CONTEXT,
    QUESTION,
    base_context,
    reached,
    world,
)

from activerag.graphs import messages
from activerag.graphs.registry import METHODS
from activerag.nodes.adaptive_rag.context import AdaptiveContext
from activerag.testing.scripted import ScriptedLM, ends

COMPONENTS = ("lm", "token_lm", "light_lm", "retriever", "splitter")
NOT_USED = {
    ("none", "retriever"): "never retrieves",
    ("previous_window", "splitter"): "its windows are window_tokens tokens, never sentences",
    **{(name, "token_lm"): "only lexsim samples answers from TOKEN_LM; the other estimators "
                           "read the answer's own logprobs"
       for name in ("gate_entropy_mean", "gate_entropy_max", "gate_perplexity")},
}
"""(method, component) a builder takes that its run never uses, with the reason."""
SKIPPED = {"adaptive_rag"}
"""Needs a router trained by `activerag train-router` (its strategies: the test below)."""
REACHING = {"etc_threshold": -1.0, "min_confidence": 0.99}
"""Settings under which a run under the fake reaches retrieval (as tests/test_node_overrides)."""
EXEMPLARS = {"exemplar_retrieval": True}
"""And exemplars that retrieve their own documents: the retriever a node's prompt asks for
(even a method that never retrieves for its answer, as none, asks it then)."""


class Touched(Exception):
    """Raised by a sentinel component: the run used it."""


class Sentinel:
    """A component that raises Touched(its name) on any use (an attribute or a call)."""

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)

    def __getattr__(self, attr: str) -> Any:
        raise Touched(self._name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise Touched(self._name)


def component_cases() -> list[tuple[str, str]]:
    return [(name, p) for name, m in METHODS.items() if m.build is not None
            and name not in SKIPPED for p in inspect.signature(m.build).parameters
            if p in COMPONENTS]


def used(world: Any, name: str, component: str) -> bool:  # noqa: F811
    record = METHODS[name]
    ctx = reached(base_context(name, *world[1:])[1], REACHING)
    graph = record.build(**{component: Sentinel(component)})
    state: dict[str, Any] = {"question": QUESTION}
    if record.family in ("FB-RAG", "app") and component != "retriever":
        state["context"] = CONTEXT  # without one, FB-RAG builds its context with the retriever
    try:
        asyncio.run(graph.ainvoke(state, context=ctx))
    except Touched as exc:
        return str(exc) == component
    return False


@pytest.mark.parametrize(("name", "component"), component_cases())
def test_each_component_handed_to_a_builder_is_the_one_its_run_uses(world, name,  # noqa: F811
                                                                     component):
    assert used(world, name, component) != ((name, component) in NOT_USED), (
        f"{name} built with its own {component}: "
        + (NOT_USED.get((name, component)) or "the run used another (the context's)"))


def test_the_components_are_listed_for_every_family():
    cases = component_cases()
    assert len(cases) >= 90 and set(NOT_USED) <= set(cases)
    assert {c for _, c in cases} == set(COMPONENTS)


SERVED = json.loads((Path(__file__).parent.parent / "langgraph.json").read_text())["graphs"]
MISNAMED: dict[str, str] = {}
"""Served graphs whose compiled name is not their langgraph.json key (ircot_seakr was "ircot",
found by this test and mended), by the name they have."""


@pytest.mark.parametrize("key", sorted(SERVED))
def test_each_served_graph_is_named_as_langgraph_json_names_it(key):
    module, _, attribute = SERVED[key].partition(":")
    graph = getattr(importlib.import_module(module), attribute)
    assert graph.name == MISNAMED.get(key, key)


@pytest.mark.parametrize("name", [n for n, m in METHODS.items() if m.build is not None])
def test_a_builder_gives_its_graph_the_name_it_is_given_else_the_served_one(name):
    record = METHODS[name]
    assert record.build().name == record.graph.name
    if "name" in inspect.signature(record.build).parameters:
        assert record.build(name="mine").name == "mine"


INPUT = {"FB-RAG": {"question", "context"}, "app": {"question", "context"}}
"""Each family's input fields; every other family's is the question alone."""
RESULTS = {"answer", "lm_calls", "prompt_tokens", "generated_tokens", "retrievals",
           "retrieval_steps", "retrieved_titles"}
"""What every method's output gives (the evaluation's row reads each)."""


@pytest.mark.parametrize("name", list(METHODS))
def test_each_graph_takes_its_family_s_input_and_gives_results_not_its_state(name):
    record = METHODS[name]
    for graph in (record.graph, *([record.build()] if record.build else [])):
        given = set(graph.get_input_jsonschema()["properties"])
        out = set(graph.get_output_jsonschema()["properties"])
        assert given == INPUT.get(record.family, {"question"}), name
        assert RESULTS <= out and not out & {"question", "step", "context"}, name


@pytest.mark.parametrize("name", [n for n, m in METHODS.items() if m.family == "Adaptive-RAG"
                                  and m.build and "lm" in inspect.signature(m.build).parameters])
@pytest.mark.parametrize(("label", "strategy"), [("A", "none"), ("B", "single"),
                                                 ("C", "multi")])
def test_each_strategy_handed_to_adaptive_rag_runs_for_its_label(name, label, strategy):
    lms = scripted_lms()
    graph = METHODS[name].build(**strategies(*lms), lm=ScriptedLM([ends(f" {label}")]))
    out = asyncio.run(graph.ainvoke({"question": Q}, context=AdaptiveContext()))
    assert out["route"] == label
    assert [bool(lm.prompts) for lm in lms] == [s == strategy for s in ("none", "single",
                                                                         "multi")]


@pytest.mark.parametrize("name", ["single", "flare", "replug", "fb_rag"])
def test_the_chat_parts_of_a_compiled_graph_keep_it_and_its_context_class(name):
    graph = METHODS[name].graph
    parts = messages.method_parts(graph)
    assert parts.name == graph.name and parts.graph is graph
    assert type(parts.context) is graph.context_schema
    given = graph.context_schema()
    assert messages.method_parts(graph, given).context is given


@pytest.mark.parametrize("name", [n for n, m in METHODS.items() if m.build is not None])
def test_every_builder_takes_a_checkpointer_and_compiles_its_graph_with_it(name):
    from langgraph.checkpoint.memory import InMemorySaver

    build = METHODS[name].build
    assert "checkpointer" in inspect.signature(build).parameters, (
        f"{name}'s builder takes no checkpointer: a run of it cannot be paused or resumed")
    saver = InMemorySaver()
    graph = build(checkpointer=saver)
    assert graph.checkpointer is saver
    inner = [g for _, g in graph.get_subgraphs(recurse=True)]
    assert all(g.checkpointer in (None, True, saver) for g in inner), name


@pytest.mark.parametrize("name", list(METHODS))
def test_each_method_over_messages_takes_and_gives_messages_alone(name):
    graph = messages.for_messages(name)
    assert set(graph.get_input_jsonschema()["properties"]) == {"messages"}, name
    assert set(graph.get_output_jsonschema()["properties"]) == {"messages"}, name
    assert graph.context_schema is METHODS[name].graph.context_schema, name


class MadeFromContext(Exception):
    """Raised where a node would make a component from the run's context."""


def _given_only(original: Any, component: str) -> Any:
    """ORIGINAL (a Parts method that returns COMPONENT), refusing to make one from the
    context: the builder was given it, so every node must hold it."""
    own = "light" if component == "light_lm" else component

    async def given(self: Any, ctx: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(self, own, None) is None:
            raise MadeFromContext(f"a node made its {component} from the run's context")
        return await original(self, ctx, *args, **kwargs)

    return given


@pytest.mark.parametrize("reach", [False, True], ids=["default", "retrieving"])
@pytest.mark.parametrize("name", sorted({n for n, _ in component_cases()}))
def test_a_graph_built_with_every_component_never_makes_one_of_its_own(
        world, monkeypatch, name, reach):  # noqa: F811
    """Every node of a builder's graph uses the components the builder was given: with all of
    them given, a node that made its own from the context (an LM client, the corpus's
    retriever or splitter, FB-RAG's light sampler) raises here, on the branches a default run
    takes and on those a retrieving one does."""
    from activerag.nodes import parts
    from activerag.nodes.fb_rag import parts as fb_rag_parts
    from activerag.sentences import SentenceSplitter
    from activerag.stores.corpus import Corpus

    _, url, store, light_url = world
    record = METHODS[name]
    _, ctx = base_context(name, url, store, light_url)
    if reach:
        ctx = reached(ctx, {**REACHING, **EXEMPLARS})
    from activerag.nodes.estimators import estimator_named
    from activerag.nodes.triggers import top_logprobs_for
    from activerag.serving.lm import VLLMClient
    from activerag.serving.token_lm import VLLMTokens

    model = VLLMClient(url).model
    top = max(top_logprobs_for(ctx), estimator_named(ctx.estimator).top_logprobs
              if hasattr(ctx, "estimator") else 1)
    # the alternatives the run's trigger or gate reads, as the client a node makes would ask
    made = {"lm": VLLMClient(url, model, top_logprobs=top),
            "token_lm": VLLMTokens(url, model),
            "light_lm": VLLMTokens(light_url, model),
            "retriever": Corpus(Path(store)).retriever("bm25", 3),
            "splitter": SentenceSplitter()}
    def build(method: str) -> Any:
        takes = inspect.signature(METHODS[method].build).parameters
        return METHODS[method].build(**{k: v for k, v in made.items() if k in takes})

    takes = inspect.signature(record.build).parameters
    given = {k: v for k, v in made.items() if k in takes}
    if record.family == "Adaptive-RAG":  # its LM is the classifier's; the strategies its own
        given.update(none=build("none"), single=build("single"), multi=build("ircot"))
    graph = record.build(**given)
    for cls, method, component in ((parts.Parts, "lm_for", "lm"),
                                   (parts.Parts, "token_lm_for", "token_lm"),
                                   (parts.Parts, "retriever_for", "retriever"),
                                   (parts.Parts, "splitter_for", "splitter"),
                                   (fb_rag_parts.FBParts, "light_for", "light_lm")):
        if component in takes:
            monkeypatch.setattr(cls, method, _given_only(getattr(cls, method), component))
    state: dict[str, Any] = {"question": QUESTION}
    if record.family in ("FB-RAG", "app"):
        state["context"] = CONTEXT
    asyncio.run(graph.ainvoke(state, context=ctx))
