"""PLayer-FL-Random: the PLayer-FL engine with a random split, to test the split rule itself.

If federating a random prefix works as well as PLayer-FL's chosen prefix, the sensitivity rule
adds nothing. After the first local epoch the split PLayer-FL would choose, p*, is computed
exactly as PLayer-FL does; then p is drawn uniformly from {1, …, L−1} \\ {p*} with a generator
seeded by the run seed. So p is never PLayer-FL's split and never the whole model (the head
stays local, as in PLayer-FL). The authors' code redraws a prefix of its configured layer list
(appendix §6.12), which is the same idea with a hard-coded p*.
"""

import numpy as np

from playerfl_core.fl.algorithms.base import at_least
from playerfl_core.fl.algorithms.playerfl import PLayerFL, PrefixFederation
from playerfl_core.fl.schema import SERVER
from playerfl_core.fl.seeding import client_seed
from playerfl_core.fl.sensitivity import DEFAULT_THRESHOLD
from playerfl_core.fl.units import unit_names


class PLayerFLRandom(PrefixFederation):
    """Random prefix length p ≠ PLayer-FL's p*; needs at least three layer units.

    Clients deploy their own model: the federated prefix plus their local units.
    """

    name = "playerfl_random"
    shares = (
        "units 1..p, with p drawn at random among the splits PLayer-FL could choose (from the "
        "first unit alone to all but the head), never the one its rule chooses"
    )
    key_hyperparameter = "threshold"
    paper = "Elhussein & Gürsoy, 2025 (ablation)"

    @classmethod
    def defaults(cls):
        return {"threshold": DEFAULT_THRESHOLD}

    @classmethod
    def valid(cls):
        return {"threshold": at_least(0)}

    def setup(self, run):
        super().setup(run)
        units = unit_names(run.template)
        if len(units) < 3:
            raise ValueError(
                f"playerfl_random needs a model with at least 3 layer units (it has {units}): "
                "with L = 2, PLayer-FL's split p* = 1 is the only prefix that keeps the head "
                "local, so no different random split exists."
            )

    def server_step(self, run, rnd):
        if self.p is None:
            p_star = PLayerFL().choose(run, self.threshold)
            run.info["playerfl_split_p"] = p_star
            run.log(SERVER, 0, "server", "playerfl_split_p", p_star)
            self.record_split(run, self.draw(run, p_star))
        super().server_step(run, rnd)

    @staticmethod
    def draw(run, p_star: int) -> int:
        """Uniform over {1..L−1} minus p*, from a generator seeded by the run seed."""
        return random_split(run.config.seed, len(unit_names(run.template)), p_star)


def random_split(seed: int, n_units: int, p_star: int) -> int:
    """The split PLayer-FL-Random draws on ``seed``: uniform over {1..L−1} \\ {p*}.

    A pure function of (seed, L, p*), so a split sweep can read off what PLayer-FL-Random
    would have scored at the same learning rate (its run equals the prefix run at this p).
    The rule's own split is excluded by construction: never p*, whatever the seed.
    """
    candidates = [p for p in range(1, n_units) if p != p_star]
    if not candidates:
        raise ValueError(
            f"No split in 1..{n_units - 1} differs from p* = {p_star}: PLayer-FL-Random needs "
            "at least 3 layer units."
        )
    rng = np.random.default_rng(client_seed(seed, SERVER, "playerfl_random"))
    return int(rng.choice(candidates))
