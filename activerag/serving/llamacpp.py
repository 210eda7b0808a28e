"""llama.cpp's `llama-server`: built once from a pinned source and started on a catalogue GGUF.

No wheel ships `llama-server`. The `llama-cpp-python` sdist on the package index vendors the
llama.cpp sources, server included; it is downloaded, checked against its sha256 and built with
the machine's cmake and C++ compiler into ACTIVERAG_HOME/llama.cpp/KEY, KEY naming the source's
hash and this processor's instruction set (the build is native), so that a second setup or a
second clone reuses it. Serving needs no conversion: the GGUF is served as shipped.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from activerag.errors import ActiveRagError, ModelFileMissing
from activerag.serving import say
from activerag.serving.catalogue import GIB, check_llama_fits
from activerag.serving.gguf_header import gguf_kv
from activerag.serving.machine import REPACK_FAILED, no_repack, usable_cores
from activerag.serving.ports import on_port
from activerag.settings import Settings

SDIST = "llama-cpp-python==0.3.36"
"""The sdist whose vendor/llama.cpp is built (llama.cpp as of that release)."""
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
VENDORED = "vendor/llama.cpp"
BINARY = "llama-server"
CMAKE_FLAGS = ("-DLLAMA_CURL=OFF", "-DGGML_NATIVE=ON", "-DCMAKE_BUILD_TYPE=Release",
               "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF")


def cpu_flags() -> list[str]:
    """This processor's instruction-set flags, as the kernel lists them."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return sorted(line.split(":", 1)[1].split())
    except OSError:
        pass
    return []


def cpu_key() -> str:
    """Eight hex digits naming this processor's instruction-set flags: a native build runs only
    where they are the same."""
    return hashlib.sha256(" ".join(cpu_flags()).encode()).hexdigest()[:8]


def build_dir(settings: Settings) -> Path:
    """Where this machine's llama-server build lives (made or not)."""
    return settings.home / "llama.cpp" / f"{SDIST_SHA256[:16]}-{cpu_key()}"


def binary_path(settings: Settings) -> Path:
    return build_dir(settings) / "bin" / BINARY


def missing_tools() -> list[str]:
    """The build tools this machine lacks (cmake, a C and a C++ compiler)."""
    wanted = {"cmake": ("cmake",), "a C++ compiler (g++)": ("c++", "g++", "clang++"),
              "a C compiler (gcc)": ("cc", "gcc", "clang")}
    return [name for name, tools in wanted.items() if not any(map(shutil.which, tools))]


def ensure_binary(settings: Settings) -> Path:
    """The llama-server of this machine, built first when it is missing (one build at a time;
    nothing half-built is kept)."""
    binary = binary_path(settings)
    if binary.exists():
        return binary
    missing = missing_tools()
    if missing:
        raise ActiveRagError(
            f"building llama.cpp's server needs {', '.join(missing)}, which this machine lacks; "
            "install them (Debian: apt-get install cmake g++) and serve again, or use "
            "--engine vllm")
    with _build_lock(build_dir(settings)):
        if not binary.exists():
            _build(build_dir(settings))
    return binary


@contextmanager
def _build_lock(target: Path) -> Iterator[None]:
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_name(target.name + ".lock"), "a+", encoding="utf-8") as file:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say("another process is building llama-server; waiting for it")
            fcntl.flock(file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(file, fcntl.LOCK_UN)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as src:
        while block := src.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _download(dest: Path) -> Path:
    """The pinned sdist, downloaded from the package index into DEST and checked."""
    say(f"downloading {SDIST} (the llama.cpp sources, about 77 MB) from the package index")
    done = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                           "--no-binary", ":all:", SDIST, "-d",
                           str(dest)], capture_output=True, text=True)
    found = sorted(dest.glob("llama_cpp_python-*.tar.gz"))
    if not found:
        raise ActiveRagError(f"could not download {SDIST} ({done.stderr.strip()[-300:]}); check "
                             "that the package index is reachable, or use --engine vllm")
    digest = sha256_of(found[0])
    if digest != SDIST_SHA256:
        raise ActiveRagError(f"the downloaded {found[0].name} has sha256 {digest}, not "
                             f"{SDIST_SHA256}; it is not the pinned source, so it is not built")
    return found[0]


def _extract(sdist: Path, dest: Path) -> Path:
    """The vendored llama.cpp tree of SDIST, extracted under DEST (members outside it, or
    links, are refused)."""
    with tarfile.open(sdist) as tar:
        root = tar.getnames()[0].split("/")[0]
        prefix = f"{root}/{VENDORED}/"
        members = [m for m in tar.getmembers() if m.name.startswith(prefix)]
        tar.extractall(dest, members=members, filter="data")
    return dest / root / VENDORED


