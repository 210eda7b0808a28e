"""The run flags of `ask`, `eval` and `sweep` are made from the context dataclasses: every
field a user can set has a flag that sets it (and nothing else), its help is the field's own
description with the dataclass default; `ask --help` lists every method by family and the
environment; a method is checked before anything else; the app's setting stays the app's; and
`--trace` shows what every family decided."""

import re
from dataclasses import fields, is_dataclass, replace
from pathlib import Path
from types import UnionType
from typing import Literal, get_args, get_origin, get_type_hints

import pytest
from test_app import app
from test_fb_rag_graph import CONTEXT, RATIONALE, WORDS
from test_graph_routing import QUESTION, retriever
from test_replug_graph import retriever as replug_retriever

from activerag import cli
from activerag.cli import flags, options
from activerag.context import FlareContext, composites
from activerag.graphs import registry
from activerag.graphs.fb_rag import build_fb_rag_graph
from activerag.graphs.replug import build_replug_graph
from activerag.graphs.single import build_single_graph
from activerag.nodes.app.context import AppContext
from activerag.nodes.fb_rag.context import FBRagContext
from activerag.nodes.replug.context import ReplugContext
from activerag.sentences import SentenceSplitter
from activerag.settings import Settings
from activerag.testing.scripted import ScriptedLM, ScriptedSampler, WordTokens, ends
from activerag.testing.scripted_tokens import ScriptedTokenLM, says

ROOT = Path(__file__).resolve().parents[1]
CONTEXTS = (FlareContext, ReplugContext, FBRagContext, AppContext)
STRINGS = {"base_url": "http://127.0.0.1:9/v1", "light_base_url": "http://127.0.0.1:9/v1",
           "trigger": "always"}
"""A valid value away from the default for the string fields that need one."""


pytestmark = pytest.mark.usefixtures("own_home")


def parse(*words: str):
    return cli.parser().parse_args(list(words))


def subparser(name: str):
    action = next(a for a in cli.parser()._actions if a.dest == "command")
    return action.choices[name]


def flag_for(cls, name):
    return [f for f in flags.FLAGS if cls in f.contexts and f.field == name]


def test_every_settable_field_of_every_context_has_exactly_one_flag():
    unread = {(g.contexts[0], name) for f in registry.FOLDERS for g in f.groups
              for name in g.unread}
    for cls in CONTEXTS:
        for f in fields(cls):
            composite = any(is_dataclass(t) for t in get_args(get_type_hints(cls)[f.name]))
            if composite or (cls, f.name) in unread:
                assert not flag_for(cls, f.name)
                continue
            assert len(flag_for(cls, f.name)) == 1, (cls.__name__, f.name)
    assert unread == {(FBRagContext, "prompt_set"), (FBRagContext, "exemplar_retrieval")}
    options_of = {g: {o for a in subparser(g)._actions for o in a.option_strings}
                  for g in ("ask", "eval", "sweep")}
    assert all(f.option in options_of["ask"] and f.option in options_of["eval"]
               for f in flags.FLAGS)
    assert {f.option for f in flags.FLAGS if f.group in (flags.SERVING, flags.FLARE)} <= \
        options_of["sweep"]


def away_from_default(flag) -> tuple[list[str], object]:
    """Command-line words that set FLAG's field away from its default, and the value given."""
    default = flag.default
    kind = get_type_hints(flag.contexts[0])[flag.field]
    if isinstance(kind, UnionType):  # X | None
        [kind] = [t for t in get_args(kind) if t is not type(None)]
    if kind is bool:
        return ([f"--no-{flag.option[2:]}"], False) if default else ([flag.option], True)
    if get_origin(kind) is Literal:
        value = next(c for c in get_args(kind) if c != default)
    elif kind is int:
        value = 3 if default is None else default + 1
    elif kind is float:
        value = default / 2 if default else 0.5
    else:
        value = STRINGS.get(flag.field, f"x-{flag.field}")
    return [flag.option, str(value)], value


