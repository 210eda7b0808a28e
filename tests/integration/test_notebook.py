"""The notebooks execute top to bottom against the real server."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.integration
NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "quickstart.ipynb"


def executed_outputs(name, vllm_url, tmp_path, monkeypatch) -> str:
    """Run notebooks/NAME top to bottom against the server; return its code cells' output."""
    monkeypatch.setenv("ACTIVERAG_BASE_URL", vllm_url)
    monkeypatch.setenv("ACTIVERAG_STORE_DIR", str(tmp_path / "store"))
    nb = nbformat.read(NOTEBOOK.parent / name, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={
        "metadata": {"path": str(tmp_path)}}).execute()
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                   for o in c.get("outputs", []))


def test_quickstart_notebook_runs(vllm_url, tmp_path, monkeypatch):
    outputs = executed_outputs("quickstart.ipynb", vllm_url, tmp_path, monkeypatch)
    assert "added 330 to BM25" in outputs
    assert "min p=" in outputs and "=>" in outputs
    assert "lm_calls" in outputs


def test_replug_notebook_runs(vllm_url, tmp_path, monkeypatch):
    outputs = executed_outputs("replug.ipynb", vllm_url, tmp_path, monkeypatch)
    assert "added 330 to BM25" in outputs
    assert "certified" in outputs and "docs (λ)" in outputs
    assert outputs.count("λ=") == 4
    assert "the ensemble writes" in outputs


def test_fb_rag_notebook_runs(vllm_url, strong_url, tmp_path, monkeypatch):
    monkeypatch.setenv("ACTIVERAG_LIGHT_URL", vllm_url)
    monkeypatch.setenv("ACTIVERAG_STRONG_URL", strong_url)
    outputs = executed_outputs("fb_rag.ipynb", vllm_url, tmp_path, monkeypatch)
    assert f"light {vllm_url}, strong {strong_url}" in outputs
    for stage in ("prepare", "recall_retrieve", "sample", "rerank", "generate"):
        assert f"{stage:>16}: " in outputs
    assert "stage I read" in outputs and outputs.count("\n  - ") == 3  # three samples
    assert "forward  gold  read" in outputs and "(gold)" in outputs
    assert "fb_rag: reads chunks" in outputs and "op_rag: reads chunks" in outputs
