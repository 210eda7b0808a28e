"""The CLI starts at once (issue #39): building its parser, which every command does first,
imports no graph, LM client, store or NLTK; only a help that lists the methods imports the
registry, when it is shown, and the registry names its graphs without compiling them."""

import subprocess
import sys

HEAVY = ("activerag.graphs.registry", "nltk", "langgraph", "openai", "langchain_core",
         "chromadb", "torch", "scipy", "ray")
PROBE = """
import sys
from activerag import cli
cli.parser()
print([m for m in {heavy!r} if m in sys.modules])
"""


def test_building_the_parser_imports_nothing_heavy():
    out = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY)], check=True,
                         capture_output=True, text=True).stdout
    assert out.strip() == "[]"


def test_the_methods_are_listed_when_the_help_is_shown():
    help_text = subprocess.run([sys.executable, "-m", "activerag.cli", "ask", "--help"],
                               check=True, capture_output=True, text=True).stdout
    assert "flare_explicit" in help_text and "ACTIVERAG_DATABASE_URL" in help_text


LISTED = """
import sys
from activerag.graphs.registry import METHODS, markdown_table
markdown_table()
from activerag.nodes.families import folder_modules
light = {"activerag.graphs.registry", "activerag.nodes.families"}
for methods in folder_modules("methods"):  # a family folder's rows and context, no node
    light |= {methods, methods.rsplit(".", 1)[0], methods.replace(".methods", ".context")}
import pkgutil, activerag.nodes  # every folder's package, looked into for its methods.py
light |= {f"activerag.nodes.{m.name}" for m in pkgutil.iter_modules(activerag.nodes.__path__)
          if m.ispkg}
print(sorted(m for m in sys.modules if m.startswith(("activerag.graphs.", "activerag.nodes."))
             and m not in light
             or m.split(".")[0] in ("langgraph", "openai", "nltk", "torch")))
"""


def test_listing_the_methods_compiles_no_graph():
    out = subprocess.run([sys.executable, "-c", LISTED], check=True, capture_output=True,
                         text=True).stdout
    assert out.strip() == "[]"


def test_a_method_s_graph_is_compiled_when_first_asked_for():
    from activerag.graphs import flare
    from activerag.graphs.registry import METHODS

    assert METHODS["flare"].graph is flare.graph and METHODS["flare"].own


RAY_FREE = """
import sys
from activerag import cli
for argv in (["--help"], ["eval", "--help"], ["ask", "--help"]):
    try:
        cli.main(argv)
    except SystemExit:
        pass
print("ray" in sys.modules, "ray.data" in sys.modules)
"""


def test_no_command_but_eval_ray_imports_ray():
    """Ray is an extra (issue #57): help, even eval's, which offers --ray, never imports it."""
    out = subprocess.run([sys.executable, "-c", RAY_FREE], check=True, capture_output=True,
                         text=True).stdout
    assert out.strip().splitlines()[-1] == "False False"
