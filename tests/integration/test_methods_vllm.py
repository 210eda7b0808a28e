"""Every method of the family runs against the real vLLM server and keeps its schedule."""

import pytest

from activerag.context import FlareContext
from activerag.demo import load_demo_questions
from activerag.graphs.methods import METHODS, method

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("name", list(METHODS))
async def test_method_runs_on_the_real_server(name, vllm_url, demo_store):
    base = FlareContext(base_url=vllm_url, store_dir=str(demo_store), max_sentences=3,
                        max_answer_tokens=96)
    graph, ctx = method(name, base)
    out = await graph.ainvoke({"question": load_demo_questions()[4]["question"]}, context=ctx)
    trace = out["trace"]
    assert trace and out["lm_calls"] >= 1
    assert out["generated_tokens"] >= out["answer_tokens"] > 0
    if name == "none":
        assert out["retrievals"] == 0
    elif name == "single":
        assert out["retrievals"] == 1
    elif name in ("previous_sentence", "previous_window", "next_sentence"):
        assert all(s["retrieved"] for s in trace[1:])
    if name == "flare_instruct":
        assert "[Search(" not in out["answer"]
