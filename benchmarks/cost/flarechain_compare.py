"""activerag's FLARE next to LangChain's FlareChain: same server, retriever and questions.

    python -m benchmarks.cost.flarechain_compare --store STORE --n 50 --out results/flarechain
        [--prompts paper|default|none]   # ours: the paper's exemplars (default), the
                                         # library's, or none (zero-shot, as FlareChain)

The server is ACTIVERAG_BASE_URL's (vLLM or llama-server: FlareChain's chat requests with
logprobs are served by both).

Both run one question at a time against the same vLLM server and the same BM25 retriever
(k=2). FlareChain needs a chat model with logprobs (`ChatOpenAI(logprobs=True)`, which vLLM's
chat endpoint serves); it runs with its own defaults (32-token chunks, min_prob 0.2, at most 10
rounds), once with its own response prompt ("... Once you're done responding return
FINISHED"), which small models answer with FINISHED at once, and once with a response prompt
they can follow (ANSWER_PROMPT: continue the answer, end it with "So the answer is X.", which
is then its finish mark; FlareChain takes both as arguments). LM calls and generated tokens are
counted by a callback for FlareChain and by the graph for ours.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

from activerag.answers import extract_answer
from activerag.context import FlareContext
from activerag.evaluation.datasets import load_dataset
from activerag.evaluation.metrics import best_prf, exact_match
from activerag.evaluation.stats import bootstrap_ci, paired_permutation_p
from activerag.graphs.flare import graph as flare_graph
from activerag.settings import Settings
from activerag.stores.corpus import Corpus


class Counter(BaseCallbackHandler):
    """Counts chat-model calls and the tokens they generated."""

    def __init__(self) -> None:
        self.calls = 0
        self.tokens = 0

    def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        self.calls += 1
        usage = (response.llm_output or {}).get("token_usage") or {}
        self.tokens += int(usage.get("completion_tokens", 0))


ANSWER_PROMPT = (
    "Answer the question, using the context where it helps: reason in one or two short "
    "sentences, then end with \"So the answer is <answer>.\" If an answer is begun below, "
    "write only what follows it.\n\nContext: {context}\nQuestion: {user_input}\n"
    "Answer so far: {response}")
PROMPTS = ("default", "answer")
"""FlareChain's response prompts: its own, and ANSWER_PROMPT with its finish mark."""
ANSWERED = re.compile(r"answer is [^\n]*?\.(\s|$)")


def flarechain(base_url: str, model: str, retriever: Any, prompt: str = "default",
               http_client: Any = None) -> Any:
    """FlareChain with its own defaults over RETRIEVER, with its own response PROMPT or ours
    (HTTP_CLIENT: an httpx.Client for its chat requests, to record them)."""
    from langchain_classic.chains import FlareChain
    from langchain_classic.chains.flare.prompts import FinishedOutputParser
    from langchain_core.prompts import PromptTemplate
    from langchain_openai import ChatOpenAI

    class Answered(FinishedOutputParser):
        """Finished once the text holds its answer sentence, ANSWER_PROMPT's end."""

        def parse(self, text: str) -> tuple[str, bool]:
            cleaned = text.strip().replace(self.finished_value, "")
            return cleaned, bool(ANSWERED.search(cleaned))

    llm = ChatOpenAI(base_url=base_url, api_key="EMPTY", model=model, temperature=0,
                     logprobs=True, max_completion_tokens=32, http_client=http_client)
    chain = FlareChain.from_llm(llm, retriever=retriever, max_generation_len=32)
    if prompt == "answer":
        template = PromptTemplate(template=ANSWER_PROMPT,
                                  input_variables=["user_input", "context", "response"])
        chain = FlareChain(question_generator_chain=chain.question_generator_chain,
                           response_chain=template | llm, output_parser=Answered(),
                           retriever=retriever)
    return chain


