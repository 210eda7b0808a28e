"""A server restarted on the same URL with the other engine: the clients that knew the first one
ask again which engine answers once the first has gone (a failed connection), instead of
sending the new one the old engine's requests for as long as they live (a Studio process's
clients live as long as it does)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from activerag.errors import ActiveRagError
from activerag.serving.dialect import LLAMA_CPP, VLLM
from activerag.serving.lm import VLLMClient
from activerag.serving.token_lm import VLLMTokens
from activerag.testing.fake_lm import Backend, BackendHandler, LoopbackServer


@contextmanager
def on_port(b: Backend, port: int = 0) -> Iterator[int]:
    """Serve B on PORT (0: a free one) of the loopback, yield the port."""
    httpd = LoopbackServer(("127.0.0.1", port), type("H", (BackendHandler,), {"backend": b}))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd.server_port
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def test_the_clients_ask_the_engine_again_after_the_server_went_away(allow_port):
    async def scenario() -> list[str]:
        seen = []
        with on_port(Backend()) as port:
            allow_port(port)  # also while nothing listens there
            url = f"http://127.0.0.1:{port}/v1"
            lm, tokens = VLLMClient(url, "fake-model"), VLLMTokens(url, "fake-model")
            seen += [await lm.engine(), await tokens.engine()]
            await lm.generate("Where?", max_tokens=2)
        # the first server has gone: a request fails to connect
        with pytest.raises(ActiveRagError):
            await lm.generate("Where?", max_tokens=2)
        with pytest.raises(ActiveRagError):
            await tokens.tokenize("Where?")
        with on_port(Backend(owned_by="llamacpp", slots=4), port):
            seen += [await lm.engine(), await tokens.engine()]
        return seen

    assert asyncio.run(scenario()) == [VLLM, VLLM, LLAMA_CPP, LLAMA_CPP]
