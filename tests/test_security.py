"""The API key: vLLM's arguments for it, and the header every client sends with it (issue #19,
item 15)."""

import pytest
from fakeserver import FakeServer, _Handler

from activerag.errors import ActiveRagError, SettingError
from activerag.serving.lm import VLLMClient
from activerag.serving.security import api_key_env, auth_headers
from activerag.serving.token_lm import VLLMTokens


@pytest.fixture
def no_key(monkeypatch):
    monkeypatch.delenv("ACTIVERAG_API_KEY", raising=False)


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0", "10.1.2.3", "example.org", ""])
def test_a_set_key_is_passed_to_every_engine_for_any_host(monkeypatch, host):
    """vLLM reads VLLM_API_KEY, llama-server LLAMA_API_KEY (given only vLLM's, it served every
    request without a key)."""
    monkeypatch.setenv("ACTIVERAG_API_KEY", "s3cret")
    assert api_key_env(host) == {"VLLM_API_KEY": "s3cret", "LLAMA_API_KEY": "s3cret"}


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "::1", "LOCALHOST"])
def test_a_loopback_server_needs_no_key(no_key, host):
    assert api_key_env(host) == {}


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "example.org", ""])
def test_a_server_other_hosts_can_reach_is_refused_without_a_key(no_key, host):
    with pytest.raises(SettingError, match="set ACTIVERAG_API_KEY"):
        api_key_env(host)


def test_a_blank_key_counts_as_none(monkeypatch):
    monkeypatch.setenv("ACTIVERAG_API_KEY", "  ")
    assert auth_headers() == {}
    with pytest.raises(SettingError):
        api_key_env("0.0.0.0")


def test_the_header_carries_the_key(monkeypatch):
    monkeypatch.setenv("ACTIVERAG_API_KEY", "s3cret")
    assert auth_headers() == {"Authorization": "Bearer s3cret"}


class Recording(_Handler):
    """The fake vLLM, which also notes each request's Authorization header and answers
    /tokenize."""

    seen: list[tuple[str, str | None]] = []

    def do_GET(self) -> None:
        self.seen.append((self.path, self.headers.get("authorization")))
        super().do_GET()

    def do_POST(self) -> None:
        self.seen.append((self.path, self.headers.get("authorization")))
        if self.path == "/tokenize":
            self._body()
            self._json(200, {"tokens": [1, 2], "count": 2, "max_model_len": 64})
            return
        super().do_POST()


@pytest.fixture
def server():
    Recording.seen = []
    fake = FakeServer(["Kelmor lies on the Vedria."])
    fake._httpd.RequestHandlerClass = Recording
    with fake:
        yield fake


async def test_both_clients_send_the_key_on_every_request(monkeypatch, server):
    monkeypatch.setenv("ACTIVERAG_API_KEY", "s3cret")
    client = VLLMClient(server.url, model="fake-model")
    await client.generate("Where?", max_tokens=4)
    await client.token_ids("Where?")
    tokens = VLLMTokens(server.url, "fake-model")
    await tokens.tokenize("Where?")
    await tokens.context_window()
    # each client asks once which server it is (/v1/models), the token client with its window
    assert [path for path, _ in Recording.seen] == ["/v1/models", "/v1/completions", "/tokenize",
                                                   "/v1/models", "/tokenize"]
    assert {auth for _, auth in Recording.seen} == {"Bearer s3cret"}


async def test_without_a_key_no_real_key_is_sent(no_key, server):
    await VLLMTokens(server.url, "fake-model").tokenize("Where?")
    await VLLMClient(server.url, model="fake-model").token_ids("Where?")
    assert [auth for _, auth in Recording.seen] == [None] * 4  # with each one's /v1/models


@pytest.mark.parametrize("key", [None, "wrong"])
async def test_a_refused_key_names_the_variable(monkeypatch, key):
    if key is None:
        monkeypatch.delenv("ACTIVERAG_API_KEY", raising=False)
    else:
        monkeypatch.setenv("ACTIVERAG_API_KEY", key)
    with FakeServer([401, 401]) as fake:
        with pytest.raises(ActiveRagError, match="401.*ACTIVERAG_API_KEY"):
            await VLLMClient(fake.url, model="fake-model").generate("Where?", max_tokens=4)
        with pytest.raises(ActiveRagError, match="401.*ACTIVERAG_API_KEY"):
            await VLLMTokens(fake.url, "fake-model").sample(
                "Where?", 1, 4, temperature=1.0, top_p=1.0, top_k=-1, seed=None)
