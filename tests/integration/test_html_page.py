"""`activerag ask --html` against the real server and the demo store, the page opened in real
headless Chromium: its DOM holds the run, and its screenshot shows it."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from page_dom import draft_tokens, elements, having, svg_nodes
from PIL import Image

from activerag.cli import main
from activerag.drawing import END, START, VISITED_FILL
from activerag.page import token_colour

pytestmark = pytest.mark.integration
QUESTION = "In which city was the founder of Daeselin Company born?"
FLARE_NODES = {START, "begin", "retrieve_input", "draft", "confidence_gate", "formulate_query",
               "retrieve", "regenerate", "accept", END}


def chromium(page: Path, profile: Path, *args: str) -> str:
    """Open PAGE in headless Chromium with ARGS (its own profile folder); its stdout."""
    exe = shutil.which("chromium")
    if exe is None:
        pytest.fail("chromium is not installed; `make setup` installs it (apt-get install "
                    "chromium)", pytrace=False)
    done = subprocess.run([exe, "--headless=new", "--no-sandbox", "--disable-gpu",
                           "--disable-dev-shm-usage", f"--user-data-dir={profile}",
                           "--window-size=1200,2000", *args, page.as_uri()],
                          capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def test_ask_html_page_in_chromium(vllm_url, demo_store, tmp_path, capsys):
    page = tmp_path / "run.html"
    rc = main(["ask", "--json", "--html", str(page), "--max-sentences", "3", "--base-url",
               vllm_url, "--store", str(demo_store), QUESTION])
    assert rc == 0
    captured = capsys.readouterr()
    assert f"page: {page}" in captured.err
    out = json.loads(captured.out)
    trace = out["trace"]
    assert trace and out["answer"].strip()

    found = elements(chromium(page, tmp_path / "profile", "--dump-dom"))
    assert len(having(found, "svg", "graph")) == 1
    nodes = svg_nodes(found)
    assert set(nodes) == FLARE_NODES
    runs = {n: int(e.attrs["data-visits"]) for n, e in nodes.items() if "visited" in e.classes}
    fired = sum(step["retrieved"] for step in trace)
    # one draft, gate and accept per sentence; a query, retrieval and regeneration per firing
    assert runs["draft"] == runs["confidence_gate"] == runs["accept"] == len(trace)
    for node in ("formulate_query", "retrieve", "regenerate"):
        assert runs.get(node, 0) == fired
    assert runs["begin"] == runs["retrieve_input"] == runs[START] == runs[END] == 1
    assert all(nodes[n].attrs["data-visits"] == "0" for n in FLARE_NODES - set(runs))
    # implicit queries ask the LM nothing: a call per draft and per regeneration, but for one
    # whose retrieval brought back the draft's own documents (the draft is kept unasked)
    kept = sum(bool(step.get("redrafted")) for step in trace)
    assert out["lm_calls"] == runs["draft"] + runs.get("regenerate", 0) - kept

    articles = having(found, "article", "sentence")
    assert [a.attrs["data-retrieved"] for a in articles] == [
        str(step["retrieved"]).lower() for step in trace]
    tokens = draft_tokens(found)
    expected = [(text, p) for step in trace for text, p in step["draft_tokens"]]
    assert [t.text for t in tokens] == [text for text, _ in expected]
    assert ["low" in t.classes for t in tokens] == [p < 0.8 for _, p in expected]
    assert all(t.attrs["style"] == f"background:{token_colour(p)}"
               for t, (_, p) in zip(tokens, expected, strict=True))
    costs = {e.attrs["data-key"]: e.text for e in found if e.tag == "tr" and "data-key" in e.attrs}
    assert costs["lm_calls"] == f"LM calls{out['lm_calls']}"
    assert costs["retrievals"] == f"retriever calls{out['retrievals']}"

    shot = tmp_path / "run.png"
    chromium(page, tmp_path / "profile", f"--screenshot={shot}")
    image = Image.open(shot).convert("RGB")
    assert image.size == (1200, 2000)
    counts = {colour: n for n, colour in image.getcolors(image.width * image.height)}
    assert len(counts) > 100  # text, boxes and colours, not a blank page
    assert image.width * image.height - counts.get((255, 255, 255), 0) > 0.05 * 1200 * 2000
    assert counts.get(rgb(VISITED_FILL), 0) > 2000  # the visited nodes' boxes
    painted = {token_colour(p) for _, p in expected}
    assert all(rgb(colour) in counts for colour in painted)
