"""Local adaptation ("FineTune"): FedAvg, then every client fine-tunes the final global model.

The simplest personalisation: federate for all rounds, then adapt the result locally. The
fine-tuned models are evaluated as one extra round (index R = ``config.rounds``), so
best-validation selection later chooses per client between the federated rounds and the
adapted model (the authors keep the extra epoch only if it lowers validation loss, §6.6).
"""

from playerfl_core.fl.algorithms.base import Algorithm, integer


class FineTune(Algorithm):
    """FedAvg for all rounds; at the end each client trains the final global model locally
    and deploys the result (before that, it deploys the global model)."""

    name = "finetune"
    shares = "every unit, every round; nothing during the final fine-tuning"
    key_hyperparameter = "finetune_epochs"
    paper = "Wang et al., 2019 (local adaptation)"
    deploys = (
        "every training round: the aggregated global model; after the last: the final global "
        "model fine-tuned "
        "on the client's own training data"
    )

    @classmethod
    def defaults(cls):
        return {"finetune_epochs": 1}

    @classmethod
    def valid(cls):
        return {"finetune_epochs": integer(1)}

    final_step = True

    def finish_client(self, run, client):
        loss = client.train_epoch(epochs=self.finetune_epochs)
        run.log(client.id, run.config.rounds, "train", "loss", loss, client.n_train)
