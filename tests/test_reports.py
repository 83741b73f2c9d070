"""The chapters' report functions: FedAvg written out equals the engine's; glued sentences read
as English with display names."""

import pandas as pd
import pytest

from data_prep import load
from playerfl_core import get_algorithm, make_config, run_federated
from playerfl_core.book.reports import fedavg_from_scratch as scratch
from playerfl_core.book.reports import rule_variants, split_choice
from playerfl_core.book.reports.tables import named


@pytest.fixture(scope="module")
def digits_runs():
    fd = load("digits", profile="quick", seed=0)
    config = make_config("digits", "quick", seed=0, device="cpu", rounds=2, progress=False)
    return fd, config, run_federated(fd, get_algorithm("fedavg"), config)


def test_fedavg_from_scratch_is_the_engines_fedavg(digits_runs):
    fd, config, engine_run = digits_runs
    model, acc = scratch.fedavg_from_scratch(fd, config)
    check = scratch.compare_with_engine(model, acc, engine_run)
    assert check["identical"], check
    assert len(acc) == config.rounds * fd.n_clients


def test_unweighted_average_is_not_the_engines(digits_runs):
    fd, config, engine_run = digits_runs
    assert len({c.n_train for c in fd.clients}) > 1  # otherwise the two averages coincide
    model, acc = scratch.fedavg_from_scratch(fd, config, weighted=False)
    assert scratch.compare_with_engine(model, acc, engine_run)["max_param_diff"] > 0


def test_captions_conclude_with_the_values_of_their_figure():
    summary = pd.DataFrame(
        {
            "dataset": ["heart", "digits"],
            "variant": ["paper", "paper"],
            "modal_p": [1, 3],
            "modal_share": [0.55, 1.0],
            "p_oracle": [3, 3],
        }
    )
    assert split_choice.stability_caption(summary) == (
        "The paper's rule picks Heart p = 1 on 55% of seeds (best on mean validation: p = 3); "
        "Digits p = 3 on 100% of seeds (best on mean validation: p = 3)"
    )
    moving = pd.DataFrame(
        {
            "base": ["fmnist", "fmnist"],
            "order": [0, 1],
            "level": ["α=0.05", "rotate+α=0.1"],
            "rule_ps": [[3, 3], [3, 4]],
            "oracle_ps": [[1, 1], [0, 1]],
        }
    )
    assert split_choice.heterogeneity_numbers(moving)["het_movement_lines"] == (
        "- Fashion-MNIST: the rule moves: p 3×3, 4×1 over the 4 seeds of its 2 federations. "
        "Oracle's median p per federation: α = 0.05: 1; rotate + α = 0.1: 0.5."
    )
    c5 = pd.DataFrame(
        {
            "dataset": ["heart", "heart"],
            "other": ["p=0", "random (drawn)"],
            "mean": [0.5, -0.012],
            "lo": [0.4, -0.03],
            "hi": [0.6, 0.004],
        }
    )
    assert split_choice.c5_caption(c5) == (
        "Against the split PLayer-FL-Random draws: Heart −0.012 (−0.030 to 0.004)"
    )
    regrets = pd.DataFrame(
        {"variant": ["paper"] * 3 + ["median"], "p_rule": [1, 1, 2, 0],
         "p_oracle": [1, 3, 3, 0], "regret": [0.0, 0.01, 0.02, 0.5]}
    )  # fmt: skip
    caption = split_choice.sweep_caption(regrets)
    assert caption.startswith(
        "Rule's p: 1×2, 2×1; oracle's p: 1×1, 3×2 (p×seeds); mean regret 0.010"
    )
    curves = pd.DataFrame(
        {"dataset": ["heart"] * 4, "p": [1, 1, 1, 2], "client": [0, 1, 2, 0],
         "gain": [0.1, -0.2, 0.3, 9.0]}
    )  # fmt: skip
    reg = pd.DataFrame({"dataset": ["heart"] * 3, "p_rule": [1, 1, 2]})
    assert split_choice.client_caption(reg, curves) == (
        "At the rule's most frequent split, clients that gain over Local: Heart 2 of 3 (p = 1)"
    )
    both = pd.concat([curves.assign(dataset="fmnist"), curves], ignore_index=True)
    reg_both = pd.concat([reg, reg.assign(dataset="fmnist")], ignore_index=True)
    assert split_choice.client_lines(reg_both, both).splitlines()[0].startswith("- Heart")


def test_regret_numbers_are_glued_at_the_precision_they_are_quoted():
    summary = pd.DataFrame(
        {
            "dataset": ["heart"],
            "mean": [0.02155494945953556],
            "lo": [0.0051],
            "hi": [0.0402],
            "n_seeds": [10],
            "same": [0.5],
            "within_one": [0.8],
        }
    )
    numbers = split_choice.regret_numbers(summary)
    assert numbers["heart_regret"] == 0.022
    assert numbers["heart_regret_ci"] == "[0.005, 0.040]" and numbers["heart_same"] == "5 of 10"
    assert "mean regret 0.022" in numbers["regret_lines"]
    assert (
        numbers["regret_caption"]
        == "Heart 0.022 (0.005–0.040), the oracle's split on 5 of 10 seeds"
    )


def test_named_tables_show_display_names():
    frame = pd.DataFrame(
        {"dataset": ["fmnist"], "algorithm": ["playerfl_random"], "metric": ["sensitivity"]}
    )
    shown = named(frame)
    assert shown.iloc[0].tolist() == [
        "Fashion-MNIST",
        "PLayer-FL-Random",
        "federation sensitivity sₖ",
    ]
    wide = pd.DataFrame({"local": [1.0]}, index=pd.Index(["heart"], name="dataset"))
    wide.columns.name = "algorithm"
    shown = named(wide)
    assert list(shown.columns) == ["Local"] and list(shown.index) == ["Heart"]


