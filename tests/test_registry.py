"""The method registry is the one list of methods: every method's context class and settings
are pinned, and the README's method table, langgraph.json and the package description are
made from it or checked against it."""

import importlib
import json
import re
import subprocess
import sys
import tomllib
from dataclasses import fields, replace
from pathlib import Path

import pytest

from activerag.context import FlareContext
from activerag.graphs.registry import FAMILIES, METHODS, markdown_table, method
from activerag.nodes.app.context import AppContext
from activerag.nodes.fb_rag.context import FBRagContext
from activerag.nodes.replug.context import ReplugContext

ROOT = Path(__file__).resolve().parents[1]
F, FB, A = FlareContext, FBRagContext, AppContext
PINNED = {
    "none": (F, {}), "single": (F, {}), "previous_window": (F, {}),
    "previous_sentence": (F, {}), "next_sentence": (F, {}), "self_ask": (F, {}),
    "flare": (F, {}), "flare_explicit": (F, {"query_formulation": "explicit"}),
    "flare_combined": (F, {"combine_retrieval": True}), "flare_instruct": (F, {}),
    "fb_rag": (FB, {}), "fb_rag_fb": (FB, {"eta_b": 0.5, "eta_f": 0.5}),
    "long_context": (FB, {}), "vanilla_rag": (FB, {}), "op_rag": (FB, {}),
    "self_route": (FB, {}), "app": (A, {}),
}
"""Every method's context class and the settings it fixes over the run's."""
RUN = FlareContext(k=3, theta=0.6, max_answer_tokens=100, store_dir="/corpus",
                   base_url="http://127.0.0.1:9/v1", prompt_format="plain", retriever="chroma")
"""A run's FLARE context, away from the defaults wherever the families share a field."""
SERVING = ("max_answer_tokens", "exemplar_retrieval", "prompt_set", "base_url", "model",
           "prompt_format", "retriever", "store_dir", "query_encoder")


def folder_rows() -> set[str]:
    """The methods of the family folders (nodes/<family>/methods.py), which their own tests
    pin."""
    from activerag.graphs.registry import FOLDERS

    return {m.name for family in FOLDERS for m in family.methods}


def test_every_method_has_its_pinned_context_class_and_overrides():
    # FB-RAG's and the app's rows are pinned here too, from before their folders
    assert set(METHODS) - folder_rows() <= set(PINNED) <= set(METHODS)
    for name, (cls, overrides) in PINNED.items():
        assert METHODS[name].name == name
        assert METHODS[name].context is cls, name
        assert METHODS[name].overrides == overrides, name


@pytest.mark.parametrize("name", list(METHODS))
def test_method_gives_each_method_the_context_it_always_had(name):
    # a family folder's rows are pinned by its own tests; the rule that fills them is this one
    cls, overrides = PINNED.get(name) or (METHODS[name].context, METHODS[name].overrides)
    fb = FBRagContext(samples=3, store_dir="/fb-corpus")
    graph, ctx = method(name, RUN, fb)
    assert graph is METHODS[name].graph and type(ctx) is cls
    if cls is FlareContext:
        expected = replace(RUN, **overrides)
    elif cls is ReplugContext:  # the run's LM, store and prompts; REPLUG's own k=10
        expected = ReplugContext(**{f: getattr(RUN, f) for f in SERVING}, **overrides)
        assert ctx.k == 10 and ctx.ensemble == overrides.get("ensemble", "agree")
    elif cls is not AppContext and issubclass(cls, FlareContext):  # its own class, the FLARE
        # fields RUN changed; those RUN left at FLARE's defaults at its own (ETC's, DRAGIN's k)
        changed = {f.name: getattr(RUN, f.name) for f in fields(FlareContext)
                   if getattr(RUN, f.name) != getattr(FlareContext(), f.name)}
        expected = cls(**changed, **overrides)
    elif cls is FBRagContext:  # FB-RAG's own context; without one, its defaults on the store
        expected = replace(fb, **overrides)
        assert method(name, RUN)[1] == FBRagContext(store_dir="/corpus", **overrides)
    else:
        expected = AppContext(**{f.name: getattr(RUN, f.name) for f in fields(FlareContext)},
                              fb=fb)
    assert ctx == expected


