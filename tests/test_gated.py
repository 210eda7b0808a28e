"""Uncertainty-gated single retrieval (Moskvoretskii et al. 2025): the estimators as pure
functions, and the gated graph's decisions with scripted LMs whose uncertainty the tests
choose."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from activerag import trigger_names
from activerag.context import FlareContext
from activerag.errors import ActiveRagError, NoLogprobs, SettingError, UnknownTrigger
from activerag.graphs.gated import build_gated_graph
from activerag.graphs.single import build_single_graph
from activerag.nodes import estimators, triggers
from activerag.nodes.gated import logic as gl
from activerag.nodes.gated import triggers as gt
from activerag.nodes.gated.context import GateContext
from activerag.nodes.gated.steps import estimating
from activerag.nodes.prompts import ANSWER_STOPS
from activerag.sentences import SentenceSplitter
from activerag.serving.token_lm import Samples
from activerag.testing import EOS, ScriptedLM, ScriptedSampler, ends, memory_retriever
from activerag.testing.scripted import last_turn

QUESTION = "Which company did Alpha Beta found?"
SURE = "Alpha Beta founded Kelmor Works. So the answer is Kelmor Works."
WRONG = "Alpha Beta founded Gepu Works. So the answer is Gepu Works."


def uniform(k: int) -> tuple[float, ...]:
    """Top logprobs of a position spread evenly over K tokens: entropy ln K."""
    return (math.log(1 / k),) * k


SURE_TOP = (math.log(0.99),)
"""A position whose token has p = 0.99 and nothing else listed: entropy 0.056 nats."""


@dataclass
class TopsLM:
    """A ScriptedLM whose tokens carry the top logprobs a test chooses (entropy reads them):
    TOPS[i] gives the i-th reply's positions, the last one repeated for the rest."""

    lm: ScriptedLM
    tops: list[list[tuple[float, ...]]]
    model: str = "scripted"

    async def generate(self, prompt: str, **kwargs):  # type: ignore[no-untyped-def]
        gen = await self.lm.generate(prompt, **kwargs)
        tops = self.tops.pop(0)
        gen.tokens = [replace(t, top=tops[min(i, len(tops) - 1)])
                      for i, t in enumerate(gen.tokens)]
        return gen

    async def token_ids(self, text: str) -> list[int]:
        return await self.lm.token_ids(text)


def retriever():  # type: ignore[no-untyped-def]
    return memory_retriever({"Alpha Beta": "Alpha Beta founded Kelmor Works in 1950.",
                             "Gepu": "Gepu is a small town."}, k=1)


async def run(lm, ctx: GateContext, sampler=None):  # type: ignore[no-untyped-def]
    graph = build_gated_graph(lm=lm, retriever=retriever(), splitter=SentenceSplitter(),
                              token_lm=sampler)
    return await graph.ainvoke({"question": QUESTION}, context=ctx)


# --- the estimators, pure ------------------------------------------------------------------


def test_the_token_estimators_on_literal_values():
    assert gl.mean_entropy([0.2, 0.4, 0.9]) == pytest.approx(0.5)
    assert gl.max_entropy([0.2, 0.4, 0.9]) == 0.9
    assert gl.perplexity([math.log(0.5), math.log(0.25)]) == pytest.approx(1.5 * math.log(2))
    assert gl.mean_entropy([]) == gl.max_entropy([]) == gl.perplexity([]) == 0.0


def test_rouge_l_is_the_f_measure_of_the_longest_common_subsequence():
    assert gl.lcs_length("a b c d".split(), "a x c d y".split()) == 3
    assert gl.lcs_length([], ["a"]) == 0
    # 3 common tokens; precision 3/6, recall 3/3
    assert gl.rouge_l("the cat sat", "the cat sat on the mat") == pytest.approx(2 / 3)
    assert gl.rouge_l("Kelmor Works.", "kelmor works") == 1.0  # case and punctuation aside
    assert gl.rouge_l("he founded it", "he founds it") == 1.0  # stems, as rouge-score's
    assert gl.lex_tokens("The runners ran 1950!") == ["the", "runner", "ran", "1950"]
    assert gl.rouge_l("", "a b") == 0.0 and gl.rouge_l("x y", "a b") == 0.0


def test_lex_similarity_is_the_mean_over_every_pair():
    texts = ["a b", "a b", "c d"]  # pairs: 1.0, 0.0, 0.0
    assert gl.lex_similarity(texts) == pytest.approx(1 / 3)
    assert gl.lex_similarity(["So the answer is Kelmor."] * 4) == 1.0
    with pytest.raises(ValueError, match="pairwise; got 1"):
        gl.lex_similarity(["a"])


