"""Edges of evaluation, stores, the CLI and the graphs that no test pinned (issue #38: survivors
of the random mutants of seed 1, results/mutants-seed1.md): an empty summary, a short answer's
every score, an ingest report's examples, a second batch into a store on disk, a required
flag, a graph's name and checkpointer, and which LM settings a method reads."""

import json

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from activerag import cli
from activerag.cli.endpoints import needed
from activerag.context import FlareContext
from activerag.evaluation.datasets import Example
from activerag.evaluation.rows import score
from activerag.evaluation.summaries import summarise
from activerag.graphs.adaptive_rag import build_router_graph
from activerag.graphs.flare import build_next_sentence_graph
from activerag.graphs.registry import method
from activerag.nodes.fb_rag.context import FBRagContext
from activerag.stores.bm25 import BM25Store
from activerag.stores.corpus import Corpus
from activerag.stores.documents import make_document


def test_a_summary_of_no_rows_says_none():
    assert summarise([]) == {"n": 0}


def test_a_short_answer_gets_every_score():
    example = Example(id="q", question="Where?", answers=["Kelmor city"])
    row = score(example, "So the answer is Kelmor.", [])
    assert row["prediction"] == "Kelmor" and row["em"] == 0.0
    assert (row["precision"], row["recall"]) == (1.0, 0.5)
    assert row["f1"] == pytest.approx(2 / 3)


def test_an_ingest_report_shows_at_most_five_bad_rows(tmp_path):
    source = tmp_path / "corpus.jsonl"
    good = [json.dumps({"title": "T", "text": "A passage about Kelmor."})]
    source.write_text("\n".join(good + ["{not json"] * 7) + "\n")
    report = Corpus(tmp_path / "store").ingest(source, dense=False, progress=False)
    shown = [line for line in report.summary().splitlines() if line.startswith("  ")]
    assert report.skipped == 7 and len(shown) == 5


def test_a_store_on_disk_takes_a_second_batch(tmp_path):
    store = BM25Store(tmp_path / "bm25")
    assert store.add([make_document("Gepu lies on the Vedria.", "Gepu")]) == 1
    assert store.add([make_document("Kelmor lies on the Vedria.", "Kelmor")]) == 1
    store.close()
    assert len(BM25Store(tmp_path / "bm25").docs) == 2


def test_train_router_needs_its_output_folder(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["train-router", "--n", "4"])
    assert exit_.value.code == 2 and "--out" in capsys.readouterr().err


def test_the_next_sentence_graph_has_its_name_and_keeps_a_given_checkpointer():
    assert build_next_sentence_graph().name == "next_sentence"
    saver = InMemorySaver()
    assert build_router_graph(checkpointer=saver).checkpointer is saver


@pytest.mark.parametrize(("name", "with_context", "flags"), [
    ("app", False, ["--base-url"]), ("app", True, ["--base-url", "--light-url", "--strong-url"]),
    ("flare", True, ["--base-url"]), ("fb_rag", False, ["--light-url", "--strong-url"]),
    ("op_rag", False, ["--strong-url"]), ("replug", False, ["--base-url"])])
def test_which_servers_a_method_asks_each_named_by_its_flag(name, with_context, flags):
    """From its context's servers: FB-RAG's two by role (its baselines do not sample), the
    app's one LM and, for a question with a long context, FB-RAG's."""
    _, ctx = method(name, FlareContext(), FBRagContext(light_base_url="http://127.0.0.1:9/v1"))
    assert [e.flag for e in needed(name, ctx, with_context)] == flags


def test_a_shortfall_warns_of_missing_rows_or_damaged_lines_each_alone():
    from activerag.evaluation.tables import shortfall

    assert shortfall({"missing": 0, "damaged_lines": 0, "expected": 4}) is None
    missing = shortfall({"missing": 3, "damaged_lines": 0, "expected": 10})
    assert missing == ("WARNING: this summary is short: 3 of 10 rows (methods × examples) are "
                       "missing")
    damaged = shortfall({"missing": 0, "damaged_lines": 1, "expected": 10})
    assert damaged == "WARNING: 1 line of examples.jsonl could not be read"
