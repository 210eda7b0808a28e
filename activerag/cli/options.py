"""The method contexts `ask`, `eval` and `sweep` build from their flags, the warnings for flags
the chosen methods ignore, and the method list and environment that `--help` shows."""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Callable
from typing import Any

from activerag.cli.flags import FLAGS, Flag, given
from activerag.context import FlareContext, ServingContext, composites
from activerag.errors import ActiveRagError
from activerag.settings import Settings

FROM_SETTINGS: dict[str, Callable[[Settings], str | None]] = {
    "--base-url": lambda s: s.url, "--model": lambda s: s.model or None,
    "--store": lambda s: str(s.stores)}
"""The flags whose default the CLI takes from the process settings (ACTIVERAG_HOME,
ACTIVERAG_HOST, ACTIVERAG_PORT, ...) when the command runs, not when the module was imported."""
ENVIRONMENT = {
    "ACTIVERAG_HOME": "cache root: models, stores, threads, the LM cache (default "
                      "~/.cache/activerag)",
    "ACTIVERAG_BASE_URL": "the LM server of FLARE, REPLUG and the app (default: the managed "
                          "server on ACTIVERAG_HOST:ACTIVERAG_PORT, 127.0.0.1:8765)",
    "ACTIVERAG_HOST, ACTIVERAG_PORT": "where `activerag serve` binds, and the default LM "
                                      "server",
    "ACTIVERAG_MODEL": "served model name (default: the one the server serves)",
    "ACTIVERAG_STORE_DIR": "corpus folder (default ACTIVERAG_HOME/store)",
    "ACTIVERAG_CHROMA_URL": "a Chroma server for the dense store (default: on disk)",
    "ACTIVERAG_STRONG_URL, ACTIVERAG_LIGHT_URL": "FB-RAG's strong reader and light sampler",
    "ACTIVERAG_DATA": "the evaluation data folder (default ../shared/data)",
    "ACTIVERAG_LM_TIMEOUT": "seconds an LM request may wait (default 300)",
    "ACTIVERAG_LM_RECONNECT": "seconds a run waits for LM servers that answered and then all "
                              "went away, as in a restart (default 120)",
    "ACTIVERAG_API_KEY": "the LM servers' API key (vLLM is started with it as VLLM_API_KEY)",
    "ACTIVERAG_ALLOWED_BASE_URLS": "comma-separated URL prefixes every LM endpoint must lie "
                                   "under",
    "ACTIVERAG_STORE_ROOT": "a folder every store or query encoder must lie inside",
    "ACTIVERAG_DATABASE_URL": "postgresql://... : durable threads, the LM cache and the "
                              "checkpoints of `eval --ray`'s questions in PostgreSQL (default: "
                              "local SQLite files)",
}
"""The environment variables that change what a run does, and what each sets."""


def context(cls: type[ServingContext], args: argparse.Namespace,
            settings: Settings) -> Any:
    """Context CLS from the flags in ARGS, the process settings where the CLI takes a default
    from them, and CLS's own defaults for everything else."""
    values = given(args, cls)
    for flag in FLAGS:
        if cls in flag.contexts and flag.option in FROM_SETTINGS and flag.field not in values:
            default = FROM_SETTINGS[flag.option](settings)
            if default is not None:
                values[flag.field] = default
    for name, held in composites(cls).items():  # the app's fb: FB-RAG's, from its flags
        values[name] = context(held, args, settings)
    return cls(**values)


def flare_context(args: argparse.Namespace, settings: Settings) -> FlareContext:
    """The FLARE context the flags in ARGS give (sweep's, whose variants all start from it)."""
    return context(FlareContext, args, settings)  # type: ignore[no-any-return]


def method_runs(args: argparse.Namespace, settings: Settings,
                names: list[str]) -> dict[str, tuple[Any, ServingContext]]:
    """Each method of NAMES: its graph, and its context as the flags in ARGS set it (only the
    context classes NAMES run under are built, and only their graphs compiled)."""
    from activerag.graphs.registry import METHODS, method

    classes = {METHODS[name].context for name in names}
    flare = flare_context(args, settings)
    own = {cls: context(cls, args, settings) for cls in classes if cls is not FlareContext}
    return {name: method(name, flare, contexts=own) for name in names}


def check_methods(args: argparse.Namespace) -> list[str]:
    """The methods ARGS names (--method, or --methods split at commas), refused with the
    nearest known names if one is unknown."""
    from activerag.graphs.registry import METHODS, unknown_method_error

    names = ([args.method] if hasattr(args, "method") else
             [m.strip() for m in getattr(args, "methods", "").split(",") if m.strip()])
    unknown = [m for m in names if m not in METHODS]
    if unknown:
        raise unknown_method_error(unknown)
    if not names:
        raise ActiveRagError(f"--methods names no method; give one or more of "
                             f"{', '.join(METHODS)}, separated by commas")
    return names


def _warn(text: str) -> None:
    print(f"activerag: warning: {text}", file=sys.stderr)


def warn_ignored(args: argparse.Namespace, names: list[str]) -> None:
    """One line on stderr for each given flag that none of the methods NAMES reads (naming the
    flag they read instead), and for each that a method's own setting overrides."""
    from activerag.graphs.registry import METHODS

    records = [METHODS[name] for name in names]
    for flag in (f for f in FLAGS if hasattr(args, f.dest)):
        readers = [m for m in records if m.context in flag.contexts]
        if not readers:
            _warn(f"{flag.option} does not apply to {', '.join(names)} and is ignored"
                  + _instead(flag, {m.context for m in records}))
            continue
        value = getattr(args, flag.dest)
        for m in readers:
            if flag.field in m.overrides and m.overrides[flag.field] != value:
                _warn(f"{flag.option} {value} does not apply to {m.name}, which is the method "
                      f"with {flag.field} {m.overrides[flag.field]!r}, and is ignored there")


def _instead(flag: Flag, contexts: set[type[ServingContext]]) -> str:
    """What to say of FLAG to methods of CONTEXTS: the flags that set its field there, else
    which contexts it sets."""
    others = [f.option for f in FLAGS if f.field == flag.field and contexts & set(f.contexts)]
    if others:
        return f"; their {flag.field} is {' and '.join(others)}"
    return f" (only methods under {' or '.join(c.__name__ for c in flag.contexts)} read it)"


def _wrapped(head: str, text: str, indent: int) -> str:
    return textwrap.fill(text, 96, initial_indent=head.ljust(indent),
                         subsequent_indent=" " * indent)


def methods_help() -> str:
    """Every method in one line, grouped by family, and the environment that changes a run."""
    from activerag.graphs.registry import FAMILIES, METHODS

    lines = ["methods (--method NAME; eval: --methods A,B), by family:"]
    for family, about in FAMILIES.items():
        lines.append(_wrapped(f"  {family}:", about, 12))
        lines += [_wrapped(f"    {m.name}", m.summary.replace("`", ""), 24)
                  for m in METHODS.values() if m.family == family]
    lines += ["", "environment:"]
    lines += [_wrapped(f"  {name}", what, 24) if len(name) < 22 else
              f"  {name}\n" + _wrapped("", what, 24) for name, what in ENVIRONMENT.items()]
    return "\n".join(lines)