@given(st.lists(st.text(alphabet="ab cd", max_size=12), min_size=2, max_size=5))
def test_lex_similarity_lies_in_0_1_and_rouge_l_is_symmetric(texts):
    assert 0.0 <= gl.lex_similarity(texts) <= 1.0
    assert gl.rouge_l(texts[0], texts[1]) == pytest.approx(gl.rouge_l(texts[1], texts[0]))


def test_an_estimator_fires_past_its_threshold_in_its_own_direction():
    def up(above: bool) -> estimators.Estimator:
        return estimators.Estimator(lambda *_: None, 0.4, above=above)

    assert up(True).fires(0.5, 0.4) and not up(True).fires(0.4, 0.4)
    assert up(False).fires(0.3, 0.4) and not up(False).fires(0.4, 0.4)
    assert up(True).fires(None, 0.4) and up(False).fires(None, 0.4)


# --- the estimators as registered, and the context -------------------------------------------


TOKENS = [("Kel", 0.5, 0), ("mor", 0.25, 3)]


def test_the_estimators_read_the_answers_tokens_with_the_entropy_helper():
    state = {"step": {"tops": [uniform(2), uniform(8)]}}
    assert gt.entropy_mean(TOKENS, state) == pytest.approx(
        (triggers.entropy(uniform(2)) + triggers.entropy(uniform(8))) / 2)
    assert gt.entropy_max(TOKENS, state) == pytest.approx(math.log(8))
    assert gt.log_perplexity(TOKENS, state) == pytest.approx(1.5 * math.log(2))
    # a position without alternatives counts its own token, the rest one more outcome
    assert gt.entropy_max(TOKENS[:1], {"step": {"tops": [()]}}) == pytest.approx(math.log(2))
    assert gt.entropy_mean([], {}) is None and gt.log_perplexity([], {}) is None
    with pytest.raises(NoLogprobs, match="the entropy_max estimator reads each token's top-20"):
        gt.entropy_max(TOKENS, {"step": {}})
    state = {"step": {"samples": ["So the answer is Kelmor.", "So the answer is Kelmor."]}}
    assert estimators.estimator_named("lexsim").value([], state) == 1.0
    assert estimators.ESTIMATORS["lexsim"].value([], state) == 1.0
    with pytest.raises(NoLogprobs, match="lexsim estimator compares answers sampled"):
        estimators.ESTIMATORS["lexsim"].value([], {"step": {}})


def test_the_token_estimators_are_triggers_too_and_lexsim_is_not():
    assert {"entropy_mean", "entropy_max", "perplexity", "lexsim"} <= set(estimators.ESTIMATORS)
    tops = trigger_names.TOP_LOGPROBS
    assert tops["entropy_mean"] == tops["entropy_max"] == 20 and tops["perplexity"] == 1
    assert "lexsim" not in trigger_names.TRIGGERS  # a draft has no samples to compare
    state = {"step": {"draft": "Kelmor", "tokens": TOKENS}}
    # as a trigger over a draft: the estimator's own threshold, or the run's gate_threshold
    perplexity = triggers.trigger_named("perplexity")
    assert perplexity(TOKENS, state, FlareContext()) is True  # 1.04 > 0.25
    high = GateContext(estimator="perplexity", gate_threshold=2.0)
    assert perplexity(TOKENS, state, high) is False
    other = GateContext(estimator="entropy_mean", gate_threshold=2.0)
    assert estimators.estimator_threshold(other, "perplexity") == estimators.ESTIMATORS[
        "perplexity"].threshold


def test_the_gate_context_refuses_what_cannot_run():
    with pytest.raises(UnknownTrigger, match="unknown estimator 'nope'; known: entropy_max, "
                                             "entropy_mean, lexsim, (.+, )?perplexity"):
        GateContext(estimator="nope")
    with pytest.raises(SettingError, match="lexsim_samples must be at least 2"):
        GateContext(lexsim_samples=1)
    with pytest.raises(SettingError, match="lexsim_temperature must be positive"):
        GateContext(lexsim_temperature=0.0)
    with pytest.raises(SettingError, match="gate_threshold must be a finite number"):
        GateContext(gate_threshold=math.nan)


def test_the_first_pass_asks_for_alternatives_only_when_the_estimator_reads_them():
    entropy = GateContext(estimator="entropy_max")
    assert triggers.top_logprobs_for(estimating(entropy)) == 20
    assert estimating(entropy).trigger == "entropy_max"
    for name in ("perplexity", "lexsim"):  # the run's own context: the client `none` uses
        ctx = GateContext(estimator=name)
        assert estimating(ctx) is ctx
    assert estimating(GateContext(trigger="entropy", estimator="entropy_mean")).trigger == (
        "entropy")  # the run's trigger asks for them already


# --- the gated graph ---------------------------------------------------------------------------


