"""IRCoT's registry rows and CLI flag group (read by graphs/registry.py and the CLI; no graph
is imported here)."""

from __future__ import annotations

from activerag.method_record import Family, FlagGroup, Method
from activerag.nodes.ircot.context import IRCoTContext

FAMILY = Family(
    name="IRCoT",
    line="Trivedi et al. 2023: a chain of thought written one sentence at a time, each sentence "
         "the query whose paragraphs join all those collected (IRCoTContext)",
    methods=(
        Method("ircot", "ircot:graph", IRCoTContext, {}, "IRCoT",
               "retrieves k paragraphs with the question, then with each chain-of-thought "
               "sentence, adding them to those collected (at most 15) until a sentence says "
               "\"answer is\" (or 10 sentences); a reader answers over them all (§3, IRCoT QA)",
               "ircot:build_ircot_graph", answer_rule="whole"),
        Method("ircot_chain", "ircot:graph", IRCoTContext, {"ircot_reader": "none"}, "IRCoT",
               "as `ircot`, without the reader: the loop's own chain is the answer",
               "ircot:build_ircot_graph", answer_rule="whole"),
    ),
    groups=(FlagGroup("IRCoT", "IRCoTContext: ircot, ircot_chain (--k is K, the paragraphs "
                      "per retrieval; the LM, store, prompts and caps are the flags above; "
                      "theta, beta and FLARE's query and window flags are not read)",
                      (IRCoTContext,)),),
)
"""The authors score an output without "answer is" as the whole output (their configs'
match_all_on_failure): answer_rule "whole"."""
