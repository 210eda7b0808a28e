"""The README's node swaps, run as written: REPLUG's `combine` and FB-RAG's `sample` replaced
through the builders' keywords, with scripted LMs; each changes what the graph answers."""

import re
from pathlib import Path

from test_fb_rag_graph import CONTEXT, RATIONALE, context
from test_fb_rag_graph import QUESTION as FB_QUESTION
from test_replug_graph import QUESTION, ByDocument, retriever, weights

from activerag.graphs.fb_rag import build_fb_rag_graph
from activerag.graphs.replug import build_replug_graph
from activerag.nodes.replug.context import ReplugContext
from activerag.sentences import SentenceSplitter
from activerag.testing.scripted import ScriptedLM, ScriptedSampler, WordTokens, ends
from activerag.testing.scripted_tokens import ScriptedTokenLM

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_swaps() -> dict:
    """The namespace of the README's "Swapping a node" code block, executed."""
    section = README.read_text().split("### Swapping a node", 1)[1].split("\n### ", 1)[0]
    [code] = re.findall(r"```python\n(.*?)```", section, re.S)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    return namespace


async def test_replug_with_the_readmes_combine_answers_with_the_top_weighted_document():
    swaps = readme_swaps()
    replies = {"Vesk": ends("So the answer is Vesk.", prob=0.1),
               "Ulm": ends("So the answer is Ulm.", prob=0.9)}
    ctx = ReplugContext(k=2, ensemble="vote")

    def graph(**nodes):
        return build_replug_graph(lm=ByDocument(replies), token_lm=ScriptedTokenLM({}),
                                  retriever=retriever(), splitter=SentenceSplitter(), **nodes)

    w_vesk, w_ulm = weights()
    assert w_vesk > w_ulm  # the Vesk document is the retriever's first
    voted = await graph().ainvoke({"question": QUESTION}, context=ctx)
    assert voted["answer"] == "So the answer is Ulm."  # 0.9 · λ_Ulm beats 0.1 · λ_Vesk
    top = await graph(combine=swaps["top_document"]).ainvoke({"question": QUESTION}, context=ctx)
    assert top["answer"] == "So the answer is Vesk."
    assert "replug_top" in swaps


async def test_fb_rag_with_the_readmes_sample_never_asks_the_light_lm():
    swaps = readme_swaps()
    light = ScriptedSampler([RATIONALE])
    strong = ScriptedLM([ends("Bergen")])
    graph = build_fb_rag_graph(lm=strong, token_lm=WordTokens(), light_lm=light,
                               sample=swaps["question_as_sample"])
    out = await graph.ainvoke({"question": FB_QUESTION, "context": CONTEXT}, context=context())
    assert light.prompts == [] and out["samples"] == [FB_QUESTION]
    # the question's words alone rank the lighthouse passage first, not Ada Marlow's, which
    # only the light LM's rationale finds (test_fb_rag_graph)
    assert out["selected"][0] == 0 and out["answer"] == "Bergen"
    assert "fb_rag_no_light" in swaps
