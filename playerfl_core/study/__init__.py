"""Studies: many runs, stored, planned, tuned, archived and swept.

Here: the run store (``run_store``: one run's name, checksum, code fingerprint), the machine a
run was computed on (``machine``), grids (``grid_plan`` plans and loads, ``grid_runner`` and
``workers`` execute), learning-rate tuning (``tuning``), archives of stores and their
verification (``archive``, ``verification``), the split sweeps (``split_sweeps`` runs them,
``split_oracle`` reads them, ``split_claims`` judges them), and ``experiments``, the one import
for a study.

May import: ``measure``, ``stats``, ``fl`` and ``data_prep``. Imported by ``flower``, ``book``
and the entry points.
"""
