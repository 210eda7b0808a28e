"""Every field of REPLUG-LSR's training config (lsr.LSRConfig) that `activerag
train-retriever` has a flag for reaches the config the trainer gets: all flags given a value
away from its default at once, the config read where it is checked (issue #38)."""

import dataclasses
from typing import Literal, get_args, get_origin, get_type_hints

import pytest

from activerag import cli, lsr
from activerag.errors import ActiveRagError

FLAG_OF = {"beta": "--beta", "direction": "--kl"}
"""The fields not spelled --field-name."""
NO_FLAG = {"warmup"}

pytestmark = pytest.mark.usefixtures("own_home")


class Checked(ActiveRagError):
    pass


def away_from_default(field) -> tuple[str, object]:
    kind = get_type_hints(lsr.LSRConfig)[field.name]
    if get_origin(kind) is Literal:
        value = next(v for v in get_args(kind) if v != field.default)
        return value, value
    value = kind(field.default * 3 + 3) if kind is int else field.default * 3
    return str(value), value


def test_every_config_field_with_a_flag_reaches_the_config(monkeypatch, tmp_path):
    seen = []

    def check(config):
        seen.append(config)
        raise Checked("stop before training")

    monkeypatch.setattr(lsr.LSRConfig, "check", check)
    words, want = [], {}
    for field in dataclasses.fields(lsr.LSRConfig):
        if field.name in NO_FLAG:
            continue
        word, value = away_from_default(field)
        words += [FLAG_OF.get(field.name, "--" + field.name.replace("_", "-")), word]
        want[field.name] = value
    assert cli.main(["train-retriever", "--out", str(tmp_path / "enc"), *words]) == 2
    [config] = seen
    assert {name: getattr(config, name) for name in want} == want
    assert all(getattr(config, name) != getattr(lsr.LSRConfig(), name) for name in want)


@pytest.mark.parametrize("field", [f.name for f in dataclasses.fields(lsr.LSRConfig)])
def test_every_config_field_has_a_flag_or_is_listed_without_one(field):
    sub = next(a for a in cli.parser()._actions if a.choices and "train-retriever" in a.choices)
    options = {o for a in sub.choices["train-retriever"]._actions for o in a.option_strings}
    flag = FLAG_OF.get(field, "--" + field.replace("_", "-"))
    assert (flag in options) != (field in NO_FLAG)
