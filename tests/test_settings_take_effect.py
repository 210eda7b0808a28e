"""Every setting shown to take effect (issue #38), generated from the registry and the CLI's
flags: for every method and every settable field of its context that the method reads, a run
at the field's default and a run at a changed value must differ in what they show (the
completion requests sent, the trace, the documents or the answer). A new method or field is
covered without a new test.

Which fields each method reads is kept in tests/settings_read.json: a field that stops being
read (an override, a node or a flag silently dropped) fails here, and so does a field read
that shows no effect, unless NOT_SHOWN says why (one place, reviewed). After a deliberate
change, `ACTIVERAG_UPDATE_SETTINGS_READ=1 pytest tests/test_settings_take_effect.py` rewrites
the file; the diff is then read like code.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest
from settings_effect import changed, settable, shown, tracked

from activerag.context import FlareContext
from activerag.graphs.registry import METHODS, method
from activerag.nodes import estimators
from activerag.nodes.fb_rag.context import FBRagContext
from activerag.nodes.gated.context import GateContext
from activerag.stores.corpus import Corpus
from activerag.testing.fake_lm import Backend, backend

READ_FILE = Path(__file__).with_name("settings_read.json")
QUESTION = "Where was Alpha Beta born?"
PASSAGES = [
    ("Alpha Beta", "Alpha Beta was born in the city of Gepu and founded Kelmor Works."),
    ("Kelmor Works", "Kelmor Works is a company on the Vedria founded in 1950."),
    ("Gepu", "Gepu is a small town on the Vedria river."),
    ("Vedria", "Vedria is a river that runs through Gepu and Kelmor."),
    ("Delta Gamma", "Delta Gamma was born in Kelmor and studied in Gepu."),
    ("Kelmor", "Kelmor is a city on the Vedria."),
    *[(f"Town {i}", f"Beta {i} was born in Town {i}, {i} miles from Gepu.") for i in range(10)],
]
CONTEXT = "\n\n".join(text for _, text in PASSAGES)
"""FB-RAG's and the app's long context."""
SKIPPED = {"adaptive_rag": "needs a router trained by `activerag train-router`; its graph's "
                           "strategies and settings are adaptive_rag_prompt's"}
REPLY = " Alpha Beta lies on the Vedria. Alpha Beta was born in Gepu."
"""The fake's every reply: two sentences, each word one token at p 0.78 with 19 lower
alternatives."""
COMPANIONS: dict[str, dict[str, Any]] = {
    "keep_question_words": {"beta": 0.9}, "query_formulation": {"beta": 0.9},
    "span_merge_gap": {"beta": 0.9},
    **{f: {"etc_threshold": -1.0} for f in ("keep_documents", "store_dir", "k")},
    "combine_retrieval": {"etc_threshold": -1.0, "initial_retrieval": True, "window_tokens": 4},
}
"""Settings whose effect needs another setting changed too, under the fake's one probability
for every token: both runs get the companions, only one the setting. beta 0.9 puts every
token below β, so that spans and masks exist; etc_threshold -1 makes ETC retrieve (a method
that does not read it ignores it); combine_retrieval needs the question's documents fetched
(initial retrieval, off for ETC and DRAGIN-lite) and a step after the first (a window shorter
than the answer). The gates' and DRAGIN's are in GATE_COMPANIONS."""
GATE_COMPANIONS = {"gate_threshold": -1.0, "dragin_threshold": 0.0}
"""Set in both runs of every field for the methods that read them: the gate then retrieves
(an estimator that retrieves below its threshold, as the margin, gets BELOW_GATE's)."""
BELOW_GATE = 1e9


def gate_companions(ctx: Any, reads: list[str]) -> dict[str, Any]:
    """GATE_COMPANIONS for a run of CTX that reads READS: thresholds that make its gate fire."""
    out = {k: v for k, v in GATE_COMPANIONS.items() if k in reads}
    if "gate_threshold" in out and not estimators.estimator_named(ctx.estimator).above:
        out["gate_threshold"] = BELOW_GATE
    return out


def reached(ctx: Any, settings: dict[str, Any]) -> Any:
    """CTX with those of SETTINGS its class has, and the thresholds that make its gate fire:
    a run under the fake that takes the branches a default run skips."""
    names = sorted(f.name for f in fields(ctx))
    ctx = replace(ctx, **{k: v for k, v in settings.items() if k in names})
    return replace(ctx, **gate_companions(ctx, names))
NOT_SHOWN: dict[tuple[str, str], str] = {
    ("*", "retriever"): "chroma needs the store's dense half (MiniLM embeddings), which this "
                        "test's store leaves out; which store each name returns is "
                        "tests/test_store_contracts.py's",
    ("*", "query_encoder"): "names a query tower trained by `activerag train-retriever`; "
                            "loading one is tests/test_lsr_checkpoint.py's",
    ("*", "mask_unit"): "the fake's tokens are whole words, so masking a word and masking its "
                        "tokens agree",
    ("*", "span_merge_gap"): "every token of the fake has one probability, so its low spans are "
                             "all of the draft or none",
    ("*", "etc_alpha"): "the fake's entropies are flat, so every smoothed trend is 0",
    ("*", "etc_absolute"): "the fake's entropies are flat, so no trend falls",
    ("self_ask", "combine_retrieval"): "the fake never writes `Follow up:`, so self-ask never "
                                       "retrieves",
    ("flare_instruct", "combine_retrieval"): "the fake never writes `[Search(`",
    ("flare_instruct", "exemplar_retrieval"): "FLARE-instruct's exemplars are its own "
                                              "(Appendix A), without documents",
    ("fb_rag", "scale"): "with eta_b 0 only the samples' term ranks, and a min-max map keeps "
                         "its order",
    ("fb_rag_fb", "scale"): "the fake's samples are all one text, so both terms order the "
                            "chunks alike and a min-max map keeps that order",
    ("long_context", "read_words"): "read only by the shared check that read_words is below "
                                    "the context's length; long_context reads it all",
    ("none", "store_dir"): "none retrieves nothing; the store's folder is read for the sentence "
                           "splitter trained there, whose splits of the fake's reply agree",
    **{(name, "initial_retrieval"): "retrieves with the question by definition (single) or "
                                    "answers first without documents (the gates, the app's "
                                    "first step): the shared first step reads the flag"
       for name in ("single", "single_k1", "single_k10", "app",
                    *(n for n, m in METHODS.items() if issubclass(m.context, GateContext)))},
    **{(name, "trigger"): "runs its own gate and asks 20 alternatives whatever the trigger"
       for name in ("flare_etc", "dragin_lite")},
    **{("dragin_lite", f): "flat entropies fire DRAGIN-lite at the draft's first content word, "
                           "before which no word stands" for f in ("dragin_query_words",
                                                                   "dragin_truncate")},
    ("flare_seakr", "rerank_pool"): "flat entropies tie every document, so the first k of any "
                                    "pool are kept",
    ("gate_margin", "margin_prefix"): "every token of the fake has one probability and one "
                                      "set of alternatives, so every prefix's mean margin is "
                                      "the same (tests/test_margin.py moves it)",
    ("previous_window", "combine_retrieval"): "its windows' queries are the fake's words about "
                                              "Alpha Beta, whose documents hold the question's",
}
"""(method, field) read but showing no effect under the fake server, with the reason; "*" for
every method. Reviewed: each entry is a limit of the fake, not of the method."""


def not_shown(name: str, field: str) -> str | None:
    return NOT_SHOWN.get((name, field)) or NOT_SHOWN.get(("*", field))


@pytest.fixture(scope="module")
def world(tmp_path_factory):  # type: ignore[no-untyped-def]
    """A fake vLLM and a store of a few passages, for the whole module."""
    root = tmp_path_factory.mktemp("settings")
    for name, passages in (("store", PASSAGES), ("other", PASSAGES[::-1][:12])):
        source = root / f"{name}.jsonl"
        source.write_text("".join(json.dumps({"title": t, "text": x.replace("Gepu", name)})
                                  + "\n" for t, x in passages))
        Corpus(root / name).ingest(source, dense=False, progress=False)
    b, light = Backend(reply=REPLY), Backend(reply=REPLY)
    with backend(b) as url, backend(light) as light_url:
        yield b, url, str(root / "store"), light_url


def base_context(name: str, url: str, store: str, *_: Any) -> Any:
    flare = FlareContext(base_url=url, store_dir=store, max_answer_tokens=12)
    fb = FBRagContext(base_url=url, light_base_url=url, store_dir=store, chunk_words=10,
                      recall_words=20, read_words=30, max_answer_tokens=12)
    return method(name, flare, fb)


def run(b: Backend, graph: Any, ctx: Any) -> str:
    b.requests.clear()
    state: dict[str, Any] = {"question": QUESTION}
    if graph in LONG_CONTEXT_GRAPHS:
        state["context"] = CONTEXT
    out = asyncio.run(graph.ainvoke(state, context=ctx))
    return shown(list(b.requests), out)


LONG_CONTEXT_GRAPHS = {m.graph for m in METHODS.values() if m.family == "FB-RAG"}
"""The graphs whose question comes with its own long context (FB-RAG's)."""
RUNNABLE = [name for name in METHODS if name not in SKIPPED]


def read_by(world: Any, name: str) -> list[str]:
    """The settable fields method NAME reads in a default run."""
    graph, ctx = base_context(name, *world[1:])
    reads: set[str] = set()
    run(world[0], graph, tracked(ctx, reads))
    return sorted(reads & set(settable(ctx)))


@pytest.fixture(scope="module")
def read_now(world):  # type: ignore[no-untyped-def]
    """The settable fields each runnable method reads in its default run."""
    found = {name: read_by(world, name) for name in RUNNABLE}
    if os.environ.get("ACTIVERAG_UPDATE_SETTINGS_READ"):
        READ_FILE.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    return found


def test_each_method_reads_the_settings_it_read_when_last_reviewed(read_now):
    kept = json.loads(READ_FILE.read_text())
    changes = {name: {"no longer read": sorted(set(kept.get(name, [])) - set(fields_)),
                      "newly read": sorted(set(fields_) - set(kept.get(name, [])))}
               for name, fields_ in read_now.items() if fields_ != kept.get(name)}
    assert not changes and set(kept) == set(read_now), (
        f"{changes}: a setting no longer read was dropped somewhere (a node, an override, a "
        "flag); one newly read must show its effect; review, then update settings_read.json")


@pytest.mark.parametrize("name", RUNNABLE)
def test_every_setting_a_method_reads_changes_what_its_run_shows(world, read_now, name):
    b = world[0]
    graph, ctx = base_context(name, *world[1:])
    gated = gate_companions(ctx, read_now[name])
    ctx = replace(ctx, **gated)
    assert run(b, graph, ctx) == run(b, graph, ctx), f"{name}: two runs differ; the test " \
                                                      "needs a deterministic run"
    silent = []
    bases: dict[str, str] = {}
    elsewhere = {"store_dir": ctx.store_dir.replace("store", "other"),
                 "light_base_url": world[3]}
    for field in read_now[name]:
        if not_shown(name, field) or field in gated:
            continue
        value = elsewhere.get(field) or changed(type(ctx), field, getattr(ctx, field))
        both = {k: v for k, v in COMPANIONS.get(field, {}).items() if k in read_now[name]}
        base = replace(ctx, **both)
        key = repr(sorted(both.items()))
        if key not in bases:
            bases[key] = run(b, graph, base)
        if run(b, graph, replace(base, **{field: value})) == bases[key]:
            silent.append(f"{field}={value!r}" + (f" (with {both})" if both else ""))
    assert not silent, f"{name}: these settings are read but change nothing: {silent}"


OVERRIDES_UNSHOWN = {"adaptive_rag_prompt": "its override empties a router the run may give; "
                                            "a router needs `activerag train-router`"}


@pytest.mark.parametrize("name", [n for n in RUNNABLE
                                  if METHODS[n].overrides and n not in OVERRIDES_UNSHOWN])
def test_a_methods_own_overrides_change_what_its_run_shows(world, name):
    b = world[0]
    graph, ctx = base_context(*[name, *world[1:]])
    own = {f.name for f in fields(ctx)}
    both = {k: v for f in METHODS[name].overrides for k, v in COMPANIONS.get(f, {}).items()
            if k in own}
    ctx = replace(ctx, **both)
    plain = {}
    for key, value in METHODS[name].overrides.items():
        default = getattr(type(ctx)(), key)
        plain[key] = default if default != value else changed(type(ctx), key, value)
    assert run(b, graph, ctx) != run(b, graph, replace(ctx, **plain)), METHODS[name].overrides


def test_every_not_shown_entry_names_a_method_and_a_field_that_exist():
    from activerag.cli.flags import FLAGS

    settable_fields = {f.field for f in FLAGS}
    for (name, field), reason in NOT_SHOWN.items():
        assert name == "*" or name in METHODS, name
        assert field in settable_fields and reason, field
