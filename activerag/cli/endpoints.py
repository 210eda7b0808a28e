"""Before a run: ask every endpoint the chosen methods need whether it answers, so that a server
that is down is named by its flag before any LM work (FB-RAG's light stage would otherwise run
for minutes before its reader is asked)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from activerag.errors import LMServerUnreachable


@dataclass(frozen=True)
class Endpoint:
    """One server a method asks, and how a user sets or starts it."""

    role: str
    url: str
    flag: str
    serve: str
    """The command that serves its default model."""


def needed(name: str, ctx: Any, with_context: bool) -> list[Endpoint]:
    """The endpoints method NAME asks under CTX, each named by the flag that sets it: its
    context's servers (the app asks FB-RAG's WITH_CONTEXT only, all of them: its route is
    fb_rag), less a server of its own context kept for needs the method does not have
    (FB-RAG's light sampler: its baselines do not sample). A graph built with its own LM asks
    none."""
    from activerag.cli.flags import option_of
    from activerag.graphs.registry import METHODS

    record = METHODS[name]
    if not record.own:
        return []
    needs = record.needs or frozenset()
    return [Endpoint(s.role, s.url, option_of(type(s.context), s.field),
                     "activerag serve" + (f" --model {s.model}" if s.model else ""))
            for s in ctx.servers(with_context)
            if not s.needs_prefix or s.context is not ctx  # the app's FB-RAG samples
            or any(n.startswith(s.needs_prefix) for n in needs)]


def check_endpoints(endpoints: Iterable[Endpoint]) -> None:
    """Refuse, naming its flag, an endpoint none of whose replicas lists its models."""
    from activerag.serving.replicas import urls
    from activerag.serving.running import server_models

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
