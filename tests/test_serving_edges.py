"""Edges of the serving layer a user meets without a test noticing (issue #38: survivors of the
random mutants of seed 1, results/mutants-seed1.md): a port found in use, a URL with a control
character under an allow-list, a /proc command line that is not UTF-8, and the records of how
a server is started and asked, which are values."""

import dataclasses
import socket

import pytest

from activerag.cli.endpoints import Endpoint
from activerag.errors import SettingError
from activerag.serving import llamacpp
from activerag.serving.ports import listening
from activerag.serving.security import check_endpoint
from activerag.serving.server import Launch
from activerag.testing.fake_lm import QuietHandler, serving


def test_a_port_a_process_listens_on_is_in_use_and_a_closed_one_is_not(allow_port):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        allow_port(port)
        assert listening("127.0.0.1", port) is True
    assert listening("127.0.0.1", port) is False


@pytest.mark.parametrize("bad", ["\x01", " ", "\n", "\\"])
def test_an_allow_list_refuses_a_url_with_a_blank_or_control_character(bad, monkeypatch):
    monkeypatch.setenv("ACTIVERAG_ALLOWED_BASE_URLS", "http://127.0.0.1:8000/v1")
    check_endpoint("base_url", "http://127.0.0.1:8000/v1")
    with pytest.raises(SettingError, match="ACTIVERAG_ALLOWED_BASE_URLS"):
        check_endpoint("base_url", f"http://127.0.0.1:8000/v1/{bad}x")


def test_a_command_line_that_is_not_utf8_is_read_not_refused():
    ours = [f"/opt/{llamacpp.BINARY}".encode(), b"--port", b"8785"]
    assert llamacpp.is_llama_server(ours, 8785) and not llamacpp.is_llama_server(ours, 8786)
    assert llamacpp.is_llama_server([b"/opt/\xff/" + llamacpp.BINARY.encode(), *ours[1:]], 8785)
    assert not llamacpp.is_llama_server([b"/opt/\xffpython", *ours[1:]], 8785)


@pytest.mark.parametrize("record", [Launch("llama.cpp", (), 4, None, None),
                                    Endpoint("LM", "http://127.0.0.1:8000/v1", "--base-url",
                                             "activerag serve")])
def test_how_a_server_is_started_and_asked_are_values(record):
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.url = "elsewhere"  # type: ignore[misc]
    assert hash(record) == hash(dataclasses.replace(record))


class _Metrics(QuietHandler):
    """A server's /metrics in Prometheus text: two labelled samples of one counter."""

    def do_GET(self) -> None:
        text = (b'# HELP vllm:prompt_tokens_total prompt tokens\n'
                b'vllm:prompt_tokens_total{model_name="m",engine="0"} 120.0\n'
                b'vllm:prompt_tokens_total{model_name="m",engine="1"} 30.0\n'
                b'vllm:generation_tokens_total{model_name="m"} 7.0\n'
                b'vllm:num_requests_running{model_name="m"} 1.0\n')
        self.send_response(200)
        self.send_header("content-length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)


def test_vllm_counters_sum_each_counter_over_labels_and_replicas():
    """What `eval` reads of the server's work (its prefill and decode tokens) after a run."""
    from activerag.serving.running import vllm_counters

    with serving(_Metrics) as one, serving(_Metrics) as two:
        assert vllm_counters(one) == {"vllm:prompt_tokens_total": 150.0,
                                      "vllm:generation_tokens_total": 7.0}
        both = vllm_counters(f"{one}, {two}")
    assert both == {"vllm:prompt_tokens_total": 300.0, "vllm:generation_tokens_total": 14.0}
