"""The llama.cpp sources are taken from llama-cpp-python's sdist: only its vendored tree is
extracted, under the folder given, and a member that would land outside it (an absolute or
climbing path, a link) is refused by tarfile's data filter. Shown with literal archives."""

import io
import tarfile
from pathlib import Path

import pytest

from activerag.serving import llamacpp

ROOT = "llama_cpp_python-0.3.36"


def archive(path: Path, members: dict[str, bytes], links: dict[str, str] | None = None) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return path


def test_only_the_vendored_tree_is_extracted_where_asked(tmp_path):
    sdist = archive(tmp_path / "sdist.tar.gz", {
        f"{ROOT}/setup.py": b"setup()",
        f"{ROOT}/vendor/llama.cpp/CMakeLists.txt": b"project(llama)",
        f"{ROOT}/vendor/llama.cpp/tools/server/server.cpp": b"int main() {}",
        f"{ROOT}/vendor/other/x.c": b"",
    })
    tree = llamacpp._extract(sdist, tmp_path / "src")
    assert tree == tmp_path / "src" / ROOT / "vendor" / "llama.cpp"
    assert (tree / "CMakeLists.txt").read_bytes() == b"project(llama)"
    assert (tree / "tools" / "server" / "server.cpp").exists()
    found = {p.relative_to(tmp_path / "src").as_posix() for p in (tmp_path / "src").rglob("*")
             if p.is_file()}
    assert found == {f"{ROOT}/vendor/llama.cpp/CMakeLists.txt",
                     f"{ROOT}/vendor/llama.cpp/tools/server/server.cpp"}


def test_a_link_out_of_the_tree_is_refused(tmp_path):
    sdist = archive(tmp_path / "sdist.tar.gz",
                    {f"{ROOT}/vendor/llama.cpp/CMakeLists.txt": b"project(llama)"},
                    {f"{ROOT}/vendor/llama.cpp/escape": "/etc/passwd"})
    with pytest.raises(tarfile.FilterError):
        llamacpp._extract(sdist, tmp_path / "src")
