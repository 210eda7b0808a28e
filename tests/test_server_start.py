"""`activerag serve` on one port, twice at once, and pid files that name the wrong process:
small stand-in servers (a Python HTTP server answering /v1/models) in place of vLLM."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest

from activerag.errors import ActiveRagError
from activerag.serving import ports, server
from activerag.settings import Settings

ENTRYPOINT = "vllm.entrypoints.openai.api_server"
STAND_IN = """
import http.server, json, os, sys, time
time.sleep(float(sys.argv[sys.argv.index("--delay") + 1]))
KEY = None if "--open" in sys.argv else os.environ.get("VLLM_API_KEY")
class H(http.server.BaseHTTPRequestHandler):
    def _ok(self):
        body = json.dumps({"data": [{"id": "stand-in"}]}).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body)))
        self.end_headers(); self.wfile.write(body)
    do_GET = _ok
    def do_POST(self):
        if KEY and self.headers.get("Authorization") != f"Bearer {KEY}":
            self.send_response(401); self.send_header("Content-Length", "0"); self.end_headers()
            return
        self._ok()
    def log_message(self, *a): pass
port = int(sys.argv[sys.argv.index("--port") + 1])
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def entrypoint_package(root: Path) -> Path:
    """A folder holding a stand-in `vllm.entrypoints.openai.api_server` module, so that a
    sleeper's argv reads `python -m vllm.entrypoints.openai.api_server` as a server's does."""
    pkg = root / "vllm" / "entrypoints" / "openai"
    pkg.mkdir(parents=True)
    for d in (root / "vllm", root / "vllm" / "entrypoints", pkg):
        (d / "__init__.py").write_text("")
    (pkg / "api_server.py").write_text(STAND_IN)
    return root


def exec_done(proc: subprocess.Popen, marker: bytes) -> None:
    for _ in range(100):  # until the child has exec'd (its argv is the parent's before)
        if marker in Path(f"/proc/{proc.pid}/cmdline").read_bytes():
            return
        time.sleep(0.05)


@pytest.fixture
def stand_in_vllm(tmp_path, monkeypatch):
    """start_server launches the stand-in (answering after --delay 1 s) instead of vLLM."""
    root = entrypoint_package(tmp_path / "pkgs")
    monkeypatch.setitem(sys.modules, "vllm", types.ModuleType("vllm"))
    monkeypatch.setenv("PYTHONPATH", str(root))

    def command(model_dir, settings, max_model_len, gpu, served_name):
        return [sys.executable, "-m", ENTRYPOINT, "--port", str(settings.port), "--delay", "1"]

    monkeypatch.setattr(server, "vllm_command", command)
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "config.json").write_text("{}")
    return model_dir


def test_a_second_serve_on_a_port_being_started_is_refused_and_the_first_keeps_its_pid_file(
        tmp_path, stand_in_vllm, allow_port):
    settings = Settings(home=tmp_path / "home", port=free_port(), host="127.0.0.1")
    allow_port(settings.port)
    first: dict = {}
    thread = threading.Thread(target=lambda: first.update(
        url=server.start_server(settings, stand_in_vllm, 512, timeout=30)))
    thread.start()
    pid_file = tmp_path / "home" / f"vllm-{settings.port}.pid"
    try:
        for _ in range(200):
            if pid_file.exists():
                break
            time.sleep(0.02)
        pid = int(pid_file.read_text().split()[0])
        with pytest.raises(ActiveRagError, match=r"another activerag serve.*starting.*--port"):
            server.start_server(settings, stand_in_vllm, 512, timeout=30)
        thread.join(30)
        assert first["url"].endswith(f":{settings.port}/v1")
        assert int(pid_file.read_text().split()[0]) == pid
        assert server.is_our_server(pid, settings.port, ports.start_time(pid))
        # started and answering: a later serve reuses it and leaves its pid file alone
        assert server.start_server(settings, stand_in_vllm, 512) == first["url"]
        assert int(pid_file.read_text().split()[0]) == pid
    finally:
        thread.join(30)
        stopped = server.stop_server(settings)
        for started in stand_ins(settings.port):  # a bug must not leave ours running
            os.killpg(started, signal.SIGKILL)
    assert stopped


def stand_ins(port: int) -> list[int]:
    """The stand-in servers on PORT still running (this test's own: ports are free ones)."""
    mine = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if ENTRYPOINT.encode() in argv and b"--delay" in argv and str(port).encode() in argv:
            mine.append(int(proc.name))
    return mine


def test_a_process_with_vllm_in_an_argument_and_the_port_is_not_a_server():
    notebook = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)",
                                 "--port", "8765", "--notebook-dir", "/home/me/vllm-experiments"])
    try:
        exec_done(notebook, b"notebook")
        assert not server.is_our_server(notebook.pid, 8765)
    finally:
        notebook.kill()
        notebook.wait()


def test_a_server_is_ours_only_with_the_start_time_its_pid_file_records(tmp_path):
    root = entrypoint_package(tmp_path)
    fake = subprocess.Popen([sys.executable, "-m", ENTRYPOINT, "--port", "9876", "--delay",
                             "60"], cwd=root)
    try:
        exec_done(fake, b"api_server")
        started = ports.start_time(fake.pid)
        assert started is not None and started > 0
        assert server.is_our_server(fake.pid, 9876, started)
        assert not server.is_our_server(fake.pid, 9876, started + 1)  # a reused pid
        assert not server.is_our_server(fake.pid, 9877, started)
        assert server.is_our_server(fake.pid, 9876)  # an old two-line pid file: argv decides
        settings = Settings(home=tmp_path, port=9876)
        (tmp_path / "vllm-9876.pid").write_text(f"{fake.pid}\n9876\n{started + 1}\n")
        assert server.stop_server(settings) is False
        assert fake.poll() is None
    finally:
        fake.kill()
        fake.wait()


