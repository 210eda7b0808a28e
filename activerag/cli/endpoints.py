"""Before a run: ask every endpoint the chosen methods need whether it answers, so that a server
that is down is named by its flag before any LM work (FB-RAG's light stage would otherwise run
for minutes before its reader is asked)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from activerag.context import AppContext, FBRagContext
from activerag.errors import LMServerUnreachable
from activerag.serving.catalogue import FAST_MODEL

Family = Literal["fb", "app", "lm", "own"]


@dataclass(frozen=True)
class Endpoint:
    """One server a method asks, and how a user sets or starts it."""

    role: str
    url: str
    flag: str
    serve: str
    """The command that serves its default model."""


def family(name: str) -> Family:
    """Which LM settings method NAME reads: FB-RAG's, the single LM's, both (the app), or none
    (a graph built with its own LM)."""
    from activerag.graphs.registry import METHODS

    record = METHODS[name]
    if not record.own:
        return "own"
    if record.context is FBRagContext:
        return "fb"
    return "app" if record.context is AppContext else "lm"


def fb_endpoints(ctx: Any, light: bool = True) -> list[Endpoint]:
    """FB-RAG's strong reader, after its LIGHT sampler (which the baselines do not ask)."""
    strong = Endpoint("FB-RAG's strong reader", ctx.base_url, "--strong-url", "activerag serve")
    if not light:
        return [strong]
    return [Endpoint("FB-RAG's light sampler", ctx.light_base_url, "--light-url",
                     f"activerag serve --model {FAST_MODEL.key}"), strong]


def needed(name: str, ctx: Any, with_context: bool) -> list[Endpoint]:
    """The endpoints method NAME asks under CTX (the app asks FB-RAG's WITH_CONTEXT only)."""
    from activerag.graphs.registry import METHODS

    kind = family(name)
    if kind == "fb":  # the baselines have no stage II, so no light sampler
        return fb_endpoints(ctx, light="sample" in METHODS[name].graph.nodes)
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
