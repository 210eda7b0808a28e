"""IRCoT against the real vLLM server (SmolLM2-135M) and the demo corpus in BM25: a two-hop
demo question; the loop retrieves again with its sentences or stops on "answer is", the
paragraphs accumulate as real BM25 finds them, and the reader reads them all. With the
paper's exemplars, the real server's refusals of a prompt past its window make the graph
drop exemplars until one fits."""

from dataclasses import dataclass, field

import pytest

from activerag.answers import find_answer
from activerag.demo import load_demo_questions
from activerag.errors import ActiveRagError
from activerag.graphs.ircot import build_ircot_graph, graph
from activerag.nodes.ircot.context import IRCoTContext
from activerag.nodes.ircot.prompts import ircot_paper_task
from activerag.serving.lm import VLLMClient
from activerag.stores.corpus import Corpus

pytestmark = pytest.mark.integration
[DEMO] = [q for q in load_demo_questions() if q["id"] == "demo-00"]
assert DEMO["hops"] == 2


def context(vllm_url, demo_store, **kwargs) -> IRCoTContext:
    settings = {"k": 2, "max_answer_tokens": 96, "ircot_max_steps": 4, **kwargs}
    return IRCoTContext(base_url=vllm_url, store_dir=str(demo_store), **settings)


async def test_ircot_retrieves_with_its_sentences_and_the_paragraphs_accumulate(
        vllm_url, demo_store):
    ctx = context(vllm_url, demo_store)
    out = await graph.ainvoke({"question": DEMO["question"]}, context=ctx)
    steps = [s for s in out["trace"] if s["role"] == "reason"]
    [read] = [s for s in out["trace"] if s["role"] == "read"]
    assert steps and out["trace"][-1] is not steps[-1]
    # it retrieved again with a sentence, or its first sentence gave the answer
    assert out["retrieval_steps"] > 1 or steps[0]["stop"] == "answer"
    # the question's retrieval, then one per sentence that went on
    assert out["retrieval_steps"] == len(steps)
    assert [s["stop"] is None for s in steps] == [True] * (len(steps) - 1) + [False]
    # the first query is the question; every later one is the sentence before it
    assert steps[0]["queries"] == [DEMO["question"]]
    for before, step in zip(steps, steps[1:], strict=False):
        assert step["queries"] == [" ".join(before["sentence"].split())]
    # the paragraphs accumulate: each prompt holds the last one's and what its query added,
    # which is what real BM25 finds for that query less what was collected already
    corpus = Corpus(demo_store)
    held: list[str] = []
    for step in steps:
        assert step["doc_ids"] == held + step["new_ids"]
        found = [d.id for d in corpus.retriever("bm25", ctx.k, "").invoke(step["queries"][0])]
        assert step["new_ids"] == [i for i in found if i not in held]
        assert step["left_out"] == len(found) - len(step["new_ids"])
        held = step["doc_ids"]
    assert len(held) <= ctx.ircot_max_paragraphs
    # the reader answers over every collected paragraph, from scratch
    assert read["doc_ids"] == held
    assert out["answer"] == read["sentence"]
    match = find_answer(out["answer"])
    assert match is None or out["answer"][match.end():].strip() == ""
    assert out["lm_calls"] == len(out["trace"])
    assert out["generated_tokens"] >= out["answer_tokens"] > 0
    assert len(out["retrieved_titles"]) == sum(len(s["new_ids"]) + s["left_out"] for s in steps)


@dataclass
class Recording:
    """The real client, every prompt it was sent recorded and every refusal counted."""

    inner: VLLMClient
    prompts: list[str] = field(default_factory=list)
    refused: int = 0

    @property
    def model(self) -> str:
        return self.inner.model

    async def generate(self, prompt, **kwargs):
        try:
            gen = await self.inner.generate(prompt, **kwargs)
        except ActiveRagError:
            self.refused += 1
            raise
        self.prompts.append(prompt)
        return gen

    async def token_ids(self, text):
        return await self.inner.token_ids(text)


async def test_the_papers_exemplars_are_dropped_until_the_real_window_holds_the_prompt(
        vllm_url, demo_store):
    try:
        task = ircot_paper_task("2wikimultihopqa", 2)
    except ActiveRagError:
        pytest.skip("../shared/data/prompts_ircot not found; set ACTIVERAG_DATA to run it")
    lm = Recording(VLLMClient(vllm_url))
    ctx = context(vllm_url, demo_store, prompt_set="paper", ircot_max_steps=1,
                  ircot_reader="none")
    out = await build_ircot_graph(lm=lm).ainvoke({"question": DEMO["question"]}, context=ctx)
    # 15 exemplars (about 9,000 tokens) do not fit SmolLM2's 4,096: the server refused
    assert lm.refused >= 1 and len(lm.prompts) == 1 and out["lm_calls"] == 1
    shown = [e.question for e in task.exemplars[:15] if f"Q: {e.question}" in lm.prompts[0]]
    assert 0 < len(shown) == 15 - lm.refused
    # the first ones were dropped: what is left is the last of the 15, in order
    assert shown == [e.question for e in task.exemplars[15 - len(shown):15]]
    assert out["trace"][0]["sentence"] or out["trace"][0]["stop"] == "empty"