def test_a_replug_context_given_is_the_replug_methods_and_an_app_context_the_apps():
    own = ReplugContext(k=4, tau=0.5, ensemble="token")
    given = {ReplugContext: own}
    assert method("replug", RUN, contexts=given)[1] == own
    assert method("replug_vote", RUN, contexts=given)[1] == replace(own, ensemble="vote")
    assert method("flare", RUN, contexts=given)[1] == RUN
    app = AppContext(min_confidence=0.3, theta=0.5)
    ctx = method("app", app)[1]
    assert type(ctx) is AppContext and ctx.min_confidence == 0.3 and ctx.theta == 0.5


def test_every_record_builds_its_own_graph():
    for record in METHODS.values():
        assert record.family in FAMILIES and record.summary.strip()
        built = record.build()
        assert built is not record.graph
        assert (built.name, set(built.nodes)) == (record.graph.name, set(record.graph.nodes))


def readme_block() -> str:
    text = (ROOT / "README.md").read_text()
    found = re.search(r"^<!-- methods: generated[^\n]*\n(.*?)^<!-- /methods -->", text,
                      re.M | re.S)
    assert found, "the README's generated methods block is missing"
    return found.group(1).rstrip("\n")


def test_the_readme_method_table_is_the_registrys():
    assert readme_block() == markdown_table(), (
        "README.md's method table is out of date: paste the output of "
        "`python -m activerag.graphs.registry --markdown` between its markers")
    assert [row.split("`")[1] for row in markdown_table().splitlines()[2:]] == list(METHODS)


def test_the_table_is_printed_by_the_module():
    printed = subprocess.run([sys.executable, "-m", "activerag.graphs.registry", "--markdown"],
                             capture_output=True, text=True, check=True, cwd=ROOT)
    assert printed.stdout.rstrip("\n") == markdown_table()


def served(entry: str) -> object:
    module, _, attribute = entry.partition(":")
    return getattr(importlib.import_module(module), attribute)


def test_langgraph_json_serves_exactly_the_registrys_graphs():
    """langgraph.json serves each distinct graph object once: methods that are one graph with
    other settings (flare_explicit, flare_combined, single_k1, single_k10, replug_token,
    replug_vote, replug_rescore, fb_rag_fb) are that graph's entry with those settings in
    Studio's context form, so the served set is the registry's set of graphs, no more."""
    entries = json.loads((ROOT / "langgraph.json").read_text())["graphs"]
    graphs = [served(entry) for entry in entries.values()]
    assert len({id(g) for g in graphs}) == len(graphs), "a graph is served twice"
    assert {id(g) for g in graphs} == {id(m.graph) for m in METHODS.values()}


def test_the_package_description_names_every_family():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    missing = [family for family in FAMILIES if family != "app"
               and family not in project["description"]]
    assert not missing, f"pyproject.toml's description leaves out {missing}"
    assert "app" in project["description"]


def test_a_family_whose_context_extends_flares_gets_its_own_class(monkeypatch):
    from dataclasses import dataclass

    from activerag.context import FlareContext
    from activerag.graphs import registry

    @dataclass(kw_only=True)
    class NewContext(FlareContext):
        cap: int = 15

    record = registry.Method("new", registry.METHODS["flare"].graph, NewContext, {"beta": 0.5},
                             "FLARE", "a new family")
    monkeypatch.setitem(registry.METHODS, "new", record)
    _, ctx = registry.method("new", FlareContext(theta=0.3, k=4))
    assert type(ctx) is NewContext
    assert (ctx.theta, ctx.k, ctx.beta, ctx.cap) == (0.3, 4, 0.5, 15)
    _, given = registry.method("new", FlareContext(), contexts={NewContext: NewContext(cap=7)})
    assert (given.cap, given.beta) == (7, 0.5)
