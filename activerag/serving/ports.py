"""What says whose a server port is: the start lock per port, pid files and process start
times (the parts of the server manager that need no vLLM)."""

from __future__ import annotations

import fcntl
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from activerag.errors import ActiveRagError


def start_time(pid: int) -> int | None:
    """When process PID started, in clock ticks after boot (field 22 of /proc/PID/stat); None
    when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])  # fields 3 on follow the ")" of field 2


def read_pid_file(path: Path) -> tuple[int, int | None] | None:
    """The pid and start time that the pid file PATH names (start time None in the two-line
    file of an older activerag); None when there is none or it holds no pid."""
    try:
        lines = path.read_text().split()
        return int(lines[0]), (int(lines[2]) if len(lines) > 2 else None)
    except (OSError, ValueError, IndexError):
        return None


def on_port(argv: list[bytes], port: int) -> bool:
    """Whether the command line ARGV (a /proc cmdline) says `--port PORT`."""
    return b"--port" in argv and argv[argv.index(b"--port") + 1:][:1] == [str(port).encode()]


def listening(host: str, port: int) -> bool:
    """Whether some process accepts connections on HOST:PORT."""
    with socket.socket() as probe:
        probe.settimeout(1.0)
        return probe.connect_ex((host, port)) == 0


@contextmanager
def start_lock(home: Path, port: int) -> Iterator[None]:
    """Hold the start lock of PORT (HOME/vllm-PORT.lock) for the block, or refuse when another
    process holds it: two starts on one port would both report ready, one of them falsely."""
    home.mkdir(parents=True, exist_ok=True)
    with open(home / f"vllm-{port}.lock", "a+", encoding="utf-8") as file:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            file.seek(0)
            holder = file.read().strip() or "a process"
            raise ActiveRagError(
                f"another activerag serve ({holder}) is starting a server on port {port}; wait "
                "until it is ready (serve then reuses it) or serve on another --port") from None
        file.truncate(0)
        file.write(f"pid {os.getpid()}\n")
        file.flush()
        try:
            yield
        finally:
            file.truncate(0)
            fcntl.flock(file, fcntl.LOCK_UN)
