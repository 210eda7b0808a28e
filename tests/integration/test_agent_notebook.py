"""notebooks/agent.ipynb executes top to bottom against the real server: the agent's two
chained questions (scripted routing, real FLARE and REPLUG tools), the streamed answer and the
messages adapter."""

import re

import pytest
from test_notebook import executed_outputs

pytestmark = pytest.mark.integration


def test_agent_notebook_runs(vllm_url, tmp_path, monkeypatch):
    outputs = executed_outputs("agent.ipynb", vllm_url, tmp_path, monkeypatch)
    assert "added 330 to BM25" in outputs
    assert "-> tool call flare({'query': 'Who founded Zaezum Works?'})" in outputs
    assert "-> tool call replug({'query': 'Where was Faegrirk Thuselan born?'})" in outputs
    assert "<- flare [success]" in outputs and "<- replug [success]" in outputs
    assert outputs.count("     source: ") >= 3
    assert outputs.count("\nagent: ") == 2
    tokens = re.search(r"(\d+) token events", outputs)
    assert tokens and int(tokens.group(1)) > 0
    assert re.search(r"sources: \[\('[^']+', '\w+'\)", outputs)
