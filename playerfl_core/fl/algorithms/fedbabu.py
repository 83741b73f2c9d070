"""FedBABU (Oh et al., 2022): federate the body with a frozen random head, then fine-tune.

Body = every layer unit but the last; head = the last unit of the model's unit list. During
federation the head stays at the shared random initialisation (no gradient, not in the
optimiser) and only body units are averaged: a fixed head makes all clients learn features for
the same classifier, which the paper shows generalises better than training head and body
together. After the last round every client fine-tunes locally and deploys the result. We
fine-tune the full model, as FedBABU does for personalisation (``finetune="head"`` tunes only
the head, like the authors' code, appendix §6.7); the authors also used two units as the head
of the image models (§10.2, defect 13), we use the last unit only.
"""

from playerfl_core.fl.algorithms.base import Algorithm, integer, one_of
from playerfl_core.fl.units import param_names, unit_names


class FedBABU(Algorithm):
    """Body federated with a frozen head; fine-tuned for ``finetune_epochs`` at the end.

    Clients deploy the federated model (shared body, initial head) during federation and their
    fine-tuned model afterwards.
    """

    name = "fedbabu"
    shares = "every unit but the head (the head stays frozen at the common initialisation)"
    key_hyperparameter = "finetune_epochs"
    paper = "Oh et al., 2022"
    deploys = (
        "every training round: the federated body with the frozen initial head; after the last: "
        "that model fine-tuned (all units by default) on the client's own training data"
    )

    @classmethod
    def defaults(cls):
        return {"finetune_epochs": 1, "finetune": "full"}

    @classmethod
    def valid(cls):
        return {"finetune_epochs": integer(1), "finetune": one_of("full", "head")}

    @staticmethod
    def head(model) -> str:
        return unit_names(model)[-1]

    final_step = True

    def setup(self, run):
        if self.finetune not in ("full", "head"):
            raise ValueError(f"fedbabu: finetune must be 'full' or 'head', got {self.finetune!r}.")

    def setup_client(self, run, client):
        self._train_only(client, body=True, head=False)

    def shared_units(self, run, client, rnd):
        return unit_names(client.model)[:-1]

    def finish_client(self, run, client):
        self._train_only(client, body=self.finetune == "full", head=True)
        loss = client.train_epoch(epochs=self.finetune_epochs)
        run.log(client.id, run.config.rounds, "train", "loss", loss, client.n_train)

    def _train_only(self, client, body: bool, head: bool) -> None:
        """Set which parts train and give the client a fresh optimiser over exactly those."""
        head_names = set(param_names(client.model, [self.head(client.model)]))
        for n, p in client.model.named_parameters():
            p.requires_grad_(head if n in head_names else body)
        client.optimizer = client.make_optimizer(
            [p for p in client.model.parameters() if p.requires_grad]
        )
