"""What llama-server is started with on this machine: as many threads (and build jobs) as the
process's CPU affinity and cgroup quota let it use, and --no-repack only where the processor
lists AMX but the kernel refuses it."""

import os
import platform
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from activerag.serving import llamacpp, machine
from activerag.settings import Settings


def _cgroup(root: Path, v2: str | None = None, v1: tuple[str, str] | None = None) -> Path:
    if v2 is not None:
        (root / "cpu.max").write_text(v2 + "\n")
    if v1 is not None:
        (root / "cpu").mkdir()
        (root / "cpu" / "cpu.cfs_quota_us").write_text(v1[0] + "\n")
        (root / "cpu" / "cpu.cfs_period_us").write_text(v1[1] + "\n")
    return root


@pytest.mark.parametrize(("affinity", "v2", "v1", "cores"), [
    ({0, 1, 2, 3, 4, 5, 6, 7}, "max 100000", None, 8),  # no quota: the affinity
    ({0, 1, 2, 3, 4, 5, 6, 7}, "200000 100000", None, 2),  # 2 CPUs of quota
    ({0, 1, 2, 3, 4, 5, 6, 7}, "150000 100000", None, 2),  # 1.5 CPUs: rounded up
    ({0, 1, 2, 3, 4, 5, 6, 7}, "50000 100000", None, 1),
    ({5}, "400000 100000", None, 1),  # taskset to one core, a larger quota
    ({0, 1, 2, 3}, None, ("-1", "100000"), 4),  # cgroup v1 without a quota
    ({0, 1, 2, 3}, None, ("300000", "100000"), 3),  # cgroup v1 with one
    ({0, 1, 2, 3}, None, None, 4),  # no cgroup files
    (set(), None, None, 1),
    ({0, 1, 2, 3}, "0 100000", None, 4),  # a quota of nothing is read as none, not as 0 cores
    ({0, 1, 2, 3}, None, ("0", "100000"), 4),
])
def test_usable_cores_is_the_affinity_within_the_cgroup_quota(tmp_path, affinity, v2, v1,
                                                               cores):
    assert machine.usable_cores(affinity, _cgroup(tmp_path, v2, v1)) == cores


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs a CPU affinity of two cores or more to narrow")
def test_usable_cores_reads_this_process_s_own_affinity(tmp_path):
    """Narrowed to one core (by taskset, say), this process gets one, whatever other processes
    (init's, say) may use."""
    allowed = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(allowed)})
    try:
        assert machine.usable_cores(cgroup_root=tmp_path) == 1
    finally:
        os.sched_setaffinity(0, allowed)
    assert machine.usable_cores(cgroup_root=tmp_path) == len(allowed)


def test_usable_cores_counts_the_machine_s_where_the_os_keeps_no_affinity(tmp_path, monkeypatch):
    """macOS has no sched_getaffinity: every core os.cpu_count() counts, or 1 where it cannot
    count them."""
    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    no_cgroup = tmp_path / "absent"
    assert machine.usable_cores(cgroup_root=no_cgroup) == 3
    assert machine.usable_cores(cgroup_root=_cgroup(tmp_path, "200000 100000")) == 2
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert machine.usable_cores(cgroup_root=no_cgroup) == 1


