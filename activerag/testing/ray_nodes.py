"""Ray nodes of one's own on this machine, for tests and benchmarks of `eval --ray`.

`ray start` processes bound to 127.0.0.1 on free ports, each stopped by its own process id:
never `ray stop`, which stops every Ray process on the machine, other people's included. Ray
binds its listeners to the node's address only when told that clusters span no other machine
(LOOPBACK); without it the GCS and the raylet listen on every interface, and a driver given
127.0.0.1 is sent to the machine's network address instead.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from activerag.testing.dev_server import free_port

LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
"""The environment under which every Ray process binds to 127.0.0.1 alone."""


def isolate() -> None:
    """Set this process's environment (inherited by every Ray process it starts) to LOOPBACK and
    to a Ray token of its own: Ray's token authentication stays on, and neither reads nor writes
    the user's ~/.ray/auth_token. Settings already given are kept."""
    for name, value in {**LOOPBACK, "RAY_AUTH_MODE": "token",
                        "RAY_AUTH_TOKEN": uuid.uuid4().hex + uuid.uuid4().hex}.items():
        os.environ.setdefault(name, value)
STOP_SECONDS = 30.0


def _ray() -> str:
    return str(Path(sys.executable).with_name("ray"))


def _start(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen([_ray(), "start", *args, "--node-ip-address", "127.0.0.1",
                                 "--block"], stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, **LOOPBACK}, start_new_session=True)


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a `ray start --block` process by its pid: SIGTERM, on which it stops the processes it
    started, then SIGKILL if it is still there after STOP_SECONDS."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _joined(address: str, timeout: float = 120.0) -> None:
    """Wait until the head at ADDRESS answers `ray status`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = subprocess.run([_ray(), "status", "--address", address], capture_output=True,
                               text=True, env={**os.environ, **LOOPBACK}, check=False)
        if found.returncode == 0 and "node_" in found.stdout:
            return
        time.sleep(1.0)
    raise RuntimeError(f"the Ray head at {address} did not answer in {timeout:.0f} s")


@contextmanager
def ray_head(folder: Path, cpus: int = 2) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`ray start --head` with CPUS on free ports, its log in FOLDER; yields its address and
    process, stopped by its pid at the end.

    Worker nodes of such a head are started with ray.cluster_utils.Cluster instead of `ray start
    --address`: on a machine with a network address, `ray start` swaps 127.0.0.1 for that
    address unless LOOPBACK is set, and with LOOPBACK set it refuses to start a worker node."""
    port = free_port()
    address = f"127.0.0.1:{port}"
    folder.mkdir(parents=True, exist_ok=True)
    process = _start(["--head", "--port", str(port), "--num-cpus", str(cpus),
                      "--include-dashboard", "false", "--dashboard-port", str(free_port()),
                      "--ray-client-server-port", str(free_port()),
                      "--metrics-export-port", str(free_port())], folder / "head.log")
    try:
        _joined(address)
        yield address, process
    finally:
        stop(process)


@contextmanager
def local_cluster(workers: int = 2, worker_cpus: int = 2) -> Iterator[Any]:
    """ray.cluster_utils.Cluster: a head with no CPUs (actors go to the workers) and WORKERS
    nodes, every process bound to 127.0.0.1; `remove_node` kills one node's processes (a node
    lost), `add_node` adds one. Its shutdown stops its own processes, no others."""
    isolate()
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={
        "node_ip_address": "127.0.0.1", "num_cpus": 0, "include_dashboard": False,
        "dashboard_port": free_port()})
    try:
        for _ in range(workers):
            cluster.add_node(node_ip_address="127.0.0.1", num_cpus=worker_cpus)
        yield cluster
    finally:
        cluster.shutdown()


def actor_node(cluster: Any) -> Any:
    """A worker node of CLUSTER (a local_cluster) whose raylet has an actor of a Ray Data pool
    among its child processes, other than the node this process's driver is attached to; None
    while there is none."""
    import ray

    driver = ray._private.worker.global_worker.node._raylet_socket_name
    for node in list(cluster.worker_nodes):
        if node._raylet_socket_name == driver:
            continue
        raylet = node.all_processes["raylet"][0].process.pid
        for proc in Path("/proc").iterdir():
            try:
                stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
                cmd = (proc / "cmdline").read_bytes()
            except (OSError, IndexError):
                continue
            if int(stat[1]) == raylet and b"MapWorker" in cmd:
                return node
    return None


def descendants(pid: int) -> set[int]:
    """The processes under PID (its children, theirs, ...), from /proc."""
    parent: dict[int, int] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                parent[int(proc.name)] = int((proc / "stat").read_text().rsplit(")", 1)[1]
                                             .split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier} - found
        found |= frontier
    return found


def listening_hosts(pids: set[int]) -> set[str]:
    """The addresses the TCP sockets of PIDS listen on (IPv4-mapped IPv6 as IPv4)."""
    import ipaddress

    from activerag.testing.netcheck import listeners

    inodes: set[str] = set()
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    hosts = set()
    for host, _, inode in listeners():
        if inode in inodes:
            address = ipaddress.ip_address(host)
            hosts.add(str(getattr(address, "ipv4_mapped", None) or address))
    return hosts