def test_shown_tables_are_the_same_output_every_run():
    """nbval compares a checked cell's HTML and text: no random element id, no address."""
    from playerfl_core.book.reports.tables import captioned, show

    frame = pd.DataFrame({"dataset": ["heart"], "p": [0.01234]})
    first, again = show(frame).set_caption("c"), show(frame).set_caption("c")
    assert first._repr_html_() == again._repr_html_()
    assert "0x" not in repr(first) and repr(first).startswith("c\n")
    assert "0.012" in first._repr_html_() and "Heart" in first._repr_html_()
    assert "Heart" in repr(captioned(frame.set_index("dataset"), "t"))


# -- chapter 07: the same runs on Flower, and the wire -------------------------------------------
def _rows(values):
    return pd.DataFrame(
        {"algorithm": "fedavg", "round": range(len(values)), "metric": "loss", "value": values}
    )


def test_equivalence_sees_one_changed_value_and_missing_rows():
    from playerfl_core.book.reports.silos import equivalence

    base = _rows([0.5, 0.25, 0.125])
    same = equivalence({"fedavg": base}, base.copy())
    assert bool(same["identical"].iloc[0]) and same["largest |difference|"].iloc[0] == 0
    nudged = base.copy()
    nudged.loc[1, "value"] += 1e-12
    off = equivalence({"fedavg": base}, nudged)
    assert not off["identical"].iloc[0]
    assert off["largest |difference|"].iloc[0] == pytest.approx(1e-12, rel=1e-3)
    short = equivalence({"fedavg": base}, base.iloc[:2])
    assert not short["identical"].iloc[0] and short["rows on Flower"].iloc[0] == 2


def test_traffic_is_kilobytes_per_silo_per_round_by_purpose():
    from playerfl_core.book.reports.silos import traffic

    wire = pd.DataFrame(
        [
            # 2 silos, 2 rounds: each uploads 3000 B and receives 1000 B per round
            *[("uploads", r, s, 0, 3000, 0) for r in (0, 1) for s in (0, 1)],
            *[("send", r, s, 1000, 0, 0) for r in (0, 1) for s in (0, 1)],
            # scoring only: 500 B up and 500 B down per silo, round 1 only
            *[("deployment uploads", 1, s, 0, 500, 0) for s in (0, 1)],
            *[("deploy", 1, s, 500, 0, 0) for s in (0, 1)],
            ("reports", 0, 0, 0, 40, 4),
            ("reports", 0, 1, 0, 40, 4),
        ],
        columns=["call", "round", "silo", "bytes_to_silo", "bytes_from_silo", "numbers_from_silo"],
    ).assign(algorithm="fedlama", messages=12)  # per silo: 4 asks, the opening and the closing
    row = traffic(wire, rounds=2).loc["fedlama"]
    assert row["up kB/round"] == pytest.approx(3.0)
    assert row["down kB/round"] == pytest.approx(1.0)
    assert row["scoring kB/round"] == pytest.approx(0.5)  # (500 + 500) B over 2 rounds
    assert row["numbers reported"] == 4 and row["messages/round"] == pytest.approx(3.0)
    assert row["messages"] == 6 and row["outside rounds"] == 2


def test_messages_per_round_say_why_fedavgs_one_a_round_reads_more():
    """Chapter 07 said a FedAvg round costs one message per silo while its Table 87 gave 1.10
    (the run's opening and closing messages, over 20 rounds), and its first column had no name
    where Table 86 calls it "algorithm"."""
    from playerfl_core.book.reports.silos import messages_note, shown_traffic, traffic, wire_facts

    def wire(name, extra_asks):  # 2 silos, 20 rounds: one "uploads" ask per round and silo
        calls = [("uploads", r, s) for r in range(20) for s in (0, 1)] + extra_asks
        frame = pd.DataFrame(calls, columns=["call", "round", "silo"])
        per_silo = len(calls) // 2 + 2  # with the opening and the closing message
        return frame.assign(algorithm=name, messages=2 * per_silo, bytes_to_silo=0,
                            bytes_from_silo=0, numbers_from_silo=0)  # fmt: skip

    table = traffic(
        pd.concat([wire("fedavg", []),
                   wire("playerfl", [("reports", 0, s) for s in (0, 1)]),
                   wire("playerfl_random", [("reports", 0, s) for s in (0, 1)]),
                   wire("fedlama", [("deployment uploads", r, s) for r in range(20)
                                    for s in (0, 1)])]),
        rounds=20,
    )  # fmt: skip
    assert table["messages/round"].round(2).tolist() == [1.1, 1.15, 1.15, 2.1]
    assert table["outside rounds"].tolist() == [2, 2, 2, 2]
    shown = shown_traffic(table)
    assert shown.index.name == "algorithm" and "outside rounds" not in shown.columns
    assert messages_note(table, 20).endswith(
        "the 2 that open and close the run included, so FedAvg's one message a round reads 1.10"
    )
    sentence = wire_facts(table, 20)["messages_sentence"]
    assert sentence.startswith("A FedAvg silo gets 22 messages over the 20 rounds: one a round")
    assert "so the table reads 1.10 a round" in sentence
    # one clause for two algorithms with the same extra message (chapter 07 repeated it)
    assert "PLayer-FL's and PLayer-FL-Random's" in sentence
    assert "1 more each (one in round 0" in sentence
    assert sentence.count("collects the sensitivities") == 1
    assert "FedLAMA's 20 more (one a round" in sentence or "FedLAMA's silo gets 20 more" in sentence
    assert sentence.count(" get") == 2  # "gets" once, for FedAvg and for the first clause


def test_the_tuning_caption_names_each_kept_threshold_ties_to_the_smaller():
    from playerfl_core.book.reports.rule_family import tuning_caption

    tuning = pd.DataFrame(
        {"rule": ["paper", "paper", "cost", "cost"], "threshold": [1.0, 2.0, 0.2, 0.1],
         "regret": [0.2, 0.1, 0.3, 0.3]}
    )  # fmt: skip
    assert tuning_caption(tuning) == (
        "Kept thresholds (mean development regret): paper 2 (0.1000); averaging cost 0.1 "
        "(0.3000); the paper's t = 1: 0.2000"
    )


