"""One comparison of two protocols' verdicts: what changed, the sentence, the cost."""

import numpy as np
import pandas as pd
import pytest

from playerfl_core.book.reports import protocol_comparison as PC


def _regrets(ds, values, p_oracle=1):
    return pd.DataFrame({"dataset": ds, "lr": 0.0, "seed": range(len(values)), "p_rule": 1,
                         "p_oracle": p_oracle, "regret": values})  # fmt: skip


def test_a_changed_verdict_is_listed_and_named():
    zeros = np.zeros(20)
    a = pd.concat([_regrets("heart", zeros), _regrets("digits", zeros)])
    b = pd.concat([_regrets("heart", np.full(20, 0.08), p_oracle=3), _regrets("digits", zeros)])
    c = PC.r1_side_by_side(a, b).set_index("dataset")
    assert c.loc["heart", "changed"] and not c.loc["digits", "changed"]
    assert (c.loc["heart", "a_verdict"], c.loc["heart", "b_verdict"]) == ("within δ", "beyond δ")
    assert c.loc["heart", "b_oracle"] == 3 and c.loc["heart", "a_oracle"] == 1
    assert c.loc["heart", "b"] == pytest.approx(0.08) and c.loc["heart", "a"] == 0
    frame = c.reset_index()
    assert PC.moves(frame) == ["Heart (from within δ to beyond δ)"]
    assert PC.summary(frame, "Rescoring") == (
        "Rescoring changes 1 of the 2 verdicts (Heart); the mean regret is higher on 1, "
        "lower on 0 and unchanged on 1 of the 2 federations."
    )
    shown = PC.table(frame, ("regret, A", "verdict, A"), ("regret, B", "verdict, B"))
    assert shown.loc["Heart", "verdict, B"] == "beyond δ"
    assert list(shown.columns) == ["regret, A", "verdict, A", "regret, B", "verdict, B"]


def test_identical_protocols_change_no_verdict():
    a = pd.concat([_regrets("heart", np.linspace(0, 0.04, 20)), _regrets("digits", np.zeros(20))])
    c = PC.r1_side_by_side(a, a)
    assert not c["changed"].any() and PC.moves(c) == []
    assert (c["a"] == c["b"]).all() and (c["a_verdict"] == c["b_verdict"]).all()
    assert PC.summary(c, "Nothing") == (
        "Nothing changes neither of the two verdicts; the mean regret is higher on 0, lower on 0 "
        "and unchanged on 2 of the 2 federations."
    )


def test_a_protocol_on_fewer_seeds_is_read_against_the_same_seeds():
    a = pd.concat([_regrets("heart", np.r_[np.zeros(20), np.full(10, 0.3)])])
    b = _regrets("heart", np.zeros(20))
    c = PC.r1_side_by_side(a, b)
    assert c.loc[0, "n_seeds"] == 20 and c.loc[0, "a"] == 0


def test_the_cost_is_read_from_the_record():
    record = {"runs": 120, "cpu_seconds": 8640.0, "identical_to_committed": 120}
    cost = PC.Cost.of(record)
    assert cost.per_run() == "2.4 CPU-hours for its 120 runs (72 CPU-seconds per run, one thread)"
    assert cost.retrained(" for 40 seeds") == (
        "120 runs trained again for 40 seeds, 2.4 CPU-hours in all, each run on one core; every "
        "one identical to its committed run, row for row"
    )
    differs = PC.Cost.of({**record, "identical_to_committed": 100, "max_abs_diff": 3e-7})
    assert differs.retrained().endswith("100 of them identical to their committed runs "
                                        "(largest difference 3e-07)")  # fmt: skip
    assert PC.Cost(5, 1800.0).time() == "30 CPU-minutes"
    assert PC.Cost(5, 4320.0).time() == "1.2 CPU-hours"