async def test_a_sure_answer_stands_without_retrieval():
    lm = TopsLM(ScriptedLM([ends(SURE, prob=0.99)]), [[SURE_TOP]])
    out = await run(lm, GateContext(estimator="entropy_mean"))
    assert out["answer"] == SURE
    assert (out["lm_calls"], out["retrievals"], out["retrieval_steps"]) == (1, 0, 0)
    assert [s["retrieved"] for s in out["trace"]] == [False, False]
    why = out["trace"][0]["why"]
    assert why["estimator"] == "entropy_mean" and why["fired"] is False
    assert why["value"] == pytest.approx(triggers.entropy(SURE_TOP))
    assert why["threshold"] == estimators.ESTIMATORS["entropy_mean"].threshold
    assert "Search results" not in last_turn(lm.lm.prompts[0])


async def test_an_unsure_answer_is_replaced_by_one_written_over_the_retrieved_documents():
    lm = TopsLM(ScriptedLM([ends(WRONG), ends(SURE)]), [[uniform(8)], [()]])
    out = await run(lm, GateContext(estimator="entropy_mean"))
    assert out["answer"] == SURE
    assert (out["lm_calls"], out["retrievals"], out["retrieval_steps"]) == (2, 1, 1)
    assert all(s["retrieved"] for s in out["trace"]) and len(out["trace"]) == 2
    why = out["trace"][1]["why"]
    assert why["fired"] is True and why["value"] == pytest.approx(math.log(8))
    assert out["trace"][0]["queries"] == [QUESTION]  # retrieved once, with x
    assert out["trace"][0]["doc_titles"] == ["Alpha Beta"]
    first, second = lm.lm.prompts
    assert "Search results" not in last_turn(first)
    assert "Alpha Beta founded Kelmor Works in 1950." in second
    assert WRONG not in second  # the answer is written afresh, not continued
    assert out["retrieved_titles"] == ["Alpha Beta"]


async def test_the_two_passes_are_the_requests_none_and_single_make():
    """The LM cache serves the first pass from `none`'s entry and the second from `single`'s
    (perplexity reads the token's own probability, so the client is the same too)."""
    gated = ScriptedLM([ends(WRONG, prob=0.4), ends(SURE)])
    await run(gated, GateContext(estimator="perplexity"))
    none, single = ScriptedLM([ends(WRONG, prob=0.4)]), ScriptedLM([ends(SURE)])
    for lm, retrieval in ((none, False), (single, True)):
        graph = build_single_graph(lm=lm, retriever=retriever(), splitter=SentenceSplitter(),
                                   retrieval=retrieval)
        await graph.ainvoke({"question": QUESTION}, context=FlareContext())
    assert gated.prompts == [*none.prompts, *single.prompts]
    assert gated.calls == [*none.calls, *single.calls]


async def test_the_threshold_decides_and_gate_threshold_moves_it():
    for threshold, fired in ((0.5, True), (1.0, False)):  # log-perplexity ln 2 = 0.69
        script = [ends(WRONG, prob=0.5), ends(SURE)] if fired else [ends(WRONG, prob=0.5)]
        out = await run(ScriptedLM(script),
                        GateContext(estimator="perplexity", gate_threshold=threshold))
        assert out["trace"][0]["why"]["fired"] is fired
        assert out["answer"] == (SURE if fired else WRONG)


async def test_an_answer_without_tokens_always_retrieves():
    out = await run(ScriptedLM([[EOS], ends(SURE)]), GateContext(estimator="perplexity"))
    assert out["answer"] == SURE and out["trace"][0]["why"]["value"] is None


async def test_lexsim_keeps_an_answer_its_samples_agree_with():
    sampler = ScriptedSampler([SURE + " He then retired.\n\nQuestion: x", SURE])
    out = await run(ScriptedLM([ends(SURE)]), GateContext(estimator="lexsim", lexsim_samples=4),
                    sampler)
    assert out["answer"] == SURE and out["trace"][0]["why"]["value"] == pytest.approx(1.0)
    [call] = sampler.calls  # one request with n, the first pass's prompt, answers' stops
    assert call["n"] == 4 and call["temperature"] == 1.0 and call["top_k"] == 50
    assert call["stop"] == list(ANSWER_STOPS) and call["max_tokens"] == 256
    assert sampler.prompts[0] == (await _none_prompt())
    assert out["lm_calls"] == 2 and out["retrievals"] == 0


async def _none_prompt() -> str:
    lm = ScriptedLM([ends(SURE)])
    graph = build_single_graph(lm=lm, splitter=SentenceSplitter(), retrieval=False)
    await graph.ainvoke({"question": QUESTION}, context=FlareContext())
    return lm.prompts[0]


