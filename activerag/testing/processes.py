"""Real processes for integration and fault tests: start them, kill them, read what they left.

vLLM servers on ports of their own (never a running one), `activerag ask`, `eval` and `ingest`
as processes of their own (so that kill -9 is a real crash), and what they left on disk read
back from another process. A test that needs a real server of its own writes

    with own_server() as base_url:
        ...  # point the graph's context at base_url

and the server is stopped afterwards, or the block fails with ServerLeftRunning. activerag's
integration tests and benchmarks/robustness/faults.py use these.
"""

import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from activerag.serving import server
from activerag.serving.catalogue import FAST_MODEL, CatalogueModel
from activerag.settings import Settings
from activerag.testing.dev_server import free_port


class PortTaken(RuntimeError):
    """Something already listens where a server of our own was to start."""


class ServerLeftRunning(RuntimeError):
    """A server we stopped still ran, or its port still listened."""


def listening(host: str, port: int) -> bool:
    """Whether anything accepts TCP connections on HOST:PORT."""
    try:
        with socket.create_connection((host, port), timeout=2.0):
            return True
    except OSError:
        return False


def group_alive(pgid: int) -> bool:
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


def settings_on(port: int) -> Settings:
    """The environment's settings for a managed server on PORT."""
    return Settings.from_env().model_copy(update={"port": port, "base_url": None})


def settings_of(url: str) -> Settings:
    """The settings of the managed server that answers at URL."""
    return settings_on(urlparse(url).port or 80)


def server_pgid(settings: Settings) -> int | None:
    """The process group of the managed server on settings.port, from its pid file."""
    pid_file = server.pid_path(settings)
    return int(pid_file.read_text().split()[0]) if pid_file.exists() else None


def requests_logged(url: str) -> int:
    """Completion requests the managed server at URL has received since it (last) started, from
    its log: what a replica was asked, aborted streams included."""
    settings = settings_of(url)
    log = settings.home / f"vllm-{settings.port}.log"
    return log.read_text(errors="replace").count("POST /v1/completions") if log.exists() else 0


def kill_server(url: str) -> int:
    """Kill the managed server at URL with -9 (its whole process group), as a crash would;
    its pid file is left behind, as a crash leaves it. Return the group killed."""
    pgid = server_pgid(settings_of(url))
    if pgid is None:
        raise RuntimeError(f"no pid file for the server at {url}")
    os.killpg(pgid, signal.SIGKILL)
    return pgid


@contextlib.contextmanager
def own_server(port: int | None = None, model: CatalogueModel = FAST_MODEL,
               max_model_len: int | None = None, cores: str | None = None,
               extra_args: Sequence[str] = (), launch: server.Launch | None = None
               ) -> Iterator[str]:
    """A server of our own on PORT (else a free one; vLLM unless LAUNCH names another engine),
    its base URL for the block; stopped
    afterwards, whoever restarted it meanwhile. CORES pins its worker
    (VLLM_CPU_OMP_THREADS_BIND): two CPU servers on one busy core slowed a start ten-fold.
    EXTRA_ARGS go to vLLM (server.TOOL_CALL_ARGS: chat tool calls)."""
    settings = Settings.from_env()
    settings = settings_on(port or free_port(settings.host))
    if listening(settings.host, settings.port):
        raise PortTaken(f"something already listens on {settings.host}:{settings.port}, where "
                        "a server of our own was to start")
    # A pid file left by a killed session names a process that is gone, or someone else's.
    server.pid_path(settings).unlink(missing_ok=True)
    try:
        url = start(settings, model, max_model_len, cores, extra_args, launch)
    except BaseException:
        # a failed start has stopped the server already and removed its pid file
        stop(settings, server_pgid(settings))
        raise
    try:
        yield url
    finally:
        stop(settings, server_pgid(settings))


def start(settings: Settings, model: CatalogueModel = FAST_MODEL,
          max_model_len: int | None = None, cores: str | None = None,
          extra_args: Sequence[str] = (), launch: server.Launch | None = None) -> str:
    """Start (or start again) the managed server on settings.port, its worker pinned to CORES;
    its base URL once it has answered."""
    before = os.environ.get("VLLM_CPU_OMP_THREADS_BIND")
    if cores is not None:
        os.environ["VLLM_CPU_OMP_THREADS_BIND"] = cores
    try:
        return server.start_server(settings, max_model_len=max_model_len, model=model,
                                   launch=launch or server.Launch("vllm", extra_args))
    finally:
        if before is None:
            os.environ.pop("VLLM_CPU_OMP_THREADS_BIND", None)
        else:
            os.environ["VLLM_CPU_OMP_THREADS_BIND"] = before


