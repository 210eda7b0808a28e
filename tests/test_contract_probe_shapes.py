"""The probe reads each engine's answer shape: a server that answers in llama-server's shape
(logprobs as `content` entries that carry each token's id) is found to give token ids,
logprobs and alternatives just as vLLM's shape is (tests/test_probe.py); the probe's HTTP is
answered in-process, no server runs (issue #38)."""

import json

import httpx
import pytest

import activerag.serving.running
from activerag.serving import probe as probing

URL = "http://127.0.0.1:9/v1"
HONOURS_BIAS = False
"""Whether the stand-in's first token is the one a +100 logit bias names."""


def entry(token_id: int, word: str, logprob: float) -> dict:
    return {"id": token_id, "token": word, "logprob": logprob, "bytes": list(word.encode())}


def llama_answer(request: httpx.Request) -> httpx.Response:
    body = json.loads(request.content or b"{}")
    if request.url.path == "/props":
        return httpx.Response(200, json={"total_slots": 3})
    if request.url.path == "/tokenize":
        return httpx.Response(200, json={"tokens": [5, 6]})
    if request.url.path == "/detokenize":
        return httpx.Response(200, json={"content": "ab"})
    if body.get("stream"):
        return httpx.Response(400, json={"error": {"message": "no streams here"}})
    top = min(int(body.get("top_logprobs") or body.get("logprobs") or 0), 5)
    alternatives = [entry(5 + i, f"w{i}", -0.1 * (i + 1)) for i in range(top)]
    chosen = [int(t) for t, v in (body.get("logit_bias") or {}).items() if v >= 50]
    first = chosen[0] if chosen and HONOURS_BIAS else 5
    content = [{**entry(first, f"w{first - 5}", -0.1), "top_logprobs": alternatives}]
    choice = {"text": "w0", "index": 0, "finish_reason": "length",
              "logprobs": {"content": content} if body.get("logprobs") else None}
    return httpx.Response(200, json={"choices": [choice] * int(body.get("n") or 1)})


@pytest.fixture
def llama_server(monkeypatch):
    probing.forget()
    client = httpx.Client
    monkeypatch.setattr(activerag.serving.running, "server_entries", lambda url: [
        {"id": "m", "owned_by": "llamacpp", "meta": {"n_ctx": 2048}}])
    monkeypatch.setattr(httpx, "Client", lambda **kwargs: client(
        transport=httpx.MockTransport(llama_answer), timeout=kwargs.get("timeout")))
    yield
    probing.forget()


def test_llama_server_s_shape_gives_logprobs_and_token_ids(llama_server):
    found = probing.probe(URL)
    assert {"completions", "logprobs", "top_logprobs", "tokenize", "token_ids"} <= found.found
    assert "token_ids" not in found.why
    assert found.most_n == 3  # its slots, from /props


def test_a_server_not_shaped_as_llama_server_has_no_cap_on_n():
    from activerag.testing.fake_lm import Backend, backend

    with backend(Backend(slots=3)) as url:  # /props answers, but the server is not llama's
        found = probing.probe(url, fresh=True)
    assert "n" in found.found and found.most_n is None


@pytest.mark.parametrize("honours", [False, True])
def test_llama_server_s_token_ids_tell_whether_a_bias_chose_the_token(llama_server,
                                                                      monkeypatch, honours):
    """The bias probe reads the chosen token by its id (llama-server spells tokens as text
    unless asked for ids), so a server that ignores the bias is found out."""
    monkeypatch.setitem(globals(), "HONOURS_BIAS", honours)
    found = probing.probe(URL)
    assert ("logit_bias" in found.found) is honours
    if not honours:
        assert found.why["logit_bias"] == "a +100 bias did not choose the token"


def test_a_refusal_s_message_is_one_line_of_at_most_160_characters():
    from activerag.serving.probe_requests import _message

    long = "word " * 100
    said = _message(httpx.Response(400, json={"error": {"message": f"bad\n{long}"}}))
    assert said == " ".join(f"bad {long}".split())[:160] and len(said) == 160
    assert _message(httpx.Response(400, text="plain refusal")) == "plain refusal"
