"""How often a served chat model calls a tool, well formed, when the agent asks it a demo
question: the example agent's first step (graphs/agent.py), with its instruction and its FLARE
and REPLUG tools bound.

    python -m benchmarks.quality.tool_calls [--model qwen2.5-coder-0.5b] [--n 16] [--base-url URL]
                                    [--out results/tool-calls.md]

Without --base-url it starts a vLLM server of its own for the catalogue MODEL on a free port,
with the tool-call flags (server.TOOL_CALL_ARGS: hermes parser, auto tool choice), pinned off
core 0, and stops it afterwards. The questions are the first N demo questions in file order
(two-hop first), never chosen by outcome. Each reply is counted as:

- well formed: one or more tool calls, each naming one of the tools with a non-empty `query`;
- malformed: a tool call vLLM could not parse (invalid_tool_calls), an unknown tool name, or
  no `query`;
- untagged: no parsed call, but the text starts with one as JSON, {"name": ..., "arguments":
  ...}, without the <tool_call> tags the hermes parser reads;
- no call: any other text reply.

Each question is asked twice: with tool_choice "auto" (what the agent sends: the model chooses)
and "required" (vLLM constrains the reply to a call of one of the tools).

It prints the counts and writes the table, with each question's reply, to --out.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

from activerag.context import FlareContext
from activerag.demo import load_demo_questions
from activerag.graphs.agent import method_tools
from activerag.nodes.chat import chat_model
from activerag.nodes.messages_prompts import AGENT_INSTRUCTION
from activerag.serving.catalogue import catalogue_model
from activerag.serving.server import TOOL_CALL_ARGS
from activerag.testing import processes

KINDS = ("well formed", "malformed", "untagged", "no call")


def _untagged(text: str, names: set[str]) -> bool:
    """Whether TEXT starts with a JSON tool call that lacks hermes's <tool_call> tags."""
    try:
        first, _end = json.JSONDecoder().raw_decode(text.strip())
    except ValueError:
        return False
    return isinstance(first, dict) and first.get("name") in names and isinstance(
        first.get("arguments"), dict)


def classify(reply: Any, names: set[str]) -> str:
    """Which of KINDS the chat model's REPLY is, for tools named NAMES."""
    if getattr(reply, "invalid_tool_calls", None):
        return "malformed"
    calls = getattr(reply, "tool_calls", None) or []
    if not calls:
        return "untagged" if _untagged(str(reply.content), names) else "no call"
    ok = all(c["name"] in names and str(c["args"].get("query", "")).strip() for c in calls)
    return "well formed" if ok else "malformed"


def said(reply: Any) -> str:
    """The reply in one short line: its tool calls, else its text."""
    calls = getattr(reply, "tool_calls", None) or []
    bad = getattr(reply, "invalid_tool_calls", None) or []
    if calls:
        return "; ".join(f"{c['name']}({c['args']})" for c in calls)
    if bad:
        return "invalid: " + "; ".join(str(b.get("args") or b.get("error")) for b in bad)
    return repr(str(reply.content)[:160])


CHOICES = ("auto", "required")


async def measure(base_url: str, n: int) -> list[dict[str, Any]]:
    """Ask the first N demo questions at BASE_URL, one at a time, under each tool choice; each
    reply classified."""
    ctx = FlareContext(base_url=base_url)
    tools = method_tools(context=ctx)
    names = {t.name for t in tools}
    chat = await asyncio.to_thread(chat_model, ctx, max_tokens=128)
    rows = []
    for choice in CHOICES:
        bound = chat.bind_tools(tools, tool_choice=choice)
        for q in load_demo_questions()[:n]:
            start = time.perf_counter()
            reply = await bound.ainvoke([SystemMessage(AGENT_INSTRUCTION),
                                         HumanMessage(q["question"])])
            rows.append({"choice": choice, "id": q["id"], "hops": q["hops"],
                         "kind": classify(reply, names), "reply": said(reply),
                         "seconds": time.perf_counter() - start})
            print(f"{choice} {q['id']}: {rows[-1]['kind']:12s} {rows[-1]['reply']}", flush=True)
    return rows


def table(rows: list[dict[str, Any]], model: str, command: str) -> str:
    """The results page: the counts, then each question's reply."""
    n = len({r["id"] for r in rows})
    counts = {(c, k): sum(r["kind"] == k and r["choice"] == c for r in rows)
              for c in CHOICES for k in KINDS}
    lines = [f"# Tool calls of {model}", "",
             f"`{command}`: the example agent's first step (its instruction, the `flare` and "
             f"`replug` tools bound, vLLM with {' '.join(TOOL_CALL_ARGS)}, greedy), on the "
             f"first {n} demo questions in file order, under each tool choice.", "",
             "| reply | " + " | ".join(f"tool_choice={c}" for c in CHOICES) + " |",
             "|---|" + "---|" * len(CHOICES),
             *[f"| {k} | " + " | ".join(f"{counts[c, k]} of {n} ({counts[c, k] / n:.0%})"
                                        for c in CHOICES) + " |" for k in KINDS], "",
             "| tool_choice | id | hops | kind | reply | s |", "|---|---|---|---|---|---|",
             *[f"| {r['choice']} | {r['id']} | {r['hops']} | {r['kind']} | "
               f"{r['reply'].replace('|', '/')} | {r['seconds']:.1f} |" for r in rows]]
    return "\n".join(lines) + "\n"


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cli.add_argument("--model", default="qwen2.5-coder-0.5b", help="catalogue key")
    cli.add_argument("--n", type=int, default=16, help="demo questions, in file order")
    cli.add_argument("--base-url", default="", help="a running server started with the "
                                                    "tool-call flags (default: start one)")
    cli.add_argument("--out", default="results/tool-calls.md")
    args = cli.parse_args()
    model = catalogue_model(args.model)
    command = f"python -m benchmarks.quality.tool_calls --model {model.key} --n {args.n}"
    if args.base_url:
        rows = asyncio.run(measure(args.base_url, args.n))
    else:
        with processes.own_server(model=model, cores="1", extra_args=TOOL_CALL_ARGS) as url:
            rows = asyncio.run(measure(url, args.n))
    page = table(rows, model.served_name, command)
    Path(args.out).write_text(page)
    print(page)


if __name__ == "__main__":
    main()