def test_llama_server_s_threads_and_build_jobs_follow_the_affinity_not_the_machine(
        tmp_path: Path, monkeypatch):
    """os.cpu_count() counts the machine's cores; a process pinned to one gets one thread."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3})
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    cmd = llamacpp.command(Path("/b/llama-server"), gguf, Settings(home=tmp_path), 1024, 2,
                           None, "m")
    assert cmd[cmd.index("-t") + 1] == "1"
    assert llamacpp.command(Path("/b/llama-server"), gguf, Settings(home=tmp_path), 1024, 2,
                            5, "m")[cmd.index("-t") + 1] == "5"  # as asked

    ran: list[list[str]] = []
    monkeypatch.setattr(llamacpp, "_download", lambda dest: dest / "sdist.tar.gz")
    monkeypatch.setattr(llamacpp, "_extract", lambda sdist, dest: dest)
    monkeypatch.setattr(llamacpp, "_run_logged", lambda cmd, cwd, log, what: ran.append(cmd))
    monkeypatch.setattr(llamacpp, "install", lambda built, target: None)
    llamacpp._build(tmp_path / "target")
    assert ran[-1][ran[-1].index("-j") + 1] == "1"


@pytest.mark.parametrize(("flags", "granted", "expected"), [
    (["avx2", "amx_tile"], False, True),  # listed, refused: repacked weights would die
    (["avx2", "amx_tile"], True, False),  # listed and granted: keep the fast kernels
    (["avx2"], False, False),  # not listed: nothing uses AMX
])
def test_no_repack_only_where_amx_is_listed_and_refused(flags, granted, expected):
    asked: list[bool] = []
    assert machine.no_repack(flags, lambda: asked.append(True) or granted) is expected
    assert asked == ([True] if "amx_tile" in flags else [])  # the kernel is asked only then


def test_llama_server_keeps_repacking_where_amx_is_granted(tmp_path: Path, monkeypatch):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    settings = Settings(home=tmp_path)
    monkeypatch.setattr(llamacpp, "cpu_flags", lambda: ["avx2", "amx_tile"])
    monkeypatch.setattr(machine, "amx_granted", lambda: True)
    assert "--no-repack" not in llamacpp.command(Path("/b/s"), gguf, settings, 1024, 1, 1, "m")
    monkeypatch.setattr(machine, "amx_granted", lambda: False)
    assert "--no-repack" in llamacpp.command(Path("/b/s"), gguf, settings, 1024, 1, 1, "m")


@pytest.mark.skipif(sys.platform != "linux" or platform.machine() != "x86_64",
                    reason="arch_prctl's extended-state permissions are x86-64 Linux's")
def test_the_kernel_is_asked_for_real():
    """A state the kernel does not support (62) is refused by the same probe that asks for AMX;
    AMX is granted only where the processor lists it."""
    assert machine.xfeature_granted(62) is False
    assert not machine.amx_granted() or "amx_tile" in llamacpp.cpu_flags()


def test_a_death_by_illegal_instruction_is_recognised_directly_or_through_a_shell():
    kill = "import os, signal; os.kill(os.getpid(), signal.SIGILL)"
    direct = subprocess.run([sys.executable, "-c", kill]).returncode
    shell = subprocess.run(["sh", "-c", f'"{sys.executable}" -c "{kill}"; exit $?']).returncode
    assert (direct, shell) == (-signal.SIGILL, 128 + signal.SIGILL)
    assert machine.died_of_cpu_fault(direct) and machine.died_of_cpu_fault(shell)
    assert machine.died_of_cpu_fault(-signal.SIGSEGV) and machine.died_of_cpu_fault(139)
    assert not any(map(machine.died_of_cpu_fault, (0, 1, -signal.SIGKILL, 137, None)))


def test_a_build_whose_repacked_weights_crashed_is_started_without_repacking(tmp_path,
                                                                             monkeypatch):
    """Seen here: AMX listed and granted, and llama-server died of SIGSEGV at start with its
    repacked weights. The start that recovers leaves REPACK_FAILED beside the binary; every
    later command line then carries --no-repack."""
    monkeypatch.setattr(llamacpp, "cpu_flags", lambda: ["amx_tile"])
    monkeypatch.setattr(machine, "amx_granted", lambda: True)
    binary = tmp_path / "bin" / "llama-server"
    binary.parent.mkdir()
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    settings = Settings(home=tmp_path)
    assert "--no-repack" not in llamacpp.command(binary, gguf, settings, 1024, 1, 1, "m")
    (binary.parent / machine.REPACK_FAILED).touch()
    assert "--no-repack" in llamacpp.command(binary, gguf, settings, 1024, 1, 1, "m")
