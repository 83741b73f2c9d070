"""Statistics over finished runs: tables in, numbers and verdicts out; nothing here trains.

Here: selecting rows of the long results table (``results``), statistics over seeds
(``seed_stats``), the book's metrics (``metrics``), the exact tests (``exact_tests``), the
decision rule (``decisions``), the evidence a claim's tests give (``evidence``), the claims
(``claims``) and their scorecard (``scorecard``), and the paper's published numbers
(``published``).

May import: ``fl`` and ``data_prep``. Imported by ``measure``, ``study``, ``flower``, ``book``
and the entry points.
"""
