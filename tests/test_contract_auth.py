"""Every request activerag sends an LM server carries the API key (issue #38): each way in
that talks to a server (the clients' every endpoint, the server checks, the template learner,
the probe, and a run of one method of each family) is run against the fake vLLM with
ACTIVERAG_API_KEY set, and every request the fake got must bear it. A module that talks HTTP
and is not listed here fails the last test, so a new way in is added to the table, not missed
(tests/test_security.py holds what the key is and when a server needs one)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_settings_take_effect import base_context, run
from test_settings_take_effect import world as world  # noqa: F401

from activerag.graphs.registry import METHODS
from activerag.serving import probe, running, server, templates
from activerag.serving.lm import VLLMClient
from activerag.serving.token_lm import VLLMTokens
from activerag.testing.fake_lm import Backend, backend

KEY = "s3cret"
MODEL = "fake-model"


def _tokens(url: str) -> VLLMTokens:
    return VLLMTokens(url, MODEL)


WAYS_IN: dict[str, Callable[[str], Any]] = {
    "VLLMClient.generate": lambda url: VLLMClient(url, MODEL).generate("Where?", max_tokens=4),
    "VLLMClient.token_ids": lambda url: VLLMClient(url, MODEL).token_ids("Where?"),
    "VLLMClient.engine": lambda url: VLLMClient(url, MODEL).engine(),
    "VLLMTokens.tokenize": lambda url: _tokens(url).tokenize("Where?"),
    "VLLMTokens.detokenize": lambda url: _tokens(url).detokenize([7, 8]),
    "VLLMTokens.context_window": lambda url: _tokens(url).context_window(),
    "VLLMTokens.sample": lambda url: _tokens(url).sample(
        "Where?", 2, 4, temperature=1.0, top_p=1.0, top_k=-1, seed=0),
    "VLLMTokens.steps": lambda url: _tokens(url).steps([7, 8], 2, 3),
    "VLLMTokens.score": lambda url: _tokens(url).score([7, 8], [9]),
    "running.server_entries": lambda url: running.server_entries(url),
    "server.warm_up": lambda url: server.warm_up(url, MODEL),
    "templates.learn": lambda url: templates.learn(url, MODEL),
    "probe.probe": lambda url: probe.probe(url, MODEL, fresh=True),
}
"""Each way a request reaches an LM server, given the server's URL (.../v1)."""
COVERED = {"activerag/serving/lm.py", "activerag/serving/token_lm.py",
           "activerag/serving/server.py", "activerag/serving/running.py",
           "activerag/serving/templates.py", "activerag/serving/probe_requests.py"}
"""The modules whose requests WAYS_IN sends."""
NO_KEY = {
    "activerag/serving/running.py:/metrics": "vLLM serves /metrics without the key (it guards "
                                            "/v1 alone); read by `serve --status`",
    "activerag/testing/dev_server.py:/ok": "the LangGraph dev server's health check, not an "
                                           "LM server",
    "activerag/serving/security.py:/completions": "check_key_enforced's request without the key, "
                                                  "which a server started with it must refuse "
                                                  "(tests/test_server_start.py)",
}
"""Requests that go without the key, by module and path, with the reason."""
REQUESTING = re.compile(r"httpx\.(?:get|post|stream|request|Client|AsyncClient)\(")


def sent(way: Callable[[str], Any], monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """The Authorization header of every request WAY sends the fake, with the key set."""
    monkeypatch.setenv("ACTIVERAG_API_KEY", KEY)
    b = Backend()
    with backend(b) as url:
        out = way(url)
        if asyncio.iscoroutine(out):
            asyncio.run(out)
    return [auth for _, auth in b.keys]


@pytest.mark.parametrize("name", WAYS_IN)
def test_every_request_of_every_way_in_carries_the_key(monkeypatch, name):
    auths = sent(WAYS_IN[name], monkeypatch)
    assert auths, f"{name} sent the fake nothing"
    assert set(auths) == {f"Bearer {KEY}"}, f"{name}: {auths}"


def one_per_family() -> list[str]:
    first: dict[str, str] = {}
    for name, m in METHODS.items():
        if name != "adaptive_rag":  # needs a trained router
            first.setdefault(m.family, name)
    return sorted(first.values())


@pytest.mark.parametrize("name", one_per_family())
def test_a_run_of_each_family_sends_the_key_with_every_request(monkeypatch, world, name):  # noqa: F811
    monkeypatch.setenv("ACTIVERAG_API_KEY", KEY)
    b = world[0]
    b.keys.clear()
    graph, ctx = base_context(name, *world[1:])
    run(b, graph, ctx)
    assert b.keys and {auth for _, auth in b.keys} == {f"Bearer {KEY}"}, (name, b.keys)


def test_every_module_that_talks_http_is_covered_or_says_why_not():
    root = Path(__file__).parent.parent
    talking = {str(p.relative_to(root)) for p in (root / "activerag").rglob("*.py")
               if REQUESTING.search(p.read_text())}
    exempt = {k.rsplit(":", 1)[0] for k in NO_KEY}
    assert talking - COVERED - exempt == set(), "a module sends requests no test here sends"
    assert COVERED <= talking, "COVERED names a module that no longer sends requests"