def test_the_tuned_thresholds_are_listed_by_the_rules_names_not_their_codes():
    """The pre-registration appendix listed "cost2: threshold 0.1" (a code, issue 35)."""
    from playerfl_core.book.reports.rule_family import tuned_lines
    from playerfl_core.study import preregistration as P

    rows = [(rule, t, 0.1 * i) for rule in P.GRIDS for i, t in enumerate((1.0, 0.5))]
    lines = tuned_lines(pd.DataFrame(rows, columns=["rule", "threshold", "regret"]))
    assert "- averaging cost, second order: threshold 1, mean development regret 0.0000" in lines
    assert "cost2" not in lines and "- disagreement:" not in lines


def test_paired_verdict_lines_write_intervals_and_p_values_the_books_way():
    """Chapter 04's variant table wrote NaN p-values its own way."""
    from playerfl_core.book.reports.tables import p_text

    assert p_text(float("nan")) == "not run" and p_text(0.01234) == "0.012"
    assert p_text(float("nan"), "not computable") == "not computable"
    # a variant whose regret is the paper's on every seed: nothing to test, not "undecided"
    regrets = pd.DataFrame(
        {"dataset": "heart", "seed": [0, 1, 0, 1, 0, 1], "regret": [0.1, 0.0, 0.1, 0.0, 0.0, 0.0],
         "variant": ["paper"] * 2 + ["median"] * 2 + ["geomean"] * 2}
    )  # fmt: skip
    both = rule_variants.variant_comparison(regrets).set_index("variant")
    assert both.loc["median", "verdict"] == "the same regret", both
    # one seed differs: no test could reach α, and the verdict says so (Table 34 showed a bare
    # "undecided" beside a missing p)
    assert both.loc["geomean", "verdict"] == "undecided: too few seeds differ to test", both


def test_the_variant_comparison_keeps_the_chapters_dataset_order():
    """Chapter 04's Table 34 listed Digits, Fashion-MNIST, Heart (pivot_table's alphabet) while
    every other table of the page lists Heart first."""
    regrets = pd.DataFrame(
        {"dataset": ["heart"] * 4 + ["digits"] * 4, "seed": [0, 1] * 4,
         "variant": (["paper"] * 2 + ["median"] * 2) * 2,
         "regret": [0.1, 0.0, 0.0, 0.0, 0.2, 0.1, 0.0, 0.1]}
    )  # fmt: skip
    assert list(rule_variants.variant_comparison(regrets)["dataset"]) == ["heart", "digits"]


def test_a_follow_up_of_one_kind_is_shown_as_a_column_and_negative_regrets_with_minus_signs():
    """04b's concept-shift table was one row of eight entries, cut off on the right."""
    from playerfl_core.book.reports import rule_family as RF
    from playerfl_core.study import preregistration as P

    q = "quantity skew"
    rows = [(q, "paper", 0.0123, P.WITHIN), (q, "cost", -0.004, "undecided")]
    one_kind = pd.DataFrame(rows, columns=["kind", "entry", "mean", "verdict"])
    table = RF.verdict_table(one_kind)
    assert list(table.index) == ["paper", "cost"] and table.shape == (2, 1)
    assert list(table.iloc[:, 0]) == ["0.012 ✓", "\u22120.004 ?"]
    two_kinds = pd.concat([one_kind, one_kind.assign(kind="concept shift")], ignore_index=True)
    assert RF.verdict_table(two_kinds).shape == (2, 2)
    assert list(RF.verdict_table(two_kinds).columns) == ["paper", "cost"]


def _rank_claim(cid, wide, higher, alpha, blocks):
    """A claim of one best-rank part, decided as claims.c3_best_rank decides it."""
    from types import SimpleNamespace

    from playerfl_core.stats import claims as C
    from playerfl_core.stats.evidence import best_rank_evidence

    ev, _ = best_rank_evidence(wide, "playerfl", higher, "", alpha, blocks)
    verdict = C.Verdict(ev.verdict, ev.strength, ev.reason)
    return SimpleNamespace(id=cid, verdict=verdict, parts=pd.DataFrame([ev.row()]))


def _words(answer: str) -> int:
    """Words a reader sees in an answer (a glossary role shows its text only)."""
    import re

    shown = re.sub(r"\{term\}`(?:([^<`]*?)\s*<[^>]*>|([^`]*))`", r"\1\2", answer)
    return len(re.findall(r"[\w'’.,%−+-]+", shown))


@pytest.mark.parametrize(
    "case, verdict, words",
    [
        ("ahead", "supported", "supported.** PLayer-FL ranks 1st of 4 algorithms"),
        ("behind", "contradicted", "contradicted.** PLayer-FL ranks 2nd of 4 algorithms"),
        ("close", "undecided", "undecided.** PLayer-FL ranks 1st of 4 algorithms"),
        ("chance", "undecided", "differ no more than chance would make them"),
    ],
)
def test_chapter_05s_result_box_answers_in_a_plain_sentence_first(case, verdict, words):
    """Chapter 05's Result box: per claim the verdict, what it means and the mean rank over the
    runs the test ranks, in one plain sentence without test jargon, short enough that three
    answers fit a box of 120 words."""
    import numpy as np

    from playerfl_core.book.reports import comparison as R

    rng = np.random.default_rng(0)
    algorithms = ["playerfl", "fedavg", "local", "ditto"]
    n = {"ahead": 30, "behind": 30, "close": 12, "chance": 6}[case]
    wide = pd.DataFrame(rng.normal(size=(4, n)) * 0.01, index=algorithms)
    lift = {"ahead": [3, 0, -1, -2], "behind": [1, 3, -1, -2], "close": [1, 0.9, -1, -2]}
    wide = wide.add(np.array(lift.get(case, [0, 0, 0, 0]))[:, None] * (case != "chance"), axis=0)
    if case == "chance":
        wide = pd.DataFrame(rng.normal(size=(4, n)), index=algorithms)
    outcome = R.rank_outcome(wide, True, 0.05, "(dataset, seed) runs")
    claim = _rank_claim("C3", wide, True, 0.05, "(dataset, seed) runs")
    assert outcome["case"] == case and claim.verdict.verdict == verdict == outcome["verdict"]
    answer = R.c3_answer(claim, outcome)
    assert answer.startswith(f"**C3, PLayer-FL ranks best on macro-F1: {verdict}.**")
    assert words in answer
    for jargon in ("Friedman", "Nemenyi", "p =", "α", "Holm", "*The numbers*"):
        assert jargon not in answer, (jargon, answer)
    assert f"(mean rank {outcome['mean_rank']:.2f} over {n} (dataset, seed) runs)" in answer
    head, sentence = answer.split(".** ")  # the bold head, then one sentence
    assert ". " not in sentence and sentence.endswith("."), sentence
    assert _words(answer) <= 34, answer
    if case == "behind":
        assert "FedAvg ranks ahead of it" in answer


