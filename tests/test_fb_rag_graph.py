"""FB-RAG and its baselines as graphs, with a scripted light sampler and a scripted strong
reader: every chunk is rescored, the max over samples decides, chunks reach the reader in the
context's order, Self-Route falls back, a long prompt is cut in the middle, bad input is named."""

import pytest

from activerag.errors import ActiveRagError, LMServerUnreachable
from activerag.graphs.fb_rag import build_baseline_graph, build_fb_rag_graph
from activerag.nodes.fb_rag import logic as fb
from activerag.nodes.fb_rag.context import FBRagContext
from activerag.testing.scripted import EOS, ScriptedLM, ScriptedSampler, WordTokens, ends

PARAGRAPHS = [
    "Passage 1:\nLighthouse\nThe harbour lighthouse was designed by Ada Marlow in 1881.",
    "Passage 2:\nBridge\nThe old bridge crosses the river near the market.",
    "Passage 3:\nAda Marlow\nAda Marlow was born in Bergen and studied engineering.",
    "Passage 4:\nMarket\nThe market opens every Saturday morning in the square.",
    "Passage 5:\nRiver\nThe river floods each spring after the snow melts.",
]
CONTEXT = "\n\n".join(PARAGRAPHS)
QUESTION = "Where was the designer of the harbour lighthouse born?"
WORDS = [len(p.split()) for p in PARAGRAPHS]
RATIONALE = ("Rationale: The lighthouse was designed by Ada Marlow, who was born in Bergen and "
             "studied engineering. Answer: Bergen")


def context(**kw) -> FBRagContext:
    base = {"chunking": "paragraphs", "recall_words": WORDS[0], "read_words": WORDS[0] + WORDS[2],
            "samples": 3, "prompt_format": "plain", "light_prompt_format": "plain",
            "light_base_url": "http://127.0.0.1:8765/v1"}
    return FBRagContext(**{**base, **kw})


async def run(graph, ctx, question=QUESTION, text=CONTEXT):
    events = []
    out = None
    async for mode, chunk in graph.astream({"question": question, "context": text}, context=ctx,
                                           stream_mode=["custom", "values"]):
        if mode == "custom":
            events.append(chunk["stage"])
        else:
            out = chunk
    return out, events


async def test_fb_rag_rescores_every_chunk_and_reads_the_best_in_the_contexts_order():
    light = ScriptedSampler([RATIONALE])
    strong = ScriptedLM([ends("Bergen")])
    graph = build_fb_rag_graph(lm=strong, token_lm=WordTokens(), light_lm=light)
    out, events = await run(graph, context())
    # stage I read only the lighthouse passage (the question's best); the light LM saw it alone
    assert out["recall"] == [0]
    assert "Lighthouse" in light.prompts[0] and "Bergen" not in light.prompts[0]
    assert light.calls[0] == {"n": 3, "max_tokens": 96, "temperature": 1.0, "top_p": 0.9,
                              "top_k": 50, "seed": None, "separate": False}
    # the samples' words found the Ada Marlow passage, which stage I never read
    assert fb.ranking(out["scores"])[0] == 2
    assert out["selected"] == [0, 2]
    prompt = strong.prompts[0]
    assert prompt.index("designed by Ada Marlow") < prompt.index("born in Bergen")
    assert "Saturday" not in prompt and "bridge" not in prompt
    assert prompt.endswith(f"Question: {QUESTION}\nAnswer:")
    assert strong.calls[0]["max_tokens"] == 32 and strong.calls[0]["stop"] == ["\nQuestion:"]
    assert out["answer"] == "Bergen" and out["route"] == "fb_rag"
    assert out["samples"] == [RATIONALE] * 3 and out["chunks"] == 5
    assert out["selected_spans"] == [(0, WORDS[0]), (sum(WORDS[:2]), sum(WORDS[:3]))]
    assert out["lm_calls"] == 2  # one request for the three samples, one answer
    assert [e["name"] for e in events] == ["prepare", "recall_retrieve", "sample", "rerank",
                                           "generate"]
    assert set(out["stage_seconds"]) == {e["name"] for e in events}


