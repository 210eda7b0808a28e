"""The probe and `activerag doctor` against the real vLLM server (SmolLM2): every ability the
methods use is found, with vLLM's top-20 cap and its context length, and every method runs."""

import json
import re
import time

import pytest

from activerag import cli
from activerag.graphs import registry
from activerag.serving import probe as probing
from activerag.serving.lm import VLLMClient
from activerag.serving.probe_requests import ABILITIES
from activerag.serving.running import server_entries

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _fresh_probes():
    probing.forget()
    yield
    probing.forget()


def test_the_probe_finds_everything_vllm_serves(vllm_url, tmp_path):
    window = server_entries(vllm_url)[0]["max_model_len"]
    started = time.monotonic()
    found = probing.probe(vllm_url, cache_file=tmp_path / "probes.json")
    took = time.monotonic() - started
    assert found.found == set(ABILITIES), found.why
    assert found.top_logprobs == 20 and found.context_length == window
    assert found.why == {}
    assert took < 60, took
    kept = json.loads((tmp_path / "probes.json").read_text())
    assert kept[f"{vllm_url} {found.model}"]["top_logprobs"] == 20


def test_doctor_prints_the_table_and_every_method_runs(vllm_url, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ACTIVERAG_HOME", str(tmp_path / "home"))
    assert cli.main(["doctor", vllm_url]) == 0
    out = capsys.readouterr().out
    print(out)
    n = len(registry.METHODS)
    assert f"methods that run here ({n} of {n})" in out
    rows = dict(re.findall(r"^(\w+) +(\S+) ", out, re.M))
    assert all(rows[a] == ("20" if a == "top_logprobs" else "yes") for a in ABILITIES)
    assert (tmp_path / "home" / "probes.json").exists()


async def test_a_client_that_asks_no_logprobs_writes_the_same_greedy_text(vllm_url):
    prompt = "The capital of France is"
    plain = await VLLMClient(vllm_url, top_logprobs=0).generate(prompt, max_tokens=8)
    usual = await VLLMClient(vllm_url).generate(prompt, max_tokens=8)
    assert plain.text == usual.text and plain.text.strip()
    assert plain.tokens == [] and len(usual.tokens) == usual.generated_tokens
    assert plain.generated_tokens == usual.generated_tokens