def test_chapter_05s_answers_for_fairness_and_the_random_split():
    from types import SimpleNamespace

    from playerfl_core.book.reports import comparison as R
    from playerfl_core.stats import claims as C

    wide = pd.DataFrame(
        [[0.1, 0.2, 0.3], [0.2, 0.1, 0.4], [0.3, 0.3, 0.1]], index=["playerfl", "ditto", "fedprox"]
    )
    fair = R.rank_outcome(wide, False, 0.025, "datasets")
    ipr = R.rank_outcome(wide, True, 0.025, "datasets")
    assert fair["case"] == ipr["case"] == "untestable"  # 3 datasets cannot reach α/2
    claim = SimpleNamespace(id="C4", verdict=C.Verdict("undecided", "none", "2 undecided"))
    answer = R.c4_answer(claim, fair, ipr, "72%")
    assert answer.startswith("**C4, PLayer-FL is fairest and most worth joining: undecided")
    assert "3 datasets are too few for any test to decide" in answer
    assert "{term}`fairness`" in answer and "incentivized participation rate>`" in answer
    assert "(mean IPR 72%)" in answer and _words(answer) <= 36, answer  # places differ: longest
    assert R.evidence_words("none") == "no evidence"  # not "none evidence"
    assert R.evidence_words("weak") == "weak evidence"
    parts = pd.DataFrame(
        {"part": [C.TUNED_PART, "one learning rate: digits, vs random (drawn)",
                  "one learning rate: heart, vs random (drawn)"],
         "estimate": [0.012, 0.05, -0.01], "n": [30, 10, 10],
         "p": [0.1, 0.004, 0.3], "p_holm": [0.2, 0.012, 0.3],
         "verdict": ["undecided", "supported", "undecided"]}
    )  # fmt: skip
    c5 = SimpleNamespace(
        id="C5", verdict=C.Verdict("undecided", "weak", "1 supported, 2 undecided of 3"),
        parts=parts,
    )  # fmt: skip
    answer = R.c5_answer(c5)
    assert answer == (
        "**C5, the rule's split beats a random one: undecided.** +0.012 macro-F1 (median of 30 "
        "paired runs at tuned learning rates); 1 of its 3 comparisons favour the rule's split "
        "beyond chance (Digits)."
    ), answer
    assert _words(answer) <= 33, answer
    lost = parts.assign(verdict=["undecided", "supported", "contradicted"])
    answer = R.c5_answer(SimpleNamespace(id="C5", verdict=c5.verdict, parts=lost))
    assert answer.endswith(
        "1 of its 3 comparisons favour the rule's split beyond chance (Digits), 1 favour the "
        "random one beyond chance (Heart)."
    )
    assert "p =" not in answer
    none = parts.assign(verdict="undecided")
    answer = R.c5_answer(SimpleNamespace(id="C5", verdict=c5.verdict, parts=none))
    assert answer.endswith(
        "runs at tuned learning rates); none of its 3 comparisons differs beyond chance."
    )


def test_every_term_the_result_box_links_is_in_the_glossary():
    import re
    from pathlib import Path

    glossary = Path(__file__).parents[1] / "chapters" / "glossary.md"
    terms = {line.strip() for line in glossary.read_text().splitlines() if re.match(r"^\S", line)}
    for term in ("Friedman test", "Nemenyi test", "Holm's adjustment", "fairness", "claim",
                 "verdict", "incentivized participation rate"):  # fmt: skip
        assert term in terms, term


def test_the_split_lines_list_each_seeds_split_in_words_not_a_python_list():
    """Chapter 03's Result box read "seeds: [3, 3, 3]" (a Python list, issue 35)."""
    from playerfl_core.book.reports.sensitivity_study import split_numbers

    splits = pd.DataFrame({"dataset": ["heart"] * 3, "p": [1, 1, 2], "threshold": 1.0})
    splits["fallback"] = False
    units = {"heart": ["fc1", "fc2", "fc3", "fc4"]}
    lines = split_numbers(splits, units)["split_lines"]
    assert lines == "- Heart: p = 1 of 4 units (federate fc1; per seed: 1, 1, 2)"


