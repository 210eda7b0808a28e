"""`eval --rescore` (issue #19): the rows are replaced whole or not at all, a run killed before
its summary is rescored, and a row of an example the dataset no longer has is named."""

import json
import subprocess
import sys

import pytest

from activerag.errors import ActiveRagError
from activerag.evaluation.datasets import Example
from activerag.evaluation.evaluate import Run, rescore

EXAMPLES = [Example(f"q{i}", f"Where was person{i} born?", [f"city{i}"]) for i in range(40)]


def rows(ids, answer="So the answer is city{i}."):
    return [{"method": "single", "id": f"q{i}", "answer": answer.format(i=i),
             "retrieved_titles": [], "em": 0.0, "sentences": 1, "retrieved_sentences": 0,
             "lm_calls": 1, "prompt_tokens": 5, "generated_tokens": 5, "answer_tokens": 5,
             "retrievals": 1, "seconds": 0.1} for i in ids]


def killed_run(path, ids, stored):
    """A run folder of IDS holding the rows STORED and no summary (killed before writing it)."""
    run = Run(path)
    run.start({"dataset": "t", "ids": [f"q{i}" for i in ids], "methods": ["single"],
               "contexts": {}})
    for r in stored:
        run.append(r)
    run.close()
    return run


def test_a_run_killed_before_its_summary_is_rescored(tmp_path, monkeypatch):
    run = killed_run(tmp_path, range(3), rows(range(3)))
    monkeypatch.setattr("activerag.evaluation.evaluate.load_dataset", lambda name: EXAMPLES)
    result = rescore(run)
    assert result["summary"]["single"]["em"] == 1.0 and result["dataset"] == "t"
    assert json.loads((tmp_path / "summary.json").read_text())["finished"] == 3
    assert [r["em"] for r in run.rows()] == [1.0, 1.0, 1.0]


def test_a_row_of_an_example_the_dataset_no_longer_has_is_named_and_nothing_is_written(
        tmp_path, monkeypatch):
    run = killed_run(tmp_path, range(3), rows(range(3)))
    before = run.rows_file.read_bytes()
    monkeypatch.setattr("activerag.evaluation.evaluate.load_dataset", lambda name: EXAMPLES[1:])
    with pytest.raises(ActiveRagError, match=r"1 example\(s\) .*'t' no longer has \(q0\)"):
        rescore(run)
    assert run.rows_file.read_bytes() == before


RESCORE_ON_A_FULL_DISK = """
import resource, signal, sys
from pathlib import Path
from activerag.evaluation import evaluate
from activerag.evaluation.datasets import Example
evaluate.load_dataset = lambda name: [Example(f"q{i}", "Q?", [f"city{i}"]) for i in range(40)]
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), resource.RLIM_INFINITY))
evaluate.rescore(evaluate.Run(Path(sys.argv[1])))
"""


def test_a_rescore_that_runs_out_of_disk_leaves_the_rows_as_they_were(tmp_path):
    run = killed_run(tmp_path, range(40), rows(range(40), answer="I think it is city{i}."))
    before = run.rows_file.read_bytes()
    # files of more than half the rows' size cannot be written: the disk is full by then
    done = subprocess.run([sys.executable, "-c", RESCORE_ON_A_FULL_DISK, str(tmp_path),
                           str(len(before) // 2)], capture_output=True, text=True)
    assert done.returncode != 0 and "File too large" in done.stderr
    assert run.rows_file.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "examples.jsonl",
                                                          "writer.lock"]


def test_a_folder_with_no_run_is_named_and_left_empty(tmp_path):
    folder = tmp_path / "empty-run"
    folder.mkdir()
    with pytest.raises(ActiveRagError, match="holds no evaluation run"):
        rescore(Run(folder))
    assert list(folder.iterdir()) == []
