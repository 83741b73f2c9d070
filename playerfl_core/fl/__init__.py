"""The federated engine: what one run computes, and nothing that reads runs afterwards.

- ``engine``: the round loop (train, share, evaluate), one run's results table
- ``config``: a run's settings (``RunConfig``) and their checks, made before any training
- ``client``: one client's model, optimiser, generators and data, kept between rounds
- ``batched``: many runs of one federation as one computation
- ``algorithms/``: the registry and every algorithm, each four answers to the engine
- ``models``: the model zoo, each model's layer units in forward order
- ``units``: layer units, the vocabulary in which algorithms say what they share
- ``losses``: the task losses a run can train with
- ``scoring``: classification scores from one confusion matrix
- ``seeding``: per-client seed streams, the same for every algorithm of a run
- ``determinism``: deterministic CUDA kernels for the span of a run
- ``divergence``: when a run counts as diverged
- ``errors``: the errors a run can raise
- ``schema``: the long results table's columns, the contract with everything after a run
- ``profiles``: the profiles and a dataset's training settings under each
- ``sensitivity``: federation sensitivity and PLayer-FL's split (computed inside a run, so here)
- ``split_rules``: split rules as a family, from what clients know after their first epoch
- ``names``: the algorithms' display names, shared by ``stats`` verdicts and ``book`` figures

May import: ``data_prep`` only. Every other wing may import it.
"""
