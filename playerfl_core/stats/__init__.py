"""Statistics over finished runs: tables in, numbers and verdicts out; nothing here trains.

- ``results``: reading the long results table: round selection, per-client scores, save/load
- ``metrics``: headline scores, fairness, incentives, ranks and tests
- ``rank_tests``: ranks, Friedman, Nemenyi and Wilcoxon-Holm over an algorithms × blocks table
- ``exact_tests``: exact tests over few replicates (Spearman, Wilcoxon, sign-flip)
- ``seed_stats``: intervals, trends and correlations over seeds of the layer measurements
- ``p_values``: how a p-value is written on the page
- ``decisions``: the decision rule: a p-value and an effect become a verdict with a strength
- ``evidence``: the tests a claim's parts run, each decided by that rule
- ``claim_list``: what each claim states, which chapter tests it, how it is assembled
- ``claims``: the claims' verdicts, the statistics behind every "supported"
- ``layer_claims``: the per-layer claims C1 and C2 and their tables
- ``split_verdicts``: the split study's verdicts: rule against oracle, C5, the rules' test
- ``scorecard``: the claims' verdicts as one table
- ``published``: the paper's published numbers, as data

May import: ``fl`` and ``data_prep``. Imported by ``measure``, ``study``, ``flower``, ``book``
and the entry points.
"""
