"""The same runs over Flower: silos as separate processes, the engine's rounds as messages.

- ``wire``: what server and silos agree on: protocol, calls, a job, errors, tensors in records
- ``client``: the silo side: each SuperNode's ClientApp keeps its silo as a one-client run
- ``server_link``: the server's end: ``FlowerLink`` answers the round loop with messages
- ``link``: every algorithm on Flower: serves and simulates
- ``checkpoints``: checkpoints, so a run a lost silo stopped resumes at its last whole round
- ``credentials``: certificates and keys for a loopback federation, made locally
- ``deploy``: the Flower App for real processes (``flwr run``)
- ``silo_data``: one silo's own data file, for a SuperNode that must hold nothing else
- ``federation``: the processes recipe behind ``make silos``: a SuperLink, a SuperNode per silo
- ``processes``: the recipe's processes: ports, executables, process groups that stop together

May import: ``study``, ``measure``, ``stats``, ``fl`` and ``data_prep``. Imported by the entry
points only.
"""