async def test_the_max_over_samples_decides_where_a_mean_would_not():
    one = "Ada Marlow born Bergen studied engineering"
    many = "market Saturday morning opens square"
    per_sample = fb.bm25_scores(fb.chunk_paragraphs(CONTEXT), [one, many, many])
    mean = [sum(col) / 3 for col in zip(*per_sample, strict=True)]
    assert fb.ranking(mean)[0] == 3  # the premise: averaging would read the market passage
    light = ScriptedSampler([one, many, many])
    graph = build_fb_rag_graph(lm=ScriptedLM([ends("Bergen")]), token_lm=WordTokens(),
                               light_lm=light)
    out, _ = await run(graph, context(read_words=WORDS[2]))
    assert out["selected"] == [2]


async def test_ours_fb_adds_the_questions_own_score():
    light = ScriptedSampler(["market Saturday morning"])
    graph = build_fb_rag_graph(lm=ScriptedLM([ends("Bergen")]), token_lm=WordTokens(),
                               light_lm=light)
    forward, _ = await run(graph, context(read_words=WORDS[3]))
    graph = build_fb_rag_graph(lm=ScriptedLM([ends("Bergen")]), token_lm=WordTokens(),
                               light_lm=light)
    both, _ = await run(graph, context(read_words=WORDS[0], eta_b=0.5, eta_f=0.5,
                                       scale="minmax"))
    assert forward["selected"] == [3]  # the samples alone point at the market
    assert both["selected"] == [0]  # with the question's score (on one scale) the lighthouse


async def test_k_separate_requests_are_asked_for_when_chosen():
    light = ScriptedSampler([RATIONALE])
    graph = build_fb_rag_graph(lm=ScriptedLM([ends("Bergen")]), token_lm=WordTokens(),
                               light_lm=light)
    out, _ = await run(graph, context(separate_requests=True, seed=7))
    assert light.calls[0]["separate"] and light.calls[0]["seed"] == 7
    assert out["lm_calls"] == 4


@pytest.mark.parametrize("kind,selected,order", [
    ("op_rag", [0, 2], ["designed by Ada", "born in Bergen"]),
    ("vanilla_rag", [0, 2], ["designed by Ada", "born in Bergen"])])
async def test_rag_baselines_read_the_questions_best_chunks(kind, selected, order):
    strong = ScriptedLM([ends("Bergen")])
    out, _ = await run(build_baseline_graph(kind, lm=strong, token_lm=WordTokens()), context())
    assert sorted(out["selected"]) == selected and out["route"] == kind
    prompt = strong.prompts[0]
    assert prompt.index(order[0]) < prompt.index(order[1])


async def test_vanilla_rag_reads_best_first_and_op_rag_in_the_contexts_order():
    question = "When does the market open on Saturday morning near the lighthouse?"
    ctx = context(read_words=WORDS[0] + WORDS[3])
    vanilla, op = ScriptedLM([ends("Saturday")]), ScriptedLM([ends("Saturday")])
    v, _ = await run(build_baseline_graph("vanilla_rag", lm=vanilla, token_lm=WordTokens()), ctx,
                                          question)
    o, _ = await run(build_baseline_graph("op_rag", lm=op, token_lm=WordTokens()), ctx, question)
    assert v["selected"] == [3, 0] and o["selected"] == [0, 3]
    assert vanilla.prompts[0].index("Saturday") < vanilla.prompts[0].index("lighthouse was")
    assert op.prompts[0].index("lighthouse was") < op.prompts[0].index("Saturday")


async def test_self_route_falls_back_to_the_whole_context_when_the_reader_declines():
    strong = ScriptedLM([ends("Unanswerable."), ends("Bergen")])
    out, events = await run(build_baseline_graph("self_route", lm=strong, token_lm=WordTokens()),
                                                 context())
    assert "unanswerable" in strong.prompts[0]
    assert all(p in strong.prompts[1] for p in PARAGRAPHS)
    assert out["answer"] == "Bergen" and out["route"] == "long_context"
    assert out["lm_calls"] == 2
    assert [e["name"] for e in events][-2:] == ["generate", "long_context"]
    answered = ScriptedLM([ends("Bergen")])
    out, _ = await run(build_baseline_graph("self_route", lm=answered, token_lm=WordTokens()),
                                            context())
    assert out["route"] == "op_rag" and len(answered.prompts) == 1


