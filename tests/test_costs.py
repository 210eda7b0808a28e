"""One cost-counter type: every method's output reports Costs and every state sums SummedCosts,
both the counters of COUNTERS and the retrieved titles, nothing declared twice."""

import inspect
import operator
from typing import get_type_hints

from activerag import state
from activerag.nodes.app import state as app_state
from activerag.nodes.fb_rag import state as fb_state
from activerag.nodes.replug import state as replug_state
from activerag.state import COUNTERS, Costs, SummedCosts

OUTPUTS = (state.FlareOutput, replug_state.ReplugOutput, fb_state.FBRagOutput,
           app_state.AppOutput)
STATES = (state.FlareState, replug_state.ReplugState, fb_state.FBRagState)


def test_costs_are_the_counters_and_the_retrieved_titles():
    assert set(Costs.__annotations__) == {*COUNTERS, "retrieved_titles"}
    assert set(SummedCosts.__annotations__) == set(Costs.__annotations__)


def test_every_output_reports_the_costs_and_every_state_sums_them():
    for schema in OUTPUTS:
        hints = get_type_hints(schema)
        assert set(Costs.__annotations__) <= set(hints), schema.__name__
    for schema in STATES:
        hints = get_type_hints(schema, include_extras=True)
        for name in Costs.__annotations__:
            assert hints[name].__metadata__ == (operator.add,), (schema.__name__, name)


def test_no_schema_declares_a_counter_of_its_own():
    source = inspect.getsource(state)
    for name in Costs.__annotations__:
        assert source.count(f"    {name}: ") == 2, name  # in Costs and SummedCosts only
