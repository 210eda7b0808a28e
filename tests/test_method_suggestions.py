"""A mistyped method name gets "did you mean" with the nearest names (issue #19, item 13b e)."""

import pytest

from activerag import cli
from activerag.context import FlareContext
from activerag.errors import ActiveRagError
from activerag.graphs.registry import method, unknown_method_error


def test_ask_suggests_the_nearest_method():
    with pytest.raises(ActiveRagError) as caught:
        method("flair", FlareContext())
    assert "did you mean 'flare'" in str(caught.value)


def test_the_suggestion_holds_only_near_names():
    message = str(unknown_method_error(["replgu_vote"]))
    assert "did you mean 'replug_vote'" in message
    assert "'self_route'" not in message.split("did you mean")[1].split(";")[0]


def test_eval_suggests_for_each_mistyped_method(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("ACTIVERAG_HOME", str(tmp_path))
    assert cli.main(["eval", "--methods", "flare,singel,fb_rga", "--run",
                     str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "'singel' (did you mean 'single'" in err and "'fb_rga' (did you mean 'fb_rag'" in err
