"""What `activerag eval` hands the evaluation (cli/commands.py, eval_methods): the run folder,
by default runs/<dataset, "/" as "_">-<methods joined by "-"> and --run where given, and the
LM server whose metrics are read, the first method's (issue #38). The dataset, the endpoint
checks and the evaluation itself are stood in: no LM is asked."""

from types import SimpleNamespace

import pytest

import activerag.cli.abilities
import activerag.database
import activerag.evaluation.datasets
from activerag import cli
from activerag.cli import commands
from activerag.errors import ActiveRagError
from activerag.evaluation import evaluate
from activerag.evaluation.datasets import Example

URL = "http://127.0.0.1:9/v1"


class Handed(ActiveRagError):
    pass


@pytest.fixture
def handed(monkeypatch, tmp_path):
    monkeypatch.setenv("ACTIVERAG_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    got = []

    async def evaluation(run, dataset, runs, examples, concurrency, **kwargs):
        got.append(SimpleNamespace(folder=run.path, dataset=dataset, methods=list(runs),
                                   concurrency=concurrency, **kwargs))
        raise Handed("stop before any LM call")

    monkeypatch.setattr(activerag.evaluation.datasets, "load_dataset",
                        lambda name, n: [Example("q1", "Where is Ulm?", ["Vedria"])])
    monkeypatch.setattr(commands, "check_endpoints", lambda points: list(points))
    monkeypatch.setattr(activerag.cli.abilities, "check_needs", lambda runs: runs)
    monkeypatch.setattr(activerag.database, "check", lambda: None)
    monkeypatch.setattr(evaluate, "evaluate", evaluation)
    return got


def run_eval(*words):
    return cli.main(["eval", "--base-url", URL, "--model", "m", "--n", "1", *words])


@pytest.mark.parametrize("dataset,methods,folder", [
    ("2wiki", "none", "runs/2wiki-none"),
    ("org/set", "none,single", "runs/org_set-none-single"),
    ("a/b/c", "single,none", "runs/a_b_c-single-none"),
])
def test_the_default_run_folder_names_the_dataset_and_methods(handed, dataset, methods,
                                                             folder):
    assert run_eval("--dataset", dataset, "--methods", methods) == 2
    [call] = handed
    assert str(call.folder) == folder and call.dataset == dataset
    assert call.methods == methods.split(",")


def test_run_names_the_folder(handed, tmp_path):
    assert run_eval("--dataset", "2wiki", "--methods", "none", "--run",
                    str(tmp_path / "mine")) == 2
    assert handed[0].folder == tmp_path / "mine"


@pytest.mark.parametrize("methods", ["none", "single,none"])
def test_the_metrics_are_read_from_the_first_method_s_server(handed, methods):
    assert run_eval("--dataset", "2wiki", "--methods", methods) == 2
    assert handed[0].metrics_url == URL
