"""REPLUG against the real vLLM server: agree equals token, and certified steps are exact."""


import pytest

from activerag.answers import extract_answer, normalize
from activerag.demo import load_demo_questions
from activerag.graphs.replug import build_replug_graph
from activerag.nodes.replug.context import ReplugContext
from activerag.nodes.replug.logic import choose
from activerag.serving.token_lm import VLLMTokens
from activerag.settings import Settings

pytestmark = pytest.mark.integration
QUESTIONS = [q["question"] for q in load_demo_questions()]


def context(vllm_url, demo_store, **kwargs) -> ReplugContext:
    return ReplugContext(base_url=vllm_url, store_dir=str(demo_store), k=4,
                         max_answer_tokens=48, **kwargs)


async def run(vllm_url, demo_store, question, **kwargs):
    graph = build_replug_graph()
    ctx = context(vllm_url, demo_store, **kwargs)
    return await graph.ainvoke({"question": question}, context=ctx)


@pytest.mark.parametrize("question", [QUESTIONS[24], QUESTIONS[1]])
async def test_agree_writes_token_for_token_what_token_writes(vllm_url, demo_store, question):
    token = await run(vllm_url, demo_store, question, ensemble="token")
    agree = await run(vllm_url, demo_store, question, ensemble="agree", lookahead=8)
    assert agree["answer"] == token["answer"]
    # the same tokens; their probabilities come from differently batched requests, and vLLM's
    # CPU kernels are not batch-invariant, so they agree to float noise only (seen: 6e-7)
    agreed, tokened = ([e["tokens"] for e in r["trace"]] for r in (agree, token))
    assert [[t for t, _ in s] for s in agreed] == [[t for t, _ in s] for s in tokened]
    for a, t in zip(agreed, tokened, strict=True):
        assert [p for _, p in a] == pytest.approx([p for _, p in t], rel=1e-4)
    assert agree["lm_calls"] < token["lm_calls"]
    assert token["answer_tokens"] > 0
    # token mode asks each document once per decided token, the end of sequence included
    assert token["lm_calls"] % 4 == 0


