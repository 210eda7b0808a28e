"""REPLUG's answer-level ensembles (replug_vote, replug_rescore): each document's own greedy
answer (a LangGraph Send branch each), then the answer chosen from them: weighted votes, or
Eq. 2 rescored token by token over the candidates."""

from __future__ import annotations

import asyncio
import math
from typing import Any

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from activerag.answers import extract_answer, normalize
from activerag.nodes.base import Update, lm_cost
from activerag.nodes.exemplars import shots
from activerag.nodes.loop import AnswerCut
from activerag.nodes.parts import Parts
from activerag.nodes.prompts import ANSWER_STOPS, answer_prompt
from activerag.nodes.replug.context import ReplugContext
from activerag.nodes.replug.logic import (
    best_answer,
    top_weighted,
    vote_scores,
)
from activerag.nodes.replug.state import ReplugState, ReplugTrace
from activerag.nodes.replug.steps import ensemble_logprobs


def make_answer_alone(parts: Parts) -> Any:
    """Node (a Send branch): document d's own greedy answer, y_d = LM(d ∘ x)."""

    async def answer_alone(branch: dict[str, Any], runtime: Runtime[ReplugContext]) -> Update:
        ctx = runtime.context
        lm = await parts.lm_for(ctx)
        task = await shots(parts, ctx, per_exemplar=1)
        prompt = answer_prompt(branch["question"], "", [branch["document"]],
                               await parts.layout_for(ctx),
                               task)
        gen = await lm.generate(prompt, max_tokens=ctx.max_answer_tokens, stop=[*ANSWER_STOPS],
                                cut=AnswerCut(await parts.splitter_for(ctx)))
        logprobs = [t.logprob for t in gen.tokens]
        # as generated: rescore scores it after the prompt (plain: with its leading space)
        return {"candidates": [{"doc": branch["doc"], "text": gen.text,
                                "tokens": len(gen.tokens),
                                "mean_logprob": sum(logprobs) / len(logprobs) if logprobs
                                else -math.inf}],
                **lm_cost(gen)}

    return answer_alone


def make_combine(parts: Parts) -> Any:
    """Node: the answer from the documents' own answers.

    vote (the released code): weight λ_d · exp(mean token log-probability) per answer, summed
    per normalised answer. rescore: Eq. 2 exactly on those candidates: every candidate text is
    scored under every document (echo) and mixed token by token; the best mean wins. An
    output with no answer is no candidate; when no output has one, the output of the
    highest-weighted document (the retriever's top one) is the answer.
    """

    async def combine(state: ReplugState, runtime: Runtime[ReplugContext]) -> Update:
        ctx = runtime.context
        found = sorted(state.get("candidates", []), key=lambda c: c["doc"])
        weights = state["weights"]
        answers = [extract_answer(c["text"]) for c in found]
        first: dict[str, int] = {}  # normalised answer -> its first output
        for i, answer in enumerate(answers):
            if answer:
                first.setdefault(normalize(answer), i)
        cost: Update = {}
        if ctx.ensemble == "vote":
            scores = vote_scores(answers, [weights[c["doc"]] for c in found],
                                 [c["mean_logprob"] for c in found])
        elif first:
            lm = await parts.token_lm_for(ctx)
            ids = await asyncio.gather(*[lm.tokenize(found[i]["text"]) for i in first.values()])
            mixed = await asyncio.gather(*[
                ensemble_logprobs(lm, state["prompts"], weights, y) for y in ids])
            scores = {key: sum(m) / len(m) if m else -math.inf
                      for key, m in zip(first, mixed, strict=True)}
            cost = {"lm_calls": len(ids) * len(state["prompts"]),
                    "prompt_tokens": sum(len(p) + len(y) for y in ids for p in state["prompts"])}
        else:
            scores = {}
        winner = best_answer(scores)
        chosen = found[first[winner] if winner is not None
                       else top_weighted([weights[c["doc"]] for c in found])]
        docs = state.get("documents", [])
        answer = chosen["text"].strip()
        entry: ReplugTrace = {
            "index": 0, "sentence": answer, "tokens": [], "certified": 1.0,
            "doc_ids": [d.id or "" for d in docs],
            "doc_titles": [d.metadata.get("title", "") for d in docs],
            "weights": list(weights),
            "candidates": sorted(((answers[first[k]], v) for k, v in scores.items()),
                                 key=lambda kv: -kv[1])}
        get_stream_writer()({"sentence": entry})
        return {"answer": answer, "answer_tokens": chosen["tokens"], "trace": [entry],
                "done": True, **cost}

    return combine
