"""results/figure5.py 15b (Figure 5 with the 1.5B reader): only the θ that finished every
question of the sweep are in the table, the others are named as under way; p is against
θ = 0.8 and against table 6's no-retrieval run; a missing run, a sweep without θ = 0.8 or a
none run short of the sweep's questions writes nothing and says what to run."""

import json
from pathlib import Path
from typing import Any

import pytest

IDS = [f"q{i}" for i in range(6)]


@pytest.fixture()
def fig5(results_script: Any) -> Any:
    small = {"fields": ["em", "f1", "gold_title_recall", "lm_calls", "retrieval_steps"],
             "methods": {m: {q: [0.0, 0.25, 0.5, 1, 1] for q in IDS}
                         for m in ("flare", "none", "flare θ=0", "flare θ=1")}}
    Path("results/2wiki-after-flare-n100-scores.json").write_text(json.dumps(small))
    return results_script("figure5")


def row(method: str, q: str, f1: float, rate: float) -> dict[str, Any]:
    return {"method": method, "id": q, "em": float(f1 == 1.0), "f1": f1,
            "gold_title_recall": 0.5, "sentences": 4, "retrieved_sentences": round(4 * rate),
            "lm_calls": 1 + 4 * rate, "retrieval_steps": 1 + 4 * rate, "prompt_tokens": 10,
            "generated_tokens": 5, "answer_tokens": 4, "seconds": 0.5}


def write(folder: str, rows: list[dict[str, Any]]) -> None:
    path = Path("runs") / folder
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps({"ids": IDS}))
    (path / "examples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def sweep(per_theta: dict[float, int]) -> None:
    write("sweeps-15b/theta", [row(f"theta={t}", q, 1.0 if i % 2 else t, t)
                               for t, n in per_theta.items() for i, q in enumerate(IDS[:n])])


def test_only_finished_thetas_are_tabled_with_p_against_08_and_none(fig5: Any) -> None:
    sweep({0.8: 6, 0.0: 6, 0.4: 2})
    write("2wiki-family-15b-none", [row("none", q, 0.0, 0.0) for q in IDS])
    fig5.large_model()
    text = Path("results/2wiki-theta-n100-15b.md").read_text()
    assert text.startswith("**Partial: θ = 0.4 (2 of 6 questions) still under way")
    table = text.split("#### Figure 5")[0]
    assert "| theta=0.0 |" in table and "| theta=0.8 |" in table and "theta=0.4 |" not in table
    assert "p vs theta=0.8 (em / f1) |" in table and "p vs theta=0.0" not in table
    summary = json.loads(Path("results/2wiki-theta-n100-15b.json").read_text())
    assert summary["theta=0.8"]["f1"] == pytest.approx((3 * 1.0 + 3 * 0.8) / 6)
    assert "vs_first" not in summary["theta=0.8"] and "f1_p" in summary["theta=0.0"]["vs_first"]
    assert summary["none"]["n"] == 6
    # exact sign-flip p: 3 questions differing one way give 2/8, all 6 give 2/64
    assert "| theta=0.0 | 1.000 / 0.250 | 0.250 / 0.250 |" in text  # p vs 0.8, vs none
    assert "| theta=0.8 | - | 0.250 / 0.031 |" in text
    claims = text.split("#### Figure 5's claims")[1]
    assert "theta=0.8 - theta=0.0: +0.400" in claims
    assert "theta=1.0 or theta=0.8 not run" in claims
    assert "| both | theta=0.0 | 0.250" in text  # the default model's θ = 0 beside
    assert Path("results/2wiki-theta-n100-15b.png").stat().st_size > 0


def test_a_sweep_without_theta_08_or_a_short_none_run_writes_nothing(fig5: Any) -> None:
    with pytest.raises(SystemExit, match=r"no rows in runs/sweeps-15b/theta: run the sweep"):
        fig5.large_model()
    sweep({0.8: 6})
    with pytest.raises(SystemExit, match=r"no rows in runs/2wiki-family-15b-none: run table 6"):
        fig5.large_model()
    sweep({0.8: 3, 0.0: 6})
    write("2wiki-family-15b-none", [row("none", q, 0.0, 0.0) for q in IDS])
    with pytest.raises(SystemExit, match="θ = 0.8 has not finished"):
        fig5.large_model()
    sweep({0.8: 6})
    write("2wiki-family-15b-none", [row("none", q, 0.0, 0.0) for q in IDS[:4]])
    with pytest.raises(SystemExit, match="lacks 2 of the sweep's questions"):
        fig5.large_model()
    assert not Path("results/2wiki-theta-n100-15b.md").exists()


def test_the_intervals_do_not_depend_on_the_order_the_rows_finished_in(fig5: Any) -> None:
    write("2wiki-family-15b-none", [row("none", q, 0.1 * (i % 3), 0.0)
                                    for i, q in enumerate(IDS)])
    summaries = []
    for finished in (IDS, IDS[::-1]):
        write("sweeps-15b/theta", [row(f"theta={t}", q, 0.1 * (IDS.index(q) % 4) + t / 4, t)
                                   for t in (0.8, 0.0) for q in finished])
        fig5.large_model()
        summaries.append(json.loads(Path("results/2wiki-theta-n100-15b.json").read_text()))
    assert summaries[0] == summaries[1]
