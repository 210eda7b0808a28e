"""The servers `activerag serve` started: their pid files and logs, whether a pid file's
process is still a server of ours (a pid may have been reused since), and stopping one."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from activerag.serving import llamacpp, say
from activerag.serving.ports import on_port, read_pid_file, start_time
from activerag.settings import Settings

ENTRYPOINT = "vllm.entrypoints.openai.api_server"


def pid_path(settings: Settings) -> Path:
    """Where the server `activerag serve` started on SETTINGS' port writes its pid."""
    return settings.home / f"vllm-{settings.port}.pid"


def managed_ports(settings: Settings) -> list[int]:
    """Ports of the servers activerag started (their pid files), lowest first."""
    ports = []
    for f in settings.home.glob("vllm-*.pid"):
        try:
            ports.append(int(f.stem.removeprefix("vllm-")))
        except ValueError:
            continue
    return sorted(ports)


def log_file(settings: Settings, engine: str = "vllm") -> Path:
    """The log of the managed ENGINE server on settings.port."""
    return settings.home / f"{'llama' if engine == 'llama.cpp' else 'vllm'}-{settings.port}.log"


def is_our_server(pid: int, port: int, started: int | None = None) -> bool:
    """Whether process PID is a server of ours on PORT (vLLM: `python -m ENTRYPOINT ... --port
    PORT`; `llama-server ... --port PORT`) that started at STARTED: a pid file left by a server
    that is gone (a reboot, a kill -9) may name an unrelated process by now, which must not be
    stopped. STARTED None (a two-line pid file of an older activerag) lets the command line
    alone decide."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    if started is not None and start_time(pid) != started:
        return False
    module = ENTRYPOINT.encode()
    return llamacpp.is_llama_server(argv, port) or (
        module in argv and argv.index(module) > 0 and argv[argv.index(module) - 1] == b"-m"
        and on_port(argv, port))


def stop_server(settings: Settings, timeout: float = 30.0) -> bool:
    """Stop the managed server on settings.port by its pid; return whether one was running.
    A pid file whose process is not that server is removed, and nothing is stopped."""
    pid_file = pid_path(settings)
    if not pid_file.exists():
        return False
    named = read_pid_file(pid_path(settings))
    if named is None:
        pid_file.unlink()
        return False
    pid, started = named
    if not is_our_server(pid, settings.port, started):
        say(f"{pid_file} names process {pid}, which is not a server of ours on port "
            f"{settings.port} (a stale file); removed it and stopped nothing")
        pid_file.unlink()
        return False
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        pid_file.unlink()
        return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _gone(pid):
            break
        time.sleep(0.5)
    else:
        os.killpg(pid, signal.SIGKILL)
        _gone(pid)
    pid_file.unlink()
    return True


def _gone(pid: int) -> bool:
    """Whether process PID has exited; reaps it when this process started it (else a zombie
    of our own child would look alive forever)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return True
    except ChildProcessError:
        pass  # not our child: its parent reaps it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False
