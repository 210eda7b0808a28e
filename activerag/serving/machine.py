"""What this machine lets llama-server use: the cores this process may keep busy, and whether
the kernel grants it AMX (Intel's matrix tiles), which llama.cpp's repacked weights run on."""

from __future__ import annotations

import math
import os
import platform
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")

ARCH_PRCTL = 158
"""SYS_arch_prctl on x86-64 Linux."""
ARCH_GET_XCOMP_SUPP = 0x1021
ARCH_REQ_XCOMP_PERM = 0x1023
XFEATURE_XTILEDATA = 18
"""The AMX tile data state: a process must ask the kernel for it before its first tile
instruction (Linux's Documentation/arch/x86/xstate.rst), or that instruction raises SIGILL."""

_PERMISSION_PROBE = f"""
import ctypes, sys
syscall, long = ctypes.CDLL(None, use_errno=True).syscall, ctypes.c_long
feature, supported = int(sys.argv[1]), ctypes.c_uint64(0)
if syscall(long({ARCH_PRCTL}), long({ARCH_GET_XCOMP_SUPP}), ctypes.byref(supported)) != 0:
    sys.exit(1)
if not supported.value >> feature & 1:
    sys.exit(1)
sys.exit(syscall(long({ARCH_PRCTL}), long({ARCH_REQ_XCOMP_PERM}), long(feature)) != 0)
"""


def cgroup_cpus(cgroup_root: Path = CGROUP_ROOT) -> float | None:
    """The CPUs the cgroup's quota allows (v2: cpu.max "200000 100000"; v1: cpu.cfs_quota_us
    over cpu.cfs_period_us); None without a quota ("max", -1) or a file that says."""
    try:
        if (cgroup_root / "cpu.max").is_file():
            quota, period = (cgroup_root / "cpu.max").read_text().split()[:2]
        else:
            quota = (cgroup_root / "cpu" / "cpu.cfs_quota_us").read_text().strip()
            period = (cgroup_root / "cpu" / "cpu.cfs_period_us").read_text().strip()
        cpus = int(quota) / int(period)
    except (OSError, ValueError, ZeroDivisionError):
        return None
    return cpus if cpus > 0 else None


def usable_cores(affinity: Iterable[int] | None = None,
                 cgroup_root: Path = CGROUP_ROOT) -> int:
    """The cores this process may keep busy: those its CPU affinity allows (AFFINITY, default
    this process's), fewer where the cgroup's quota allows fewer (1.5 CPUs count as 2); at
    least 1. os.cpu_count() counts the machine's, which a container or taskset may not get."""
    if affinity is None:
        affinity = (os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity")
                    else range(os.cpu_count() or 1))
    cores = len(set(affinity))
    quota = cgroup_cpus(cgroup_root)
    if quota is not None:
        cores = min(cores, math.ceil(quota))
    return max(1, cores)


def xfeature_granted(feature: int) -> bool:
    """Whether the kernel supports the extended state FEATURE and grants it to a process that
    asks (ARCH_REQ_XCOMP_PERM): asked in a child process, as llama-server will ask, so that this
    one's signal stacks are left as they are (a granted AMX state makes every signal frame
    larger). False where the kernel refuses, or the child cannot ask."""
    try:
        done = subprocess.run([sys.executable, "-I", "-S", "-c", _PERMISSION_PROBE,
                               str(feature)], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@cache
def amx_granted() -> bool:
    """Whether this machine's kernel grants AMX's tile data to a process (False off x86-64
    Linux)."""
    on_x86_linux = sys.platform == "linux" and platform.machine() in ("x86_64", "AMD64")
    return on_x86_linux and xfeature_granted(XFEATURE_XTILEDATA)


def no_repack(flags: Iterable[str], granted: Callable[[], bool] | None = None) -> bool:
    """Whether llama-server needs --no-repack: the processor lists AMX (FLAGS has amx_tile) but
    the kernel does not grant it (GRANTED, default amx_granted, asked only then). llama.cpp
    repacks weights into AMX's layout where AMX is listed, and there, ungranted, the first matrix
    product dies of SIGILL; --no-repack keeps the plain kernels, which are slower where AMX
    works. Where AMX is granted and still faults (seen here: granted by the kernel, and the
    server died of SIGSEGV as its threads started), it dies at start: died_of_cpu_fault, and
    the start is tried again without repacking (REPACK_FAILED remembers it)."""
    return "amx_tile" in flags and not (granted or amx_granted)()


REPACK_FAILED = "repack-failed"
"""A file beside a llama-server build that says its repacked weights crashed on this machine:
every later start passes --no-repack."""
CPU_FAULTS = (signal.SIGILL, signal.SIGSEGV, signal.SIGBUS)


def died_of_cpu_fault(returncode: int | None) -> bool:
    """Whether a process ended on an illegal instruction or a bad memory access: killed by
    SIGILL, SIGSEGV or SIGBUS (-4, -11, -7), or a shell's report of one (132, 139, 135)."""
    return returncode is not None and any(
        returncode in (-sig, 128 + sig) for sig in CPU_FAULTS)
