"""The LM cache knows the served weights: two servers announcing one model name (CPU float32
and GPU bf16, a retrained checkpoint) never share entries."""

import hashlib
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from activerag.serving.cache import CachedLM, served_identity
from activerag.testing.scripted import EOS, ScriptedLM, ends


class NamedLM:
    model = "m"


def key(tmp_path, served):
    lm = CachedLM(NamedLM(), tmp_path / "c.sqlite", served=served)  # type: ignore[arg-type]
    return lm._key("p", max_tokens=8, cut=None, stop=None, logit_bias=None)


def test_the_served_root_and_length_are_in_the_key(tmp_path):
    a = [{"root": "/models/qwen-f32", "max_model_len": 4096}]
    assert key(tmp_path, a) == key(tmp_path, [dict(a[0])])
    assert key(tmp_path, a) != key(tmp_path, [{**a[0], "root": "/models/qwen-bf16"}])
    assert key(tmp_path, a) != key(tmp_path, [{**a[0], "max_model_len": 2048}])
    assert key(tmp_path, a) != key(tmp_path, None)


def test_the_identity_is_the_served_model_s_entry():
    listed = [{"id": "other", "root": "/o", "max_model_len": 1},
              {"id": "m", "root": "/models/m", "max_model_len": 4096, "created": 17}]
    assert served_identity(listed, "m") == {"root": "/models/m", "max_model_len": 4096}
    assert served_identity(listed[1:], "renamed") == {"root": "/models/m", "max_model_len": 4096}
    assert served_identity(listed, "absent") == {"root": None, "max_model_len": None}


def models_server(root: str) -> tuple[ThreadingHTTPServer, list[str]]:
    """A server whose GET /v1/models lists model "m" loaded from ROOT; the paths asked."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            asked.append(self.path)
            body = json.dumps({"data": [{"id": "m", "root": root, "max_model_len": 4096}]})
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, asked


@dataclass
class ServedLM(ScriptedLM):
    base_url: str = ""
    model: str = "m"


async def test_two_servers_of_one_model_name_do_not_share_entries(tmp_path):
    f32, asked32 = models_server("/models/qwen-f32")
    bf16, _ = models_server("/models/qwen-bf16")
    try:
        first = CachedLM(ServedLM([ends(" A."), EOS], base_url=f"http://127.0.0.1:"
                                  f"{f32.server_address[1]}/v1"), tmp_path / "c.sqlite")
        one = await first.generate("p", max_tokens=8)
        again = await first.generate("p", max_tokens=8)
        assert again.text == one.text == " A." and first.hits == 1
        assert asked32 == ["/v1/models"]  # asked once per client
        second = CachedLM(ServedLM([ends(" B.")], base_url=f"http://127.0.0.1:"
                                   f"{bf16.server_address[1]}/v1"), tmp_path / "c.sqlite")
        other = await second.generate("p", max_tokens=8)
        assert other.text == " B." and second.hits == 0
    finally:
        f32.shutdown()
        bf16.shutdown()


def test_the_served_weights_enter_the_key_under_their_name(tmp_path):
    # the bytes pinned: caches written by earlier runs stay valid (test_cache_key's rule)
    served = [{"root": "/models/m", "max_model_len": 4096}]
    blob = (b'{"cut": "None", "format": 2, "logit_bias": null, "max_tokens": 8, "model": "m", '
            b'"prompt": "p", "served": [{"max_model_len": 4096, "root": "/models/m"}], '
            b'"stop": null}')
    assert key(tmp_path, served) == hashlib.sha256(blob).hexdigest()
