"""Nodes of the uncertainty gates, ETC and DRAGIN-lite.

Uncertainty-gated single retrieval (Moskvoretskii et al. 2025, graphs/gated.py): the whole
answer without documents (the request the `none` method makes), an estimate of its
uncertainty, and only when it is uncertain one retrieval with the question and the answer
again over its documents (the request `single` makes).

ETC (Li et al. 2026) and DRAGIN-lite (after Su et al. 2024) in FLARE's graph: gates that fire
at a word of the draft, the sentence continued from that word over the retrieved documents,
and DRAGIN-lite's query. Their arithmetic is logic.py's, their triggers triggers.py's
(over nodes/triggers.py's registry).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal, TypeAlias

from langgraph.runtime import Runtime

from activerag import trigger_names
from activerag.context import FlareContext
from activerag.errors import ActiveRagError, LMServerUnreachable, PromptTooLong
from activerag.nodes import estimators, triggers
from activerag.nodes.base import Node, Update, node_name
from activerag.nodes.exemplars import shots
from activerag.nodes.flare.single import answer_once
from activerag.nodes.gated import logic as gate_logic
from activerag.nodes.gated import triggers as word_triggers
from activerag.nodes.gated.context import DraginContext, GateContext
from activerag.nodes.loop import FlareNode, generate_unit, prompt_documents, unit_update
from activerag.nodes.loop_logic import answer_end
from activerag.nodes.parts import Parts
from activerag.nodes.prompts import ANSWER_STOPS, answer_prompt
from activerag.sentences import SentenceSplitter
from activerag.serving import cache
from activerag.serving.lm_errors import LMServerError
from activerag.serving.token_lm import Sampler
from activerag.state import FlareState

GateNode: TypeAlias = Node[FlareState, GateContext]
LEXSIM_TOP_P, LEXSIM_TOP_K = 1.0, 50
"""The samples' nucleus and top-k: LM-Polygraph's defaults, which the paper ran."""


# --- uncertainty-gated single retrieval ------------------------------------------------------


def estimating(ctx: GateContext) -> GateContext:
    """CTX with its estimator as the trigger when the estimator reads more alternatives per
    token than the run's trigger, so that the LM client asks for them (top_logprobs_for);
    otherwise CTX itself, whose first pass is then the very request `none` makes."""
    wanted = estimators.estimator_named(ctx.estimator).top_logprobs
    if wanted > triggers.top_logprobs_for(ctx) and ctx.estimator in trigger_names.TRIGGERS:
        return replace(ctx, trigger=ctx.estimator)
    return ctx


def make_answer_without_documents(parts: Parts) -> GateNode:
    """Node: the whole answer without documents, one call, as `none` writes it; its tokens (and
    their alternatives, when the estimator reads them) and its sentences wait in the step for
    the estimate."""

    async def answer(state: FlareState, runtime: Runtime[GateContext]) -> Update:
        gen, update = await answer_once(parts, state, estimating(runtime.context))
        end = len(update["answer"])
        kept = [t for t in gen.tokens if t.start < end]
        tops = [tuple(t.top) for t in kept]
        update["step"] = {"new": True, "tokens": [(t.text, t.prob, t.start) for t in kept],
                          "answer_trace": update.pop("trace"),
                          **({"tops": tops} if any(tops) else {})}
        return update

    return answer


async def sampler_for(parts: Parts, ctx: GateContext) -> Sampler:
    """The given token LM, or the run's server, its draws kept in the LM cache's samples
    table while a cache is on (as FB-RAG's light samples are)."""
    if parts.token_lm is not None:
        return parts.token_lm  # type: ignore[return-value]
    key = ("sampler", ctx.base_url, ctx.model, cache.samples_active())
    if key not in parts.memo:
        sampler: Any = await parts.token_lm_for(ctx)
        path = cache.samples_active()
        parts.memo.setdefault(key, cache.CachedSampler(sampler, path) if path else sampler)
    return parts.memo[key]  # type: ignore[return-value]


def refused_n(ctx: GateContext, how: str) -> ActiveRagError:
    """The error for a server that would not give lexsim its answers in one request."""
    return ActiveRagError(
        f"the lexsim estimator needs {ctx.lexsim_samples} answers sampled in one request "
        f"(n={ctx.lexsim_samples}) and the server at {ctx.base_url} {how}; serve the model with "
        "vLLM, whose /v1/completions honours n, or gate with an estimator that reads the "
        "answer's own tokens (gate_entropy_mean, gate_entropy_max, gate_perplexity)")


def cut_answer(text: str, splitter: SentenceSplitter) -> str:
    """A sampled TEXT up to the end of the sentence that gives its answer, as every answer is
    cut; all of it when it gives none."""
    end = answer_end(text, splitter.spans(text), complete=True)
    return (text if end is None else text[:end]).strip()


async def draw_samples(parts: Parts, state: FlareState, ctx: GateContext
                       ) -> tuple[list[str], Update]:
    """lexsim's answers: lexsim_samples samples of the first pass's prompt in one request
    (n), each ended where an answer ends; and what they cost."""
    sampler = await sampler_for(parts, ctx)
    prompt = answer_prompt(state["question"], "", [], await parts.layout_for(ctx),
                           await shots(parts, ctx))
    try:
        out = await sampler.sample(prompt, ctx.lexsim_samples, ctx.max_answer_tokens,
                                   temperature=ctx.lexsim_temperature, top_p=LEXSIM_TOP_P,
                                   top_k=LEXSIM_TOP_K, seed=None, stop=ANSWER_STOPS)
    except (LMServerError, LMServerUnreachable, PromptTooLong):
        raise
    except ActiveRagError as exc:
        raise refused_n(ctx, f"refused it ({exc})") from exc
    if len(out.texts) != ctx.lexsim_samples:
        raise refused_n(ctx, f"returned {len(out.texts)} of them")
    splitter = await parts.splitter_for(ctx)
    return ([cut_answer(t, splitter) for t in out.texts],
            {"lm_calls": out.requests, "generated_tokens": out.generated_tokens,
             "prompt_tokens": out.prompt_tokens})


def make_estimate(parts: Parts) -> GateNode:
    """Node: the estimator's value of the answer without documents (lexsim: of the answers it
    samples) against its threshold. Kept, the answer's sentences are traced with the value;
    else the graph retrieves (an answer with no tokens always does)."""

    async def estimate(state: FlareState, runtime: Runtime[GateContext]) -> Update:
        ctx = runtime.context
        estimator = estimators.estimator_named(ctx.estimator)
        step: dict[str, Any] = dict(state.get("step", {}))
        costs: Update = {}
        if estimator.samples:
            step["samples"], costs = await draw_samples(parts, state, ctx)
        value = estimator.value(step.get("tokens", []), {**state, "step": step}, ctx)  # type: ignore[typeddict-item]
        threshold = estimators.estimator_threshold(ctx, ctx.estimator)
        fired = estimator.fires(value, threshold)
        why = {"estimator": ctx.estimator, "value": value, "threshold": threshold,
               "fired": fired, "retrieves_when": "above" if estimator.above else "below"}
        update: Update = {"step": {"fire": fired, "why": why,
                                   **({"samples": step["samples"]} if estimator.samples
                                      else {})}, **costs}
        if not fired:
            update["trace"] = [{**entry, "why": why} for entry in step.get("answer_trace", [])]
        update["decision"] = {"node": node_name() or "estimate", **why}
        return update

    return estimate


def route_after_estimate(state: FlareState) -> Literal["retrieve", "__end__"]:
    """Retrieve once when the estimate called for it, else the answer stands."""
    return "retrieve" if state.get("step", {}).get("fire") else "__end__"


def make_answer_with_documents(parts: Parts) -> GateNode:
    """Node: the whole answer again over the documents retrieved with the question, the
    request `single` makes; its sentences traced as retrieved, with the estimate that fired."""

    async def answer(state: FlareState, runtime: Runtime[GateContext]) -> Update:
        why = state.get("step", {}).get("why", {})
        fresh: Any = {**state, "answer": "", "answer_tokens": 0}
        _, update = await answer_once(parts, fresh, runtime.context)
        update["trace"] = [{**entry, "retrieved": True, "why": why}
                           for entry in update["trace"]]
        return update

    return answer


# --- ETC and DRAGIN-lite in FLARE's graph ------------------------------------------------------


def _word_gate(state: FlareState, ctx: FlareContext, name: str, keep: bool) -> Update:
    step = state.get("step", {})
    if not step.get("draft", "").strip():
        return {"step": {"fire": False}}
    check = word_triggers.etc_check if name == "etc" else word_triggers.dragin_check
    fire = check(step.get("tokens", []), state, ctx)
    compared = [v for v in fire.values if v is not None]
    at = fire.at
    why = {"trigger": name, "fired": at is not None, "at": at,
           "word": None if at is None else fire.words[at],
           "value": fire.values[at] if at is not None else max(compared, default=None),
           "threshold": fire.threshold, "words": fire.words,
           "values": [None if v is None else round(v, 4) for v in fire.values],
           "entropies": [round(h, 4) for h in fire.entropies]}
    update: Update = {"fire": at is not None, "why": why}
    if at is not None and keep:
        update["keep"] = fire.keep
    shown = {k: why[k] for k in ("trigger", "value", "threshold", "word")}
    return {"step": update, "decision": {"node": node_name() or f"{name}_gate",
                                         "fire": at is not None, **shown}}


def etc_gate(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
    """Node: ETC's gate: fire at the first word whose smoothed second difference of entropy
    is above etc_threshold, keeping the draft before it (the authors' code truncates there)."""
    return _word_gate(state, runtime.context, "etc", keep=True)


def dragin_gate(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
    """Node: DRAGIN-lite's gate: fire at the first content word whose entropy is above
    dragin_threshold, keeping the draft before it when dragin_truncate is "word" (§3.3)."""
    keep = getattr(runtime.context, "dragin_truncate", DraginContext.dragin_truncate) == "word"
    return _word_gate(state, runtime.context, "dragin_lite", keep=keep)


def make_continue(parts: Parts) -> FlareNode:
    """Node: the sentence again from the word the gate fired at: the draft before it kept
    (step["keep"]), the rest written over this step's documents; with nothing kept, the whole
    sentence, as FLARE's regenerate writes it."""

    async def continue_sentence(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
        ctx = runtime.context
        step = state.get("step", {})
        keep = step.get("keep", "")
        kept = [t for t in step.get("tokens", []) if t[2] < len(keep)] if keep else []
        docs = prompt_documents(state, ctx)
        ahead: Any = {**state, "answer": state.get("answer", "") + keep,
                      "answer_tokens": state.get("answer_tokens", 0) + len(kept)}
        gen = await generate_unit(parts, ahead, ctx, "sentence", docs)
        update = unit_update(gen, seen=docs)
        if keep:
            update["step"]["sentence"] = keep + gen.text
            update["step"]["sentence_tokens"] = [
                *kept, *[(t.text, t.prob, t.start + len(keep)) for t in gen.tokens]]
        return update

    return continue_sentence


def dragin_query(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
    """Node: DRAGIN-lite's query: the question, then the draft's content words before the
    fired one with the highest surprisal, at most dragin_query_words, in their order (QFS,
    §3.2, with each word's mean token surprisal where QFS reads attention)."""
    step = state.get("step", {})
    tokens = step.get("tokens", [])
    spans = gate_logic.word_spans(tokens)
    at = step.get("why", {}).get("at")
    upto = len(spans) if at is None else at
    words = gate_logic.word_texts(tokens, spans)[:upto]
    stop = gate_logic.stopwords()
    surprisals = gate_logic.per_word([gate_logic.surprisal(p) for _, p, _ in tokens], spans,
                                     gate_logic.mean)[:upto]
    n = getattr(runtime.context, "dragin_query_words", DraginContext.dragin_query_words)
    chosen = gate_logic.surprising_words(words, surprisals,
                                         [gate_logic.is_content(w, stop) for w in words], n)
    return {"step": {"queries": [gate_logic.join_query(state["question"], chosen)]}}
