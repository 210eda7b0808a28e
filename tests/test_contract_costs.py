"""Every method's cost counters are what its run did (issue #38), generated from the registry:
each method runs under the fake vLLM, as it defaults and with settings that reach retrieval,
and its output must count one LM call per completion request the server got, one retrieval
per search of the store, and retrieve no title the store did not return. A node that drops,
doubles or makes up a count fails here whatever its family (the evaluation's rows and the
cost tables read these counters)."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest
from test_contract_retries import reaching
from test_settings_take_effect import (  # noqa: F401
    CONTEXT,
    LONG_CONTEXT_GRAPHS,
    QUESTION,
    RUNNABLE,
    base_context,
    world,
)

from activerag.stores.base import StoreRetriever


@pytest.fixture
def searches(monkeypatch):  # type: ignore[no-untyped-def]
    """The titles of the documents each search of a store returned, search by search."""
    found: list[list[str]] = []
    original = StoreRetriever._get_relevant_documents

    def search(self: StoreRetriever, query: str, **kwargs: Any) -> Any:
        docs = original(self, query, **kwargs)
        found.append([d.metadata.get("title", "") for d in docs])
        return docs

    monkeypatch.setattr(StoreRetriever, "_get_relevant_documents", search)
    return found


@pytest.mark.parametrize("reach", [False, True], ids=["default", "retrieving"])
@pytest.mark.parametrize("name", RUNNABLE)
def test_a_method_counts_the_requests_and_searches_its_run_made(world, searches, name,  # noqa: F811
                                                                reach):
    b = world[0]
    graph, ctx = base_context(name, *world[1:])
    state: dict[str, Any] = {"question": QUESTION}
    if graph in LONG_CONTEXT_GRAPHS:
        state["context"] = CONTEXT
    b.requests.clear()
    out = asyncio.run(graph.ainvoke(state, context=reaching(ctx) if reach else ctx))
    completions = sum(1 for path, _ in b.requests if path == "/v1/completions")
    assert completions, f"{name}: the fake got no completion request"
    assert out["lm_calls"] == completions, (name, out["lm_calls"], completions)
    assert out["retrievals"] == len(searches), (name, out["retrievals"], len(searches))
    assert out["retrieval_steps"] <= out["retrievals"], name
    returned = Counter(t for titles in searches for t in titles)
    assert not Counter(out["retrieved_titles"]) - returned, name
    assert out["generated_tokens"] > 0 and out["prompt_tokens"] > 0, name