def row(answer: str, golds: list[str], calls: int, tokens: int, seconds: float) -> dict:
    prediction = extract_answer(answer, fallback=True)
    _, _, f1 = best_prf(prediction, golds)
    return {"em": exact_match(prediction, golds), "f1": f1, "lm_calls": calls,
            "generated_tokens": tokens, "seconds": seconds, "empty": float(not answer.strip())}


def mean(rows: list[dict], key: str) -> float:
    return sum(r[key] for r in rows) / len(rows)


def described(rows: list[dict], key: str) -> str:
    """The mean with its 95% bootstrap interval."""
    low, high = bootstrap_ci([r[key] for r in rows])
    return f"{mean(rows, key):.3f} [{low:.3f}, {high:.3f}]"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--store", required=True, help="corpus folder holding the 2Wiki corpus")
    p.add_argument("--dataset", default="2wiki")
    p.add_argument("--n", type=int, default=50)
    p.add_argument("--out", default="results/flarechain")
    p.add_argument("--prompts", default="paper", choices=["paper", "default", "none"],
                   help="our FLARE's exemplars (none: zero-shot, comparable with FlareChain's "
                        "prompts, which send none)")
    args = p.parse_args()
    settings = Settings.from_env()
    from activerag.serving.lm import VLLMClient

    model = VLLMClient(settings.url).model
    retriever = Corpus(Path(args.store)).retriever("bm25", k=2)
    chains = {name: flarechain(settings.url, model, retriever, name) for name in PROMPTS}
    ctx = FlareContext(base_url=settings.url, store_dir=args.store, prompt_set=args.prompts,
                       max_answer_tokens=128)
    ours: list[dict] = []
    theirs: dict[str, list[dict]] = {name: [] for name in PROMPTS}
    for i, ex in enumerate(load_dataset(args.dataset, args.n), 1):
        start = time.perf_counter()
        out = asyncio.run(flare_graph.ainvoke({"question": ex.question}, context=ctx))
        ours.append(row(out["answer"], ex.answers, out["lm_calls"], out["generated_tokens"],
                        time.perf_counter() - start))
        for name, chain in chains.items():
            counter = Counter()
            start = time.perf_counter()
            answer = chain.invoke({"user_input": ex.question},
                                  {"callbacks": [counter]})["response"]
            theirs[name].append(row(answer, ex.answers, counter.calls, counter.tokens,
                                    time.perf_counter() - start))
        print(f"{i}/{args.n}", flush=True)
    keys = ("em", "f1", "lm_calls", "generated_tokens", "seconds", "empty")
    summary: dict[str, Any] = {"activerag": {k: mean(ours, k) for k in keys}}
    for name in PROMPTS:
        summary[f"FlareChain {name}"] = {k: mean(theirs[name], k) for k in keys}
        summary[f"paired_p {name}"] = {
            k: paired_permutation_p([r[k] for r in ours], [r[k] for r in theirs[name]])
            for k in keys}
    lines = [f"### activerag FLARE vs LangChain FlareChain: {args.dataset}, n={len(ours)}, "
             f"model {model}, our exemplars {args.prompts}, BM25 k=2, one question at a time "
             "(means with 95% bootstrap "
             "intervals; p: paired sign-flip test; FlareChain with its own response prompt and "
             "with ANSWER_PROMPT; empty: share of responses with no text)", "",
             "| per question | activerag | " + " | ".join(
                 f"FlareChain, {name} prompt | ratio to activerag | p" for name in PROMPTS)
             + " |", "|---|---|" + "---|---|---|" * len(PROMPTS)]
    for k in keys:
        a = summary["activerag"][k]
        cells = [f"{described(theirs[name], k)} | "
                 f"{summary[f'FlareChain {name}'][k] / a if a else float('nan'):.2f} | "
                 f"{summary[f'paired_p {name}'][k]:.3f}" for name in PROMPTS]
        lines.append(f"| {k} | {described(ours, k)} | " + " | ".join(cells) + " |")
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "compare.md").write_text("\n".join(lines) + "\n")
    (out_dir / "compare.json").write_text(json.dumps(summary, indent=1))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
