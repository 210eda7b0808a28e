"""The tables results/after_flare.py writes: where each one's rows come from, and the published
claims each judges (a paired F1 difference, its interval and p, and a verdict)."""

from after_flare_rows import Claim, Table

TWOWIKI = Table(
    "2wiki-after-flare-n100", "2wiki-gates-n100", {
        "2wiki-main-n200": ["flare", "none", "single"],
        "2wiki-gates-n100": None,
        "2wiki-adaptive-n100": None,
        # flare, none and single on these 100 questions alone, where the main run's is absent
        "2wiki-main-n100": ["none", "single"],
        "2wiki-flare-n100": ["flare"],
        # the other methods, a run folder per group (results/run_all.sh)
        "2wiki-ircot-n100": ["ircot"],
        "2wiki-dragin-etc-n100": ["dragin_lite", "flare_etc"],
        "2wiki-seakr-n100": ["flare_seakr"],
        "2wiki-adaptive-prompt-n100": ["adaptive_rag_prompt"],  # needs no router
    },
    "2WikiMultihopQA, first 100 questions of the main table",
    sweeps=["2wiki-gate-sweep-n100", "2wiki-theta-sweep-n100", "2wiki-trigger-sweep-n100"])
HOTPOT = Table(
    "hotpotqa-after-flare-n100", "hotpotqa-n100", {
        "hotpotqa-n100": None,  # none, single and the best new methods on 2Wiki
        "hotpotqa-flare-n100": ["flare"],
        "hotpotqa-ircot-n100": ["ircot"],
    },
    "HotpotQA (rpt dev), first 100 questions, union corpus",
    claims=["ircot", "flare", "gate_entropy_max", "gate_entropy_mean", "adaptive_rag_prompt"])
TWOWIKI200 = Table(
    "2wiki-after-flare-n200", "2wiki-n200", {
        "2wiki-n200": None,  # none, single, flare and the best new method on the 100
        "2wiki-ircot-n200": ["ircot"],
    },
    "2WikiMultihopQA, first 200 questions of the main table",
    claims=["ircot", "flare", "gate_entropy_max"])
FAMILY = Table(
    "2wiki-family-n100", "2wiki-family-n100-combined", {
        "2wiki-main-n200": ["flare", "none", "single"],
        "2wiki-main-n100": ["none", "single"],
        "2wiki-flare-n100": ["flare"],
        # issue #18: the rest of the FLARE family, a run folder per group (results/run_all.sh)
        "2wiki-family-n100-combined": ["flare_combined"],
        "2wiki-family-n100-previous": ["previous_window", "previous_sentence"],
        "2wiki-family-n100-previous-sentence": ["previous_sentence"],  # its own, side by side
        "2wiki-family-n100-other": ["next_sentence"],
        # self_ask since 99a2187 (the self-ask authors' pause and final line; the run of the
        # node before it, runs/2wiki-family-n100-selfask, scored 0 and is not read)
        "2wiki-family-n100-self-ask": ["self_ask"],
        "2wiki-family-n100-instruct": ["flare_instruct"],
        "2wiki-family-n100-explicit": ["flare_explicit"],
    },
    "2WikiMultihopQA, the FLARE family on the first 100 questions of the main table",
    borrowed={"2wiki-after-flare-n100": ["flare", "none", "single"]})
BETA = Table(
    "2wiki-beta-n100", "sweeps-table5/beta", {
        "sweeps-table5/beta": None,  # the sweep's folder
        "sweeps-table5-options/beta": None,  # the masking options at β 0.2 and 0.6
    },
    "2WikiMultihopQA, FLARE's β and masking on the first 100 questions of the main table",
    borrowed={"2wiki-after-flare-n100": ["flare", "none", "single"]})
REPLUG = Table(
    "2wiki-replug-n100", "2wiki-replug-n100", {
        "2wiki-replug-n100": None,
        "2wiki-replug-agree-n100": ["replug"],  # the token-level ensemble, its own run
    },
    "2WikiMultihopQA, REPLUG's ensemble against its baselines on the first 100 questions",
    borrowed={"2wiki-after-flare-n100": ["flare"]})
TABLES = [TWOWIKI, HOTPOT, TWOWIKI200, FAMILY, BETA, REPLUG]

