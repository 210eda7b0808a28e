"""The uncertainty gates' registry rows and CLI flag groups (read by graphs/registry.py and the
CLI; no graph is imported here)."""

from __future__ import annotations

from activerag.method_record import LOGPROBS, TOP20, Family, FlagGroup, Method
from activerag.nodes.gated.context import DraginContext, EtcContext, GateContext

ALTERNATIVES = LOGPROBS | TOP20
"""The entropy estimators and word triggers read the top 20 alternatives of every token."""
SAMPLES = LOGPROBS | {"n", "n_10"}
"""lexsim samples its answers in one request (n), 10 by default (GateContext.sampling_needs
gives a run's own count)."""
HOSTED = "(the LM, store, prompts and caps are the flags above)"


def _gate(name: str, summary: str, needs: frozenset[str] = ALTERNATIVES) -> Method:
    return Method(f"gate_{name}", "gated:gated_graph", GateContext, {"estimator": name},
                  "uncertainty gates", summary, "gated:build_gated_graph", needs=needs)


FAMILY = Family(
    name="uncertainty gates",
    line="retrieve when the LM's own uncertainty calls for it: Moskvoretskii et al. 2025's "
         "gated single retrieval (GateContext); ETC's entropy trend (EtcContext) and "
         "DRAGIN-lite (DraginContext) as FLARE's gate",
    methods=(
        _gate("entropy_mean", "answers without documents (as `none`); when that answer's mean "
              "token entropy is above `gate_threshold`, retrieves once with x and answers again "
              "(as `single`)"),
        _gate("entropy_max", "as `gate_entropy_mean`, gated by the answer's max token entropy"),
        _gate("perplexity", "as `gate_entropy_mean`, gated by the answer's mean negative "
              "log-probability (log-perplexity)", LOGPROBS),
        _gate("lexsim", "as `gate_entropy_mean`, retrieving when `lexsim_samples` answers "
              "sampled in one request agree (ROUGE-L) less than `gate_threshold`", SAMPLES),
        Method("flare_etc", "gated:etc_graph", EtcContext, {}, "uncertainty gates",
               "`flare` with ETC's gate: retrieves from the first word whose smoothed second "
               "difference of entropy is above `etc_threshold`, then continues the sentence "
               "from it", "gated:build_etc_graph", needs=ALTERNATIVES),
        Method("dragin_lite", "gated:dragin_graph", DraginContext, {}, "uncertainty gates",
               "`flare` with RIND's entropy of content words as the gate (no attention), the "
               "question plus the draft's most surprising words as the query",
               "gated:build_dragin_graph", needs=ALTERNATIVES),
    ),
    groups=(
        FlagGroup("uncertainty gates", "GateContext: gate_entropy_mean, gate_entropy_max, "
                  f"gate_perplexity, gate_lexsim {HOSTED}", (GateContext,)),
        FlagGroup("ETC", "EtcContext: flare_etc (its host's settings are the FLARE flags above)",
                  (EtcContext,)),
        FlagGroup("DRAGIN-lite", "DraginContext: dragin_lite (its host's settings are the FLARE "
                  "flags above)", (DraginContext,)),
    ),
)
