"""Studies: many runs, stored, planned, tuned, archived and swept.

Here: the run store (``run_store``: one run's name, checksum, code fingerprint), the machine a
run was computed on (``machine``), grids (``grid`` runs or loads one: ``grid_plan`` plans it,
``grid_runner`` executes it on a backend, ``backends``: this machine's ``workers`` or a Ray
cluster, ``ray_cluster``; ``grid_cost`` estimates it, ``grid_result`` is what comes back),
learning-rate tuning (``tuning``), archives of stores and their verification (``archive``,
``verification``; ``code_versions``: which earlier code gives today's runs bit for bit), the
split sweeps (``split_sweeps`` runs or loads them, ``split_scores`` scores them and the rule's
regret, ``split_oracle`` judges C5, stability and heterogeneity and is the one import for
chapters), ``paper_scale``, the paper-size sweep declared as data and computed in
chunks with the batched driver, the scale ladder's rungs (``rungs``) and the rescores on larger
evaluation sets (``rescore``), each study declared as data (``declaration``, ``registry``) and
computed by one ``runner``, and ``experiments``, the one import for a study.

May import: ``measure``, ``stats``, ``fl`` and ``data_prep``. Imported by ``flower``, ``book``
and the entry points.
"""