def test_the_split_lines_say_where_the_split_is_the_rules_fallback():
    """Chapter 03 read "Digits: p = 3 of 4 units" as a rise the rule found; no rise passed t, so
    it was the fallback p = L − 1 (the same p), and the page never said so (issue 35)."""
    from playerfl_core.book.reports.sensitivity_study import fallback_thresholds, split_numbers

    splits = pd.DataFrame({"dataset": ["heart"] * 2 + ["digits"] * 2, "seed": [0, 1] * 2,
                           "threshold": 1.0, "p": [1, 1, 3, 3],
                           "fallback": [False, False, True, True]})  # fmt: skip
    units = {"heart": ["fc1", "fc2", "fc3", "fc4"], "digits": ["c1", "c2", "fc1", "fc2"]}
    out = split_numbers(splits, units)
    assert out["split_lines"].splitlines()[1] == (
        "- Digits: p = 3 of 4 units (federate c1, c2, fc1; per seed: 3, 3; no rise above t in "
        "any seed, so the rule federates every unit but the head)"
    )
    assert "fallback" not in out["split_lines"].splitlines()[0]
    assert out["split_fallback"].startswith("At t = 1 no relative rise exceeds t on Digits in any")
    assert out["split_fallback"].endswith("; on Heart it is the first rise above t.")
    by_t = pd.concat([splits, splits.assign(threshold=4.0, fallback=[True, False, True, True])])
    assert fallback_thresholds(by_t) == (
        "The split is the rule's fallback (every unit but the head) in every seed at t ∈ {1, 4} "
        "on Digits."
    )


def test_c2s_table_says_which_way_weak_evidence_leans():
    """Chapter 03's C2 table called ρ = −0.80 "weak", which read as weak support (issue 35)."""
    from playerfl_core.book.reports.sensitivity_study import c2_table

    corr = pd.DataFrame({"dataset": "Digits", "measure": "hessian_trace",
                         "estimate": [-0.8, 0.8, 0.9, 0.1], "n": 3, "p": 0.01,
                         "p_holm": [0.14, 0.14, 0.01, 0.9],
                         "verdict": ["undecided", "undecided", "supported", "undecided"],
                         "strength": ["weak", "weak", "moderate", "none"]})  # fmt: skip
    assert c2_table(corr)["strength"].tolist() == [
        "weak, against the claim", "weak, for the claim", "moderate", "none"
    ]  # fmt: skip


def test_the_cost_paragraph_glues_only_what_holds_on_every_machine():
    """Chapter 03 glued this machine's timing ratios into its prose, where nbval could not
    compare them; the prose now says which way each ratio points and names a dataset where the
    trace was not slower, and the ratios stay in the table."""
    from playerfl_core.book.reports.sensitivity_study import batch_table, cost_numbers

    costs = pd.DataFrame({"dataset": ["heart", "digits", "fmnist"], "probes": [12, 8, 4],
                          "ratio": [27.6257, 17.3507, 12.4701], "repeats": 21})  # fmt: skip
    out = cost_numbers(costs)
    assert out == {
        "cost_repeats": 21,
        "cost_probes": "12 on Heart, 8 on Digits and 4 on Fashion-MNIST",
        "cost_direction": "slower than the sensitivity on every dataset",
    }
    costs.loc[1, "ratio"] = 0.9
    assert cost_numbers(costs)["cost_direction"] == "not slower than the sensitivity on Digits"
    agree = pd.DataFrame({"dataset": "heart", "batches": [1, 2, 4], "agree": [0.7, 0.5, 0.9]})
    assert list(batch_table(agree).columns) == ["m = 1", "m = 2", "m = 4"]


def test_a_claims_sentence_opens_with_its_verdict():
    """Chapter 04's Result box opened by restating R1 ("the rule's split is as good as the
    oracle's ...: contradicted"); a reader who skims takes the claim for the finding (issue 35)."""
    rows = pd.DataFrame({"claim": "oracle", "dataset": ["a", "b"], "estimate": [0.0, 0.2],
                         "n_seeds": 10, "p": [0.001, 0.001],
                         "verdict": ["supported", "contradicted"],
                         "strength": "strong"})  # fmt: skip
    text = split_choice.claim_sentence(rows, "oracle")
    assert text.startswith("**Claim R1 is contradicted** (strong evidence). It says the rule's")
    assert "(1 supported, 1 contradicted" in text
    # one part (a federation of your own): its count, not an empty "( , one family ...)"
    one = split_choice.claim_sentence(rows.iloc[:1], "oracle")
    assert one.endswith("(its one part is supported; no adjustment is needed)."), one
    assert "(1 supported, 1 contradicted of 2 parts, with Holm's adjustment over them)" in text


def test_chapter_04s_result_box_answers_in_a_plain_sentence_before_any_term():
    """Review: the box used "mean regret within δ", "validation oracle", R1 and C5 before saying
    what they are. It now opens with the answer in words, defines the terms, then gives the
    verdicts without restating the claims."""
    verdicts = ["supported"] * 2 + ["contradicted"] + ["undecided"] * 3
    rows = pd.DataFrame({"claim": "oracle", "dataset": list("abcdef"), "estimate": 0.0,
                         "n_seeds": 10, "p": 0.01, "verdict": verdicts,
                         "strength": "strong"})  # fmt: skip
    same = "the rule's split is as good as the best split found by training every split"
    assert split_choice.r1_answer(rows) == (
        f"Not on every federation: on 2 of the 6 federations {same}, on 1 the rule's split is "
        "clearly worse and on 3 the seeds cannot tell."
    )
    assert split_choice.r1_answer(rows.iloc[:2]) == f"Yes: on all 2 federations, {same}."
    assert split_choice.r1_answer(rows.iloc[3:]) == (
        "Not shown: on 3 of the 3 federations the seeds cannot tell."
    )
    short = split_choice.claim_sentence(rows, "oracle", restate=False)
    assert short.startswith("**Claim R1 is contradicted** (strong evidence): some part of it")
    # the intro's counts are the same parts' (it prints them, chapter 04 glues them)
    assert split_choice.r1_counts(rows) == {"r1_within": 2, "r1_beyond": 1, "r1_federations": 6}
    assert "It says" not in short


