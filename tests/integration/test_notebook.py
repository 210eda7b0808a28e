"""The notebooks execute top to bottom against the real server."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from page_dom import draft_tokens, elements, having, svg_nodes

pytestmark = pytest.mark.integration
NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "quickstart.ipynb"


def executed_outputs(name, vllm_url, tmp_path, monkeypatch,
                     shown: list[str] | None = None) -> str:
    """Run notebooks/NAME top to bottom against the server; return its code cells' printed
    output. SHOWN, if given, receives what they display as HTML or SVG."""
    monkeypatch.setenv("ACTIVERAG_BASE_URL", vllm_url)
    monkeypatch.setenv("ACTIVERAG_STORE_DIR", str(tmp_path / "store"))
    nb = nbformat.read(NOTEBOOK.parent / name, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={
        "metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    if shown is not None:
        shown += ["".join(o.get("data", {}).get(mime, "")) for o in outputs
                  for mime in ("text/html", "image/svg+xml") if mime in o.get("data", {})]
    return "".join(o.get("text", "") for o in outputs)


def test_quickstart_notebook_runs(vllm_url, tmp_path, monkeypatch):
    shown: list[str] = []
    outputs = executed_outputs("quickstart.ipynb", vllm_url, tmp_path, monkeypatch, shown)
    assert "added 330 to BM25" in outputs
    assert "lm_calls" in outputs
    picture, view = shown  # the graph alone, then the run
    assert set(svg_nodes(elements(picture))) == set(svg_nodes(elements(view)))
    found = elements(view)
    visited = {n for n, e in svg_nodes(found).items() if "visited" in e.classes}
    assert {"begin", "retrieve_input", "draft", "confidence_gate", "accept"} <= visited
    sentences = having(found, "article", "sentence")
    assert sentences and all("⇒" in s.text and "min p" in s.text for s in sentences)
    assert draft_tokens(found)


def test_replug_notebook_runs(vllm_url, tmp_path, monkeypatch):
    shown: list[str] = []
    outputs = executed_outputs("replug.ipynb", vllm_url, tmp_path, monkeypatch, shown)
    assert "added 330 to BM25" in outputs
    assert "certified" in outputs
    assert outputs.count("λ=") == 4
    [view] = shown
    found = elements(view)
    assert {"propose", "ensemble", "accept"} <= {n for n, e in svg_nodes(found).items()
                                                if "visited" in e.classes}
    sentences = having(found, "article", "sentence")
    assert sentences and all("certified" in s.text and "λ=" in s.text for s in sentences)
    assert "the ensemble writes" in outputs


def test_fb_rag_notebook_runs(vllm_url, strong_url, tmp_path, monkeypatch):
    monkeypatch.setenv("ACTIVERAG_LIGHT_URL", vllm_url)
    monkeypatch.setenv("ACTIVERAG_STRONG_URL", strong_url)
    shown: list[str] = []
    outputs = executed_outputs("fb_rag.ipynb", vllm_url, tmp_path, monkeypatch, shown)
    assert f"light {vllm_url}, strong {strong_url}" in outputs
    [picture] = shown  # the graph, drawn
    assert set(svg_nodes(elements(picture))) >= {"prepare", "recall_retrieve", "sample",
                                                 "rerank", "generate"}
    for stage in ("prepare", "recall_retrieve", "sample", "rerank", "generate"):
        assert f"{stage:>16}: " in outputs
    assert "stage I read" in outputs and outputs.count("\n  - ") == 3  # three samples
    assert "forward  gold  read" in outputs and "(gold)" in outputs
    assert "fb_rag: reads chunks" in outputs and "op_rag: reads chunks" in outputs