def stop(settings: Settings, pgid: int | None, timeout: float = 60.0) -> None:
    """Stop the managed server on settings.port; raise unless its processes and port are gone."""
    server.stop_server(settings)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = pgid is not None and group_alive(pgid)
        if not alive and not listening(settings.host, settings.port):
            return
        time.sleep(0.5)
    if pgid is not None and group_alive(pgid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
    raise ServerLeftRunning(f"the server of our own (process group {pgid}) still ran or "
                            f"its port {settings.port} still listened {timeout:.0f}s after it "
                            "was stopped")


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """`activerag ARGS` in a process of its own, its output piped."""
    return subprocess.Popen([sys.executable, "-m", "activerag.cli", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})


def ask(url: str, store: Path, checkpoints: Path, question: str, thread: str = "t",
        max_sentences: int = 4) -> subprocess.Popen[str]:
    """`activerag ask --thread` answering QUESTION with FLARE, retrieving for every sentence
    (θ = 1), checkpointed in CHECKPOINTS."""
    return cli("ask", question, "--json", "--theta", "1.0", "--max-sentences",
               str(max_sentences), "--base-url", url, "--store", str(store), "--thread", thread,
               "--checkpoints", str(checkpoints))


def ingest(source: Path, store: Path) -> subprocess.Popen[str]:
    """`activerag ingest SOURCE` into STORE (BM25 and Chroma)."""
    return cli("ingest", str(source), "--store", str(store))


def lines(file: Path) -> int:
    """Newlines in FILE (0 when it does not exist)."""
    return file.read_bytes().count(b"\n") if file.exists() else 0


def thread_state(checkpoints: Path, thread: str = "t") -> tuple[Any, list[Any]]:
    """THREAD's state and checkpoint history (newest first) as another process reads them from
    disk; sqlite3.OperationalError while the file's tables are being made."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    from activerag.graphs.flare import graph

    conn = sqlite3.connect(checkpoints)
    try:
        g = graph.copy(update={"checkpointer": SqliteSaver(conn)})
        config = {"configurable": {"thread_id": thread}}
        return g.get_state(config), list(g.get_state_history(config))
    finally:
        conn.close()


def kill_when(process: subprocess.Popen[str], checkpoints: Path, ready: Callable[[Any], bool],
              timeout: float = 300, thread: str = "t") -> Any:
    """Kill -9 PROCESS once READY(its thread's state) holds, and return that state.

    The process is stopped (SIGSTOP) while its checkpoints are read, so that the state READY
    sees is the one the kill leaves: a run cannot finish between the read and the kill.
    AssertionError when the process ends first or READY does not hold within TIMEOUT s."""
    import activerag.graphs.flare  # noqa: F401  (thread_state's imports, before the clock starts)

    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            err = process.stderr.read() if process.stderr else ""
            raise AssertionError(f"the run ended before it was killed: {err}")
        assert time.monotonic() < deadline, f"the run's state was not ready within {timeout} s"
        freeze(process.pid)
        try:
            state = thread_state(checkpoints, thread)[0] if checkpoints.exists() else None
        except sqlite3.OperationalError:  # the tables are being made, or a write is under way
            state = None
        if state is not None and ready(state):
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
            return state
        os.kill(process.pid, signal.SIGCONT)
        time.sleep(0.2)


def freeze(pid: int, timeout: float = 5.0) -> None:
    """SIGSTOP PID and wait until it has stopped (or ended): the signal is delivered after
    kill() returns, and until then the process runs on. Linux says so in /proc; elsewhere, a
    short wait. SIGCONT lets it go on."""
    os.kill(pid, signal.SIGSTOP)
    if not Path("/proc/self/stat").exists():
        time.sleep(0.05)
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process_state(pid) not in ("T", "t", "Z", "X", None):
        time.sleep(0.001)


def process_state(pid: int) -> str | None:
    """PID's state letter in /proc (R running, S sleeping, T stopped, Z zombie, ...); None
    when it is gone or the system has no /proc."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def threads(checkpoints: Path) -> list[str]:
    """The threads that have checkpoints in CHECKPOINTS."""
    if not checkpoints.exists():
        return []
    conn = sqlite3.connect(checkpoints)
    try:
        return [t for (t,) in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")]
    except sqlite3.OperationalError:  # no table yet
        return []
    finally:
        conn.close()


def chroma_ids(store: Path) -> list[str]:
    """The ids in STORE's Chroma collection, read by a process of its own (this one's Chroma
    client would keep what it read before another process wrote)."""
    code = ("import json, sys, chromadb\n"
            "from chromadb.config import Settings\n"
            "from activerag.stores.chroma import COLLECTION\n"
            "client = chromadb.PersistentClient(sys.argv[1], "
            "settings=Settings(anonymized_telemetry=False))\n"
            "names = [c.name for c in client.list_collections()]\n"
            "ids = client.get_collection(COLLECTION).get(include=[])['ids'] "
            "if COLLECTION in names else []\n"
            "print(json.dumps(ids))\n")
    if not (store / "chroma").exists():
        return []
    done = subprocess.run([sys.executable, "-c", code, str(store / "chroma")],
                          capture_output=True, text=True, check=True)
    return list(json.loads(done.stdout))