def test_c2s_measures_that_order_the_units_alike_are_named():
    """Gradient variance and gradient noise ranked chapter 03's units identically on every seed,
    so two of C2's parts per dataset were one piece of evidence: the chapter says so."""
    from playerfl_core.book.reports import sensitivity_study as S

    rows = []
    for ds in ("heart", "digits"):
        for seed in (0, 1):
            for depth in (1, 2, 3):
                values = {"grad_variance": depth, "grad_noise": 10.0 * depth,
                          "hessian_trace": (depth * (seed + 2)) % 3}  # fmt: skip
                rows += [(ds, seed, depth, m, v) for m, v in values.items()]
    analytics = pd.DataFrame(rows, columns=["dataset", "seed", "depth", "metric", "value"]).assign(
        other=-1, algorithm="local", stage="epoch 1"
    )
    measures = ("grad_variance", "grad_noise", "hessian_trace")
    text = S.same_order_text(analytics, "epoch 1", measures)
    assert "(4 seeds of 2 datasets): gradient variance (full data) and gradient noise" in text
    assert "Hessian" not in text
    lone = analytics[analytics["metric"] != "grad_noise"]
    assert S.same_order_text(lone, "epoch 1", ("grad_variance", "hessian_trace")) == ""


def test_a_median_and_its_interval_read_as_every_other_interval_in_the_book():
    """Chapter 05 wrote "0.873 [0.822, 0.892]" where every other page writes "0.873 (0.822–0.892)";
    a cell with fewer seeds than its dataset's others still says how many."""
    from playerfl_core.book.reports.comparison import ci_table

    s = pd.DataFrame(
        {
            "dataset": ["d", "d", "e"],
            "algorithm": ["a", "b", "a"],
            "lr": 0.1,
            "n_seeds": [3, 2, 3],
            "median": [0.5, 0.25, -0.01],
            "ci_low": [0.4, 0.2, -0.03],
            "ci_high": [0.6, 0.3, 0.02],
        }
    )
    t = ci_table(s, scale=100, digits=1)
    assert t.loc["a", "d"] == "50.0 (40.0–60.0)"
    assert t.loc["b", "d"] == "25.0 (20.0–30.0), 2 seeds"
    assert t.loc["a", "e"] == "\u22121.0 (\u22123.0 to 2.0)"
    assert list(t.columns) == ["d", "e"]


def test_the_papers_printed_p_reads_in_the_books_notation():
    """Chapter 06's "p printed" column showed the paper's "< 5e-3"."""
    from playerfl_core.book.reports.authors_choices import _printed_p

    assert _printed_p("< 5e-3") == "< 0.005" and _printed_p("0.043") == "0.043"
    assert _printed_p("< 5e-5") == "< 5\u00a0×\u00a010⁻⁵"


def test_fairness_beside_the_published_value_is_scaled_and_rounded_alike():
    """Chapter 06 showed our fairness at four decimals beside the paper's three (0.0533 | 0.090):
    both ×10³ at one decimal, as chapter 05 shows fairness."""
    from playerfl_core.book.reports import reproduction as R
    from playerfl_core.stats.published import published_wide

    theirs = published_wide("fairness_f1")
    ds = theirs.columns[0]
    ours = {"fairness_f1": theirs / 2}
    scale, digits = next((s, d) for n, s, d, _ in R.SIDE_BY_SIDE if n == "fairness_f1")
    out = R.side_by_side(ours, "fairness_f1", [ds], list(theirs.index), scale, digits)
    expected = (1e3 * theirs[ds]).round(1).dropna()
    assert out.iloc[:, 1].dropna().tolist() == expected.tolist()
    assert out.iloc[:, 0].dropna().tolist() == (1e3 * theirs[ds] / 2).round(1).dropna().tolist()


def test_rises_between_neighbouring_units_are_listed_in_depth_order():
    """Chapter 02's Table 19 listed digits' pairs as fc1→fc2, conv1→conv2, conv2→fc1: a pivot
    sorted them by the name codes Heart's fc1→fc2 had set."""
    from playerfl_core.measure.layer_studies import rises_by_stage

    rows = [("heart", "fc1→fc2")] + [("digits", p) for p in ("conv1→conv2", "conv2→fc1", "fc1→fc2")]
    rises = pd.DataFrame(
        [(ds, "local", st, pair, 1.0, 3) for ds, pair in rows for st in ("first", "final")],
        columns=["dataset", "algorithm", "stage", "pair", "rises", "n_seeds"],
    )
    wide = rises_by_stage(rises)
    assert list(wide.index) == rows and list(wide.columns) == ["first", "final"]


def test_the_timing_effect_lists_datasets_in_the_chapters_order(monkeypatch):
    """Chapter 06's Table 70 listed Digits, Fashion-MNIST, Heart while the chapter's other tables
    follow its dataset parameter (Fashion-MNIST, Heart, Digits)."""
    from playerfl_core.book.reports import authors_choices as RP

    monkeypatch.setattr(RP.M, "run_scores", lambda table, metric: table)  # runs' scores as given
    rows = [(d, "fedavg", 0.1, s, 0.5) for d in ("digits", "fmnist", "heart") for s in (0, 1)]
    runs = pd.DataFrame(rows, columns=["dataset", "algorithm", "lr", "seed", "value"])
    effect = RP.timing_effect(
        runs, runs.assign(value=0.6), ["fedavg"], ["fmnist", "heart", "digits"]
    )
    assert list(effect.index.get_level_values("dataset")) == ["fmnist", "heart", "digits"]
    assert effect["median_diff"].round(6).eq(0.1).all()


