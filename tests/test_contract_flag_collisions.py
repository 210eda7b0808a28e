"""The run flags (activerag/cli/flags.py, make_flags) refuse to let one option set two things:
two fields of one family given one name, or one field name of two families (FLARE's k and
REPLUG's k) left under the same --name; each is a TypeError that says to rename one. Generated
over every family and every renaming in OPTIONS (issue #38)."""

import pytest

from activerag.cli import flags

GROUPS = [g for g in flags.GROUPS if len(flags._group_fields(g)) >= 2]


def option_of(group: str, name: str) -> str:
    return flags.OPTIONS.get((flags.FAMILY_CONTEXTS[group][0], name), "--" + name.replace("_", "-"))


def test_the_flags_as_they_are_are_made():
    assert flags.make_flags()


@pytest.mark.parametrize("group", GROUPS)
def test_two_fields_of_one_family_under_one_option_are_refused(monkeypatch, group):
    first, second = flags._group_fields(group)[:2]
    monkeypatch.setitem(flags.OPTIONS, (flags.FAMILY_CONTEXTS[group][0], second),
                        option_of(group, first))
    with pytest.raises(TypeError, match="give one of them its own name in OPTIONS"):
        flags.make_flags()


def shadowing_renames():
    """The OPTIONS entries without which a field would take the --name another family's field
    of the same name already has."""
    made = {(f.option, f.field) for f in flags.make_flags()}
    return [key for key in flags.OPTIONS
            if ("--" + key[1].replace("_", "-"), key[1]) in made]


def test_some_renames_keep_families_apart():
    assert len(shadowing_renames()) >= 2


@pytest.mark.parametrize("key", shadowing_renames(), ids=lambda k: f"{k[0].__name__}.{k[1]}")
def test_one_field_of_two_families_under_one_option_is_refused(monkeypatch, key):
    monkeypatch.delitem(flags.OPTIONS, key)
    with pytest.raises(TypeError, match="give one of them its own name in OPTIONS"):
        flags.make_flags()
