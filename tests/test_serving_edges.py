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
