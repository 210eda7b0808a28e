"""A FLARE graph is a clean subgraph: a parent app adds it as one node."""

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from activerag.context import FlareContext
from activerag.graphs.flare import build_flare_graph
from activerag.sentences import SentenceSplitter
from activerag.stores.base import StoreRetriever
from activerag.stores.bm25 import BM25Store
from activerag.stores.documents import make_document
from activerag.testing.scripted import ScriptedLM, ends


class AppState(TypedDict, total=False):
    question: str
    answer: str
    verdict: str


def judge(state: AppState) -> AppState:
    return {"verdict": "grounded" if "Kelmor" in state["answer"] else "unsure"}


async def test_flare_runs_as_a_node_of_a_parent_graph():
    store = BM25Store()
    store.add([make_document("Alpha Beta was born in Kelmor.", "Alpha Beta")])
    lm = ScriptedLM([ends("Alpha Beta was born in Kelmor.", prob=0.99)])
    flare = build_flare_graph(lm=lm, retriever=StoreRetriever(store=store, k=1),
                              splitter=SentenceSplitter())
    app = StateGraph(AppState, context_schema=FlareContext)
    app.add_node("flare", flare)
    app.add_node("judge", judge)
    app.add_edge(START, "flare")
    app.add_edge("flare", "judge")
    app.add_edge("judge", END)
    out = await app.compile().ainvoke({"question": "Where was Alpha Beta born?"},
                                      context=FlareContext(theta=0.5))
    assert out == {"question": "Where was Alpha Beta born?",
                   "answer": "Alpha Beta was born in Kelmor.", "verdict": "grounded"}
