"""Fixtures over real components: a vLLM server this session starts, and a demo store."""

import contextlib
import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from activerag import server
from activerag.demo import DEMO_CORPUS
from activerag.settings import Settings
from activerag.stores.corpus import Corpus


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _listening(host: str, port: int) -> bool:
    """Whether anything accepts TCP connections on HOST:PORT."""
    try:
        with socket.create_connection((host, port), timeout=2.0):
            return True
    except OSError:
        return False


def _group_alive(pgid: int) -> bool:
    """Whether any process of group PGID still runs; zombies (exited, unreaped) do not count."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        return True
    for stat in proc.glob("[0-9]*/stat"):
        try:
            state, _ppid, group = stat.read_text().rsplit(")", 1)[1].split()[:3]
        except OSError:
            continue  # exited while we looked
        if int(group) == pgid and state != "Z":
            return True
    return False


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
                               server.DEFAULT_MODEL)


STRONG_TEST_WINDOW = 2048
"""The strong test server's context length: long enough for FB-RAG's reads, short enough that
a long context must be cut to fit."""


@pytest.fixture(scope="session")
def strong_url() -> Iterator[str]:
    """FB-RAG's strong reader: gemma-3-270m from the catalogue (fetched, converted and served
    by the code users run), on a port of its own, with a STRONG_TEST_WINDOW-token window.
    ACTIVERAG_TEST_STRONG_URL points the tests at a running one instead."""
    yield from _session_server("ACTIVERAG_TEST_STRONG_URL", "ACTIVERAG_TEST_STRONG_PORT",
                               server.catalogue_model("gemma-3-270m"), STRONG_TEST_WINDOW)


def _session_server(url_var: str, port_var: str, model: server.CatalogueModel,
                    max_model_len: int | None = None) -> Iterator[str]:
    if url := os.environ.get(url_var):
        server.server_models(url)
        yield url
        return
    settings = Settings.from_env()
    port = int(os.environ.get(port_var) or _free_port(settings.host))
    settings = settings.model_copy(update={"port": port, "base_url": None})
    if _listening(settings.host, port):
        pytest.fail(f"something already listens on {settings.host}:{port}, where the tests "
                    f"start their own vLLM server; free the port, set {port_var} to another "
                    f"one, or set {url_var} to test a running server", pytrace=False)
    pid_file = server._pid_file(settings)
    # A pid file left by a killed session names a process that is gone, or someone else's.
    pid_file.unlink(missing_ok=True)
    try:
        yield server.start_server(settings, max_model_len=max_model_len, model=model)
    finally:
        # a failed start has stopped the server already and removed its pid file
        _stop(settings, int(pid_file.read_text().split()[0]) if pid_file.exists() else None)


def _stop(settings: Settings, pgid: int | None, timeout: float = 60.0) -> None:
    """Stop the session's server and fail unless its processes and its port are gone."""
    server.stop_server(settings)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = pgid is not None and _group_alive(pgid)
        if not alive and not _listening(settings.host, settings.port):
            return
        time.sleep(0.5)
    if pgid is not None and _group_alive(pgid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
    pytest.fail(f"the test vLLM server (process group {pgid}) still ran or its port "
                f"{settings.port} still listened {timeout:.0f}s after it was stopped",
                pytrace=False)


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
    before = os.environ.get("VLLM_CPU_OMP_THREADS_BIND")
    os.environ["VLLM_CPU_OMP_THREADS_BIND"] = "1"
    try:
        yield from _session_server("ACTIVERAG_NO_SUCH_VARIABLE", "ACTIVERAG_TEST_REPLICA_PORT",
                                   server.DEFAULT_MODEL)
    finally:
        if before is None:
            os.environ.pop("VLLM_CPU_OMP_THREADS_BIND", None)
        else:
            os.environ["VLLM_CPU_OMP_THREADS_BIND"] = before
