"""The environment `activerag serve` starts vLLM with (serving/server.py): offline and without
usage reports on every machine, and the CPU backend's KV-cache size only where there is no
GPU, a value the user set kept (issue #38). vLLM is stood in by an empty module; nothing
starts."""

import sys
import types

import pytest

from activerag.serving import server
from activerag.serving.catalogue import CPU_VLLM_MODEL
from activerag.settings import Settings

KV = "VLLM_CPU_KVCACHE_SPACE"


def launch_env(tmp_path, monkeypatch, gpu: bool) -> dict[str, str]:
    monkeypatch.setitem(sys.modules, "vllm", types.ModuleType("vllm"))
    monkeypatch.setattr(server, "gpu_visible", lambda: gpu)
    monkeypatch.setattr(server, "check_model_dir", lambda path: path)
    _, env = server._vllm_launch(Settings(home=tmp_path), tmp_path, 2048, None,
                                 CPU_VLLM_MODEL, server.Launch("vllm"))
    return env


@pytest.mark.parametrize("gpu", [False, True])
def test_every_machine_s_server_is_offline_and_reports_nothing(tmp_path, monkeypatch, gpu):
    env = launch_env(tmp_path, monkeypatch, gpu)
    assert env["VLLM_NO_USAGE_STATS"] == "1" and env["DO_NOT_TRACK"] == "1"
    assert all(env[name] == value for name, value in server.OFFLINE_ENV.items())


@pytest.mark.parametrize("gpu,given,want", [
    (False, None, "1"), (False, "4", "4"), (True, None, None), (True, "4", "4")])
def test_the_cpu_kv_cache_is_sized_only_without_a_gpu(tmp_path, monkeypatch, gpu, given, want):
    if given is None:
        monkeypatch.delenv(KV, raising=False)
    else:
        monkeypatch.setenv(KV, given)
    assert launch_env(tmp_path, monkeypatch, gpu).get(KV) == want


def test_no_prompt_cache_turns_vllm_s_prefix_caching_off(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", types.ModuleType("vllm"))
    monkeypatch.setattr(server, "gpu_visible", lambda: False)
    monkeypatch.setattr(server, "check_model_dir", lambda path: path)

    def command(launch: server.Launch) -> list[str]:
        return server._vllm_launch(Settings(home=tmp_path), tmp_path, 2048, None,
                                   CPU_VLLM_MODEL, launch)[0]

    assert "--no-enable-prefix-caching" in command(server.Launch("vllm", prompt_cache=False))
    assert "--no-enable-prefix-caching" not in command(server.Launch("vllm"))
