"""Statistics over finished runs: tables in, numbers and verdicts out; nothing here trains.

Here: selecting rows of the long results table (``results``), statistics over seeds
(``seed_stats``), the book's metrics (``metrics``, with its ranks and rank tests:
``rank_tests``), the exact tests (``exact_tests``), the decision rule (``decisions``), the
evidence a claim's tests give (``evidence``), the claims (``claims``: what each states in
``claim_list``, the per-layer ones in ``layer_claims``, the split study's verdicts in
``split_verdicts``) and their scorecard (``scorecard``), and the paper's published numbers
(``published``).

May import: ``fl`` and ``data_prep``. Imported by ``measure``, ``study``, ``flower``, ``book``
and the entry points.
"""