def test_the_api_key_reaches_the_server_by_its_environment_not_its_command_line(
        tmp_path, stand_in_vllm, allow_port, monkeypatch):
    monkeypatch.setenv("ACTIVERAG_API_KEY", "s3cret-key")
    settings = Settings(home=tmp_path / "home", port=free_port(), host="127.0.0.1")
    allow_port(settings.port)
    try:
        server.start_server(settings, stand_in_vllm, 512, timeout=30)
        pid = int((tmp_path / "home" / f"vllm-{settings.port}.pid").read_text().split()[0])
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert b"VLLM_API_KEY=s3cret-key" in environ and b"LLAMA_API_KEY=s3cret-key" in environ
        assert b"s3cret-key" not in Path(f"/proc/{pid}/cmdline").read_bytes()
    finally:
        server.stop_server(settings)
        for started in stand_ins(settings.port):
            os.killpg(started, signal.SIGKILL)


def test_a_server_that_answers_without_the_set_key_is_refused_and_stopped(
        tmp_path, stand_in_vllm, allow_port, monkeypatch):
    """A server started without the key (this stand-in ignores it) is refused before the first
    request, and stopped: it would serve anyone who reaches it."""
    monkeypatch.setenv("ACTIVERAG_API_KEY", "s3cret-key")
    plain = server.vllm_command
    monkeypatch.setattr(server, "vllm_command", lambda *a: [*plain(*a), "--open"])
    settings = Settings(home=tmp_path / "home", port=free_port(), host="127.0.0.1")
    allow_port(settings.port)
    try:
        with pytest.raises(ActiveRagError, match="answered a request without the key"):
            server.start_server(settings, stand_in_vllm, 512, timeout=30)
        assert not (tmp_path / "home" / f"vllm-{settings.port}.pid").exists()
        assert stand_ins(settings.port) == []
    finally:
        server.stop_server(settings)
        for started in stand_ins(settings.port):
            os.killpg(started, signal.SIGKILL)


def test_a_server_other_machines_reach_is_not_started_without_a_key(
        tmp_path, stand_in_vllm, monkeypatch):
    monkeypatch.delenv("ACTIVERAG_API_KEY", raising=False)
    settings = Settings(home=tmp_path / "home", port=free_port(), host="0.0.0.0")
    with pytest.raises(ActiveRagError, match="ACTIVERAG_API_KEY"):
        server.start_server(settings, stand_in_vllm, 512, timeout=30)
    assert not (tmp_path / "home" / f"vllm-{settings.port}.pid").exists()
    assert stand_ins(settings.port) == []


def test_vllm_on_the_cpu_runs_float32_and_eager_and_on_a_gpu_neither(tmp_path):
    """On the CPU float32 keeps logprobs within 1e-5 of the reference (and eager mode starts
    twice as fast); a GPU keeps the model's own dtype and its graphs."""
    settings = Settings(home=tmp_path, port=8123, host="127.0.0.1")
    cpu = server.vllm_command(tmp_path / "m", settings, 512, False, "served")
    gpu = server.vllm_command(tmp_path / "m", settings, 512, True, None)
    assert cpu[cpu.index("--dtype") + 1] == "float32" and "--enforce-eager" in cpu
    assert "--dtype" not in gpu and "--enforce-eager" not in gpu
    assert cpu[cpu.index("--served-model-name") + 1] == "served"
    assert "--served-model-name" not in gpu
    assert cpu[cpu.index("--max-model-len") + 1] == "512" and cpu[cpu.index("--port") + 1] == "8123"


def test_a_start_says_which_engine_on_which_device_its_log_and_where_it_is_ready(
        tmp_path, stand_in_vllm, allow_port, monkeypatch, capsys):
    monkeypatch.setattr(server, "gpu_visible", lambda: False)
    settings = Settings(home=tmp_path / "home", port=free_port(), host="127.0.0.1")
    allow_port(settings.port)
    try:
        url = server.start_server(settings, stand_in_vllm, 512, timeout=30)
    finally:
        server.stop_server(settings)
        for started in stand_ins(settings.port):
            os.killpg(started, signal.SIGKILL)
    said = capsys.readouterr().err.splitlines()
    log = server.log_file(settings, "vllm")
    assert f"[activerag] starting vLLM (CPU): log in {log}" in said, said
    assert f"[activerag] ready: {url} serving stand-in" in said, said
    assert url == f"http://127.0.0.1:{settings.port}/v1"


def test_stopping_with_no_pid_file_or_an_unreadable_one_stops_nothing(tmp_path):
    settings = Settings(home=tmp_path, port=free_port(), host="127.0.0.1")
    assert server.stop_server(settings) is False  # no pid file at all
    pid_file = tmp_path / f"vllm-{settings.port}.pid"
    pid_file.write_text("not a pid\n")
    assert server.stop_server(settings) is False
    assert not pid_file.exists()  # an unreadable file is removed, not kept to confuse later
