"""The measured standard error of a client's score (``measure.score_noise``, issue 34 item 5)."""

import numpy as np
import pandas as pd
import torch
from sklearn.metrics import f1_score

from playerfl_core.measure.score_noise import resampled_scores, run_se, score_noise


def _labels_and_preds(n=3000, classes=4, right=0.7, seed=0):
    gen = torch.Generator().manual_seed(seed)
    y = torch.randint(classes, (n,), generator=gen)
    wrong = torch.rand(n, generator=gen) > right
    return y, torch.where(wrong, (y + 1) % classes, y)


def test_each_resample_scores_as_scikit_learn_does():
    y, pred = _labels_and_preds(n=200)
    acc, f1 = resampled_scores(y, pred, 30, draws=5, seed=3, num_classes=4)
    idx = torch.randint(200, (5, 30), generator=torch.Generator().manual_seed(3))
    for k in range(5):
        yk, pk = y[idx[k]].numpy(), pred[idx[k]].numpy()
        assert acc[k] == (yk == pk).mean()
        assert f1[k] == f1_score(yk, pk, average="macro", zero_division=0)


def test_accuracy_spread_matches_the_binomial_formula_and_shrinks_with_n():
    y, pred = _labels_and_preds()
    noise = score_noise(y, pred, (80, 2000), num_classes=4, draws=4000).set_index("n")
    assert np.allclose(noise["accuracy_se"], noise["binomial_se"], rtol=0.06)
    ratio = noise.loc[80, "macro_f1_se"] / noise.loc[2000, "macro_f1_se"]
    assert 4.4 < ratio < 5.6  # sqrt(2000 / 80) = 5
    perfect = score_noise(y, y, (50,), num_classes=4, draws=100)
    assert perfect.loc[0, "macro_f1_se"] == 0 and perfect.loc[0, "accuracy_se"] == 0


def test_a_runs_error_weights_its_clients_by_training_share():
    noise = pd.DataFrame(
        {"client": ["a", "b", "a", "b"], "weight": [0.75, 0.25] * 2, "n": [80, 80, 2000, 2000],
         "macro_f1_se": [0.04, 0.08, 0.01, 0.02]}
    )  # fmt: skip
    assert np.allclose(run_se(noise).tolist(), [np.hypot(0.03, 0.02), np.hypot(0.0075, 0.005)])


def test_a_regret_scores_both_splits_on_the_same_images_so_shared_errors_cancel():
    from playerfl_core.measure.score_noise import paired_regret_se

    y, rule = _labels_and_preds(n=1000, right=0.7, seed=1)
    oracle = rule.clone()
    oracle[:100] = y[:100]  # the oracle's model differs on a tenth of the images
    clients = [(0.6, y, rule, oracle), (0.4, y, oracle, rule)]
    paired, unpaired = paired_regret_se(clients, 80, num_classes=4, draws=3000, seed=5)
    assert 0 < paired < unpaired / 2
    same = [(1.0, y, rule, rule)]
    assert paired_regret_se(same, 80, num_classes=4, draws=50)[0] == 0
    # by hand, client by client, on the same resampled images
    f1 = [[resampled_scores(yc, m, 80, 3000, 5 + 97 * i, 4)[1] for m in (r, o)]
          for i, (_, yc, r, o) in enumerate(clients)]  # fmt: skip
    regret = 0.6 * (f1[0][1] - f1[0][0]) + 0.4 * (f1[1][1] - f1[1][0])
    assert np.isclose(paired, regret.std())
