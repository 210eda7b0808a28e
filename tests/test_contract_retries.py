"""Every node that asks the LM server anything retries that server's passing failures (issue
#38), generated from the registry: each method runs under the fake vLLM with every request
of the clients (VLLMClient's completions and tokens, VLLMTokens' every endpoint) noting the
node it came from, and each such node, or a node above it whose subgraph it is in, must carry
a retry policy that retries LMServerError and LMServerUnreachable. A node added without one,
or a builder that drops one, fails here whatever its family (tests/test_retry.py shows the
policy itself at work over HTTP)."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from langgraph.config import get_config
from test_settings_take_effect import (  # noqa: F401
    REPLY,
    RUNNABLE,
    base_context,
    reached,
    run,
    world,
)

from activerag.errors import LMServerUnreachable
from activerag.graphs.registry import METHODS
from activerag.serving.lm import VLLMClient
from activerag.serving.lm_errors import LMServerError
from activerag.serving.token_lm import VLLMTokens

REQUESTS = ((VLLMClient, "generate"), (VLLMClient, "token_ids"), (VLLMTokens, "post"))
"""Every method through which a client sends a request a node waits on."""
PASSING = (LMServerError, LMServerUnreachable)


def node_path() -> tuple[str, ...] | None:
    """The running node and the nodes whose subgraphs hold it, outermost first; None outside
    a graph."""
    try:
        ns = get_config().get("metadata", {}).get("langgraph_checkpoint_ns", "")
    except RuntimeError:
        return None
    return tuple(part.split(":")[0] for part in ns.split("|") if part)


@pytest.fixture(scope="module")
def asked(world):  # type: ignore[no-untyped-def]  # noqa: F811
    """For each runnable method, the node paths its clients' requests came from, noted as
    each is sent."""
    seen: set[tuple[str, ...] | None] = set()
    found: dict[str, set[tuple[str, ...] | None]] = {}
    with pytest.MonkeyPatch.context() as patch:
        for cls, attr in REQUESTS:
            def noting(original: Any) -> Any:
                @functools.wraps(original)
                async def send(*args: Any, **kwargs: Any) -> Any:
                    seen.add(node_path())
                    return await original(*args, **kwargs)
                return send
            patch.setattr(cls, attr, noting(getattr(cls, attr)))
        for name in RUNNABLE:
            seen.clear()
            graph, ctx = base_context(name, *world[1:])
            run(world[0], graph, ctx)
            run(world[0], graph, reaching(ctx))
            for reply in ANSWERING:
                world[0].reply = reply
                try:
                    run(world[0], graph, reaching(ctx))
                finally:
                    world[0].reply = REPLY
            found[name] = set(seen)
    return found


ANSWERING = (" So the answer is Gepu.", " unanswerable")
"""Replies that reach the branches an answer opens: REPLUG's rescoring of the documents'
answers (the fake's default reply has none), self-route's long-context read after
"unanswerable"."""


REACHING = {"etc_threshold": -1.0, "min_confidence": 0.99, "beta": 0.9}
"""Settings under which a run under the fake reaches the branches a default run skips:
retrieval (as tests/test_contract_builders.py) and FLARE's masked or generated queries."""


def reaching(ctx: Any) -> Any:
    return reached(ctx, REACHING)


def retries(node: Any) -> bool:
    policies = node.retry_policy or ()
    policies = policies if isinstance(policies, (list, tuple)) and not hasattr(
        policies, "retry_on") else (policies,)
    return any(all(any(issubclass(e, r) for r in _on(p)) for e in PASSING) for p in policies)


def _on(policy: Any) -> tuple[type, ...]:
    on = policy.retry_on
    return tuple(on) if isinstance(on, (list, tuple)) else (on,) if isinstance(on, type) else ()


def retried(graph: Any, path: tuple[str, ...]) -> bool:
    """Whether the node at PATH in GRAPH, or one above it, retries the server's passing
    failures."""
    head, rest = path[0], path[1:]
    if retries(graph.nodes[head]):
        return True
    if not rest:
        return False
    inner = dict(graph.get_subgraphs()).get(head)
    assert inner is not None, f"{path}: no subgraph under node {head}"
    return retried(inner, rest)


def at(graph: Any, path: tuple[str, ...]) -> Any:
    """The compiled graph holding the node at PATH (the node's own name is PATH[-1])."""
    for head in path[:-1]:
        graph = dict(graph.get_subgraphs())[head]
    return graph


def made_by(graph: Any, node: str) -> str:
    """The function a node runs, by module and qualified name: nodes made by one factory
    share it, whatever the graph or the node's name."""
    runnable = graph.builder.nodes[node].runnable
    body = getattr(runnable, "afunc", None) or getattr(runnable, "func", None)
    kind: Any = body if hasattr(body, "__qualname__") else type(body)
    return f"{kind.__module__}.{kind.__qualname__}"


def every_node(graph: Any) -> list[tuple[Any, str]]:
    """Every (graph, node name) of GRAPH and its subgraphs, however deep."""
    out = [(graph, n) for n in graph.builder.nodes]
    for _, inner in graph.get_subgraphs():
        out += every_node(inner)
    return out


@pytest.mark.parametrize("name", RUNNABLE)
def test_every_node_that_asks_the_lm_retries_the_server_s_passing_failures(asked, name):
    paths = asked[name]
    assert None not in paths, f"{name}: a request sent outside any node"
    assert paths, f"{name}: no request noted; the clients' methods moved"
    graph = METHODS[name].graph
    unretried = sorted(p for p in paths if p and not retried(graph, p))
    assert not unretried, (f"{name}: nodes that ask the LM without a retry policy for "
                           f"{[e.__name__ for e in PASSING]}: {unretried}")


def test_a_node_made_to_ask_the_lm_retries_in_every_graph_even_where_no_run_reaches_it(
        asked):
    """The fake's runs do not reach every branch (self-route's long-context read follows an
    answer of "unanswerable"): a node made by a factory whose nodes asked the LM in any run
    must retry wherever it stands, in every graph the registry serves or builds."""
    asking = {made_by(at(METHODS[name].graph, p), p[-1])
              for name, paths in asked.items() for p in paths if p}
    assert len(asking) >= 15, asking
    graphs = [m.graph for m in METHODS.values()]
    graphs += [m.build() for m in METHODS.values() if m.build is not None]
    bare = sorted({f"{g.name}:{n}" for top in graphs for g, n in every_node(top)
                   if made_by(g, n) in asking and not retries(g.nodes[n])})
    assert not bare, f"nodes that ask the LM elsewhere, here without a retry policy: {bare}"


def test_the_retry_check_sees_a_node_without_its_policy():
    graph = METHODS["flare"].graph
    assert retried(graph, ("draft",))
    assert not retried(graph, ("retrieve",))
