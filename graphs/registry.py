"""Every method by name, one record each: the one list the CLI, the README's method table and
langgraph.json are made from or checked against.

`python -m activerag.graphs.registry --markdown` prints the README's method table.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Mapping
from dataclasses import MISSING, fields, replace
from typing import Any

from activerag.answers import AnswerRule
from activerag.context import FlareContext, ServingContext, composites
from activerag.errors import ActiveRagError
from activerag.method_record import LOGPROBS, TEXT, Method
from activerag.nodes.families import family_folders, own_fields

FAMILIES: dict[str, str] = {
    "FLARE": "Jiang et al. 2023: retrieve when the draft of the next sentence is unsure; with "
             "the paper's baselines (FlareContext)",
}
"""Each family in one line, in the order the methods are listed."""


_F = FlareContext  # a short name for the table below
_METHODS = [
    Method("none", "single:no_retrieval_graph", _F, {}, "FLARE", "never retrieves",
           "single:build_single_graph", build_args={"retrieval": False}),
    Method("single", "single:single_graph", _F, {}, "FLARE",
           "retrieves once, before generating, with the question x (§2.2)",
           "single:build_single_graph"),
    Method("previous_window", "previous:previous_window_graph", _F, {}, "FLARE",
           f"retrieves every l tokens (`window_tokens`, {_F.window_tokens}) with the previous "
           "window, or the last N / all tokens (`query_tokens`, Table 4)",
           "previous:build_previous_graph", build_args={"unit": "window"}),
    Method("previous_sentence", "previous:previous_sentence_graph", _F, {}, "FLARE",
           "retrieves every sentence (IRCoT-style) with the previous sentence",
           "previous:build_previous_graph", build_args={"unit": "sentence"}),
    Method("next_sentence", "flare:next_sentence_graph", _F, {}, "FLARE",
           'retrieves every sentence (Table 3, "Next") with the whole draft of the next '
           "sentence", "flare:build_next_sentence_graph"),
    Method("self_ask", "self_ask:self_ask_graph", _F, {}, "FLARE",
           "retrieves at each generated `Follow up:` with the follow-up question (Prompt 3)",
           "self_ask:build_self_ask_graph"),
    Method("flare", "flare:graph", _F, {}, "FLARE",
           "retrieves when a draft token has p < θ, with the draft with tokens below β masked "
           "(§3.2.2)", "flare:build_flare_graph"),
    Method("flare_explicit", "flare:graph", _F, {"query_formulation": "explicit"}, "FLARE",
           "retrieves when a draft token has p < θ, with one generated question per span "
           "below β, rankings interleaved", "flare:build_flare_graph"),
    Method("flare_combined", "flare:graph", _F, {"combine_retrieval": True}, "FLARE",
           "as `flare`, and every step also sees the question's documents (Table 9)",
           "flare:build_flare_graph"),
    Method("flare_instruct", "flare_instruct:instruct_graph", _F, {}, "FLARE",
           "retrieves when the LM writes `[Search(query)]`, with that query; "
           f'"[" gets +{_F.search_bias}, then is banned for {_F.search_ban_tokens} tokens '
           "(Appendix A)", "flare_instruct:build_instruct_graph"),
]
# What each method's requests ask of the server, derived from the nodes' requests (the sets
# are activerag.method_record's): the FLARE loop counts or reads the answer's tokens by their
# logprobs; a family folder's rows state their own. activerag.serving.probe finds which a
# server honours.
NEEDS: dict[str, frozenset[str]] = {
    "none": TEXT, "single": TEXT, "flare_instruct": LOGPROBS | {"tokenize", "logit_bias"}}
"""Each shipped method's needs where they are not LOGPROBS."""


FOLDERS = family_folders()
"""The families added by a folder of their own (nodes/<family>/methods.py), in folder order,
the app (which composes the methods above it) last; every method is listed with its family."""
for _family in FOLDERS:
    FAMILIES.setdefault(_family.name, _family.line)
_PLACE = {family: i for i, family in enumerate(FAMILIES)}
_METHODS = sorted(_METHODS + [m for f in FOLDERS for m in f.methods],
                  key=lambda m: _PLACE[m.family])
_METHODS = [m if m.needs is not None else replace(m, needs=NEEDS.get(m.name, LOGPROBS))
            for m in _METHODS]
