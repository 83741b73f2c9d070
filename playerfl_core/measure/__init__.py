"""Layer measurements: what the layers of trained models look like, across clients and seeds.

- ``layer_measure``: the driver: train, and measure every client's model per unit
- ``analytics``: the measures: similarity, curvature and gradient statistics per unit
- ``split_studies``: the split from clients' models, its data needs, threshold and cost
- ``averaging_check``: what federating a unit does to a client's loss, measured and predicted
- ``score_noise``: how far a client's score moves from the draw of its test images alone
- ``layer_studies``: the public names in one place, the chapters' one import

May import: ``stats``, ``fl`` and ``data_prep``. Imported by ``study``, ``book`` and the entry
points.
"""
