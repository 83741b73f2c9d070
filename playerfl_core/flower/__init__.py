"""The same runs over Flower: silos as separate processes, the engine's rounds as messages.

Here: what crosses the wire (``wire``), the silo side (``client``) and the server side
(``link``: it serves and simulates; ``server_link``: the server's end of the conversation),
checkpoints for resuming (``checkpoints``), certificates and keys (``credentials``), the deployed
Flower App (``deploy``), each silo's own data file (``silo_data``), and the processes recipe
behind ``make silos`` (``federation``, with its ``processes``).

May import: ``study``, ``measure``, ``stats``, ``fl`` and ``data_prep``. Imported by the entry
points only.
"""
