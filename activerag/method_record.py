"""One row of the method registry (`Method`) and what a method family's folder declares
(`Family`): the types a family's `methods.py` (nodes/<family>/methods.py) builds its rows
from, below the graphs, so that listing the methods imports no graph.

activerag.graphs.registry joins the shipped rows with every family folder's; the CLI's flag
groups and the README's method table are made from the result.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from activerag.answers import AnswerRule
from activerag.context import ServingContext


def _load(ref: str) -> Any:
    """The object a "module:attribute" reference names, imported on first use (a module
    without a package: one of activerag.graphs)."""
    module, _, attribute = ref.partition(":")
    module = module if "." in module else f"activerag.graphs.{module}"
    found = getattr(importlib.import_module(module), attribute)
    _OWN.add(id(found))
    return found


_OWN: set[int] = set()
"""The ids of the registry's own graphs loaded so far (see Method.own)."""

# The server abilities a method's requests need (Method.needs), in the sets the rows are made
# of: the LM client streams completions with usage (and asks logprobs: 1 unless the server has
# none and the method reads none); the token LM sends token-id prompts with
# return_tokens_as_token_ids and /tokenize, and its steps read the top 20 alternatives.
TEXT = frozenset({"completions", "stream"})
LOGPROBS = TEXT | {"logprobs"}
TOKEN_IDS = frozenset({"completions", "tokenize", "token_ids"})
TOP20 = frozenset({"top_logprobs_20"})


def with_samples(needs: frozenset[str], prefix: str, k: int | None) -> frozenset[str]:
    """NEEDS with the server under PREFIX ("" or "light.") asked for K samples in one request
    (n and n_K), whatever count they named before; none of the two when K is None."""
    kept = frozenset(n for n in needs if n != f"{prefix}n" and not n.startswith(f"{prefix}n_"))
    return kept if k is None else kept | {f"{prefix}n", f"{prefix}n_{k}"}


@dataclass(frozen=True)
class Method:
    """One method: its graph, the context type it runs under, and the settings that make it
    this method rather than another of the same graph. The registry's rows name their graph
    and builder as "module:attribute", imported when first asked for: listing the methods
    (the CLI's help, the README table) compiles no graph."""

    name: str
    graph_at: Any
    """The compiled module-level graph (the one langgraph.json serves), or where it is
    ("flare:graph": activerag.graphs.flare's `graph`)."""
    context: type[ServingContext]
    """The context class its runs get (a subclass of FlareContext is not FlareContext)."""
    overrides: dict[str, Any] = field(hash=False)
    """Context settings fixed over the run's (flare_explicit: query_formulation "explicit")."""
    family: str
    """Its family's name (registry.FAMILIES)."""
    summary: str
    """What it does, in one line of Markdown."""
    build_at: Any = None
    """The graph's builder, or where it is; `build` gives it with BUILD_ARGS bound."""
    needs: frozenset[str] | None = None
    """The server abilities its requests need (names of activerag.serving.probe_requests.ABILITIES;
    top_logprobs_K: K alternatives per token; light.NAME: FB-RAG's light sampler's); None:
    NEEDS[name], else LOGPROBS."""
    answer_rule: AnswerRule = "empty"
    """How its answers are scored when they hold no "answer is" (activerag.answers.AnswerRule),
    as its authors' code scores them ("empty": an output without it has no answer)."""
    build_args: dict[str, Any] = field(default_factory=dict, hash=False)
    """The builder's own arguments for this graph (previous_window: unit "window")."""

    @property
    def graph(self) -> Any:
        """The compiled graph."""
        return _load(self.graph_at) if isinstance(self.graph_at, str) else self.graph_at

    @property
    def build(self) -> Callable[..., Any] | None:
        """The graph's builder with this graph's own arguments: `build(lm=...)` swaps a part."""
        found = _load(self.build_at) if isinstance(self.build_at, str) else self.build_at
        return partial(found, **self.build_args) if found and self.build_args else found

    @property
    def own(self) -> bool:
        """Whether its graph is one of the registry's, which make their LM clients from the
        run's context (a graph built with its own LM, as a test's, is not)."""
        return isinstance(self.graph_at, str) or id(self.graph_at) in _OWN


@dataclass(frozen=True)
class FlagGroup:
    """One group of a family's CLI flags: its flags are the first context's own fields (those
    its parent context lacks), and every context of it also joins each group that sets one of
    its base classes (a GateContext subclass takes the LM, FLARE and gate flags; a context over
    ServingContext alone, REPLUG's, the one LM, store and prompts flags)."""

    name: str
    line: str
    """The group's line in the help ("MarginContext: gate_margin (...)")."""
    contexts: tuple[type[ServingContext], ...]
    """The context classes its flags set."""
    renamed: tuple[tuple[str, str], ...] = ()
    """(field, option) of the fields the family sets with a flag of its own: one its parent
    has, for a default of its own (REPLUG's k is --replug-k, beside FLARE's --k; FB-RAG's
    base_url is --strong-url), or one of its own spelled otherwise (--light-url). A parent's
    field it renames does not take the parent group's flag."""
    unread: tuple[str, ...] = ()
    """Fields its parent has that no node of its graphs reads, so no flag sets them (FB-RAG's
    prompts are its own: prompt_set, exemplar_retrieval)."""

    def own(self, name: str) -> bool:
        """Whether field NAME of the first context is the group's own (renamed or unread):
        not set by its parent group's flag, nor carried over from a run's FLARE context."""
        return name in self.unread or any(name == field for field, _ in self.renamed)


@dataclass(frozen=True)
class Family:
    """What a method family's folder adds to the registry: its `methods.py` holds one, named
    FAMILY. Its methods are listed with their family, after its shipped ones, in this order; a
    family of a new name gets LINE in the list of families, one that names a shipped family
    joins it."""

    name: str
    line: str
    """The family in one line: its paper and its context class (registry.FAMILIES)."""
    methods: tuple[Method, ...]
    """Its rows; a row without `needs` gets the registry's NEEDS for its name, else
    LOGPROBS."""
    groups: tuple[FlagGroup, ...] = ()
    """Its CLI flag groups, in order (a family that joins another, as the margin gate joins
    the uncertainty gates, names a group of its own)."""
    last: bool = False
    """List it after every other family (the app, which composes the methods above it)."""
