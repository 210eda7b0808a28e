"""A question with no visible character (whitespace, zero-width and other format or control
characters only) is empty, for every graph's start node (issue #19, item 13)."""

import pytest
from test_app import app
from test_fb_rag_graph import CONTEXT, RATIONALE
from test_fb_rag_graph import context as fb_context
from test_graph_routing import graph as flare_graph
from test_replug_graph import retriever as replug_retriever

from activerag.context import FlareContext
from activerag.errors import EmptyQuestion
from activerag.graphs.fb_rag import build_fb_rag_graph
from activerag.graphs.replug import build_replug_graph
from activerag.nodes.app.context import AppContext
from activerag.nodes.base import checked_question
from activerag.nodes.replug.context import ReplugContext
from activerag.testing.scripted import ScriptedLM, ScriptedSampler, WordTokens
from activerag.testing.scripted_tokens import ScriptedTokenLM, says

INVISIBLE = ["", "  \t\n", "\u200b\u200c\ufeff", "\u200d \u2060", "\u00a0\u2003\u3000",
             "\x00\x07\x1b", "\u200e\u200f\u202e"]
"""Empty, whitespace, zero-width (space, joiners, BOM, word joiner), wide spaces, control
characters, direction marks."""


@pytest.mark.parametrize("question", INVISIBLE)
def test_a_question_without_a_visible_character_is_empty(question):
    with pytest.raises(EmptyQuestion, match="question is empty"):
        checked_question(question)


@pytest.mark.parametrize(("given", "kept"), [
    ("  Who was born in Vesk? \n", "Who was born in Vesk?"),
    ("\u200bWho?", "\u200bWho?"), ("谁？", "谁？"), ("?", "?"), ("x", "x"),
])
def test_a_question_with_a_visible_character_is_kept_stripped(given, kept):
    assert checked_question(given) == kept


def test_a_missing_question_is_empty():
    with pytest.raises(EmptyQuestion):
        checked_question(None)


ZERO_WIDTH = "\u200b\u200c\ufeff"


async def test_flare_refuses_a_zero_width_question():
    with pytest.raises(EmptyQuestion):
        await flare_graph(ScriptedLM([])).ainvoke({"question": ZERO_WIDTH},
                                                  context=FlareContext())


async def test_replug_refuses_a_zero_width_question():
    lm = ScriptedTokenLM({"Vesk": says("x")})
    with pytest.raises(EmptyQuestion):
        await build_replug_graph(token_lm=lm, retriever=replug_retriever()).ainvoke(
            {"question": ZERO_WIDTH}, context=ReplugContext())


async def test_the_app_refuses_a_zero_width_question():
    with pytest.raises(EmptyQuestion):
        await app(ScriptedLM([]), ScriptedLM([])).ainvoke({"question": ZERO_WIDTH},
                                                          context=AppContext())


async def test_fb_rag_refuses_a_zero_width_question():
    graph = build_fb_rag_graph(lm=ScriptedLM([]), token_lm=WordTokens(),
                               light_lm=ScriptedSampler([RATIONALE]))
    with pytest.raises(EmptyQuestion):
        await graph.ainvoke({"question": ZERO_WIDTH, "context": CONTEXT}, context=fb_context())
