"""`activerag doctor URL` prints the server's abilities and the methods that run there; an
unreachable URL is one clear line."""

import json
import re

import pytest

from activerag import cli
from activerag.cli.doctor import with_v1
from activerag.graphs import registry
from activerag.serving import probe as probing
from activerag.serving.probe_requests import ABILITIES
from activerag.testing.fake_lm import Backend, backend


@pytest.fixture(autouse=True)
def _own_home(tmp_path, monkeypatch):
    monkeypatch.setenv("ACTIVERAG_HOME", str(tmp_path / "home"))
    probing.forget()
    yield
    probing.forget()


def row(out: str, ability: str) -> str:
    return re.search(rf"^{ability} +(\S+)", out, re.M).group(1)


def test_doctor_prints_every_ability_and_that_every_method_runs(capsys):
    with backend(Backend()) as url:
        assert cli.main(["doctor", url]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"server {url} (vllm)  model fake-model  context length 2048\n")
    assert [row(out, a) for a in ABILITIES] == ["yes"] * 3 + ["20"] + ["yes"] * 6
    n = len(registry.METHODS)
    assert f"methods that run here ({n} of {n}): {', '.join(registry.METHODS)}\n" in out
    assert "methods that do not" not in out


def test_doctor_names_what_is_missing_and_the_methods_it_stops(capsys):
    with backend(Backend({"echo", "context_length"}, max_top=5)) as url:
        assert cli.main(["doctor", url.removesuffix("/v1")]) == 0
    out = capsys.readouterr().out
    assert "context length unknown" in out
    assert row(out, "echo") == "no" and row(out, "top_logprobs") == "5"
    assert "[HTTP 400: echo is not supported]" in out
    assert "max allowed: 5" in out
    runs = re.search(r"^methods that run here \(\d+ of \d+\): (.*)$", out, re.M).group(1)
    stopped = re.search(r"^methods that do not: (.*)$", out, re.M).group(1)
    assert "replug_rescore (needs echo)" in stopped
    assert "flare_etc (needs top_logprobs >= 20)" in stopped
    assert {"flare", "single", "flare_instruct"} <= set(runs.split(", "))


def test_doctor_json_is_the_probe_s_record(capsys):
    with backend(Backend({"n"})) as url:
        assert cli.main(["doctor", url, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["url"] == url and data["top_logprobs"] == 20 and "n" not in data["found"]
    assert data["why"] == {"n": "HTTP 400: n > 1 is not supported"}
    assert "gate_lexsim" not in data["methods"] and "flare" in data["methods"]


def test_doctor_asks_afresh_and_ask_then_reads_what_it_kept(capsys, tmp_path):
    b = Backend({"logprobs"})
    with backend(b) as url:
        assert cli.main(["doctor", url]) == 0
        assert cli.main(["doctor", url]) == 0
        asked = len(b.requests)
        assert asked and asked % 2 == 0
        probing.forget()  # as another process
        assert cli.main(["ask", "--method", "flare", "--base-url", url, "Who?"]) == 2
        assert len(b.requests) == asked
    assert (tmp_path / "home" / "probes.json").exists()
    assert "method flare needs logprobs" in capsys.readouterr().err


def test_an_unreachable_url_is_one_line(capsys, allow_port):
    allow_port(9)
    assert cli.main(["doctor", "http://127.0.0.1:9"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert err.startswith("activerag: error: no OpenAI-compatible server answers at "
                          "http://127.0.0.1:9/v1 (")
    assert "check the URL" in err


def test_the_url_gets_v1_when_it_lacks_it():
    assert with_v1("http://h:8000") == "http://h:8000/v1"
    assert with_v1(" http://h:8000/v1/ ") == "http://h:8000/v1"