def test_the_authors_options_list_datasets_in_the_chapters_order(monkeypatch):
    """Chapter 06's Table 77 listed Heart before Fashion-MNIST while the chapter's other tables
    follow its dataset parameter (Fashion-MNIST, Heart, Digits)."""
    from types import SimpleNamespace

    from playerfl_core.book.reports import authors_choices as RP

    monkeypatch.setattr(RP.M, "run_scores", lambda table: table)  # runs' scores as given
    rows = [(d, a, 0.1, s, 0.5) for d in ("fmnist", "heart", "digits")
            for a in ("fedavg", "playerfl") for s in (0, 1)]  # fmt: skip
    runs = pd.DataFrame(rows, columns=["dataset", "algorithm", "lr", "seed", "value"])
    monkeypatch.setattr(
        RP, "run_grid",
        lambda names, *a, **k: SimpleNamespace(
            table=runs[runs["dataset"].isin(names)].assign(value=0.6)),
    )  # fmt: skip
    grid = SimpleNamespace(chosen=runs[["dataset", "algorithm", "lr"]].drop_duplicates())
    options, biggest = RP.option_effects(
        runs, grid, ["fmnist", "heart", "digits"], ["fedavg", "playerfl"], "quick"
    )
    assert list(dict.fromkeys(options.index.get_level_values("dataset"))) == [
        "Fashion-MNIST", "Heart"]  # fmt: skip
    assert options["median paired change"].eq(0.1).all() and "+0.100" in biggest


def test_our_splits_name_the_profile_they_come_from():
    """Chapter 06's "our p (all seeds)" gave Heart p = 1 where chapter 05's standard profile
    shows p = 2 on some seeds: the column names the profile, so no one reads a contradiction."""
    from playerfl_core.book.reports import authors_choices as RP
    from playerfl_core.stats.results import SERVER

    rows = [(d, "playerfl", s, SERVER, "split_p", p)
            for d, ps in {"fmnist": (3, 3), "heart": (1, 1)}.items()
            for s, p in enumerate(ps)]  # fmt: skip
    table = pd.DataFrame(
        rows, columns=["dataset", "algorithm", "seed", "client", "metric", "value"]
    ).assign(lr=0.01)  # a run's keys, as every results table has them
    shown = RP.split_comparison(table, "quick")
    assert list(shown.columns) == ["our p (quick profile, every seed)", "authors' p"]
    assert list(shown.index) == ["Fashion-MNIST", "Heart"]


def test_the_bottom_line_opens_on_every_claim_and_links_its_terms_first():
    """Chapter 06's Result box named no verdict for M1, used "validation oracle" and "regret"
    before the page defines them, and pointed to "R2's card below" (the cards stand at the end)."""
    import re
    from pathlib import Path

    from playerfl_core.book.reports import reproduction as RP

    verdicts = {"C1": "supported", "C2": "undecided", "M1": "contradicted", "C3": "undecided",
                "C4": "undecided", "C5": "undecided", "R1": "contradicted",
                "R2": "contradicted"}  # fmt: skip
    card = pd.DataFrame({"claim": list(verdicts), "verdict": list(verdicts.values())})
    text = RP.bottom_line(card)
    plain = re.sub(r"<[^>]+>", "", text)
    assert plain.startswith(
        "The book tests 8 claims, the paper's 5 (C1–C5) and 3 of its own (M1, R1 and R2): its "
        "evidence supports C1; contradicts M1, R1 and R2; and cannot decide C2–C5."
    ), plain
    assert "(M1)." in plain and "does not rank layers" in plain
    assert len(plain.split()) <= 120, plain  # a Result box's length
    assert "card below" not in plain and "its card in the scorecard" in plain
    for word in ("oracle", "regret", "δ"):  # the first use of each is a glossary link
        first = text.index(word)
        assert text.rfind("<a ", 0, first) > text.rfind("</a>", 0, first), word
    glossary = (Path(__file__).parents[1] / "chapters" / "glossary.md").read_text()
    terms = {re.sub(r"[^A-Za-z0-9]+", "-", line.strip()).strip("-")
             for line in glossary.splitlines() if re.match(r"^\S", line)}  # fmt: skip
    for anchor in re.findall(r'href="glossary\.html#term-([^"]+)"', text):
        assert anchor in terms, anchor
    lean = RP.bottom_line(card[card["claim"].str.startswith("C")])
    assert re.sub(r"<[^>]+>", "", lean) == (
        "The book tests 5 claims, the paper's 5 (C1–C5): its evidence supports C1 and cannot "
        "decide C2–C5."
    )


def test_the_client_gain_figure_keeps_the_chapters_dataset_order(monkeypatch):
    """Chapter 04's Fig. 18 ran Digits, Fashion-MNIST, Heart (the groupby's alphabet) while its
    caption, the bullets under it and every other figure of the page run Heart first."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from playerfl_core.book import split_plots

    per_seed = pd.DataFrame(
        {"dataset": ["heart"] * 4 + ["digits"] * 4 + ["fmnist"] * 4, "seed": [0, 0, 1, 1] * 3,
         "client": [0] * 12, "p": [0, 1] * 6, "gain": [0.0, 0.1] * 6}
    )  # fmt: skip
    monkeypatch.setattr(split_choice.O, "client_curves", lambda table: per_seed)
    curves = split_choice.client_curves(None, ["heart", "digits", "fmnist"])
    assert list(dict.fromkeys(curves["dataset"])) == ["heart", "digits", "fmnist"]
    fig = split_plots.client_gain_lines(curves)
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == ["Heart", "Digits", "Fashion-MNIST"]
    plt.close(fig)


def test_a_group_of_one_seed_has_no_interval():
    """Chapter 04's table of close decisions showed "0.052 (0.052–0.052)" for one seed."""
    from playerfl_core.study import split_oracle as O

    reg = pd.DataFrame(
        {"dataset": ["fmnist"] * 3, "margin": [0.1, 0.5, 0.6], "regret": [0.052, 0.0, 0.01]}
    )
    near = O.near_threshold_regret(reg, 0.25)
    one = near[near["near"]].iloc[0]
    assert one["n_seeds"] == 1 and pd.isna(one["lo"]) and pd.isna(one["hi"])
    table = split_choice.near_threshold_table(near, 0.25)
    body = table._repr_html_().split("</style>")[-1]
    assert ">0.052 (–)<" in body and "0.052–0.052" not in body, body
    assert ">0.005 (0.000–0.010)<" in body
    assert "a single seed, which gives no interval" in table.caption
    many = split_choice.near_threshold_table(near[~near["near"]], 0.25)
    assert "single seed" not in many.caption


