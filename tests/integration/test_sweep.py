"""A sweep against the real server writes its table and its plot."""

import pytest

from activerag.cli import main

pytestmark = pytest.mark.integration


def test_next_previous_sweep_writes_table_and_png(vllm_url, demo_store, tmp_path, capsys):
    rc = main(["sweep", "next_previous", "--dataset", "demo", "--n", "1", "--max-sentences", "2",
               "--base-url", vllm_url, "--store", str(demo_store), "--out", str(tmp_path)])
    assert rc == 0
    table = (tmp_path / "next_previous" / "next_previous.md").read_text()
    assert "| previous |" in table and "| next |" in table
    png = (tmp_path / "next_previous" / "next_previous.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