_PERCENT = re.compile(r"^\[\s*(\d+)%\]")


def _run_logged(cmd: list[str], cwd: Path, log: Path, what: str) -> None:
    """Run CMD, its output to LOG; show cmake's percentage as it climbs; raise with the log's
    tail if it fails."""
    with open(log, "a", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        assert proc.stdout is not None
        shown = -10
        for line in proc.stdout:
            out.write(line)
            match = _PERCENT.match(line)
            if match and int(match.group(1)) >= shown + 10:
                shown = int(match.group(1))
                say(f"{what}: {shown}%")
        proc.wait()
    if proc.returncode != 0:
        tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-15:])
        raise ActiveRagError(f"{what} failed (exit {proc.returncode}); nothing was kept. "
                             f"Log tail:\n{tail}")


def _build(target: Path) -> None:
    """Download, check, configure and build llama-server; only a finished build lands at
    TARGET/bin (its shared libraries beside it)."""
    jobs = str(usable_cores())
    with tempfile.TemporaryDirectory(prefix="activerag-llama-") as tmp:
        work = Path(tmp)
        source = _extract(_download(work), work)
        log = work / "build.log"
        say(f"building llama-server from {SDIST} with {jobs} jobs (about 13 min on 2 cores, "
            f"once per machine; kept in {target})")
        _run_logged(["cmake", "-B", "build", *CMAKE_FLAGS], source, log, "configuring llama.cpp")
        _run_logged(["cmake", "--build", "build", "--target", BINARY, "-j", jobs], source, log,
                    "building llama-server")
        install(source / "build" / "bin", target)
    say(f"llama-server built: {target / 'bin' / BINARY}")


def install(built: Path, target: Path) -> None:
    """Move the server and its shared libraries (their links kept) from BUILT to TARGET/bin,
    whole or not at all."""
    if not (built / BINARY).exists():
        raise ActiveRagError(f"the build finished without {BINARY}; nothing was kept")
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    (partial / "bin").mkdir(parents=True)
    for item in built.iterdir():
        if item.name == BINARY or ".so" in item.name:
            shutil.copy2(item, partial / "bin" / item.name, follow_symlinks=False)
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)


def environment(binary: Path) -> dict[str, str]:
    """The environment llama-server runs in: its shared libraries beside it (the build's
    run path names the build folder, which is gone)."""
    paths = [str(binary.parent), *filter(None, os.environ.get("LD_LIBRARY_PATH", "").split(":"))]
    return {**os.environ, "LD_LIBRARY_PATH": ":".join(paths)}


def command(binary: Path, gguf: Path, settings: Settings, context: int, parallel: int,
            threads: int | None, served_name: str, chat_template: str | None = None) -> list[str]:
    """The command line that serves GGUF: CONTEXT tokens for each of PARALLEL slots (llama.cpp's
    -c is shared among the slots), THREADS (default: the cores this process may use). Its
    prompt cache in host memory is off (`--cache-ram 0`): with it, requests named to slots at
    once were answered from other requests' prompts (serving/slots.py). Each slot still reuses
    its own last prompt."""
    if not gguf.is_file():
        raise ModelFileMissing(f"GGUF file {gguf} does not exist; pass an existing .gguf file")
    cmd = [str(binary), "-m", str(gguf), "--host", settings.host, "--port", str(settings.port),
           "-c", str(context * parallel), "-np", str(parallel),
           "-t", str(threads or usable_cores()), "--cache-ram", "0",
           "--alias", served_name, "--no-webui"]
    if no_repack(cpu_flags()) or (binary.parent / REPACK_FAILED).exists():
        cmd.append("--no-repack")
    if chat_template and not Path(chat_template).is_file():
        # a built-in template by name (llama3, gemma, chatml, ...): with --jinja the name
        # would be taken for a template's text
        cmd += ["--no-jinja", "--chat-template", chat_template]
    else:
        cmd += ["--jinja", *(["--chat-template-file", chat_template] if chat_template else [])]
    return cmd


def check_gguf_fits(gguf: Path, context: int, parallel: int, free_gb: float) -> None:
    """check_llama_fits for a GGUF file: its size, and the KV cache its header states."""
    kv = gguf_kv(gguf)
    check_llama_fits(gguf.name, gguf.stat().st_size / GIB, kv, context, parallel, free_gb)


def is_llama_server(argv: list[bytes], port: int) -> bool:
    """Whether ARGV (a /proc cmdline) is llama-server on PORT."""
    return bool(argv) and Path(argv[0].decode(errors="replace")).name == BINARY and on_port(
        argv, port)