@pytest.mark.parametrize("flag", flags.FLAGS, ids=lambda f: f.option)
def test_each_flag_sets_its_field_in_its_contexts_and_nowhere_else(flag):
    settings = Settings()
    words, value = away_from_default(flag)
    args = parse("ask", *words, QUESTION)
    plain = parse("ask", QUESTION)
    for cls in CONTEXTS:
        ctx = options.context(cls, args, settings)
        held = composites(cls)  # the app's fb: FB-RAG's context, made from FB-RAG's flags
        for name, kind in held.items():
            assert getattr(ctx, name) == options.context(kind, args, settings), cls.__name__
        if cls in flag.contexts:
            assert getattr(ctx, flag.field) == value, cls.__name__
        else:
            apart = dict.fromkeys(held)
            assert replace(ctx, **apart) == replace(options.context(cls, plain, settings),
                                                    **apart), cls.__name__


def shown(value) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    return "''" if value == "" else str(value)


def squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


def test_the_help_shows_each_fields_description_and_dataclass_default():
    rendered = squeezed(subparser("ask").format_help())
    for flag in flags.FLAGS:
        for cls in flag.contexts:  # each context's default is said: the first's, then others'
            field = next(f for f in fields(cls) if f.name == flag.field)
            text = flags.help_text(flag).replace("%%", "%")
            said = (rf"\(default: {re.escape(shown(field.default))}"
                    if field.default == flag.default else  # the others are named, with theirs
                    rf"; [\w, ]*\b{cls.__name__}\b[\w, ]*: {re.escape(shown(field.default))}")
            assert re.search(said, text), (flag.option, cls.__name__)
        first = next(f for f in fields(flag.contexts[0]) if f.name == flag.field)
        assert first.metadata["description"] in text
        assert squeezed(text) in rendered, flag.option
    for option, default in [("--theta", "0.8"), ("--k", "2"), ("--replug-k", "10"),
                            ("--fb-k", "50"), ("--max-answer-tokens", "256"),
                            ("--answer-tokens", "32"), ("--keep-documents", "on"),
                            ("--tau", "none"), ("--ensemble", "agree")]:
        [flag] = [f for f in flags.FLAGS if f.option == option]
        assert re.search(rf"\(default: {re.escape(default)}[;)]", flags.help_text(flag))


def test_every_option_of_the_run_commands_has_help():
    for command in ("ask", "eval", "sweep"):
        bare = [a.option_strings or [a.dest] for a in subparser(command)._actions
                if not a.help and a.dest not in ("question", "kind")]
        assert not bare, f"{command} options without help: {bare}"
    helped = {o: a.help for a in subparser("eval")._actions for o in a.option_strings}
    assert "comma-separated" in helped["--methods"]
    assert helped["--query"] and helped["--retriever"] and helped["--max-sentences"]


def test_ask_help_lists_every_method_under_its_family_and_the_environment():
    text = subparser("ask").format_help()
    heads = [text.index(f"  {family}:") for family in registry.FAMILIES]
    assert heads == sorted(heads)
    ends_at = [*heads[1:], text.index("environment:")]
    for record in registry.METHODS.values():
        i = list(registry.FAMILIES).index(record.family)
        line = re.search(rf"^    {record.name} +\S", text, re.M)
        assert line and heads[i] < line.start() < ends_at[i], record.name
    source = [p for d in ("activerag", "graphs", "nodes", "stores") for p in
              (ROOT / d).rglob("*.py") if "cli" not in p.parts]
    read = {m for p in source for m in re.findall(r"\bACTIVERAG_[A-Z_]+\b", p.read_text())}
    read |= {f"ACTIVERAG_{name.upper()}" for name in Settings.model_fields}
    assert {"ACTIVERAG_HOME", "ACTIVERAG_STRONG_URL", "ACTIVERAG_STORE_ROOT"} <= read
    environment = text[text.index("environment:"):]
    assert not [name for name in read if name not in environment]
    assert "VLLM_API_KEY" in environment


def test_ask_replug_takes_its_ensemble_and_tau_from_the_flags():
    args = parse("ask", "--method", "replug", "--ensemble", "token", "--tau", "0.5",
                 "--replug-k", "4", "--base-url", "http://127.0.0.1:9/v1", QUESTION)
    graph, ctx = options.method_runs(args, Settings(), [args.method])["replug"]
    assert graph is registry.METHODS["replug"].graph and type(ctx) is ReplugContext
    assert (ctx.ensemble, ctx.tau, ctx.k, ctx.base_url) == ("token", 0.5, 4,
                                                           "http://127.0.0.1:9/v1")
    assert parse("ask", "--tau", "none", QUESTION).tau is None


