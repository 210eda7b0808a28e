"""Every second of a question, accounted for, against the server's own rates.

    python -m benchmarks.cost.accounting --store STORE [--n 20] [--offset 0]
        [--methods flare,single,flarechain-answer,flarechain-default] [--prompts paper]
        [--out runs/accounting]    # then: python -m benchmarks.cost.accounting_report

One question at a time, each method over the same questions in turn, on the server at
ACTIVERAG_BASE_URL (llama-server: its per-token `timings` give each request's prefill and
decode; from vLLM only the client's view is recorded). For every LM request it writes a row
(requests.jsonl): the node that sent it, prompt tokens split into those served from the slot's
cache and those prefilled anew, the server's prefill and decode seconds, tokens decoded, kept
and thrown away and why (a draft regenerated after a retrieval; read past the sentence's end,
the look-ahead the cut needs; cut by a stop string; past the answer), and the request's wall
time as the client saw it. For every question (questions.jsonl): its wall time split into the
server's prefill and decode, the client's time around the requests (HTTP, streaming,
logprobs), retrieval, and the rest (the graph, prompts, sentence splitting), with EM and F1.

FlareChain (LangChain's, `benchmarks/cost/flarechain_compare.py`, with its own response prompt
and with the answer prompt) runs over the same server and retriever; its chat requests are not
streamed, so each response's `timings` is read from its body by an HTTP hook.

The report computes the server's prefill and decode rates over all requests and each
question's floor (its prefilled and decoded tokens at those rates); efficiency is the floor
over the wall time. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from contextvars import ContextVar
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import httpx

from activerag.context import FlareContext
from activerag.evaluation.datasets import Example, load_dataset
from activerag.graphs.registry import method
from activerag.nodes.base import node_name
from activerag.nodes.parts import Parts
from activerag.serving.lm import VLLMClient
from activerag.settings import Settings

_requests: ContextVar[list[dict[str, Any]] | None] = ContextVar("accounting", default=None)
_searches: ContextVar[list[float] | None] = ContextVar("accounting_searches", default=None)
FLARECHAIN = ("flarechain-answer", "flarechain-default")


def instrument() -> None:
    """Record every VLLMClient.generate and Parts.search of a question (see the module)."""
    generate, search = VLLMClient.generate, Parts.search

    async def recorded_generate(self: VLLMClient, prompt: str, **kw: Any) -> Any:
        start = time.perf_counter()
        gen = await generate(self, prompt, **kw)
        rows = _requests.get()
        if rows is not None:
            rows.append({"at": start, **request_row(node_name(), time.perf_counter() - start,
                                                    gen)})
        return gen

    async def timed_search(self: Parts, *args: Any, **kw: Any) -> Any:
        start = time.perf_counter()
        try:
            return await search(self, *args, **kw)
        finally:
            if (spent := _searches.get()) is not None:
                spent.append(time.perf_counter() - start)

    VLLMClient.generate = recorded_generate  # type: ignore[method-assign]
    Parts.search = timed_search  # type: ignore[method-assign]


def request_row(node: str, wall: float, gen: Any) -> dict[str, Any]:
    """One LM request: what the server did and what of it was kept."""
    server = asdict(gen.server) if gen.server is not None else {}
    decoded = server.get("decoded", gen.generated_tokens)
    kept = len(gen.tokens)
    why = ("stop" if gen.stop_reason else "past the end" if gen.complete and not gen.finished
           else "end of output" if gen.finished else "budget")
    return {"node": node, "wall": wall, "prompt_tokens": gen.prompt_tokens,
            "cached": server.get("cached"), "prefilled": server.get("prefilled"),
            "prefill_s": server.get("prefill_ms", 0.0) / 1000 if server else None,
            "decoded": decoded, "generated": gen.generated_tokens,
            "decode_s": server.get("decode_ms", 0.0) / 1000 if server else None,
            "kept": kept, "ended": why, "text": gen.text}


def thrown(requests: list[dict[str, Any]]) -> None:
    """Mark each request's thrown tokens and why: a draft regenerated after a retrieval loses
    all it kept; every request loses what it decoded past what it kept (the look-ahead past a
    sentence's end, a stop string, an answer cut)."""
    for i, r in enumerate(requests):
        after = requests[i + 1]["node"] if i + 1 < len(requests) else ""
        regenerated = r["node"] == "draft" and after in ("formulate_query", "regenerate")
        r["thrown_regenerated"] = r["kept"] if regenerated else 0
        r["thrown_past_end"] = max(0, r["decoded"] - r["kept"])


async def ours(name: str, ctx: FlareContext, ex: Example) -> dict[str, Any]:
    """EX with our method NAME (METHOD:PROMPTS for another prompt set than the run's, e.g.
    flare:none): its answer, wall time, requests and searches."""
    name, _, prompts = name.partition(":")
    graph, mctx = method(name, replace(ctx, prompt_set=prompts) if prompts else ctx)
    rows: list[dict[str, Any]] = []
    spent: list[float] = []
    t_rows, t_spent = _requests.set(rows), _searches.set(spent)
    try:
        start = time.perf_counter()
        out = await graph.ainvoke({"question": ex.question}, context=mctx)
        wall = time.perf_counter() - start
    finally:
        _requests.reset(t_rows)
        _searches.reset(t_spent)
    for r in rows:
        r["at"] -= start
    thrown(rows)
    trace = out.get("trace", [])
    return {"answer": out["answer"], "wall": wall, "requests": rows, "retrieval_s": sum(spent),
            "sentences": len(trace), "retrieved": sum(1 for s in trace if s.get("retrieved"))}


class ChatRecorder:
    """httpx hooks that record each FlareChain chat request's server timings and wall time."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self._sent: dict[int, float] = {}

    def request(self, req: httpx.Request) -> None:
        self._sent[id(req)] = time.perf_counter()

    def response(self, resp: httpx.Response) -> None:
        resp.read()
        body = resp.json() if resp.headers.get("content-type", "").startswith(
            "application/json") else {}
        t = body.get("timings") or {}
        usage = body.get("usage") or {}
        sent = self._sent.pop(id(resp.request), time.perf_counter())
        wall = time.perf_counter() - sent
        decoded = int(t.get("predicted_n", usage.get("completion_tokens", 0)))
        self.rows.append({
            "node": "flarechain", "at": sent, "wall": wall,
            "prompt_tokens": usage.get("prompt_tokens", 0),
            "cached": t.get("cache_n"), "prefilled": t.get("prompt_n"),
            "prefill_s": t["prompt_ms"] / 1000 if t else None, "decoded": decoded,
            "generated": decoded, "decode_s": t["predicted_ms"] / 1000 if t else None,
            "kept": decoded, "ended": "end of output", "thrown_regenerated": 0,
            "thrown_past_end": 0})


def theirs(chain: Any, recorder: ChatRecorder, ex: Example) -> dict[str, Any]:
    """EX with FlareChain: its answer, wall time, requests and searches."""
    recorder.rows = []
    spent: list[float] = []
    token = _searches.set(spent)
    try:
        start = time.perf_counter()
        answer = chain.invoke({"user_input": ex.question})["response"]
        wall = time.perf_counter() - start
    finally:
        _searches.reset(token)
    for r in recorder.rows:
        r["at"] -= start
    return {"answer": answer, "wall": wall, "requests": recorder.rows,
            "retrieval_s": sum(spent), "sentences": 0, "retrieved": 0}


class TimedRetriever:
    """FlareChain's retriever, its searches timed like ours."""

    def __new__(cls, inner: Any) -> Any:
        from langchain_core.retrievers import BaseRetriever

        class Timed(BaseRetriever):
            def _get_relevant_documents(self, query: str, *, run_manager: Any) -> Any:
                start = time.perf_counter()
                try:
                    return inner.invoke(query)
                finally:
                    if (spent := _searches.get()) is not None:
                        spent.append(time.perf_counter() - start)

        return Timed()


def flarechains(url: str, model: str, store: str, names: list[str]) -> dict[str, Any]:
    """FlareChain with each asked prompt, over our BM25 retriever (k=2), recorded."""
    from activerag.stores.corpus import Corpus
    from benchmarks.cost.flarechain_compare import flarechain

    retriever = TimedRetriever(Corpus(Path(store)).retriever("bm25", k=2))
    out = {}
    for name in names:
        rec = ChatRecorder()
        client = httpx.Client(timeout=3600, event_hooks={"request": [rec.request],
                                                         "response": [rec.response]})
        out[name] = (flarechain(url, model, retriever, name.split("-", 1)[1],
                                http_client=client), rec)
    return out


async def at_once(name: str, ctx: FlareContext, examples: list[Example], concurrency: int,
                  out: Path, common: dict[str, Any]) -> None:
    """EXAMPLES with method NAME, CONCURRENCY at a time: each question's row, and the pass's
    wall time (passes.jsonl)."""
    gate = asyncio.Semaphore(concurrency)
    done = 0

    async def one(ex: Example) -> dict[str, Any]:
        nonlocal done
        async with gate:
            got = await ours(name, ctx, ex)
        done += 1
        print(f"{done}/{len(examples)} {name} (concurrency {concurrency}): "
              f"{got['wall']:.1f} s", flush=True)
        return {**common, "method": name, "id": ex.id, "golds": ex.answers, **got}

    start = time.perf_counter()
    rows = await asyncio.gather(*[one(ex) for ex in examples])
    wall = time.perf_counter() - start
    with (out / "questions.jsonl").open("a") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    with (out / "passes.jsonl").open("a") as f:
        f.write(json.dumps({**common, "method": name, "n": len(rows), "wall": wall}) + "\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--store", required=True, help="corpus folder holding the 2Wiki corpus")
    p.add_argument("--dataset", default="2wiki")
    p.add_argument("--n", type=int, default=20)
    p.add_argument("--offset", type=int, default=0)
    p.add_argument("--methods", default="flare,single," + ",".join(FLARECHAIN),
                   help="ours by name (NAME:PROMPTS for another prompt set, e.g. flare:none), "
                        "and FlareChain's: " + ", ".join(FLARECHAIN))
    p.add_argument("--prompts", default="paper", choices=["paper", "default", "none"])
    p.add_argument("--out", default="runs/accounting")
    p.add_argument("--label", default="", help="a name for this pass (before, after, ...)")
    p.add_argument("--concurrency", type=int, default=1,
                   help="questions at a time (above 1: our methods only, each method's "
                        "questions all at once, its pass timed for throughput)")
    args = p.parse_args()
    settings = Settings.from_env()
    url = settings.url
    model = VLLMClient(url).model
    names = [m for m in args.methods.split(",") if m]
    chains = flarechains(url, model, args.store, [m for m in names if m in FLARECHAIN])
    ctx = FlareContext(base_url=url, store_dir=args.store, prompt_set=args.prompts,
                       max_answer_tokens=128)
    instrument()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    examples = load_dataset(args.dataset, args.n + args.offset)[args.offset:]
    common = {"label": args.label, "prompts": args.prompts, "model": model, "url": url,
              "concurrency": args.concurrency}
    if args.concurrency > 1:
        for name in [m for m in names if m not in chains]:
            asyncio.run(at_once(name, ctx, examples, args.concurrency, out, common))
        return
    with (out / "questions.jsonl").open("a") as rows:
        for i, ex in enumerate(examples, 1):
            for name in names:
                if name in chains:
                    got = theirs(*chains[name], ex)
                else:
                    got = asyncio.run(ours(name, ctx, ex))
                row = {**common, "method": name, "id": ex.id, "golds": ex.answers, **got}
                rows.write(json.dumps(row) + "\n")
                rows.flush()
                print(f"{i}/{len(examples)} {name}: {got['wall']:.1f} s, "
                      f"{len(got['requests'])} requests", flush=True)


if __name__ == "__main__":
    main()
