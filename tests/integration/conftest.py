"""Fixtures over real components: a vLLM server this session starts, and a demo store."""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from activerag.demo import DEMO_CORPUS
from activerag.serving import running, server
from activerag.serving.catalogue import CPU_VLLM_MODEL, FAST_MODEL, CatalogueModel
from activerag.stores.corpus import Corpus
from activerag.testing import processes as realprocs


@pytest.fixture(scope="session")
def vllm_url() -> Iterator[str]:
    """The base URL of a vLLM server this session starts on its own port and stops at the end.

    The port is ACTIVERAG_TEST_PORT, else a free one; if anything already listens there the
    session fails instead of testing someone else's server. The model is the one cached under
    ACTIVERAG_HOME. A developer can point the tests at a running server instead by setting
    ACTIVERAG_TEST_BASE_URL (e.g. http://127.0.0.1:8765/v1); CI never sets it, so CI always
    runs the code that starts and stops the server. Where another CPU vLLM is busy, start
    this one with VLLM_CPU_OMP_THREADS_BIND=1: both pin their worker to core 0 by default,
    and the second then took over 10 minutes to start instead of one.
    """
    yield from _session_server("ACTIVERAG_TEST_BASE_URL", "ACTIVERAG_TEST_PORT",
                               FAST_MODEL)


STRONG_TEST_WINDOW = 2048
"""The strong test server's context length: long enough for FB-RAG's reads, short enough that
a long context must be cut to fit."""


@pytest.fixture(scope="session")
def strong_url() -> Iterator[str]:
    """FB-RAG's strong reader on vLLM: the default model of vLLM's CPU build (Qwen2.5-Coder-0.5B,
    fetched, checked, converted and served by the code users run), on a port of its own, with
    a STRONG_TEST_WINDOW-token window. ACTIVERAG_TEST_STRONG_URL points the tests at a running
    one instead."""
    yield from _session_server("ACTIVERAG_TEST_STRONG_URL", "ACTIVERAG_TEST_STRONG_PORT",
                               CPU_VLLM_MODEL, STRONG_TEST_WINDOW)


LLAMA_TEST_WINDOW = 4096
"""Each llama-server test slot's context: the paper-style prompts and FB-RAG's reads fit."""


@pytest.fixture(scope="session")
def llama_url() -> Iterator[str]:
    """llama.cpp's llama-server, built from the pinned source on first use (6-13 minutes on 2
    cores, then kept under ACTIVERAG_HOME), serving SmolLM2's GGUF as shipped on a port of its
    own with the default slots (`serve`'s --parallel). ACTIVERAG_TEST_LLAMA_URL points the
    tests at a running one."""
    yield from _session_server("ACTIVERAG_TEST_LLAMA_URL", "ACTIVERAG_TEST_LLAMA_PORT",
                               FAST_MODEL, LLAMA_TEST_WINDOW, launch=server.Launch("llama.cpp"))


def _session_server(url_var: str, port_var: str, model: CatalogueModel,
                    max_model_len: int | None = None, cores: str | None = None,
                    launch: server.Launch | None = None) -> Iterator[str]:
    if url := os.environ.get(url_var):
        running.server_models(url)
        yield url
        return
    port = int(os.environ.get(port_var) or 0) or None
    try:
        with realprocs.own_server(port, model, max_model_len, cores, launch=launch) as url:
            yield url
    except realprocs.PortTaken as exc:
        pytest.fail(f"{exc}; free the port, set {port_var} to another one, or set {url_var} to "
                    "test a running server", pytrace=False)
    except realprocs.ServerLeftRunning as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def demo_store(tmp_path_factory) -> Path:
    """A fresh corpus folder holding the demo corpus in BM25 and Chroma."""
    path = tmp_path_factory.mktemp("demo-store")
    Corpus(path).ingest(DEMO_CORPUS, progress=False)
    return path


@pytest.fixture(scope="module")
def replica_url() -> Iterator[str]:
    """A second SmolLM2 server of this module's own, on a port of its own, that a test may
    kill: never a running one (no URL variable), pinned off the first server's core."""
    yield from _session_server("ACTIVERAG_NO_SUCH_VARIABLE", "ACTIVERAG_TEST_REPLICA_PORT",
                               FAST_MODEL, cores="1")
