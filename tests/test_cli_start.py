"""The CLI starts at once (issue #39): building its parser, which every command does first,
imports no graph, LM client, store or NLTK; only a help that lists the methods imports the
registry, when it is shown."""

import subprocess
import sys

HEAVY = ("activerag.graphs.registry", "nltk", "langgraph", "openai", "langchain_core",
         "chromadb", "torch", "scipy")
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
    assert "flare_explicit" in help_text and "ACTIVERAG_EVAL_LEASE" in help_text
