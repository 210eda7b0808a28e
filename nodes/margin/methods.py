"""The margin gate's registry row and CLI flag group (read by graphs/registry.py and the CLI;
no graph is imported here)."""

from __future__ import annotations

from activerag.method_record import LOGPROBS, Family, FlagGroup, Method
from activerag.nodes.margin.context import MarginContext

FAMILY = Family(
    name="uncertainty gates",
    line="",
    methods=(
        Method("gate_margin", "margin:margin_graph", MarginContext, {}, "uncertainty gates",
               "gated single retrieval after TARG: the answer without documents, retrieval "
               "only when its first tokens' mean top-1/top-2 logprob margin is below the "
               "threshold", "margin:build_margin_graph",
               needs=LOGPROBS | {"top_logprobs_2"}),
    ),
    groups=(FlagGroup("margin gate", "MarginContext: gate_margin (the LM, store, prompts and "
                      "gate flags above)", (MarginContext,)),),
)
