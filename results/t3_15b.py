"""Issue #37's table 3, its second part: ETC, DRAGIN-lite and SeaKR-lite with the 1.5B reader on
llama.cpp, on HotpotQA beside none, single and FLARE re-run with them (results/run_all.sh: one
run folder a method; their first runs' folders, in the table's first part, are gone), on the
questions all six runs finished. Their papers measure them against FLARE: each is paired with
FLARE as well as with single. The default model ran these three on 2Wiki only
(results/2wiki-after-flare-n100.md), so there is no 0.5B column.

Run from the repository root:

    python results/t3_15b.py   # results/hotpotqa-t3-n100-15b.{md,json,png}, -scores.json
"""

from per_method_15b import one_run_a_method
from tables_15b import differences

NAME = "hotpotqa-t3-n100-15b"
METHODS = ["none", "single", "flare", "flare_etc", "dragin_lite", "flare_seakr"]

if __name__ == "__main__":
    one_run_a_method(NAME, "hotpotqa-t3-15b", METHODS, 100,
                     "HotpotQA: ETC, DRAGIN-lite and SeaKR-lite beside none, single and FLARE, "
                     "the 1.5B reader on llama.cpp; p: paired sign-flip test against none",
                     "HotpotQA", lambda rows, _summary: differences(rows, METHODS))
