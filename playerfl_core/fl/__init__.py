"""The federated engine: what one run computes, and nothing that reads runs afterwards.

Here: the round loop (``engine``, its ``config`` and ``client``; ``batched`` drives many runs as
one computation), the algorithms (``algorithms/``), models and their layer units, losses,
scoring, seeding, divergence, the results table's ``schema``, the profiles' run settings, and
the layer ``sensitivity`` that PLayer-FL computes inside a run to choose its split (so it sits
here, not in ``measure``), and the algorithms' display ``names`` (which verdicts in ``stats``
and figures in ``book`` share).

May import: ``data_prep`` only. Every other wing may import it.
"""
