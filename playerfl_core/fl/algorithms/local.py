"""Local training: each client trains alone; nothing is shared."""

from playerfl_core.fl.algorithms.base import Algorithm


class Local(Algorithm):
    name = "local"
    shares = "nothing"
    key_hyperparameter = None
    paper = "none (the no-federation baseline)"
    deploys = "the client's own locally trained model"

    def shared_units(self, run, client, rnd):
        return ()
