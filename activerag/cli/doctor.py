"""`activerag doctor URL`: what an OpenAI-compatible server can do, and which methods run there."""

from __future__ import annotations

import argparse
import json

from activerag.cli.abilities import LIGHT, named, runnable, unmet
from activerag.errors import LMServerUnreachable
from activerag.serving.probe import PROBE_FILE, probe
from activerag.serving.probe_requests import ABILITIES, Abilities
from activerag.settings import Settings


def with_v1(url: str) -> str:
    """URL as the clients take it: ending in /v1 (added when missing)."""
    url = url.strip().rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


def table(found: Abilities) -> list[str]:
    """The ability table and the methods that run on the server FOUND describes, as lines."""
    from activerag.graphs.registry import METHODS

    window = found.context_length or "unknown (the server does not say)"
    lines = [f"server {found.url} ({found.engine})  model {found.model}  context length "
             f"{window}", "",
             f"{'ability':<13} {'here':<5} what it is"]
    for name, what in ABILITIES.items():
        if name == "top_logprobs":
            here = str(found.top_logprobs) if found.top_logprobs else "no"
        else:
            here = "yes" if name in found.found else "no"
        why = found.why.get(name) if here == "no" or name == "top_logprobs" else None
        if name == "n" and here == "yes" and found.most_n is not None:
            why = f"at most {found.most_n} in one request: llama-server's slots, --parallel"
        lines.append(f"{name:<13} {here:<5} {what}" + (f" [{why}]" if why else ""))
    works = runnable(found)
    lines += ["", f"methods that run here ({len(works)} of {len(METHODS)}): {', '.join(works)}"]
    others = []
    for name, record in METHODS.items():
        if name not in works:
            needs = unmet([n.removeprefix(LIGHT) for n in record.needs or ()], found)
            others.append(f"{name} (needs {', '.join(map(named, needs))})")
    if others:
        lines.append("methods that do not: " + "; ".join(others))
    return lines


def doctor(args: argparse.Namespace, settings: Settings) -> int:
    """Probe the server at args.url afresh and print its abilities (or, with --json, the
    record)."""
    url = with_v1(args.url)
    try:
        found = probe(url, args.model, cache_file=settings.home / PROBE_FILE, fresh=True)
    except LMServerUnreachable as exc:
        cause = exc.__cause__ or exc
        raise LMServerUnreachable(f"no OpenAI-compatible server answers at {url} ({cause}); "
                                  "check the URL, or start one with `activerag serve`") from exc
    if args.json:
        print(json.dumps({**found.as_json(), "methods": runnable(found)}, indent=1))
    else:
        print("\n".join(table(found)))
    return 0


def add_doctor(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """The `doctor` subcommand's parser."""
    d = sub.add_parser("doctor", help="probe an OpenAI-compatible server: what it can do "
                                      "(logprobs, top_logprobs, echo, n, ...) and which methods "
                                      "run there")
    d.add_argument("url", help="the server's base URL (…/v1; added when missing)")
    d.add_argument("--model", help="the served model to probe (default: the first listed)")
    d.add_argument("--json", action="store_true", help="machine-readable output")
    d.set_defaults(func=doctor)