def test_the_thresholds_common_to_every_dataset_read_as_a_sentence():
    """Chapter 03's Fig. 14 read "the paper's transition layers are reproduced on every dataset
    in every seed by no threshold of the grid"; the subject now comes first."""
    from playerfl_core.book.reports.sensitivity_study import threshold_numbers

    rows = [("heart", "paper_transition", t, a) for t, a in ((1.0, 0.5), (2.0, 0.9))]
    rows += [("heart", "authors_config", t, a) for t, a in ((1.0, 1.0), (2.0, 1.0))]
    agreement = pd.DataFrame(rows, columns=["dataset", "reference", "threshold", "agreement"])
    common = threshold_numbers(agreement, ["heart"])["threshold_common"]
    assert common == (
        "no threshold of the grid reproduces the paper's transition layers on every dataset in "
        "every seed; t ∈ {1, 2} reproduces the authors' hard-coded splits on every dataset in "
        "every seed"
    )


def test_the_averaging_lines_write_p_values_as_the_table_does():
    """Chapter 03a's lines read "p = 0.00803" beside its table's 0.0080."""
    from types import SimpleNamespace

    from playerfl_core.book.reports.averaging import ranking_numbers

    part = SimpleNamespace(part="Heart", estimate=0.72, n=5, p_adjusted=0.00803,
                           verdict="supported", strength="strong")  # fmt: skip
    verdict = SimpleNamespace(verdict="supported", strength="strong", reason="")
    lines = ranking_numbers({"first_order": {"parts": [part], "verdict": verdict}})
    assert lines["lines_first_order"] == (
        "- Heart: mean ρ = 0.72 over 5 seeds, Holm-adjusted p = 0.0080: supported (strong)."
    )
    weaker = SimpleNamespace(part="Digits", estimate=-0.1, n=5, p_adjusted=0.4,
                             verdict="undecided", strength="weak")  # fmt: skip
    both = ranking_numbers({"first_order": {"parts": [weaker, part], "verdict": verdict}})
    assert both["strongest_first_order"] == "Heart: mean rank correlation 0.72 over 5 seeds"


def _r1_regrets(ds, values):
    return pd.DataFrame({"dataset": ds, "lr": 0.0, "seed": range(len(values)), "p_rule": 1,
                         "p_oracle": 1, "regret": values})  # fmt: skip


def test_the_scorecards_r1_says_what_its_regrets_were_scored_on_and_no_protocol_history(
    monkeypatch,
):
    """The scorecard's R1 named its sweep's seeds but not that its Fashion-MNIST regrets were
    chosen and scored on 2,000 images per client; and its reason carried how the verdict moved
    under another protocol, which is the appendix's table."""
    import numpy as np

    from playerfl_core.book.reports import reproduction
    from playerfl_core.study import rescore as V

    one = _r1_regrets("fmnist", np.zeros(20))
    monkeypatch.setattr(V, "r1_family", lambda r: r.assign(rescored=True, large_val=True))
    claim = reproduction._r1_claim(one, "standard: 1")
    assert claim.profile == (
        "standard: 1; Fashion-MNIST regrets on 2,000 validation and test images per client"
    )
    assert "own tuned rate" not in claim.verdict.reason and "moves" not in claim.verdict.reason
    monkeypatch.setattr(V, "r1_family", lambda r: r.assign(rescored=False, large_val=False))
    assert reproduction._r1_claim(one, "standard: 1").profile == "standard: 1"


def test_the_sizes_a_grid_was_run_at_count_clients_and_training_examples_per_run():
    """Chapter 05's Result box says at which sizes its verdicts were decided: per dataset the
    clients and their training examples summed (a validation or test count never enters)."""
    from playerfl_core.book.reports import comparison as R

    rows = []
    for seed in (0, 1, 2):
        for client, n in enumerate((100, 50 + seed)):
            rows.append(("heart", "fedavg", seed, client, 0, "test", "n_samples", 999))
            for rnd in (0, 1):  # a count repeated per round is counted once
                rows.append(("heart", "fedavg", seed, client, rnd, "train", "n_samples", n))
        rows.append(("digits", "local", seed, 0, 0, "train", "n_samples", 1200))
    table = pd.DataFrame(
        rows,
        columns=["dataset", "algorithm", "seed", "client", "round", "split", "metric", "value"],
    )
    assert R.sizes_text(table) == (
        "Heart 2 clients, 151 training examples; Digits 1 clients, 1,200"
    )


def test_the_scale_of_a_run_beside_the_papers_reads_its_settings_and_its_runs():
    """Chapter 06's Result box says at which sizes the ordering was compared: clients and
    training examples from the runs, the profile's rounds beside the paper's, the model's width
    when it is not the full one."""
    from playerfl_core.book.reports import reproduction as RP
    from playerfl_core.fl.profiles import training_settings

    rows = [("fmnist", "fedavg", 0, c, 0, "train", "n_samples", 100) for c in range(5)]
    rows += [("heart", "fedavg", 0, 0, 0, "train", "n_samples", 7)]
    table = pd.DataFrame(
        rows,
        columns=["dataset", "algorithm", "seed", "client", "round", "split", "metric", "value"],
    )
    fmnist, heart = training_settings("fmnist", "quick"), training_settings("heart", "quick")
    assert RP.scale_text(table, "fmnist", "quick") == (
        f"Fashion-MNIST 5 clients, 500 training examples, {fmnist['rounds']} rounds (the "
        f"paper's: 100), the model at width {fmnist['width']:g}"
    )
    assert fmnist["width"] != 1 and heart["width"] == 1
    assert RP.scale_text(table, "heart", "quick") == (
        f"Heart 1 clients, 7 training examples, {heart['rounds']} rounds (the paper's: 20)"
    )
