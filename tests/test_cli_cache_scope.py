"""`--cache` holds for the command that gives it: `activerag.cli.main` called in-process (a
notebook, a test) must leave the graphs run after it uncached, or a later run is answered from
the cache without asking its server (the setting-effect test saw every setting that changes
only a request fall silent after an integration test ran `eval --cache` in the same process)."""

import pytest

from activerag import cli
from activerag.serving import cache


@pytest.mark.parametrize("flag", ["--cache", "--cache-samples"])
def test_a_command_s_cache_ends_with_the_command(flag, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ACTIVERAG_HOME", str(tmp_path))
    before = cache.state()
    # the cache is turned on before the dataset is read: an unknown one ends the command
    assert cli.main(["eval", "--dataset", str(tmp_path / "missing.jsonl"), "--methods", "none",
                     "--n", "1", flag]) == 2
    assert "missing.jsonl" in capsys.readouterr().err
    assert cache.state() == before == (None, None)


def test_a_cache_turned_on_before_the_command_stays_on(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ACTIVERAG_HOME", str(tmp_path))
    mine = tmp_path / "mine.sqlite"
    cache.enable(mine)
    try:
        cli.main(["eval", "--dataset", str(tmp_path / "missing.jsonl"), "--methods", "none",
                  "--n", "1", "--cache"])
        assert cache.active() == mine
    finally:
        cache.restore((None, None))
