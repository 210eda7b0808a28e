"""Run the LangGraph dev server (what LangGraph Studio connects to) over langgraph.json's graphs,
offline, on a port of its own, to test graphs through the server's API as Studio runs them.

    with dev_server(Path("."), Path("dev.log"), {"ACTIVERAG_BASE_URL": url}) as server_url:
        client = langgraph_sdk.get_client(url=server_url)

activerag's integration tests and its load benchmark start it so. It needs the dev extra
(langgraph-cli[inmem])."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx

from activerag.errors import ActiveRagError

OFFLINE = {"LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "1",
           "LANGSMITH_TRACING": "false"}
"""What keeps `langgraph dev` from calling home (analytics, version check, LangSmith)."""


class DevServerError(ActiveRagError):
    """The LangGraph dev server did not start or did not answer."""


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now, to start a server of one's own on (the langgraph CLI
    silently moves off a taken one, e.g. 2024)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"


@contextmanager
def dev_server(root: Path, log: Path, env: Mapping[str, str] | None = None, *,
               host: str = "127.0.0.1", port: int | None = None, jobs: int | None = None,
               timeout: float = 120.0, attempts: int = 3) -> Iterator[str]:
    """Serve the graphs of ROOT/langgraph.json with `langgraph dev` and yield its URL; stop it
    on exit. ENV is added to this process's environment (e.g. ACTIVERAG_BASE_URL,
    ACTIVERAG_STORE_DIR); JOBS caps the runs it executes at once (the CLI's default is 10).
    Without a PORT a free one is picked, and picked again (up to ATTEMPTS times) when another
    process binds it while the server starts. The server's output goes to LOG, whose tail an
    error quotes."""
    cli = Path(sys.executable).parent / "langgraph"
    if not cli.exists():
        raise DevServerError(f"{cli} does not exist; install the dev extra "
                             f"(pip install -e '.[dev]', which has langgraph-cli[inmem])")
    log.parent.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, attempts + 1):
        at = port or free_port(host)
        args = [str(cli), "dev", "--no-browser", "--no-reload", "--host", host, "--port", str(at)]
        if jobs is not None:
            args += ["--n-jobs-per-worker", str(jobs)]
        with open(log, "wb") as out:
            proc = subprocess.Popen(args, cwd=root, env={**os.environ, **OFFLINE, **(env or {})},
                                    stdout=out, stderr=subprocess.STDOUT)
        url = f"http://{host}:{at}"
        try:
            if _started(proc, url, log, timeout):
                yield url
                return
        finally:
            _stop(proc)
        if port is not None or attempt == attempts:
            raise DevServerError(f"langgraph dev could not bind {host}:{at}, which another "
                                 f"process took:\n{_tail(log)}")
    raise AssertionError("unreachable")


def _started(proc: subprocess.Popen[bytes], url: str, log: Path, timeout: float) -> bool:
    """Wait until PROC answers on URL (True); False when it exited because its port was taken
    meanwhile; raise when it failed otherwise or did not answer within TIMEOUT seconds."""
    deadline = time.monotonic() + timeout
    while not _ok(url):
        if proc.poll() is not None:
            if "address already in use" in _tail(log):
                return False
            raise DevServerError(f"langgraph dev exited with {proc.returncode}:\n{_tail(log)}")
        if time.monotonic() > deadline:
            raise DevServerError(f"langgraph dev did not answer on {url} within {timeout:.0f}s:"
                                 f"\n{_tail(log)}")
        time.sleep(0.5)
    return True


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=30)


def _ok(url: str) -> bool:
    try:
        return httpx.get(f"{url}/ok", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False