GATES = ["gate_entropy_mean", "gate_entropy_max", "gate_perplexity", "gate_lexsim"]
CLAIMS: list[Claim] = [
    Claim("IRCoT beats FLARE on multi-hop QA (Trivedi et al. 2023; FlashRAG: HotpotQA F1 41.5 "
          "vs 28.0)", "ircot", "flare"),
    Claim("ETC's entropy-trend trigger beats FLARE's fixed threshold (ETC, AAAI 2026: 2Wiki F1 "
          "39.4 -> 43.3 on Llama3-8B)", "flare_etc", "flare"),
    *[Claim(f"An uncertainty gate matches DRAGIN at fewer LM calls (Moskvoretskii et al. 2025): "
            f"{g}", g, "dragin_lite", equal=True) for g in GATES],
    Claim("Adaptive-RAG's router keeps the multi-step method's quality at fewer LM calls (Jeong "
          "et al. 2024)", "adaptive_rag", "ircot", equal=True),
    Claim("SeaKR-lite's rerank improves FLARE (Yao et al. 2025)", "flare_seakr", "flare"),
    *[Claim(f"{m} beats answering without documents", m, "none")
      for m in ("flare", "ircot", "adaptive_rag", "flare_etc", "dragin_lite")],
]

FAMILY_CLAIMS: list[Claim] = [  # FLARE's own (Jiang et al. 2023)
    Claim("FLARE beats retrieving every 16 tokens with the previous window (Table 1; Table 4: "
          "2Wiki EM 43.2 at 16 tokens)", "flare", "previous_window"),
    Claim("FLARE beats retrieving every sentence with the previous sentence (Table 1)", "flare",
          "previous_sentence"),
    Claim("FLARE beats question decomposition, self-ask (§6.1: 2Wiki EM 51.0 against 47.8, the "
          "strongest baseline)", "flare", "self_ask"),
    Claim("FLARE direct beats FLARE instruct (§6.1: retrieval instructions are hard for the LM to "
          "follow)", "flare", "flare_instruct"),
    Claim("The next sentence as the query beats the previous one, both retrieving every sentence "
          "(Table 3: 2Wiki EM 48.8 against 39.0)", "next_sentence", "previous_sentence"),
    Claim("Explicit queries (a question per uncertain span) match masked ones (Table 6: ASQA-hint "
          "EM 46.2 against 45.7)", "flare_explicit", "flare", equal=True),
    *[Claim(f"{m} beats answering without documents", m, "none")
      for m in ("previous_window", "previous_sentence", "next_sentence", "self_ask",
                "flare_explicit", "flare_combined", "flare_instruct")],
]
"""The claims judged on FAMILY (CLAIMS are the other tables')."""
BETA_CLAIMS: list[Claim] = [  # Table 5 (Jiang et al. 2023), then our options
    *[Claim(f"Masking the draft's tokens below β={b} beats querying with the whole draft, β=0 "
            f"(Table 5: 2Wiki EM {em} against 0.488)", method, "beta=0.0")
      for b, em, method in (("0.2", "0.498", "beta=0.2"), ("0.4", "0.510", "flare"),
                            ("0.6", "0.506", "beta=0.6"))],
    Claim("Whole-word masking beats per-token masking at β=0.4 (activerag's option, no published "
          "claim)", "beta=0.4 word", "flare"),
    Claim("Never masking the question's words beats whole-word masking alone at β=0.4 (activerag's "
          "option, no published claim)", "beta=0.4 word+x", "beta=0.4 word"),
]
"""The claims judged on BETA: the sweep's variants are named by `activerag sweep beta`; β=0.4
with per-token masking is FLARE's own setting, its flare row."""
REPLUG_CLAIMS: list[Claim] = [  # Shi et al. 2023, Table 3 and §3.2
    Claim("REPLUG's ensemble of the top 10 documents beats the LM without retrieval (Table 3: "
          "Codex NQ 40.6 -> 44.7, TQA 73.6 -> 76.9)", "replug_vote", "none"),
    Claim("REPLUG's ensemble beats the top document alone (§3.2: more documents than one pass "
          "holds)", "replug_vote", "single_k1"),
    Claim("REPLUG's ensemble beats the same 10 documents concatenated in one prompt (Table 3: "
          "Codex + Contriever_cc NQ 44.2 against REPLUG 44.7)", "replug_vote", "single_k10"),
    Claim("REPLUG's token-level ensemble (Eq. 1, the paper's method) beats the LM without "
          "retrieval", "replug", "none"),
    Claim("REPLUG's token-level ensemble beats the top document alone", "replug", "single_k1"),
    Claim("REPLUG's token-level ensemble beats the 10 documents concatenated", "replug",
          "single_k10"),
    Claim("The token-level ensemble and the released code's answer vote match (the vote is what "
          "the released code runs)", "replug", "replug_vote", equal=True),
]
JUDGED = {FAMILY.name: FAMILY_CLAIMS, BETA.name: BETA_CLAIMS, REPLUG.name: REPLUG_CLAIMS}
"""The tables that judge their own claims (the others judge CLAIMS)."""
