"""Every float setting of a run is finite and in its range: NaN compares false with every bound,
so a bare `x < 0` check lets it through (issue #19, item 11)."""

import math
from dataclasses import fields

import pytest

from activerag.context import FlareContext
from activerag.errors import ActiveRagError, SettingError
from activerag.lsr.objective import LSRConfig
from activerag.nodes.app.context import AppContext
from activerag.nodes.fb_rag.context import FBRagContext
from activerag.nodes.replug.context import ReplugContext

CONTEXTS = (FlareContext, ReplugContext, FBRagContext, AppContext)


def float_fields(cls: type) -> list[str]:
    return [f.name for f in fields(cls) if "float" in str(f.type)]


@pytest.mark.parametrize(("cls", "name"), [(cls, name) for cls in CONTEXTS
                                           for name in float_fields(cls)])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_no_float_setting_of_a_context_may_be_nan_or_infinite(cls, name, value):
    with pytest.raises(SettingError, match=rf"^{name} must be a finite number, got {value!r}"):
        cls(**{name: value})


def test_every_context_has_float_settings_to_check():
    assert {cls.__name__: sorted(float_fields(cls)) for cls in CONTEXTS} == {
        "FlareContext": ["beta", "search_bias", "theta"],
        "ReplugContext": ["tau"],
        "FBRagContext": ["eta_b", "eta_f", "temperature", "top_p"],
        "AppContext": ["beta", "min_confidence", "search_bias", "theta"],
    }


@pytest.mark.parametrize(("make", "name"), [
    (lambda: AppContext(min_confidence=math.nan), "min_confidence"),
    (lambda: ReplugContext(tau=math.nan), "tau"),
    (lambda: ReplugContext(tau=math.inf), "tau"),
    (lambda: FBRagContext(temperature=math.nan), "temperature"),
    (lambda: FBRagContext(eta_b=math.nan), "eta_b"),
    (lambda: FlareContext(search_bias=math.nan), "search_bias"),
])
def test_the_reported_nan_and_inf_settings_are_refused(make, name):
    with pytest.raises(SettingError, match=name):
        make()


def test_finite_settings_in_range_are_kept():
    assert AppContext(min_confidence=1.5, search_bias=-3.0).min_confidence == 1.5
    assert ReplugContext(tau=0.1).tau == 0.1
    assert FBRagContext(temperature=0.0, eta_b=0.5, eta_f=0.5).eta_b == 0.5


@pytest.mark.parametrize(("field", "value"), [
    ("gamma", math.nan), ("beta", math.nan), ("lr", math.inf), ("gamma", math.inf),
    ("warmup", -3.0), ("warmup", 1.5), ("warmup", math.nan),
])
def test_lsr_settings_must_be_finite_and_in_range(field, value):
    with pytest.raises(ActiveRagError, match=field):
        LSRConfig(**{field: value}).check()


def test_lsr_warmup_may_span_none_or_all_of_the_steps():
    LSRConfig(warmup=0.0).check()
    LSRConfig(warmup=1.0).check()
