"""Adaptive-RAG's nodes (Jeong et al. 2024, §3.2): classify the question's complexity (a trained
router over its MiniLM embedding, or the served LM asked by a prompt), then run the strategy
the label names as a subgraph: A no retrieval, B single-step, C the multi-step method."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any, Literal, NotRequired, TypeAlias

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from activerag.nodes.adaptive_rag import prompts
from activerag.nodes.adaptive_rag.context import AdaptiveContext
from activerag.nodes.adaptive_rag.logic import LABELS, Label, parse_complexity
from activerag.nodes.adaptive_rag.router import Embedder, Router, load_router, minilm
from activerag.nodes.base import Node, Update, fresh_run, lm_cost
from activerag.nodes.parts import Parts
from activerag.state import COUNTERS, Costs, StepTrace

Strategy = Literal["no_retrieval", "single_step", "multi_step"]
STRATEGIES: dict[Label, Strategy] = {"A": "no_retrieval", "B": "single_step", "C": "multi_step"}
"""The node each label routes to (§3.2: A no retrieval, B single-step, C multi-step)."""
UNPARSED: Label = "C"
"""The prompt classifier's label when the LM's reply names none: the multi-step method, which
answers every kind of question, at the most cost."""
COMPLEXITY_TOKENS = 8
"""The prompt classifier's reply budget: a letter, and room for "Answer: C"."""


class AdaptiveInput(TypedDict):
    """What a caller of Adaptive-RAG passes in."""

    question: str  # the question


class Classification(TypedDict, total=False):
    """How the classifier decided."""

    classifier: str  # "router" (trained) or "prompt" (the served LM)
    label: str  # the label it gave: A, B or C
    router: str  # the router folder (router)
    reply: str  # the LM's reply (prompt)
    note: str  # why the label is a default (prompt: a reply that names no label)


class AdaptiveOutput(Costs):
    """What Adaptive-RAG gives back: the answer of the strategy the classifier chose, the
    label, the classifier's probabilities, and the strategy's trace; the costs are the
    classifier's and the strategy's together."""

    answer: str  # the strategy's answer
    route: str  # the complexity label: A (no retrieval), B (single-step), C (multi-step)
    strategy: str  # the node that answered: no_retrieval, single_step or multi_step
    probabilities: dict[str, float]  # the classifier's probability of each label it scored
    classification: Classification  # how the classifier decided
    trace: NotRequired[list[StepTrace]]  # the strategy's own trace
    runs: NotRequired[dict[str, dict]]  # the strategy's whole output, by its node's name
    answer_tokens: NotRequired[int]  # tokens in the answer


class AdaptiveState(AdaptiveOutput, total=False):
    """Internal state of Adaptive-RAG (no reducers: each node writes the run's totals so far,
    and `start` clears them for a new run on the same thread)."""

    question: str  # the question


AdaptiveNode: TypeAlias = Node[AdaptiveState, AdaptiveContext]
"""A node of the Adaptive-RAG graph (the `classify` override's type)."""


def start(state: AdaptiveState) -> Update:
    """Check the question and clear what a previous run on this thread left."""
    return fresh_run(state, summed=False, answer="", route="", strategy="", probabilities={},
                     classification={}, runs={}, answer_tokens=0)


def route(state: AdaptiveState) -> Strategy:
    """The strategy node of the label the classifier gave."""
    label = state.get("route")
    if label not in STRATEGIES:
        raise ValueError(f"the classifier gave no complexity label (route {label!r}); a classify "
                         f"node must set route to one of {', '.join(LABELS)}")
    return STRATEGIES[label]  # type: ignore[index]


def _shown(label: str, probs: dict[str, float], how: str) -> str:
    spread = " ".join(f"{k} {v:.2f}" for k, v in probs.items())
    return f"classify: {label} -> {STRATEGIES[label]} ({how}{'; p ' + spread if spread else ''})"


def _decided(state: AdaptiveState, label: Label, probs: dict[str, float],
             classification: Classification, began: float, how: str,
             cost: Update | None = None) -> Update:
    """The classify node's update, announced as a stream event (`ask --trace` prints it)."""
    get_stream_writer()({"stage": {"name": _shown(label, probs, how),
                                   "seconds": time.perf_counter() - began}})
    update: Update = {"route": label, "probabilities": probs,
                      "classification": {**classification, "label": label}}
    for name, value in (cost or {}).items():
        update[name] = state.get(name, 0) + value  # type: ignore[misc]
    return update


_routers: dict[tuple[str, int], Router] = {}


def _router(folder: str, embedder: Embedder) -> Router:
    """The router in FOLDER, read once per version of its meta.json."""
    meta = Path(folder).expanduser() / "meta.json"
    key = (str(meta.resolve()), meta.stat().st_mtime_ns if meta.is_file() else 0)
    if key not in _routers:
        _routers[key] = load_router(folder, embedder)
    return _routers[key]


