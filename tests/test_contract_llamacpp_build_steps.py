"""Building llama-server (serving/llamacpp.py): a missing build is built once and found
after, a home that already holds one processor's build takes another's beside it, and a build
step's output is kept whole in its log while its percentages are shown at most every ten
points, whether or not the home folder exists yet. The build itself is stood in; the logged
step runs this Python, not cmake (issue #38)."""

import sys
from pathlib import Path

import pytest

from activerag.serving import llamacpp
from activerag.settings import Settings


@pytest.fixture
def builds(monkeypatch):
    """Stand-in builds, each writing the binary where the real one would land."""
    made: list[Path] = []

    def build(target: Path) -> None:
        made.append(target)
        (target / "bin").mkdir(parents=True)
        (target / "bin" / llamacpp.BINARY).write_text("built")

    monkeypatch.setattr(llamacpp, "_build", build)
    monkeypatch.setattr(llamacpp.shutil, "which", lambda name: f"/usr/bin/{name}")
    return made


@pytest.mark.parametrize("home", [".", "not/made/yet"])
def test_a_missing_build_is_built_once_and_found_after(tmp_path, monkeypatch, builds, home):
    monkeypatch.setattr(llamacpp, "cpu_flags", lambda: ["avx2"])
    settings = Settings(home=tmp_path / home)
    binary = llamacpp.ensure_binary(settings)
    assert binary.read_text() == "built" and builds == [llamacpp.build_dir(settings)]
    assert llamacpp.ensure_binary(settings) == binary and len(builds) == 1


def test_each_processor_s_build_lands_beside_the_others(tmp_path, monkeypatch, builds):
    settings = Settings(home=tmp_path)
    binaries = []
    for flags in (["avx2"], ["avx512f"], ["sse4_2"]):
        monkeypatch.setattr(llamacpp, "cpu_flags", lambda flags=flags: flags)
        binaries.append(llamacpp.ensure_binary(settings))
    assert len(set(binaries)) == 3 and all(b.read_text() == "built" for b in binaries)
    assert len(builds) == 3 and len({b.parent for b in builds}) == 1


def test_a_build_step_s_output_is_logged_and_its_progress_shown_every_ten_points(
        tmp_path, monkeypatch):
    shown = []
    monkeypatch.setattr(llamacpp, "say", shown.append)
    lines = ["-- configuring", "[  5%] a", "[ 10%] b", "[ 15%] c", "[ 24%] d", "[ 25%] e",
             "[100%] linked", "done"]
    script = "".join(f"print({line!r})\n" for line in lines)
    log = tmp_path / "build.log"
    llamacpp._run_logged([sys.executable, "-c", script], tmp_path, log, "building")
    assert log.read_text() == "".join(line + "\n" for line in lines)
    assert shown == ["building: 5%", "building: 15%", "building: 25%", "building: 100%"]


def test_a_failing_build_step_raises_with_its_exit_status(tmp_path):
    with pytest.raises(llamacpp.ActiveRagError, match=r"building failed \(exit 3\)"):
        llamacpp._run_logged([sys.executable, "-c", "print('x'); raise SystemExit(3)"],
                             tmp_path, tmp_path / "build.log", "building")
