"""Before a run: warn of endpoint flags the chosen methods ignore, and ask every endpoint they
need whether it answers, so that a server that is down is named by its flag before any LM work
(FB-RAG's light stage would otherwise run for minutes before its reader is asked)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from activerag.errors import LMServerUnreachable
from activerag.serving.catalogue import FAST_MODEL

Family = Literal["fb", "app", "lm", "own"]
LM_FLAGS = {"base_url": "--base-url", "model": "--model", "prompt_format": "--prompt-format"}
"""The options of the one LM of FLARE, REPLUG and the other single-LM methods (and the app)."""
FB_FLAGS = {"light_url": "--light-url", "strong_url": "--strong-url",
            "light_model": "--light-model", "strong_model": "--strong-model",
            "light_format": "--light-format", "strong_format": "--strong-format"}
"""The options of FB-RAG's two LMs (its methods and the app's long-context route)."""


@dataclass(frozen=True)
class Endpoint:
    """One server a method asks, and how a user sets or starts it."""

    role: str
    url: str
    flag: str
    serve: str
    """The command that serves its default model."""


def family(name: str) -> Family:
    """Which LM options method NAME reads: FB-RAG's, the single LM's, both (the app), or none
    (a graph built with its own LM)."""
    from activerag.graphs.app import graph as app_graph
    from activerag.graphs.registry import FB_RAG_GRAPHS, METHODS, OWN_GRAPHS

    graph = METHODS[name][0]
    if id(graph) not in OWN_GRAPHS:
        return "own"
    if graph in FB_RAG_GRAPHS:
        return "fb"
    return "app" if graph is app_graph else "lm"


def fb_endpoints(ctx: Any, light: bool = True) -> list[Endpoint]:
    """FB-RAG's strong reader, after its LIGHT sampler (which the baselines do not ask)."""
    strong = Endpoint("FB-RAG's strong reader", ctx.base_url, "--strong-url", "activerag serve")
    if not light:
        return [strong]
    return [Endpoint("FB-RAG's light sampler", ctx.light_base_url, "--light-url",
                     f"activerag serve --model {FAST_MODEL.key}"), strong]


def needed(name: str, ctx: Any, with_context: bool) -> list[Endpoint]:
    """The endpoints method NAME asks under CTX (the app asks FB-RAG's WITH_CONTEXT only)."""
    from activerag.graphs.fb_rag import graph as fb_rag_graph
    from activerag.graphs.registry import METHODS

    kind = family(name)
    if kind == "fb":
        return fb_endpoints(ctx, light=METHODS[name][0] is fb_rag_graph)
    if kind == "own":
        return []
    found = [Endpoint("the LM server", ctx.base_url, "--base-url", "activerag serve")]
    if kind == "app" and with_context and ctx.fb is not None:
        found += fb_endpoints(ctx.fb)
    return found


def check_endpoints(endpoints: Iterable[Endpoint]) -> None:
    """Refuse, naming its flag, an endpoint none of whose replicas lists its models."""
    from activerag.serving.replicas import urls
    from activerag.serving.server import server_models

    seen: set[tuple[str, str]] = set()
    for point in endpoints:
        if (point.url, point.flag) in seen:
            continue
        seen.add((point.url, point.flag))
        causes = []
        for url in urls(point.url):
            try:
                server_models(url)
                break
            except LMServerUnreachable as exc:
                causes.append(str(exc.__cause__ or exc))
        else:
            raise LMServerUnreachable(
                f"{point.role} at {point.url} does not answer ({'; '.join(causes)}); start it "
                f"with `{point.serve}`, or pass a running server's URL with {point.flag}")


def warn_unused(args: argparse.Namespace, names: list[str]) -> None:
    """One line on stderr for each given LM option that none of the methods NAMES reads."""
    kinds = {family(name) for name in names}
    if "own" in kinds:
        return
    methods = ", ".join(names)
    for option, flag in LM_FLAGS.items():
        if getattr(args, option, None) is not None and not kinds & {"lm", "app"}:
            print(f"activerag: warning: {flag} does not apply to {methods} and is ignored; "
                  "FB-RAG's endpoints are --light-url and --strong-url (--light-model, "
                  "--strong-model, --light-format, --strong-format)", file=sys.stderr)
    for option, flag in FB_FLAGS.items():
        if getattr(args, option, None) is not None and not kinds & {"fb", "app"}:
            print(f"activerag: warning: {flag} applies to FB-RAG's methods and the app, not to "
                  f"{methods}, and is ignored; their LM is --base-url (--model, "
                  "--prompt-format)", file=sys.stderr)
