"""The chat model an agent talks to carries ACTIVERAG_API_KEY to the server, as every other
client does, and a placeholder without one (issue #38, a survivor of the random mutants). A
fake OpenAI-compatible server records the Authorization header of each chat request."""

import pytest

from activerag.context import ServingContext
from activerag.nodes.chat import chat_model
from activerag.testing.fake_lm import QuietHandler, serving


class _Chat(QuietHandler):
    seen: list[str | None] = []

    def do_POST(self) -> None:
        self._body()
        self.seen.append(self.headers.get("Authorization"))
        self._json(200, {"id": "chat-fake", "object": "chat.completion", "created": 0,
                         "model": "fake-model", "choices": [{
                             "index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "Vedria"}}],
                         "usage": {"prompt_tokens": 3, "completion_tokens": 1,
                                   "total_tokens": 4}})


@pytest.mark.parametrize(("key", "sent"), [("s3cret", "Bearer s3cret"), (None, "Bearer EMPTY"),
                                           ("  ", "Bearer EMPTY")])
def test_the_agent_s_chat_model_sends_the_api_key(key, sent, monkeypatch):
    if key is None:
        monkeypatch.delenv("ACTIVERAG_API_KEY", raising=False)
    else:
        monkeypatch.setenv("ACTIVERAG_API_KEY", key)
    handler = type("Handler", (_Chat,), {"seen": []})
    with serving(handler) as url:
        reply = chat_model(ServingContext(base_url=url, model="fake-model")).invoke("Where?")
    assert reply.content == "Vedria"
    assert handler.seen == [sent]
