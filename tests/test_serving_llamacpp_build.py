"""Building llama-server once (issue #38, survivors of the random mutants): where a build is kept
and found again, which tools are named as missing, a download that fails or is not the pinned
source, a failed build's log tail, and a finished build moved into place. No compiler, network
or cmake runs: subprocess is replaced where one would."""

import subprocess
import sys
from pathlib import Path

import pytest

from activerag.errors import ActiveRagError
from activerag.serving import llamacpp
from activerag.settings import Settings

# sha256(b"avx2 sse4_2")[:8]: the key of a processor that lists those flags
KEY_AVX2_SSE42 = "733ac5a1"


def test_a_build_kept_under_its_processors_key_is_found_again(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(llamacpp, "cpu_flags", lambda: ["avx2", "sse4_2"])
    settings = Settings(home=tmp_path)
    kept = (tmp_path / "llama.cpp" / f"{llamacpp.SDIST_SHA256[:16]}-{KEY_AVX2_SSE42}" / "bin"
            / "llama-server")
    kept.parent.mkdir(parents=True)
    kept.write_text("built before")

    def build(target: Path) -> None:
        raise AssertionError(f"built again into {target}")

    monkeypatch.setattr(llamacpp, "_build", build)
    monkeypatch.setattr(llamacpp.shutil, "which", lambda name: f"/usr/bin/{name}")
    assert llamacpp.ensure_binary(settings) == kept
    monkeypatch.setattr(llamacpp, "cpu_flags", lambda: ["avx2"])  # another processor
    assert llamacpp.build_dir(settings).name != kept.parent.parent.name
    assert llamacpp.build_dir(settings).name.startswith(llamacpp.SDIST_SHA256[:16] + "-")


def test_only_the_tools_that_are_missing_are_named(monkeypatch):
    monkeypatch.setattr(llamacpp.shutil, "which", lambda name: None)
    assert llamacpp.missing_tools() == ["cmake", "a C++ compiler (g++)", "a C compiler (gcc)"]
    present = {"cmake", "clang"}
    monkeypatch.setattr(llamacpp.shutil, "which",
                        lambda name: f"/usr/bin/{name}" if name in present else None)
    assert llamacpp.missing_tools() == ["a C++ compiler (g++)"]
    present |= {"clang++"}
    assert llamacpp.missing_tools() == []


def _pip_download(writes: bytes | None, stderr: str):
    """A stand-in for `pip download` that leaves WRITES as the sdist (None: nothing) and says
    STDERR, as a real process read the way the code asked (text or bytes)."""
    real_run = subprocess.run

    def run(cmd, **kwargs):
        if writes is not None:
            dest = Path(cmd[cmd.index("-d") + 1])
            (dest / "llama_cpp_python-0.3.36.tar.gz").write_bytes(writes)
        said = f"import sys; sys.stderr.write({stderr!r}); sys.exit({int(writes is None)})"
        return real_run([sys.executable, "-c", said], **kwargs)

    return run


def test_a_download_that_brings_nothing_says_what_pip_said(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(llamacpp.subprocess, "run",
                        _pip_download(None, "ERROR: network is unreachable\n"))
    with pytest.raises(ActiveRagError, match=r"could not download llama-cpp-python==0\.3\.36 "
                                             r"\(ERROR: network is unreachable\); check"):
        llamacpp._download(tmp_path)


def test_a_download_that_is_not_the_pinned_source_is_refused(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(llamacpp.subprocess, "run", _pip_download(b"something else", ""))
    with pytest.raises(ActiveRagError, match="it is not the pinned source, so it is not built"):
        llamacpp._download(tmp_path)


class _FailingBuild:
    """A stand-in for a cmake run that prints LINES and exits 2."""

    lines: list[str] = []

    def __init__(self, cmd, cwd, stdout, stderr, text):
        self.stdout = iter(self.lines)
        self.returncode: int | None = None

    def wait(self) -> int:
        self.returncode = 2
        return 2


def test_a_failed_build_shows_the_last_fifteen_lines_of_its_log(tmp_path: Path, monkeypatch):
    _FailingBuild.lines = [f"line {i}\n" for i in range(1, 21)]
    monkeypatch.setattr(llamacpp.subprocess, "Popen", _FailingBuild)
    log = tmp_path / "build.log"
    with pytest.raises(ActiveRagError) as caught:
        llamacpp._run_logged(["cmake", "--build", "build"], tmp_path, log, "building")
    message = str(caught.value)
    assert message.startswith("building failed (exit 2); nothing was kept.")
    tail = "".join(f"line {i}\n" for i in range(6, 21))
    assert message.endswith(f"Log tail:\n{tail}")
    assert "line 5\n" not in message
    assert log.read_text() == "".join(_FailingBuild.lines)


def test_a_finished_build_lands_whole_in_a_new_folder(tmp_path: Path):
    built = tmp_path / "build" / "bin"
    built.mkdir(parents=True)
    (built / "llama-server").write_text("server")
    (built / "libllama.so").write_text("lib")
    (built / "libllama.so.1").symlink_to("libllama.so")
    (built / "llama-cli").write_text("not needed")
    target = tmp_path / "home" / "llama.cpp" / "key"
    llamacpp.install(built, target)
    assert sorted(p.name for p in (target / "bin").iterdir()) == [
        "libllama.so", "libllama.so.1", "llama-server"]
    assert (target / "bin" / "libllama.so.1").is_symlink()
    assert not target.with_name("key.partial").exists()
    (built / "llama-server").write_text("server, rebuilt")
    llamacpp.install(built, target)  # over an earlier build
    assert (target / "bin" / "llama-server").read_text() == "server, rebuilt"


def test_a_file_s_sha256_is_read_in_blocks_and_given_as_hex(tmp_path: Path):
    """The digest the pinned source is checked by: the same as hashlib's of the whole file,
    across the 1 MiB blocks it is read in."""
    import hashlib

    data = bytes(range(256)) * 5000  # 1.28 MB: two blocks
    (tmp_path / "f").write_bytes(data)
    assert llamacpp.sha256_of(tmp_path / "f") == hashlib.sha256(data).hexdigest()
    (tmp_path / "abc").write_bytes(b"abc")
    assert llamacpp.sha256_of(tmp_path / "abc") == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
