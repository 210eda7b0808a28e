"""The harness: resume after a kill gives the same summary; rescoring needs no LM."""

import json
import math

import pytest

from activerag.cache import CachedLM
from activerag.context import FlareContext
from activerag.datasets import Example
from activerag.evaluate import TIMING_KEYS, Run, evaluate, rescore
from activerag.graphs.baselines import build_single_graph
from activerag.graphs.flare import build_flare_graph
from activerag.lm import Generation, Token
from activerag.sentences import SentenceSplitter
from activerag.stores.base import StoreRetriever
from activerag.stores.bm25 import BM25Store
from activerag.stores.documents import make_document

EXAMPLES = [Example(f"q{i}", f"Where was person{i} born?", [f"city{i}"], [f"P{i}"])
            for i in range(6)]


class RuleLM:
    """Answers 'So the answer is city<i>.' for even i and 'unknown' for odd i; can fail once."""

    model = "rule"

    def __init__(self, fail_on: str | None = None) -> None:
        self.fail_on = fail_on
        self.calls = 0

    async def generate(self, prompt, *, max_tokens, cut=None, stop=None, logit_bias=None):
        self.calls += 1
        q = prompt.rsplit("person", 1)[1].split(" ")[0]
        if self.fail_on == q:
            self.fail_on = None
            raise RuntimeError("killed midway")
        text = f"So the answer is city{q}." if int(q) % 2 == 0 else "So the answer is unknown."
        toks, pos = [], 0
        for w in text.split(" "):
            piece = w if pos == 0 else " " + w
            toks.append(Token(piece, math.log(0.9), pos))
            pos += len(piece)
        return Generation(text, toks, True, len(toks), None, 10, prompt)

    async def token_ids(self, text):
        return [1]


def runs(lm):
    store = BM25Store()
    store.add([make_document(f"person{i} was born in city{i}.", f"P{i}") for i in range(6)])
    retriever = StoreRetriever(store=store, k=1)
    ctx = FlareContext(theta=0.5)
    return {"single": (build_single_graph(lm=lm, retriever=retriever,
                                          splitter=SentenceSplitter()), ctx),
            "flare": (build_flare_graph(lm=lm, retriever=retriever,
                                        splitter=SentenceSplitter()), ctx)}


def without_timing(summary):
    return {m: {k: v for k, v in s.items() if k not in TIMING_KEYS} for m, s in summary.items()}


async def test_resume_after_a_kill_equals_an_uninterrupted_run(tmp_path):
    whole = await evaluate(Run(tmp_path / "whole"), "t", runs(RuleLM()), EXAMPLES,
                           concurrency=1, progress=False)
    killed = Run(tmp_path / "killed")
    with pytest.raises(RuntimeError, match="killed midway"):
        await evaluate(killed, "t", runs(RuleLM(fail_on="4")), EXAMPLES, concurrency=1,
                       progress=False)
    finished_before = len(killed.rows())
    assert 0 < finished_before < 12
    lm = RuleLM()
    resumed = await evaluate(killed, "t", runs(lm), EXAMPLES, concurrency=1, progress=False)
    assert resumed["resumed_from"] == finished_before
    assert lm.calls == 12 - finished_before  # finished examples were not redone
    assert without_timing(resumed["summary"]) == without_timing(whole["summary"])
    assert whole["summary"]["single"]["em"] == pytest.approx(0.5)
    assert whole["summary"]["single"]["gold_title_recall"] == 1.0
    assert "| single |" in (tmp_path / "whole" / "summary.md").read_text()


async def test_a_run_folder_refuses_other_settings(tmp_path):
    await evaluate(Run(tmp_path), "t", runs(RuleLM()), EXAMPLES[:2], progress=False)
    with pytest.raises(Exception, match="other settings"):
        await evaluate(Run(tmp_path), "t", runs(RuleLM()), EXAMPLES[:3], progress=False)


def test_rescore_recomputes_from_stored_answers(tmp_path, monkeypatch):
    run = Run(tmp_path)
    run.start({"dataset": "t", "ids": ["q0"], "methods": ["single"], "contexts": {}})
    row = {"method": "single", "id": "q0", "answer": "So the answer is city0.",
           "retrieved_titles": [], "em": 0.0, "sentences": 1, "retrieved_sentences": 0,
           "lm_calls": 1, "prompt_tokens": 5, "generated_tokens": 5, "answer_tokens": 5,
           "retrievals": 1, "seconds": 0.1}
    run.append(row)
    (tmp_path / "summary.json").write_text(json.dumps({"dataset": "t"}))
    monkeypatch.setattr("activerag.evaluate.load_dataset", lambda name: EXAMPLES)
    result = rescore(run)
    assert result["summary"]["single"]["em"] == 1.0
    assert run.rows()[0]["em"] == 1.0


async def test_cache_serves_identical_requests(tmp_path):
    inner = RuleLM()
    lm = CachedLM(inner, tmp_path / "c.sqlite")
    a = await lm.generate("about person2 here", max_tokens=8)
    b = await CachedLM(inner, tmp_path / "c.sqlite").generate("about person2 here", max_tokens=8)
    assert inner.calls == 1
    assert (b.text, b.tokens, b.finished) == (a.text, a.tokens, a.finished)
    await lm.generate("about person2 here", max_tokens=9)
    assert inner.calls == 2
