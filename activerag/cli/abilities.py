"""Before a run: does each chosen method's server do what the method asks of it? The server is
probed once (activerag.serving.probe), a method whose needs it does not meet is refused in one
line that names the missing ability and the methods that would run there, and a method that
reads no logprobs runs on a server that has none with a client that asks for none."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from activerag.errors import ActiveRagError
from activerag.serving.probe import PROBE_FILE, probe
from activerag.serving.probe_requests import Abilities
from activerag.settings import Settings

LIGHT = "light."
"""The prefix of a need that FB-RAG's light sampler must meet, not its strong reader."""


class MissingAbility(ActiveRagError):
    """A method's server lacks an ability the method's requests need."""


def probe_cached(url: str, model: str | None = None) -> Abilities:
    """URL's abilities, asked at most once a day (kept in ACTIVERAG_HOME/probes.json)."""
    return probe(url, model or None, cache_file=Settings.from_env().home / PROBE_FILE)


def needs_of(name: str, ctx: Any) -> dict[str, frozenset[str]]:
    """What method NAME needs of each server under CTX, by base URL: its record's needs, with
    more top logprobs when the run's trigger or gate reads them (the entropy triggers: 20), a
    context's own top_logprobs (REPLUG's) in place of 20, and the samples a context asks in one
    request (its sampling_needs: n_K, light.n_K) in place of the record's default count."""
    from activerag.graphs.registry import METHODS
    from activerag.nodes.triggers import top_logprobs_for

    if not METHODS[name].own:  # a graph built with its own LM
        return {}
    needs = set(METHODS[name].needs or ())
    sampled = getattr(ctx, "sampling_needs", None)
    if sampled is not None:  # the run's own samples in place of the record's default count
        needs = set(sampled(frozenset(needs)))
    top = top_logprobs_for(ctx)
    if top > 1:
        needs |= {"logprobs", f"top_logprobs_{top}"}
    asked = getattr(ctx, "top_logprobs", None)
    if isinstance(asked, int) and "top_logprobs_20" in needs:
        needs = (needs - {"top_logprobs_20"}) | {f"top_logprobs_{asked}"}
    servers = sorted(ctx.servers(), key=lambda s: bool(s.needs_prefix))  # the main one first
    prefixes = tuple(s.needs_prefix for s in servers if s.needs_prefix)
    out: dict[str, frozenset[str]] = {}
    for server in servers:
        if server.needs_prefix:
            part = frozenset(n.removeprefix(server.needs_prefix) for n in needs
                             if n.startswith(server.needs_prefix))
            if not part:
                continue
        else:
            part = frozenset(n for n in needs if not n.startswith(prefixes))
        out[server.url] = out.get(server.url, frozenset()) | part
    return out


def unmet(needs: Iterable[str], found: Abilities) -> list[str]:
    """The needs FOUND does not meet, sorted (n_K left out where n itself is unmet)."""
    missing = {n for n in needs if not found.has(n)}
    return sorted(n for n in missing if not (n.startswith("n_") and "n" in missing))


def runnable(found: Abilities, light: Abilities | None = None) -> list[str]:
    """The registered methods whose needs FOUND meets (LIGHT: FB-RAG's light sampler's
    abilities, else FOUND's), in the registry's order, under their default settings."""
    from activerag.graphs.registry import METHODS

    names = []
    for name, record in METHODS.items():
        needs = record.needs or frozenset()
        own = [n for n in needs if not n.startswith(LIGHT)]
        theirs = [n.removeprefix(LIGHT) for n in needs if n.startswith(LIGHT)]
        if not unmet(own, found) and not unmet(theirs, light or found):
            names.append(name)
    return names


def named(need: str) -> str:
    """NEED in words (top_logprobs_20: top_logprobs >= 20)."""
    if need.startswith("top_logprobs_"):
        return f"top_logprobs >= {need.removeprefix('top_logprobs_')}"
    if need.startswith("n_"):
        return f"n >= {need.removeprefix('n_')} (samples in one request)"
    return need


def why(need: str, found: Abilities) -> str:
    """What the server said or did where it lacked NEED."""
    if need.startswith("top_logprobs_"):
        said = found.why.get("top_logprobs") or found.why.get("logprobs")
        return f"top_logprobs: it gives {found.top_logprobs}" + (f", {said}" if said else "")
    if need.startswith("n_"):  # unmet leaves n_K out where n itself is missing
        return (f"n: it takes at most {found.most_n} in one request (llama-server's slots: "
                "serve with more --parallel, or ask for fewer samples)")
    return f"{need}: {found.why[need]}" if need in found.why else f"{need}: not seen"


def check_needs(runs: Mapping[str, tuple[Any, Any]]) -> dict[str, tuple[Any, Any]]:
    """RUNS (method name -> graph, context) with each checked against its servers: the first
    method with an unmet need is refused in one line; a method that reads no logprobs, on a
    server without them, gets its graph built with a client that asks for none."""
    out = dict(runs)
    for name, (_, ctx) in runs.items():
        by_url = needs_of(name, ctx)
        found = {url: probe_cached(url, getattr(ctx, "model", "") or None) for url in by_url}
        for url, needs in by_url.items():
            missing = unmet(needs, found[url])
            if missing:
                light = next((found.get(s.url) for s in ctx.servers()
                              if s.needs_prefix == LIGHT), None)
                works = runnable(found[url], light)
                raise MissingAbility(
                    f"method {name} needs {', '.join(map(named, missing))}, which the server at "
                    f"{url} lacks ({'; '.join(why(n, found[url]) for n in missing)}); methods "
                    f"that would run there: {', '.join(works) or 'none of the registered'} "
                    f"(`activerag doctor {url}` prints what it can do)")
        main = found.get(ctx.base_url)
        if main is not None and not main.has("logprobs") and "logprobs" not in by_url.get(
                ctx.base_url, {"logprobs"}):
            from activerag.graphs.registry import text_only

            out[name] = (text_only(name, ctx), ctx)
    return out
