"""Local training: each client trains alone; nothing is shared."""

from playerfl_core.algorithms.base import Algorithm


class Local(Algorithm):
    name = "local"
    deploys = "the client's own locally trained model"

    def shared_units(self, run, client, rnd):
        return ()
