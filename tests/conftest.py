"""Shared test setup: no network calls from unit tests."""

import errno
import ipaddress
import socket
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import pytest

_INET = (socket.AF_INET, socket.AF_INET6)
_listening: weakref.WeakSet[socket.socket] = weakref.WeakSet()
_listening_lock = threading.Lock()
_call_failed = pytest.StashKey[bool]()
_refused = pytest.StashKey[list[str]]()


class NetworkBlocked(ConnectionRefusedError):
    """A unit test tried to reach a server it did not start."""


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _is_literal(host: object) -> bool:
    """Whether resolving HOST needs no name lookup."""
    if host is None or host in ("", "localhost", b"localhost"):
        return True
    name = host.decode() if isinstance(host, bytes) else str(host)
    try:
        ipaddress.ip_address(name.split("%")[0])
    except ValueError:
        return False
    return True


def _own_ports() -> set[int]:
    """Ports this process listens on now: the servers the tests started themselves."""
    ports = set()
    with _listening_lock:
        for sock in _listening:
            try:
                ports.add(sock.getsockname()[1])
            except OSError:
                continue  # closed since it listened
    return ports


def _refusal(nodeid: str, targets: list[str]) -> str:
    return (f"unit tests make no network calls, and {nodeid} tried to reach "
            f"{', '.join(dict.fromkeys(targets))}. Start a fake server in the test (servers in "
            "this process are allowed), register another process's port with the `allow_port` "
            "fixture, or mark the test `integration` if it needs a real component")


@pytest.fixture(scope="session", autouse=True)
def _record_listeners() -> Iterator[None]:
    """Remember every socket this process listens on, so its tests may connect to it."""
    real_listen = socket.socket.listen

    def listen(self: socket.socket, *args: int) -> None:
        real_listen(self, *args)
        if self.family in _INET:
            with _listening_lock:
                _listening.add(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "listen", listen)
        yield


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    if report.when == "call":
        item.stash[_call_failed] = report.failed
        # Clients often wrap the refusal in an error that drops its message; show it here.
        if report.failed and item.stash.get(_refused, []):
            report.sections.append(("network calls refused",
                                    _refusal(item.nodeid, item.stash[_refused])))
    return report


@pytest.fixture(autouse=True)
def _no_network(request: pytest.FixtureRequest) -> Iterator[set[int]]:
    """Refuse connections from unit tests, except to loopback servers the test started.

    A server the test runs in this process (an HTTPServer on port 0, say) is allowed on its
    own; one in another process is allowed by passing its port to the `allow_port` fixture.
    Tests marked `integration` talk to real components and are not guarded. A refused
    attempt raises NetworkBlocked and, if the code under test swallowed that, fails the test.
    """
    allowed: set[int] = set()
    if request.node.get_closest_marker("integration"):
        yield allowed
        return
    attempts: list[str] = []
    request.node.stash[_refused] = attempts

    def refusal(target: str) -> str:
        attempts.append(target)
        return _refusal(request.node.nodeid, [target])

    def check(sock: socket.socket, address: object) -> str | None:
        if sock.family not in _INET or not isinstance(address, tuple):
            return None
        host, port = str(address[0]), int(address[1])
        if _is_loopback(host) and (port in allowed or port in _own_ports()):
            return None
        return refusal(f"{host}:{port}")

    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: object) -> None:
        if (message := check(self, address)) is not None:
            raise NetworkBlocked(errno.ECONNREFUSED, message)
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: object) -> int:
        if check(self, address) is not None:
            return errno.ECONNREFUSED
        return real_connect_ex(self, address)

    def getaddrinfo(host: object, *args: object, **kwargs: object) -> list:
        if not _is_literal(host):
            raise NetworkBlocked(errno.ECONNREFUSED, refusal(f"{host!r} (a name lookup)"))
        return real_getaddrinfo(host, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", connect)
        mp.setattr(socket.socket, "connect_ex", connect_ex)
        mp.setattr(socket, "getaddrinfo", getaddrinfo)
        yield allowed
    if attempts and not request.node.stash.get(_call_failed, False):
        pytest.fail(_refusal(request.node.nodeid, attempts), pytrace=False)


@pytest.fixture
def allow_port(_no_network: set[int]) -> Callable[[int], None]:
    """Let this unit test connect to a loopback port served by a process it started."""
    return _no_network.add


@pytest.fixture
def shared_data_dir():
    """The shared evaluation data folder; CI has it beside the checkout, a bare clone elsewhere
    may not, and a test that reads it is then skipped with what to set."""
    from activerag.errors import ActiveRagError
    from activerag.settings import shared_data

    try:
        return shared_data()
    except ActiveRagError:
        pytest.skip("../shared/data not found; set ACTIVERAG_DATA to run the tests that read it")


@pytest.fixture
def own_home(tmp_path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A CLI test's own ACTIVERAG_HOME under TMP_PATH, none of the environment's endpoints,
    store or model settings, and no probe remembered from another test."""
    from activerag.serving import probe

    monkeypatch.setenv("ACTIVERAG_HOME", str(tmp_path / "home"))
    for name in ("ACTIVERAG_STORE_DIR", "ACTIVERAG_PORT", "ACTIVERAG_BASE_URL",
                 "ACTIVERAG_STRONG_URL", "ACTIVERAG_LIGHT_URL", "ACTIVERAG_MODEL"):
        monkeypatch.delenv(name, raising=False)
    probe.forget()
    yield
    probe.forget()


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A throwaway PostgreSQL cluster of this session's own on a free loopback port, stopped
    and removed after the session: the database of the ACTIVERAG_DATABASE_URL tests."""
    from activerag.testing.postgres import PostgresMissing, throwaway_postgres

    try:
        with throwaway_postgres() as url:
            yield url
    except PostgresMissing as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(autouse=True)
def _lm_cache_left_off() -> Iterator[None]:
    """Fail a test that leaves the LM cache (activerag.serving.cache) on, and turn it off: the
    tests after it would be answered from the cache without asking their servers."""
    yield
    import sys

    cache = sys.modules.get("activerag.serving.cache")
    if cache is not None and cache.state() != (None, None):
        left = cache.state()
        cache.restore((None, None))
        pytest.fail(f"this test left the LM cache on ({left}); turn it off before it ends "
                    "(cache.restore((None, None)), or monkeypatch the module's state)")


@pytest.fixture
def closed_figures(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """The figures the code under test closes, kept open for the test to read; closed for real
    afterwards, so that pyplot does not pile up figures across the suite."""
    import matplotlib.pyplot as plt

    close = plt.close
    figures: list[Any] = []
    monkeypatch.setattr(plt, "close", figures.append)
    yield figures
    for fig in figures:
        close(fig)


@pytest.fixture
def results_script(tmp_path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], Any]:
    """Import one of results/'s report scripts by NAME, run from a fresh checkout root (tmp_path,
    with an empty results/ to write into)."""
    import importlib
    from pathlib import Path

    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "results"))
    (tmp_path / "results").mkdir()
    return importlib.import_module