async def test_lexsim_retrieves_when_its_samples_disagree():
    samples = [WRONG, "So the answer is Vedria Mills.", SURE]  # agreement 0.586
    for threshold, fired in ((0.6, True), (0.55, False)):
        script = [ends(WRONG), ends(SURE)] if fired else [ends(WRONG)]
        out = await run(ScriptedLM(script), GateContext(estimator="lexsim", lexsim_samples=3,
                                                        gate_threshold=threshold),
                        ScriptedSampler(samples))
        why = out["trace"][0]["why"]
        assert why["fired"] is fired and why["retrieves_when"] == "below"
        assert why["value"] == pytest.approx(gl.lex_similarity(samples))
        assert out["answer"] == (SURE if fired else WRONG)


class Refusing(ScriptedSampler):
    async def sample(self, prompt, n, max_tokens, **kwargs):  # type: ignore[no-untyped-def]
        raise ActiveRagError("the LM server rejected the request (400): n must be 1")


class OneOnly(ScriptedSampler):
    async def sample(self, prompt, n, max_tokens, **kwargs):  # type: ignore[no-untyped-def]
        return Samples([SURE], 10, 10, 1)


@pytest.mark.parametrize(("sampler", "how"), [(Refusing([]), r"refused it \(.*n must be 1\)"),
                                              (OneOnly([]), "returned 1 of them")])
async def test_a_server_that_refuses_n_is_named_with_what_to_do(sampler, how):
    with pytest.raises(ActiveRagError, match=f"lexsim estimator needs 4 answers sampled in one "
                                             f"request \\(n=4\\) and the server at .* {how}; "
                                             "serve the model with vLLM"):
        await run(ScriptedLM([ends(SURE)]), GateContext(estimator="lexsim", lexsim_samples=4),
                  sampler)


async def test_the_sampler_sends_stop_strings_only_when_given():
    from activerag.serving.token_lm import VLLMTokens

    sent = []

    async def post(path, body):  # type: ignore[no-untyped-def]
        sent.append(body)
        return {"choices": [{"text": "a", "index": 0}], "usage": {}}

    tokens = VLLMTokens("http://127.0.0.1:9/v1", "m")
    tokens.post = post  # type: ignore[method-assign]
    kw = {"temperature": 1.0, "top_p": 1.0, "top_k": 50, "seed": None}
    await tokens.sample("p", 1, 8, **kw)
    await tokens.sample("p", 1, 8, **kw, stop=("\n\n",))
    assert "stop" not in sent[0] and sent[1]["stop"] == ["\n\n"]


async def test_the_sample_cache_keeps_draws_with_and_without_stops_apart(tmp_path):
    from activerag.serving.cache import CachedSampler

    inner = ScriptedSampler(["x"])
    cached = CachedSampler(inner, tmp_path / "c.sqlite")
    kw = {"temperature": 1.0, "top_p": 1.0, "top_k": 50, "seed": None}
    await cached.sample("p", 2, 8, **kw)
    await cached.sample("p", 2, 8, **kw, stop=["\n\n"])
    await cached.sample("p", 2, 8, **kw, stop=["\n\n"])
    assert [c.get("stop") for c in inner.calls] == [None, ["\n\n"]] and cached.hits == 1


def test_the_trace_line_says_the_estimate_and_the_decision():
    from activerag.evaluation.report import format_step

    step = {"index": 0, "min_prob": 0.4, "retrieved": True, "draft": "x", "queries": [],
            "doc_titles": [], "doc_ids": [], "sentence": "x",
            "why": {"estimator": "entropy_mean", "value": 0.4123, "threshold": 0.35,
                    "fired": True}}
    assert "    why:     entropy_mean 0.412 (threshold 0.35): fired" in format_step(step)


def test_the_registry_rows_pin_each_gate_its_context_estimator_and_needs():
    from activerag.graphs.registry import METHODS
    from activerag.nodes.gated.context import DraginContext, EtcContext

    gates = {f"gate_{e}": (GateContext, {"estimator": e})
             for e in ("entropy_mean", "entropy_max", "perplexity", "lexsim")}
    pinned = {**gates, "flare_etc": (EtcContext, {}), "dragin_lite": (DraginContext, {})}
    for name, (cls, overrides) in pinned.items():
        row = METHODS[name]
        assert (row.context, row.overrides, row.family) == (cls, overrides, "uncertainty gates")
        assert row.answer_rule == "empty"
    top20 = {"completions", "stream", "logprobs", "top_logprobs_20"}
    assert METHODS["gate_entropy_mean"].needs == METHODS["flare_etc"].needs == top20
    assert METHODS["gate_perplexity"].needs == {"completions", "stream", "logprobs"}
    assert METHODS["gate_lexsim"].needs == {"completions", "stream", "logprobs", "n", "n_10"}