def test_eval_gives_each_family_its_own_settings():
    args = parse("eval", "--methods", "flare,replug_vote,fb_rag,app", "--k", "3", "--samples",
                 "2", "--read-words", "200", "--fb-k", "20", "--lookahead", "4",
                 "--min-confidence", "0.3", "--store", "/corpus")
    runs = options.method_runs(args, Settings(), options.check_methods(args))
    flare, replug, fb, app_ctx = (runs[m][1] for m in ("flare", "replug_vote", "fb_rag", "app"))
    assert type(flare) is FlareContext and flare.k == 3
    assert type(replug) is ReplugContext and (replug.k, replug.lookahead,
                                               replug.ensemble) == (10, 4, "vote")
    assert (fb.samples, fb.read_words, fb.k, fb.store_dir) == (2, 200, 20, "/corpus")
    assert type(app_ctx) is AppContext and (app_ctx.min_confidence, app_ctx.k) == (0.3, 3)
    assert app_ctx.fb == fb and replug.store_dir == flare.store_dir == "/corpus"


def test_min_confidence_is_the_apps_alone(capsys):
    args = parse("ask", "--method", "flare", "--min-confidence", "0.3", QUESTION)
    _, ctx = options.method_runs(args, Settings(), ["flare"])["flare"]
    assert type(ctx) is FlareContext
    options.warn_ignored(args, ["flare"])
    err = capsys.readouterr().err
    assert "--min-confidence does not apply to flare" in err and "AppContext" in err


def test_a_flag_a_method_fixes_otherwise_is_warned_of(capsys):
    options.warn_ignored(parse("ask", "--method", "flare_explicit", "--query", "implicit",
                               QUESTION), ["flare_explicit"])
    err = capsys.readouterr().err
    assert "--query implicit does not apply to flare_explicit" in err
    options.warn_ignored(parse("ask", "--k", "4", QUESTION), ["replug"])
    assert "--replug-k" in capsys.readouterr().err


