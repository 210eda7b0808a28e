"""SeaKR-lite's registry rows and CLI flag group (read by graphs/registry.py and the CLI; no
graph is imported here)."""

from __future__ import annotations

from activerag.method_record import LOGPROBS, TOKEN_IDS, TOP20, Family, FlagGroup, Method
from activerag.nodes.seakr.context import IRCoTSeakrContext, SeakrContext

NEEDS = LOGPROBS | TOKEN_IDS | TOP20
"""The host's logprobs, and the token LM's token-id prompts with top-20 steps."""
FAMILY = Family(
    name="SeaKR-lite",
    line="after Yao et al. 2025's self-aware re-ranking: a host method whose every retrieval "
         "keeps, from a larger pool, the documents under which a short pseudo-generation is "
         "least uncertain (SeakrContext)",
    methods=(
        Method("flare_seakr", "seakr:flare_seakr_graph", SeakrContext, {}, "SeaKR-lite",
               "`flare`, each retrieval keeping k of `rerank_pool` (3k) documents: those whose "
               "pseudo-generation has the lowest mean top-20 token entropy",
               "seakr:build_flare_seakr_graph", needs=NEEDS),
        Method("ircot_seakr", "seakr:ircot_seakr_graph", IRCoTSeakrContext, {}, "SeaKR-lite",
               "`ircot`, each retrieval adding the k of `rerank_pool` (3k) paragraphs under "
               "which the next CoT sentence's pseudo-generation has the lowest mean top-20 "
               "token entropy", "seakr:build_ircot_seakr_graph", needs=NEEDS,
               answer_rule="whole"),
    ),
    groups=(FlagGroup("SeaKR-lite", "SeakrContext: flare_seakr, ircot_seakr (its host "
                      "method's settings are the FLARE and IRCoT flags)",
                      (SeakrContext, IRCoTSeakrContext)),),
)
"""Each is scored by its host's answer rule (ircot_seakr: IRCoT's "whole"), so that it compares
with its host like for like; the authors' code forces an answer with a second call instead
(docs/seakr.md)."""