async def test_certified_steps_agree_with_the_full_vocabulary_mixture(vllm_url, demo_store):
    """Recompute Eq. 2 over the whole vocabulary from the same model in transformers: every
    step the top-20 view certified must choose the full mixture's argmax."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")  # the `convert` extra
    model_dir = Settings.from_env().models / "SmolLM2-135M-Instruct"
    if not (model_dir / "config.json").exists():
        pytest.skip(f"{model_dir} is not there (the server fixture converts it)")
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    model.eval()
    ctx = context(vllm_url, demo_store, ensemble="token")
    from langgraph.runtime import Runtime

    from activerag.nodes.parts import Parts
    from activerag.nodes.replug.steps import make_retrieve

    # the documents, weights and prompts the graph uses, made by its own node
    setup = await make_retrieve(Parts())({"question": QUESTIONS[24]}, Runtime(context=ctx))
    lm = VLLMTokens(vllm_url, "SmolLM2-135M-Instruct")
    ids: list[int] = []
    certified = 0
    for t in range(16):
        views = [await lm.steps(p + ids, 1, 20) for p in setup["prompts"]]
        choice = choose([v.positions[0].top for v in views], setup["weights"])
        with torch.no_grad():
            probs = [torch.softmax(model(torch.tensor([p + ids])).logits[0, -1], -1)
                     for p in setup["prompts"]]
        full = sum(w * p for w, p in zip(setup["weights"], probs, strict=True))
        # the top-20 view's lower bound is the full mixture's probability over those tokens
        assert choice.low <= float(full[choice.token]) + 1e-4
        if choice.certified:
            certified += 1
            assert choice.token == int(torch.argmax(full)), t
        ids.append(choice.token)
    assert certified >= 8


async def test_vote_and_rescore_pick_one_of_the_documents_answers(vllm_url, demo_store):
    vote = await run(vllm_url, demo_store, QUESTIONS[24], ensemble="vote")
    rescore = await run(vllm_url, demo_store, QUESTIONS[24], ensemble="rescore")
    for out in (vote, rescore):
        [entry] = out["trace"]
        candidates = [normalize(a) for a, _ in entry["candidates"]]
        assert normalize(extract_answer(out["answer"])) == candidates[0]
        assert out["retrieval_steps"] == 1 and len(entry["doc_ids"]) == 4
    assert vote["lm_calls"] == 4
    # rescore adds one echo request per candidate and document
    assert rescore["lm_calls"] == 4 + 4 * len(rescore["trace"][0]["candidates"])


async def test_flare_replug_regenerates_retrieved_sentences_by_ensemble(vllm_url, demo_store):
    from activerag.context import FlareContext
    from activerag.graphs.replug import build_flare_replug_graph

    ctx = FlareContext(base_url=vllm_url, store_dir=str(demo_store), theta=1.0, k=3,
                       max_answer_tokens=32)
    out = await build_flare_replug_graph().ainvoke({"question": QUESTIONS[24]}, context=ctx)
    trace = out["trace"]
    assert trace and all(s["retrieved"] and len(s["doc_ids"]) == 3 for s in trace)
    # each sentence: one draft, then at least one look-ahead request per document
    assert out["lm_calls"] >= len(trace) * (1 + 3)
    assert out["answer"].strip() and "<|im_end|>" not in out["answer"]


async def test_a_document_longer_than_the_served_context_is_cut_and_reported(vllm_url):
    from activerag.sentences import SentenceSplitter
    from activerag.stores.base import StoreRetriever
    from activerag.stores.bm25 import BM25Store
    from activerag.stores.documents import make_document

    window = await VLLMTokens(vllm_url, "").context_window()
    assert window and window >= 1024
    store = BM25Store()
    long_text = "Marta Kell founded the Osterby lighthouse in 1871. " * (window // 6)
    store.add([make_document(long_text, "Osterby lighthouse"),
               make_document("Osterby is a fishing village.", "Osterby")])
    graph = build_replug_graph(retriever=StoreRetriever(store=store, k=2),
                               splitter=SentenceSplitter())
    out = await graph.ainvoke({"question": "Who founded the Osterby lighthouse?"},
                              context=ReplugContext(base_url=vllm_url, k=2, ensemble="agree",
                                                    max_answer_tokens=32))
    [note] = out["cut_documents"]
    assert f"{window}-token context" in note
    assert out["answer_tokens"] > 0


def _finished_requests(url: str) -> float:
    """Requests the vLLM server at URL has finished, from its Prometheus counters."""
    import httpx

    text = httpx.get(url.removesuffix("/v1") + "/metrics", timeout=10).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("vllm:request_success_total"))


def test_a_cached_rerun_of_replug_sends_no_generation(vllm_url, demo_store, tmp_path,
                                                      monkeypatch, capsys):
    """--cache serves REPLUG's ensemble steps (token ids, top-N) from disk, as it does the
    text generations: the second run finishes no request on the server."""
    import json

    from activerag.cli import main

    monkeypatch.setenv("ACTIVERAG_HOME", str(tmp_path / "home"))  # a cache of its own
    common = ["eval", "--dataset", "demo", "--methods", "replug,replug_vote", "--n", "2",
              "--cache", "--base-url", vllm_url, "--store", str(demo_store), "--replug-k", "2",
              "--max-answer-tokens", "16"]
    assert main([*common, "--run", str(tmp_path / "live")]) == 0
    before = _finished_requests(vllm_url)
    assert before > 0
    assert main([*common, "--run", str(tmp_path / "cached")]) == 0
    assert _finished_requests(vllm_url) == before
    rows = [{(r["method"], r["id"]): r["answer"] for r in map(
        json.loads, (tmp_path / run / "examples.jsonl").read_text().splitlines())}
        for run in ("live", "cached")]
    assert len(rows[0]) == 4 and rows[0] == rows[1]
    capsys.readouterr()
