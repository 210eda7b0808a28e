"""A llama-server that dies at start with its repacked weights (seen: SIGSEGV on a machine that
lists AMX and whose kernel grants it) is started again with --no-repack, once, in one line;
the build remembers it, and no stale-pid-file notice is printed for the process that died. The
server is a stand-in executable named llama-server that crashes as the real one did unless it
is given --no-repack; nothing else is faked."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from test_server_start import free_port

from activerag.serving import llamacpp, machine, server
from activerag.serving.catalogue import KvShape
from activerag.settings import Settings

STAND_IN = f"""#!{sys.executable}
import http.server, json, os, signal, sys
if "--no-repack" not in sys.argv:
    os.kill(os.getpid(), signal.SIGSEGV)
class H(http.server.BaseHTTPRequestHandler):
    def _ok(self):
        body = json.dumps({{"data": [{{"id": "m", "owned_by": "llamacpp"}}]}}).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body)))
        self.end_headers(); self.wfile.write(body)
    do_GET = do_POST = _ok
    def log_message(self, *a): pass
port = int(sys.argv[sys.argv.index("--port") + 1])
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


def test_a_crash_at_start_is_retried_once_without_repacking(tmp_path: Path, monkeypatch,
                                                            allow_port, capsys):
    binary = tmp_path / "bin" / "llama-server"
    binary.parent.mkdir()
    binary.write_text(STAND_IN)
    binary.chmod(0o755)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setattr(llamacpp, "ensure_binary", lambda settings: binary)
    monkeypatch.setattr(llamacpp, "gguf_kv", lambda path: KvShape(1, 1, 64))
    monkeypatch.setattr(llamacpp, "cpu_flags", lambda: ["amx_tile"])
    monkeypatch.setattr(machine, "amx_granted", lambda: True)  # granted, and still crashes
    settings = Settings(home=tmp_path / "home", port=free_port(), host="127.0.0.1")
    allow_port(settings.port)
    try:
        url = server.start_server(settings, gguf=gguf, max_model_len=512, timeout=60,
                                  launch=server.Launch("llama.cpp", parallel=1))
        assert url == f"http://127.0.0.1:{settings.port}/v1"
        err = capsys.readouterr().err
        assert err.count("starting it again with --no-repack") == 1
        assert "stale file" not in err
        assert (binary.parent / machine.REPACK_FAILED).exists()
        cmd = llamacpp.command(binary, gguf, settings, 512, 1, 1, "m")
        assert "--no-repack" in cmd  # every later start
    finally:
        # the stand-in runs as `python llama-server`, which stop_server does not take for ours:
        # it is stopped by the pid its start wrote
        pid_file = server.pid_path(settings)
        if pid_file.exists():
            os.killpg(int(pid_file.read_text().split()[0]), signal.SIGKILL)
            pid_file.unlink()
