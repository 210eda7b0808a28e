"""Does a server ever answer one request with another's text? Several processes send many
requests at once through activerag's own client, as `activerag eval` does. Each prompt asks the
model to repeat a code word of its own, after a shared prefix (the exemplars' part) and a
filler of its own; greedy decoding repeats it. An answer that names another request's word is
crosstalk: the server decoded over another prompt's KV state.

    python -m benchmarks.robustness.crosstalk --base-url URL [--processes 3] [--concurrency 2]
                                             [--requests 40] [--seed 0]
                                             [--slots auto|named|server] [--out FILE]

Prints the answers that crossed (named another request's whole word) and those wrong (neither
their own word nor another's whole word: the model's slips, or crossings into a fragment of
another's word, so the crossed count is a lower bound), then the counts and how many processes
named slots. Exit status 1 when any answer crossed. Half the requests are closed after three
words, as FLARE closes a stream at a sentence's end. A small model on llama.cpp is enough: what
is tested is the server's slots and prompt cache, not the model (smollm2-135m slipped on 1 and
2 of 120 answers where none crossed). Slots are named as activerag names them
(serving/slots.py: only on a local llama-server with `--cache-ram 0`); `--slots named` names
them on any llama-server, `--slots server` never.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

SYLLABLES = ("ka", "vor", "lem", "tis", "dru", "mon", "sel", "qua", "rin", "bo", "zet", "pha")
NAME_SLOTS = {"auto": None, "named": True, "server": False}
"""--slots: VLLMClient's name_slots."""
PREFIX = "".join(f"Example {i}: the code word is Sample{i}. Repeat it: Sample{i}.\n"
                 for i in range(1, 25))
"""The part every prompt shares, as the exemplars are shared (about 400 tokens)."""


def word(rng: random.Random) -> str:
    """A made-up word of three syllables, capitalised."""
    return "".join(rng.choice(SYLLABLES) for _ in range(3)).capitalize()


def filler(rng: random.Random) -> str:
    """A prompt's own middle, of varied length, so that prompts differ past the prefix (numbers
    only: no word in it can be another prompt's code word)."""
    return " ".join(f"Note {rng.randint(1000, 9999)} is filed under {rng.randint(10, 999)}."
                    for _ in range(rng.randint(3, 30)))


def prompt(code: str, rng: random.Random) -> str:
    line = f"The code word is {code}. " + " ".join([code] * 12)
    return f"{PREFIX}{filler(rng)}\n{line}\n{line}\nThe code word is {code}. {code}"


def words(text: str) -> list[str]:
    return [w.strip(".,:;\"'") for w in text.split()]


async def ask_all(base_url: str, jobs: list[tuple[str, str]], concurrency: int,
                  slots: str) -> tuple[list[str], bool]:
    """Each job's answer, and whether the client named slots."""
    from activerag.serving.lm import VLLMClient

    lm = VLLMClient(base_url, name_slots=NAME_SLOTS[slots])
    await lm.engine()
    gate = asyncio.Semaphore(concurrency)

    def cut(text: str, done: bool) -> int | None:
        """Close the stream after three words, as FLARE closes it at a sentence's end."""
        seen = [i for i, c in enumerate(text) if c == " " and i > 0]
        return seen[2] if len(seen) > 2 else (len(text) if done else None)

    async def one(i: int, text: str) -> str:
        async with gate:
            gen = await lm.generate(text, max_tokens=24, cut=cut if i % 2 else None)
            return str(gen.text)

    answers = await asyncio.gather(*(one(i, text) for i, (_, text) in enumerate(jobs)))
    return list(answers), lm.names_slots


def worker(base_url: str, seed: int, requests: int, concurrency: int,
           slots: str = "auto") -> dict[str, Any]:
    """One process's requests: each job's word, and what came back."""
    rng = random.Random(seed)
    jobs = [(code, prompt(code, rng)) for code in (word(rng) for _ in range(requests))]
    answers, named = asyncio.run(ask_all(base_url, jobs, concurrency, slots))
    return {"words": [code for code, _ in jobs], "answers": answers, "named": named}


def judge(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Each answer right, crossed (another request's whole word, from any process) or wrong
    (neither; a fragment of another's word counts here, so crossed is a lower bound), and
    whether each process named slots."""
    every = {code for result in results for code in result["words"]}
    right = crossed = wrong = 0
    crossings: list[dict[str, str]] = []
    wrongs: list[dict[str, str]] = []
    for result in results:
        for code, answer in zip(result["words"], result["answers"], strict=True):
            said = set(words(answer))
            if said & (every - {code}):
                crossed += 1
                crossings.append({"asked": code, "answer": answer})
            elif code in said:
                right += 1
            else:
                wrong += 1
                wrongs.append({"asked": code, "answer": answer})
    return {"right": right, "crossed": crossed, "wrong": wrong, "crossings": crossings,
            "wrongs": wrongs, "named": [result.get("named") for result in results]}


def run(base_url: str, processes: int = 3, concurrency: int = 2, requests: int = 40,
        seed: int = 0, slots: str = "auto") -> dict[str, Any]:
    """PROCESSES processes, each sending REQUESTS requests CONCURRENCY at once; `judge`'s
    verdict on them all (a worker's failure raises RuntimeError)."""
    procs = [subprocess.Popen(
        [sys.executable, "-m", "benchmarks.robustness.crosstalk", "--base-url", base_url,
         "--requests", str(requests), "--concurrency", str(concurrency),
         "--worker", str(seed * 1000 + i), "--slots", slots],
        stdout=subprocess.PIPE, text=True, cwd=ROOT) for i in range(processes)]
    results = []
    for proc in procs:
        out, _ = proc.communicate()
        if proc.returncode:
            raise RuntimeError(f"a crosstalk worker failed (exit {proc.returncode})")
        results.append(json.loads(out))
    return judge(results)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--slots", choices=sorted(NAME_SLOTS), default="auto",
                        help="auto: name llama-server's slots where activerag does (a local "
                        "server with --cache-ram 0); named: always; server: never, the server "
                        "chooses")
    parser.add_argument("--out", type=Path, help="also write every answer and the counts here "
                        "(JSON)")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        print(json.dumps(worker(args.base_url, args.worker, args.requests, args.concurrency,
                                args.slots)))
        return 0
    verdict = run(args.base_url, args.processes, args.concurrency, args.requests, args.seed,
                  args.slots)
    if args.out:
        args.out.write_text(json.dumps({"settings": {k: v for k, v in vars(args).items()
                                                     if k not in ("worker", "out")},
                                        **verdict}, indent=1) + "\n")
    for crossing in verdict["crossings"]:
        print(f"crossed: asked {crossing['asked']}, answered {crossing['answer']!r}")
    for wrong in verdict["wrongs"]:
        print(f"wrong: asked {wrong['asked']}, answered {wrong['answer']!r}")
    print(f"{verdict['right']} right, {verdict['crossed']} crossed, {verdict['wrong']} wrong "
          f"of {args.processes * args.requests} answers ({args.processes} processes x "
          f"{args.concurrency} at once, --slots {args.slots}; slots named by "
          f"{sum(map(bool, verdict['named']))} of {args.processes} processes)")
    return 1 if verdict["crossed"] else 0


if __name__ == "__main__":
    sys.exit(main())
