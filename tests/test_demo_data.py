"""The shipped demo questions: regenerated exactly, and each answerable from its gold paragraphs."""

import json
import os
import subprocess
import sys
from collections import defaultdict

import pytest

from activerag.demo import DEMO_CORPUS, DEMO_QUESTIONS, load_demo_questions, write_demo


@pytest.fixture(scope="module")
def texts_by_title() -> dict[str, list[str]]:
    """Paragraph texts by title; a person has two paragraphs under one title."""
    out: dict[str, list[str]] = defaultdict(list)
    for line in DEMO_CORPUS.read_text().splitlines():
        p = json.loads(line)
        out[p["title"]].append(p["text"])
    return out


def test_regeneration_is_deterministic_and_equals_the_committed_files(tmp_path):
    assert write_demo(tmp_path / "here") == (330, 48)
    code = "import sys, pathlib, activerag.demo as d; d.write_demo(pathlib.Path(sys.argv[1]))"
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "there")], check=True,
                   env={**os.environ, "PYTHONHASHSEED": "1"})
    for folder in ("here", "there"):
        assert (tmp_path / folder / DEMO_CORPUS.name).read_bytes() == DEMO_CORPUS.read_bytes()
        assert (tmp_path / folder / DEMO_QUESTIONS.name).read_bytes() == DEMO_QUESTIONS.read_bytes()


def test_two_hop_questions_come_first_then_as_many_one_hop():
    qs = load_demo_questions()
    assert [q["hops"] for q in qs] == [2] * 24 + [1] * 24
    assert [q["id"] for q in qs[:24]] == [f"demo-{i:02d}" for i in range(24)]
    assert [q["id"] for q in qs[24:]] == [f"demo-1hop-{i:02d}" for i in range(24)]
    assert len({q["id"] for q in qs}) == len(qs)
    assert all(len(q["gold_titles"]) == q["hops"] and len(q["answers"]) == 1 for q in qs)


def test_one_hop_answer_stands_verbatim_in_the_gold_paragraph(texts_by_title):
    one_hop = [q for q in load_demo_questions() if q["hops"] == 1]
    assert len({q["question"] for q in one_hop}) == len(one_hop)
    for q in one_hop:
        [title], [answer] = q["gold_titles"], q["answers"]
        assert title in q["question"] and answer not in q["question"], q["id"]
        assert any(answer in text for text in texts_by_title[title]), q["id"]


def test_two_hop_answer_needs_the_bridge_paragraph(texts_by_title):
    for q in (q for q in load_demo_questions() if q["hops"] == 2):
        (first, bridge), [answer] = q["gold_titles"], q["answers"]
        assert first in q["question"] and bridge not in q["question"], q["id"]
        assert any(bridge in text for text in texts_by_title[first]), q["id"]
        assert not any(answer in text for text in texts_by_title[first]), q["id"]
        assert any(answer in text for text in texts_by_title[bridge]), q["id"]
