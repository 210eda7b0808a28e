"""REPLUG's registry rows, with its Table 3 baselines, and its CLI flag group (read by
graphs/registry.py and the CLI; no graph is imported here)."""

from __future__ import annotations

from activerag.context import FlareContext
from activerag.method_record import (
    LOGPROBS,
    TEXT,
    TOKEN_IDS,
    TOP20,
    Family,
    FlagGroup,
    Method,
)
from activerag.nodes.replug.context import ReplugContext

_F, _R = FlareContext, ReplugContext  # short names for the rows below
FAMILY = Family(
    name="REPLUG",
    line="Shi et al. 2023: the retrieved documents' next-token distributions ensembled; with "
         "its Table 3 baselines (ReplugContext; the baselines FlareContext)",
    methods=(
        Method("flare_replug", "replug:flare_replug_graph", _F, {}, "REPLUG",
               "FLARE's gate and queries; REPLUG's ensemble writes the regenerated sentence",
               "replug:build_flare_replug_graph", needs=LOGPROBS | TOKEN_IDS | TOP20),
        # its ensemble is the run's (`--ensemble`), so that one flag picks any of the four
        Method("replug", "replug:graph", _R, {}, "REPLUG",
               f"k = {_R.k} documents ensembled by Eq. 2 as `ensemble` says (default "
               f"`{_R.ensemble}`: each looking ahead {_R.lookahead} greedy tokens)",
               "replug:build_replug_graph", needs=TOKEN_IDS | TOP20),
        Method("replug_token", "replug:graph", _R, {"ensemble": "token"}, "REPLUG",
               "Eq. 2 as written: every document gives one token per position",
               "replug:build_replug_graph", needs=TOKEN_IDS | TOP20),
        Method("replug_vote", "replug:graph", _R, {"ensemble": "vote"}, "REPLUG",
               "the released code's answer-level vote over the documents' greedy answers",
               "replug:build_replug_graph", needs=LOGPROBS | {"tokenize"}),
        Method("replug_rescore", "replug:graph", _R, {"ensemble": "rescore"}, "REPLUG",
               "Eq. 2 applied exactly to the documents' answers, each echo-scored under every "
               "document", "replug:build_replug_graph", needs=TEXT | TOKEN_IDS | {"echo"}),
        Method("single_k1", "single:single_graph", _F, {"k": 1}, "REPLUG",
               "REPLUG's Table 3 baseline: the top document alone",
               "single:build_single_graph", needs=TEXT),
        Method("single_k10", "single:single_graph", _F, {"k": 10}, "REPLUG",
               "REPLUG's Table 3 baseline: k = 10 documents concatenated",
               "single:build_single_graph", needs=TEXT),
    ),
    groups=(FlagGroup("REPLUG", "ReplugContext: replug, replug_token, replug_vote, "
                      "replug_rescore", (ReplugContext,), renamed=(("k", "--replug-k"),)),),
)
