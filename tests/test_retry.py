"""The graphs' retry policy over HTTP: a 5xx from the server is retried, a 400 is not; a
request a busy server does not answer in time is reported as busy, not unreachable."""

import time

import pytest
from fakeserver import FakeServer

from activerag.context import FlareContext
from activerag.errors import ActiveRagError
from activerag.graphs import single
from activerag.graphs.base import LM_RETRY
from activerag.sentences import SentenceSplitter
from activerag.serving.lm import VLLMClient
from activerag.serving.lm_errors import LMServerError
from activerag.serving.token_lm import VLLMTokens
from activerag.testing.fake_lm import QuietHandler, serving

QUESTION = "What is the capital of France?"
ANSWER = "Paris is the capital of France. So the answer is Paris."


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch):
    """The graphs' own policy (attempts, errors retried) without its 1 s back-off."""
    monkeypatch.setattr(single, "LM_RETRY", LM_RETRY._replace(initial_interval=0.01,
                                                                 jitter=False))


async def run(server: FakeServer) -> dict:
    graph = single.build_single_graph(lm=VLLMClient(server.url), splitter=SentenceSplitter(),
                                         retrieval=False)
    return await graph.ainvoke({"question": QUESTION}, context=FlareContext())


async def test_a_503_is_retried_once_and_the_answer_arrives():
    with FakeServer([503, ANSWER]) as server:
        out = await run(server)
    assert len(server.completions) == 2
    assert server.completions[0] == server.completions[1]
    assert out["answer"] == ANSWER
    assert out["lm_calls"] == 1
    assert [s["sentence"] for s in out["trace"]] == ["Paris is the capital of France.",
                                                     "So the answer is Paris."]


async def test_three_503s_end_the_run_with_a_server_error():
    with FakeServer([503, 503, 503, ANSWER]) as server:
        with pytest.raises(LMServerError, match="503.*retrying may help"):
            await run(server)
    assert len(server.completions) == 3


async def test_a_400_is_not_retried():
    with FakeServer([400, ANSWER]) as server:
        with pytest.raises(ActiveRagError, match="rejected the request") as err:
            await run(server)
    assert not isinstance(err.value, LMServerError)
    assert len(server.completions) == 1


class _Stuck(QuietHandler):
    """Accepts every request and answers none in time (a server with a long queue)."""

    def do_GET(self) -> None:
        self._json(200, {"data": [{"id": "busy-model"}]})

    def do_POST(self) -> None:
        self._body()
        time.sleep(1.0)


async def test_a_request_the_server_accepts_but_does_not_answer_in_time_is_called_busy(
        monkeypatch):
    monkeypatch.setenv("ACTIVERAG_LM_TIMEOUT", "0.2")
    with serving(_Stuck) as url:
        tokens = VLLMTokens(url, "busy-model")
        with pytest.raises(LMServerError, match=r"did not answer within 0.2 s .*"
                                                "ACTIVERAG_LM_TIMEOUT"):
            await tokens.tokenize("Paris")
        client = VLLMClient(url)
        assert client.timeout == 0.2 and tokens.timeout == 0.2
        with pytest.raises(LMServerError, match="busy or stuck"):
            await client.token_ids("Paris")
