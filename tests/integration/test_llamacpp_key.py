"""ACTIVERAG_API_KEY against a real llama-server: the server activerag starts refuses a request
that carries no key and serves one that carries it (it reads LLAMA_API_KEY, not vLLM's
variable: given only that one, it served everyone), and a llama-server started without the key
is refused by `serve` before any request of a run. Each server is SmolLM2's GGUF on a port of
its own, stopped by its own process id."""

import os
import signal
import subprocess

import httpx
import pytest

from activerag.errors import ActiveRagError
from activerag.serving import llamacpp, server
from activerag.serving.catalogue import FAST_MODEL
from activerag.serving.models import fetch_gguf
from activerag.testing import processes as realprocs

pytestmark = pytest.mark.integration
KEY = "s3cret-test-key"


def completion(url: str, key: str | None) -> int:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.post(f"{url}/completions", headers=headers, timeout=120,
                      json={"model": FAST_MODEL.served_name, "prompt": "One, two,",
                            "max_tokens": 2}).status_code


def test_the_llama_server_activerag_starts_asks_for_the_key(monkeypatch):
    monkeypatch.setenv("ACTIVERAG_API_KEY", KEY)
    with realprocs.own_server(None, FAST_MODEL, 1024,
                              launch=server.Launch("llama.cpp", parallel=1)) as url:
        assert completion(url, None) == 401
        assert completion(url, "another key") == 401
        assert completion(url, KEY) == 200


def test_serve_refuses_a_llama_server_started_without_the_set_key(monkeypatch):
    monkeypatch.delenv("ACTIVERAG_API_KEY", raising=False)
    settings = realprocs.settings_on(realprocs.free_port())
    binary = llamacpp.ensure_binary(settings)
    gguf = fetch_gguf(settings.models / "gguf", FAST_MODEL)
    cmd = llamacpp.command(binary, gguf, settings, 1024, 1, None, FAST_MODEL.served_name)
    env = {k: v for k, v in llamacpp.environment(binary).items()
           if k not in ("LLAMA_API_KEY", "VLLM_API_KEY")}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        url = f"http://{settings.host}:{settings.port}/v1"
        server.wait_until_ready(url, proc, settings.home / "none.log", timeout=120)
        assert completion(url, None) == 200  # open: started by hand without a key
        monkeypatch.setenv("ACTIVERAG_API_KEY", KEY)
        with pytest.raises(ActiveRagError, match="answered a request without the key"):
            server.start_server(settings, model=FAST_MODEL,
                                launch=server.Launch("llama.cpp", parallel=1))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
