"""A method family in a folder of its own is found where it lies (issue #39): its rows join the
registry, its context's own fields get a flag group, its triggers are registered when first
asked for, and nothing else is edited. Shown with a family written to a temporary folder that
the package's nodes path is made to include, in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

FAMILY = {
    "__init__.py": '"""A family written by a test."""\n',
    "context.py": '''
        from dataclasses import dataclass

        from activerag import trigger_names
        from activerag.context import FlareContext
        from activerag.context_checks import documented

        trigger_names.TRIGGERS.setdefault("coin", None)


        @documented
        @dataclass(kw_only=True)
        class CoinContext(FlareContext):
            """A test's context."""

            coin_bias: float = 0.5
            """How often the coin says retrieve."""
        ''',
    "triggers.py": '''
        from activerag.nodes.triggers import register


        @register("coin", top_logprobs=3)
        def coin(tokens, state, ctx):
            return True
        ''',
    "methods.py": '''
        from activerag.method_record import Family, FlagGroup, Method
        from activerag.nodes.coinfam.context import CoinContext

        FAMILY = Family(
            name="coin flips", line="a test's family (CoinContext)",
            methods=(Method("coin", "flare:graph", CoinContext, {"trigger": "coin"},
                            "coin flips", "retrieves when a coin says so"),),
            groups=(FlagGroup("coin flips", "CoinContext: coin", (CoinContext,)),))
        ''',
}
PROBE = """
import activerag.nodes
activerag.nodes.__path__.append({folder!r})
from activerag.graphs.registry import FAMILIES, METHODS, markdown_table
from activerag.cli import RUN_GROUPS
from activerag.cli.flags import FLAGS
from activerag.nodes import triggers
row = METHODS["coin"]
flag = next(f for f in FLAGS if f.option == "--coin-bias")
names = list(METHODS)
print(names.index("flare_instruct") < names.index("coin") < names.index("app") == len(names) - 1,
      row.needs == frozenset({{"completions", "stream", "logprobs"}}),
      FAMILIES["coin flips"], "coin flips" in RUN_GROUPS, flag.group,
      [c.__name__ for c in flag.contexts], "| `coin` | coin flips |" in markdown_table())
from activerag import trigger_names
print(trigger_names.TRIGGERS["coin"] is None, triggers.trigger_named("coin").__name__,
      trigger_names.TOP_LOGPROBS["coin"])
"""


def test_a_new_family_folder_is_found_by_the_registry_the_cli_and_the_triggers(tmp_path: Path):
    folder = tmp_path / "coinfam"
    folder.mkdir()
    for name, text in FAMILY.items():
        (folder / name).write_text(textwrap.dedent(text))
    out = subprocess.run([sys.executable, "-c", PROBE.format(folder=str(tmp_path))],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == ["True True a test's family (CoinContext) True coin flips ['CoinContext'] True",
                   "True coin 3"]


def test_two_rows_of_one_name_are_refused(tmp_path: Path):
    folder = tmp_path / "twice"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "methods.py").write_text(textwrap.dedent('''
        from activerag.context import FlareContext
        from activerag.method_record import Family, Method

        FAMILY = Family(name="FLARE", line="", methods=(
            Method("flare", "flare:graph", FlareContext, {}, "FLARE", "again"),))
        '''))
    probe = (f"import activerag.nodes; activerag.nodes.__path__.append({str(tmp_path)!r}); "
             "import activerag.graphs.registry")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode != 0 and "two registry rows share a name: ['flare']" in done.stderr


def test_the_shipped_family_folders_are_found_in_folder_order():
    from activerag.nodes.families import family_folders, folder_modules

    found = family_folders.__wrapped__()  # not the cached tuple: this call runs the lookup
    assert [f.name for f in found] == ["Adaptive-RAG", "FB-RAG", "uncertainty gates", "IRCoT",
                                       "uncertainty gates", "REPLUG", "SeaKR-lite", "app"]
    assert found == family_folders()
    assert folder_modules("triggers") == ["activerag.nodes.gated.triggers",
                                          "activerag.nodes.margin.triggers"]


def test_no_shipped_module_of_the_cli_or_the_registry_names_a_folder_family_s_context():
    """A family in a folder is added there alone: the flag code, the CLI's parser and context
    building, and the registry find its context through its FAMILY, never by name."""
    from activerag.context import FlareContext, ServingContext
    from activerag.nodes.families import family_folders

    shipped = {FlareContext, ServingContext}
    names = {c.__name__ for f in family_folders() for m in f.methods for c in (m.context,)
             if c not in shipped}
    names |= {c.__name__ for f in family_folders() for g in f.groups for c in g.contexts}
    assert {"ReplugContext", "SeakrContext", "GateContext", "FBRagContext", "AppContext",
            "AdaptiveContext"} <= names
    root = Path(__file__).resolve().parents[1]
    for rel in ("activerag/cli/flags.py", "activerag/cli/__init__.py", "activerag/cli/options.py",
                "activerag/cli/abilities.py", "activerag/cli/endpoints.py",
                "activerag/cli/trace.py", "activerag/cli/router.py",
                "activerag/evaluation/evaluate.py", "activerag/context.py", "graphs/registry.py"):
        text = (root / rel).read_text()
        assert not {n for n in names if n in text}, rel
