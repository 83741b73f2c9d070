"""Chapter 04's pooling variants of the rule (the training-weighted mean of the paper, the
median, the geometric mean) against the paper's on the same seeds: the paired test and its lines."""

from __future__ import annotations

import numpy as np
import pandas as pd

from playerfl_core.stats.split_verdicts import decide_family, difference_evidence
from playerfl_core.study.split_scores import interval


def variant_comparison(regrets: pd.DataFrame) -> pd.DataFrame:
    """Each rule variant against the paper's rule on the same seeds: per dataset the paired
    difference regret(paper) − regret(variant) (> 0: the variant is better), tested with Holm over
    the rows. Columns: dataset, variant, mean, lo, hi, n_seeds, p_holm, verdict."""
    wide = regrets.pivot_table(index=["dataset", "seed"], columns="variant", values="regret")
    rows, parts, same = [], [], []
    for ds in regrets["dataset"].unique():  # the regrets' order, not pivot_table's alphabet
        g = wide.xs(ds, level="dataset", drop_level=False)
        for v in [c for c in g.columns if c != "paper"]:
            d = (g["paper"] - g[v]).dropna().to_numpy()
            rows.append((ds, v, *interval(d), len(d)))
            parts.append(difference_evidence(d, f"{ds} | {v}"))
            same.append(len(d) > 0 and not d.any())
    decided = decide_family(parts)
    out = pd.DataFrame(rows, columns=["dataset", "variant", "mean", "lo", "hi", "n_seeds"])
    out["p_holm"] = [e.p_adjusted for e in decided]
    words = {"supported": "better", "contradicted": "worse", "undecided": "undecided"}
    out["verdict"] = [
        SAME_REGRET if s else TOO_FEW if np.isnan(e.pvalue) else words[e.verdict]
        for s, e in zip(same, decided, strict=True)
    ]
    return out


SAME_REGRET = "the same regret"
"""A variant's verdict where its regret equals the paper's rule's on every seed."""
TOO_FEW = "undecided: too few seeds differ to test"
"""A variant's verdict where too few seeds differ for any test to reach α (none is run)."""
