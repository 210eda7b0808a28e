"""`activerag serve --gguf FILE` converts each GGUF once, keyed by its content, not its name."""

import argparse

from activerag.cli import commands
from activerag.serving import models, server
from activerag.settings import Settings


def serve_args(gguf) -> argparse.Namespace:
    return argparse.Namespace(model=None, port=9876, stop=False, model_dir=None, gguf=str(gguf),
                              engine="vllm",
                              max_model_len=None, served_name=None)


def test_two_ggufs_of_one_name_are_converted_and_served_apart(tmp_path, monkeypatch):
    converted, served = [], []

    def convert(gguf, out_dir, add_bos=False):
        converted.append(gguf.read_bytes())
        out_dir.mkdir(parents=True)
        (out_dir / "config.json").write_text(gguf.read_text())
        return out_dir

    monkeypatch.setattr(models, "convert_gguf", convert)
    monkeypatch.setattr(server, "start_server",
                        lambda settings, model_dir, *a, **kw: served.append(model_dir) or "url")
    settings = Settings(home=tmp_path / "home")
    for folder, weights in (("a", "first"), ("b", "second"), ("c", "first")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "model.gguf").write_text(weights)
        assert commands.serve(serve_args(tmp_path / folder / "model.gguf"), settings) == 0
    assert converted == [b"first", b"second"]  # the third is the first's bytes: converted once
    assert [(d / "config.json").read_text() for d in served] == ["first", "second", "first"]
    assert served[0] == served[2] and served[0].name.startswith("gguf-")
    assert served[0].name == "gguf-a7937b64b8caa58f"  # sha256 of b"first", 16 hex digits
