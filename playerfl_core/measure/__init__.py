"""Layer measurements: what the layers of trained models look like, across clients and seeds.

Here: the analytics table (``layer_measure``: similarity, curvature, gradient measures per
layer), the measures themselves (``analytics``), the split studies' measurements
(``split_studies``), the averaging check (``averaging_check``), and ``layer_studies``, the one
import the chapters use for all of them.

May import: ``stats``, ``fl`` and ``data_prep``. Imported by ``study``, ``book`` and the entry
points.
"""
