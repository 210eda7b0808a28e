"""The run's task and exemplars for the sentence loop (nodes/loop.py): the library's own or the
paper's, each exemplar with the documents retrieved with its own question when the run asks
for it (FLARE's Table 7)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Literal

from activerag.context import ServingContext
from activerag.errors import ActiveRagError
from activerag.nodes.parts import Parts
from activerag.nodes.prompts import COT_TASK, SELF_ASK_TASK, Task

TaskKind = Literal["cot", "self_ask"]


def task_for(ctx: ServingContext, kind: TaskKind = "cot") -> Task:
    """The run's task and exemplars: the library's own or the paper's (without documents)."""
    if ctx.prompt_set == "default":
        return COT_TASK if kind == "cot" else SELF_ASK_TASK
    if ctx.prompt_set == "none" and kind == "cot":
        return replace(COT_TASK, exemplars=())
    from activerag.nodes.prompts import paper_task

    if ctx.prompt_set == "paper":
        return paper_task(kind)
    if kind == "self_ask":
        raise ActiveRagError(
            f"self-ask has exemplars for 2WikiMultihopQA only (the paper's Prompt 3) and is "
            f"nothing without them, not for prompt_set={ctx.prompt_set!r}; use --prompts paper "
            "or default for self_ask"
        )
    return paper_task("strategyqa" if ctx.prompt_set == "paper-strategyqa" else "asqa")


async def shots(parts: Parts, ctx: ServingContext, kind: TaskKind = "cot",
                per_exemplar: int | None = None) -> Task:
    """The run's task; its exemplars carry the documents retrieved with their own questions
    when the run asks for it (Table 7: on for the paper's 2WikiMultihopQA exemplars), the top
    PER_EXEMPLAR (default ctx.k) each."""
    task = task_for(ctx, kind)
    if not ctx.exemplars_retrieve or not task.exemplars:
        return task
    n = per_exemplar or ctx.k
    # once per corpus (its size changes with an ingest), retriever, encoder, n, exemplar set
    store = getattr(await parts.retriever_for(ctx), "store", None)
    key = ("shots", ctx.store_dir, ctx.retriever, ctx.query_encoder, n, kind, ctx.prompt_set,
           None if store is None else len(store))
    if key not in parts.memo:
        found = await asyncio.gather(*[parts.search(ctx, e.question, n)
                                       for e in task.exemplars])
        parts.memo.setdefault(key, list(found))
    return task.with_documents(parts.memo[key])  # type: ignore[arg-type]