def test_the_method_is_checked_before_the_settings(capsys, monkeypatch):
    monkeypatch.setenv("ACTIVERAG_PORT", "abc")  # would be refused first if settings came first
    assert cli.main(["ask", "--method", "flair", QUESTION]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'flare'" in err and "ACTIVERAG_PORT" not in err
    assert cli.main(["eval", "--methods", " , "]) == 2
    assert "--methods names no method" in capsys.readouterr().err


RETRIEVED = ["    queries: ['Where was Alpha Beta born?']", "    docs:    Alpha Beta (4f6eac36)"]
"""The trace lines of the question's own retrieval (single-time retrieval, FLARE's first)."""


def register(monkeypatch, name, graph, cls, family):
    monkeypatch.setitem(registry.METHODS, name, registry.Method(name, graph, cls, {}, family,
                                                                "a scripted graph"))


def ask(capsys, *words: str) -> list[str]:
    assert cli.main(["ask", "--trace", *words]) == 0
    return capsys.readouterr().out.splitlines()


def test_single_time_retrieval_traces_its_sentences(capsys, monkeypatch):
    lm = ScriptedLM([ends("Alpha Beta was born in Kelmor.", low={"Kelmor.": 0.5})])
    register(monkeypatch, "scripted_single",
             build_single_graph(lm=lm, retriever=retriever(), splitter=SentenceSplitter()),
                                FlareContext, "FLARE")
    out = ask(capsys, "--method", "scripted_single", QUESTION)
    assert out == ["[0] min p=0.5  kept", *RETRIEVED, "    => Alpha Beta was born in Kelmor.",
                   "Alpha Beta was born in Kelmor."]


def test_replug_traces_its_sentences_with_the_documents_weights(capsys, monkeypatch):
    lm = ScriptedTokenLM({"Vesk": says("So the answer is Vesk."),
                          "Ulm": says("So the answer is Ulm.")})
    graph = build_replug_graph(token_lm=lm, retriever=replug_retriever(),
                               splitter=SentenceSplitter())
    register(monkeypatch, "scripted_replug", graph, ReplugContext, "REPLUG")
    out = ask(capsys, "--method", "scripted_replug", "--ensemble", "token", "--replug-k", "2",
              QUESTION)
    assert out[0].startswith("[0] certified ")
    assert re.fullmatch(r" +docs \(λ\): Alpha Beta \(0\.\d\d\), Alpha Move \(0\.\d\d\)", out[1])
    assert out[-2:] == ["    => So the answer is Vesk.", "So the answer is Vesk."]
    assert all(call["max_tokens"] == 1 for call in lm.calls)  # --ensemble token reached it


def fb_flags(tmp_path) -> list[str]:
    context = tmp_path / "context.txt"
    context.write_text(CONTEXT)
    return ["--context-file", str(context), "--chunking", "paragraphs", "--recall-words",
            str(WORDS[0]), "--read-words", str(WORDS[0] + WORDS[2]), "--samples", "3",
            "--strong-format", "plain", "--light-format", "plain"]


def test_fb_rag_traces_its_stages(capsys, monkeypatch, tmp_path):
    graph = build_fb_rag_graph(lm=ScriptedLM([ends("Bergen")]), token_lm=WordTokens(),
                               light_lm=ScriptedSampler([RATIONALE]))
    register(monkeypatch, "scripted_fb_rag", graph, FBRagContext, "FB-RAG")
    out = "\n".join(ask(capsys, "--method", "scripted_fb_rag", *fb_flags(tmp_path),
                        "Where was the designer of the harbour lighthouse born?"))
    assert "recall chunks [0]" in out and "selected chunks [0, 2]" in out
    assert out.count("sample 1: ") == 1 and out.endswith("\nBergen")


def test_the_app_traces_its_route_singles_confidence_and_the_inner_sentences(capsys,
                                                                             monkeypatch):
    graph = app(ScriptedLM([ends("He was born in Orvale.", prob=0.6)]),
                ScriptedLM([ends("Alpha Beta was born in Kelmor.", prob=0.99)]))
    register(monkeypatch, "scripted_app", graph, AppContext, "app")
    out = ask(capsys, "--method", "scripted_app", "--min-confidence", "0.7", QUESTION)
    assert out == ["[app: single]", "[0] min p=0.6  kept", *RETRIEVED,
                   "    => He was born in Orvale.",
                   "  single's confidence 0.600 < min_confidence 0.7: FLARE answers instead",
                   "[app: flare]", "[0] min p=0.99  kept", *RETRIEVED,
                   "    => Alpha Beta was born in Kelmor.", "[app] route: flare",
                   "Alpha Beta was born in Kelmor."]


def test_the_app_traces_fb_rags_stages_for_a_long_context(capsys, monkeypatch, tmp_path):
    graph = app(ScriptedLM([]), ScriptedLM([]), strong=ScriptedLM([ends("Bergen")]))
    register(monkeypatch, "scripted_app", graph, AppContext, "app")
    out = "\n".join(ask(capsys, "--method", "scripted_app", *fb_flags(tmp_path),
                        "Where was the designer of the harbour lighthouse born?"))
    assert "[app: fb_rag]" in out and "selected chunks [0, 2]" in out
    assert "answer 'Bergen' (fb_rag)" in out and "[app] route: fb_rag" in out


def test_the_endpoint_and_store_defaults_come_from_the_settings_when_the_command_runs(
        monkeypatch, tmp_path):
    monkeypatch.setenv("ACTIVERAG_PORT", "8999")
    runs = options.method_runs(parse("eval", "--methods", "flare,replug,fb_rag,app"),
                               Settings.from_env(), ["flare", "replug", "fb_rag", "app"])
    store = str(tmp_path / "home" / "store")
    for name in ("flare", "replug", "app"):
        assert (runs[name][1].base_url, runs[name][1].store_dir) == (
            "http://127.0.0.1:8999/v1", store), name
    assert runs["fb_rag"][1].store_dir == store
    assert runs["fb_rag"][1].base_url == FBRagContext().base_url  # the strong reader's own


def test_only_fb_rag_itself_asks_the_light_sampler():
    from activerag.cli.endpoints import needed

    fb = FBRagContext(light_base_url="http://127.0.0.1:9/v1")
    flags_of = {name: [e.flag for e in needed(name, fb, True)]
                for name, m in registry.METHODS.items() if m.context is FBRagContext}
    assert flags_of == {"fb_rag": ["--light-url", "--strong-url"],
                        "fb_rag_fb": ["--light-url", "--strong-url"],
                        **{name: ["--strong-url"] for name in
                           ("long_context", "vanilla_rag", "op_rag", "self_route")}}