METHODS: dict[str, Method] = {m.name: m for m in _METHODS}
"""Every method by name, family by family: the one source of "which methods exist"."""
if len(METHODS) < len(_METHODS):
    _names = [m.name for m in _METHODS]
    raise TypeError(f"two registry rows share a name: "
                    f"{sorted({n for n in _names if _names.count(n) > 1})}; rename one")


def answer_rule(name: str) -> AnswerRule:
    """How method NAME's answers are scored (its authors' rule); "empty" for a name that is no
    method (a sweep's variant of FLARE)."""
    record = METHODS.get(name)
    return record.answer_rule if record else "empty"


def _changed(context: FlareContext) -> dict[str, Any]:
    """CONTEXT's FLARE fields, less those left at FlareContext's default: a family that
    defaults one otherwise (DRAGIN's and ETC's k) keeps its own unless CONTEXT changed it."""
    return {f.name: getattr(context, f.name) for f in fields(FlareContext)
            if f.default is MISSING or getattr(context, f.name) != f.default}


def unknown_method_error(names: list[str]) -> ActiveRagError:
    """The error for the mistyped method NAMES: each with its nearest known names, then all."""
    said = []
    for name in names:
        near = difflib.get_close_matches(name, METHODS, n=3)
        said.append(repr(name) + (f" (did you mean {' or '.join(map(repr, near))}?)"
                                  if near else ""))
    what = "method" if len(names) == 1 else "methods"
    return ActiveRagError(f"unknown {what} {', '.join(said)}; choose from {', '.join(METHODS)}")


def method(name: str, context: FlareContext, *given: ServingContext,
           contexts: Mapping[type, ServingContext] | None = None) -> tuple[Any, ServingContext]:
    """The graph of method NAME and its context, with the method's overrides applied. A method
    whose context class has a context in GIVEN or CONTEXTS (by class; the CLI builds one per
    class from its flags) gets that one; else a FLARE-context method gets CONTEXT, a family
    whose context extends FlareContext its class over the fields CONTEXT changed from
    FlareContext's defaults (DRAGIN's and ETC's k = 3 stay theirs), and one over
    ServingContext alone (REPLUG's, FB-RAG's) its class with CONTEXT's endpoint, store and
    prompts, less the fields its family sets itself (FB-RAG's strong reader, answer budget
    and k). A field that holds another family's context (the app's fb) gets the one given."""
    if name not in METHODS:
        raise unknown_method_error([name])
    record = METHODS[name]
    graph, overrides = record.graph, record.overrides
    known = {**{type(c): c for c in given}, **(contexts or {})}
    own = known.get(record.context)
    if own is not None:
        return graph, replace(own, **overrides)
    if record.context is FlareContext:
        return graph, replace(context, **overrides)
    if issubclass(record.context, FlareContext):
        carried = {**_changed(context), **{f.name: getattr(context, f.name)
                                           for f in fields(record.context)
                                           if isinstance(context, record.context)}}
    else:
        skip = own_fields().get(record.context, frozenset()) | {"k"}
        carried = {f.name: getattr(context, f.name) for f in fields(ServingContext)
                   if f.name not in skip}
    held = {name: known[kind] for name, kind in composites(record.context).items()
            if kind in known}
    return graph, record.context(**{**carried, **held, **overrides})


def text_only(name: str, ctx: Any) -> Any:
    """Method NAME's graph with an LM client that asks for no logprobs (its tokens come back
    empty): for a server that has none, under a method that reads none. The run cache does not
    see this client's requests."""
    from activerag.nodes.parts import replicated

    build = METHODS[name].build
    if build is None:
        raise ActiveRagError(f"method {name} has no builder to swap its LM client in; the "
                             f"server at {ctx.base_url} returns no logprobs")
    return build(lm=replicated(ctx.base_url, ctx.model, top_logprobs=0))



def markdown_table() -> str:
    """The README's method table: every method, its family and what it does."""
    rows = [f"| `{m.name}` | {m.family} | {m.summary} |" for m in METHODS.values()]
    return "\n".join(["| method | family | what it does |", "|---|---|---|", *rows])


if __name__ == "__main__":
    cli = argparse.ArgumentParser(prog="python -m activerag.graphs.registry",
                                  description="The method registry, printed.")
    cli.add_argument("--markdown", action="store_true", required=True,
                     help="print the README's method table")
    cli.parse_args()
    print(markdown_table())