def make_router_classify(embedder: Embedder | None = None) -> AdaptiveNode:
    """Node: label the question with the trained router in the context's `router` folder
    (refused when there is none): the most probable label of softmax(W e(q) + b), the simpler
    one on a tie. EMBEDDER: the encoder the router was trained on (default MiniLM)."""

    def classify_sync(question: str, folder: str) -> dict[str, float]:
        encoder = embedder or minilm()
        router = _router(folder, encoder)
        return router.probabilities(encoder([question]))[0]  # type: ignore[return-value]

    async def classify(state: AdaptiveState, runtime: Runtime[AdaptiveContext]) -> Update:
        began = time.perf_counter()
        folder = runtime.context.router
        if not folder:
            load_router("", embedder or minilm())  # the refusal that says what to do
        probs = await asyncio.to_thread(classify_sync, state["question"], folder)
        label = max(LABELS, key=lambda k: (probs[k], -LABELS.index(k)))
        return _decided(state, label, probs, {"classifier": "router",
                                              "router": os.fspath(folder)}, began, "router")

    return classify


def make_prompt_classify(parts: Parts) -> AdaptiveNode:
    """Node: ask the served LM to rate the question's complexity A, B or C
    (prompts.COMPLEXITY_INSTRUCTION); a reply that names none gives C, and the classification
    says so. Its probability is the one of the token that holds the letter (the others are not
    asked for)."""

    async def classify(state: AdaptiveState, runtime: Runtime[AdaptiveContext]) -> Update:
        began = time.perf_counter()
        ctx = runtime.context
        lm = await parts.lm_for(ctx)
        layout = await parts.layout_for(ctx)
        gen = await lm.generate(prompts.complexity_prompt(state["question"], layout),
                                max_tokens=COMPLEXITY_TOKENS, stop=list(prompts.COMPLEXITY_STOPS))
        parsed = parse_complexity(gen.text)
        record: Classification = {"classifier": "prompt", "reply": gen.text}
        if parsed is None:
            record["note"] = (f"the reply {gen.text.strip()!r} names no complexity A, B or C: "
                              f"{UNPARSED} ({STRATEGIES[UNPARSED]}) by default")
            return _decided(state, UNPARSED, {}, record, began, "prompt: unparsed reply",
                            lm_cost(gen))
        letter = next((t.prob for t in gen.tokens if t.text.strip(" \"'`*([{").upper()[:1]
                       == parsed), None)
        probs = {parsed: letter} if letter is not None else {}
        return _decided(state, parsed, probs, record, began, "prompt", lm_cost(gen))

    return classify


def make_classify(parts: Parts, embedder: Embedder | None = None) -> AdaptiveNode:
    """Node: the trained router when the context names a router folder, else the prompt
    classifier."""
    by_router, by_prompt = make_router_classify(embedder), make_prompt_classify(parts)

    async def classify(state: AdaptiveState, runtime: Runtime[AdaptiveContext]) -> Update:
        chosen = by_router if runtime.context.router else by_prompt
        return await chosen(state, runtime)  # type: ignore[no-any-return, misc]

    return classify


def context_for(graph: Any, ctx: AdaptiveContext) -> Any:
    """The context GRAPH runs under: CTX itself when it is of GRAPH's context type (FLARE's,
    single's), else GRAPH's own type made from CTX's fields it has (a multi-step method with
    a context of its own, such as IRCoT's), the rest at that type's defaults."""
    cls = getattr(graph, "context_schema", None)
    if not isinstance(cls, type) or not is_dataclass(cls) or isinstance(ctx, cls):
        return ctx
    names = {f.name for f in fields(cls)}
    return cls(**{f.name: getattr(ctx, f.name) for f in fields(ctx) if f.name in names})


def make_run_strategy(name: Strategy, graph: Any,
                      context_of: Callable[[Any, AdaptiveContext], Any] = context_for
                      ) -> AdaptiveNode:
    """Node: run strategy GRAPH as a subgraph (Studio draws it inside, its events stream as
    the subgraph's); its answer and trace become the run's, its costs are added to the
    classifier's (as nodes/app.make_run_method does for the app)."""

    async def run_strategy(state: AdaptiveState, runtime: Runtime[AdaptiveContext]) -> Update:
        out = await graph.ainvoke({"question": state["question"]},
                                  context=context_of(graph, runtime.context))
        return {"answer": out.get("answer", ""), "strategy": name,
                "runs": {name: out}, "trace": out.get("trace", []),
                "answer_tokens": out.get("answer_tokens", 0),
                "retrieved_titles": [*state.get("retrieved_titles", []),
                                     *out.get("retrieved_titles", [])],
                **{c: state.get(c, 0) + out.get(c, 0) for c in COUNTERS}}

    run_strategy.__name__ = name
    return run_strategy
