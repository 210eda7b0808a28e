"""Fixtures over real components: the vLLM server (started or reused) and a demo store."""

import os
from pathlib import Path

import pytest

from activerag.demo import DEMO_CORPUS
from activerag.settings import Settings
from activerag.stores.corpus import Corpus


@pytest.fixture(scope="session")
def vllm_url() -> str:
    """The base URL of a real vLLM server: reuse one that answers, else start one."""
    from activerag import server

    if os.environ.get("ACTIVERAG_BASE_URL"):
        server.server_models(os.environ["ACTIVERAG_BASE_URL"])
        yield os.environ["ACTIVERAG_BASE_URL"]
        return
    settings = Settings.from_env()
    try:
        server.server_models(settings.url, timeout=2.0)
        started = False
    except Exception:
        started = True
    url = server.start_server(settings)
    yield url
    if started:
        server.stop_server(settings)


@pytest.fixture(scope="session")
def demo_store(tmp_path_factory) -> Path:
    """A fresh corpus folder holding the demo corpus in BM25 and Chroma."""
    path = tmp_path_factory.mktemp("demo-store")
    Corpus(path).ingest(DEMO_CORPUS, progress=False)
    return path