async def test_a_context_longer_than_the_readers_window_is_cut_in_the_middle(caplog):
    strong = ScriptedLM([ends("Bergen")])
    tokens = WordTokens(window=80)
    out, _ = await run(build_baseline_graph("long_context", lm=strong, token_lm=tokens), context())
    prompt = strong.prompts[0]
    assert out["truncated_tokens"] > 0
    assert len(await tokens.tokenize(prompt)) <= 80 - 32 - 4
    assert prompt.startswith("Answer the question") and prompt.endswith("Answer:")
    assert "cut in the middle" in caplog.text
    assert out["selected"] == [0, 1, 2, 3, 4]


async def test_a_light_prompt_too_long_for_its_window_is_cut_too():
    light = ScriptedSampler([RATIONALE], window=130)
    graph = build_fb_rag_graph(lm=ScriptedLM([ends("Bergen")]), token_lm=WordTokens(),
                               light_lm=light)
    out, _ = await run(graph, context(recall_words=200, read_words=WORDS[0]))
    assert out["truncated_tokens"] > 0
    assert len(light.prompts[0].split(" ")) <= 130 - 96 - 4


async def test_bad_input_is_named():
    graph = build_fb_rag_graph(lm=ScriptedLM([]), token_lm=WordTokens(),
                               light_lm=ScriptedSampler([RATIONALE]))
    with pytest.raises(ActiveRagError, match="question is empty"):
        await run(graph, context(), question=" ")
    with pytest.raises(ActiveRagError, match=r"read_words \(Y = 500\) is not below the "
                                             r"context's \d+ words"):
        await run(graph, context(read_words=500))
    with pytest.raises(ValueError, match="samples must be at least 1"):
        context(samples=0)
    with pytest.raises(ValueError, match="both 0"):
        context(eta_b=0.0, eta_f=0.0)
    with pytest.raises(ActiveRagError, match="holds no words"):
        await run(graph, context(), text="   \n\n ")


class Down:
    """A server that is not there."""

    model = "down"

    async def sample(self, *a, **kw):
        raise LMServerUnreachable("connection refused")

    async def context_window(self):
        return None


async def test_a_light_server_that_is_down_is_named_as_the_light_sampler():
    graph = build_fb_rag_graph(lm=ScriptedLM([]), token_lm=WordTokens(), light_lm=Down())
    with pytest.raises(LMServerUnreachable, match="light sampler at http://127.0.0.1:8765/v1"):
        await run(graph, context())


async def test_the_answer_is_the_readers_first_non_empty_line():
    strong = ScriptedLM([[("\n", 0.9), ("\n", 0.9), ("Bergen", 0.9), ("\n", 0.9),
                          ("Passage", 0.9), ("\nQuestion:", 0.9)]])
    out, _ = await run(build_baseline_graph("op_rag", lm=strong, token_lm=WordTokens()), context())
    assert out["answer"] == "Bergen"


def test_the_scripted_sampler_ends_nothing_by_running_out():
    # the scripted LM ends units by EOS, stop strings or length, never by an empty script
    assert ends("Bergen")[-1] == EOS


def test_the_light_sampler_s_layout_is_its_own_setting_else_its_own_template():
    import asyncio
    from types import SimpleNamespace

    from activerag.nodes.fb_rag.context import FBRagContext
    from activerag.nodes.fb_rag.parts import FBParts, light_layout

    def layout(light, fmt):
        ctx = FBRagContext(light_prompt_format=fmt)
        return asyncio.run(light_layout(FBParts(light=light), ctx))

    assert layout(None, "plain") == "plain"
    assert layout(SimpleNamespace(chat_layout="gemma"), "auto") == "gemma"
    assert layout(SimpleNamespace(), "auto") == "chatml"  # a scripted sampler without one
