"""Tables of chapter 01 ("PLayer-FL in one run"): the chosen splits and who gains."""

from __future__ import annotations

import functools

import pandas as pd

from playerfl_core.book.prose import first_units, number_word
from playerfl_core.book.style import algorithm_label, dataset_label
from playerfl_core.fl.algorithms import get_algorithm
from playerfl_core.fl.sensitivity import relative_rises
from playerfl_core.stats.results import client_scores
from playerfl_core.study.archive import archive_dir, load_archive
from playerfl_core.study.code_versions import equivalent_codes
from playerfl_core.study.run_store import RunSpec, code_fingerprint


def split_table(sens: pd.DataFrame, splits: dict[str, int]) -> pd.DataFrame:
    """Per dataset: the split p, the federated units, and the server's relative rise at p."""
    rows = []
    for name, p in splits.items():
        units = list(sens[sens["dataset"] == name]["unit"])
        rows.append(
            {"dataset": dataset_label(name), "p": p, "federated units": ", ".join(units[:p]),
             "rise at p": round(float(_rises(sens, name)[p - 1]), 2)}
        )  # fmt: skip
    return pd.DataFrame(rows).set_index("dataset")


def split_sentence(table: pd.DataFrame) -> str:
    """Every dataset's split of :func:`split_table` in one sentence ("On Fashion-MNIST the rule
    federates the first three units (p = 3: …); on Heart, the first unit (p = 1: fc1). …")."""
    parts = []
    for name, r in table.iterrows():
        units = f"p = {r['p']}: {r['federated units']}" if r["p"] else "p = 0"
        verb = "the rule federates " if not parts else ""
        parts.append(f"{name}{',' if parts else ''} {verb}{first_units(r['p'])} ({units})")
    return f"On {'; on '.join(parts)}. Each client keeps the rest local."


def _rises(sens: pd.DataFrame, name: str):
    """F_{l+1}/F_l − 1, l = 1 … L−1, of the server's averaged profile of ``name``."""
    return relative_rises(sens[sens["dataset"] == name].sort_values("unit_index")["sensitivity"])


def close_calls(sens: pd.DataFrame, splits: dict[str, int], threshold: float,
                margin: float = 0.25) -> str:  # fmt: skip
    """One sentence: the datasets whose decision was close (a rise within ``margin``·t of t)."""
    close = []
    for name, p in splits.items():
        rises = _rises(sens, name)[:p]
        near = [r for r in rises if abs(r - threshold) <= margin * threshold]
        if near:
            close.append(f"on {dataset_label(name)} a rise of {near[0]:.2f} against t = "
                          f"{threshold:g}")  # fmt: skip
    if not close:
        return (f"None of this run's decisions was close: every rise the rule looked at lies "
                f"more than {margin:g}·t from t.")  # fmt: skip
    n = number_word(len(close)).capitalize()
    which = f"{n} of this run's decisions {'was' if len(close) == 1 else 'were'}"
    return (
        f"{which} close ({'; '.join(close)}, within {margin:g}·t of t): another first epoch "
        "(another seed, or another CPU's last bits) could put that split elsewhere. Chapter 04 "
        f"counts {{doc}}`how often the split moves over seeds <{STABILITY}>` and what close "
        "decisions cost."
    )


STABILITY = "04_does_the_rule_pick_the_right_split"
"""The chapter that counts the split over seeds (:func:`close_calls` links it)."""


def per_client_scores(results: pd.DataFrame, federations: dict) -> pd.DataFrame:
    """Each client's test macro-F1 at its best-validation round, with its name (long format)."""
    scores = client_scores(results, metric="macro_f1", split="test", selection="best_val")
    names = {(n, i): c.name for n, fd in federations.items() for i, c in enumerate(fd.clients)}
    keys = zip(scores["dataset"], scores["client"], strict=True)
    scores["client_name"] = [names[k] for k in keys]
    return scores.sort_values(["client"], kind="stable")


def wide_scores(scores: pd.DataFrame, algorithms) -> pd.DataFrame:
    """(dataset, client) × algorithm, internal names (for comparisons)."""
    index = ["dataset", "client_name"]
    return scores.pivot_table(index=index, columns="algorithm", values="value", sort=False)[
        list(algorithms)
    ]


def shown(wide: pd.DataFrame) -> pd.DataFrame:
    """A (dataset, ...) × algorithm table with display names, rounded, for the page."""
    out = wide.rename(columns=algorithm_label).round(3)
    if "dataset" in (out.index.names or []):
        out = out.rename(index=dataset_label, level="dataset")
    return out


def beats_both(wide: pd.DataFrame, method="playerfl", references=("local", "fedavg")) -> pd.Series:
    """Per client: does ``method`` score strictly higher than every reference model?"""
    return wide[list(references)].lt(wide[method], axis=0).all(axis=1)


def gain_summary(wide: pd.DataFrame, wins: pd.Series) -> pd.DataFrame:
    """Per dataset: each algorithm's mean score, the share of clients where PLayer-FL beats both."""
    summary = wide.groupby(level="dataset", sort=False).mean()
    won = wins.groupby(level="dataset", sort=False)
    summary["clients where PLayer-FL beats both"] = [  # as the text gives the share: "3 of 5"
        f"{int(g.sum())} of {len(g)} ({g.mean():.0%})" for _, g in won
    ]
    return shown(summary)


def committed_run(dataset: str, algorithm: str, config, hyperparameters: dict, profile: str):
    """This exact run (archived configuration, default hyper-parameters, code that computes as
    today's) from ``profile``'s committed archive, or None: one seed's per-client scores amplify
    float32's last bits, which differ between CPUs, so the page reads them from the archive."""
    chosen = get_algorithm(algorithm, **hyperparameters)
    if chosen.hyperparameters() != chosen.defaults():
        return None
    spec = RunSpec(dataset, algorithm, config.lr, config.seed, profile)  # the profile's rounds
    if spec.config(config.device) != config:
        return None
    archived = _archive(profile)
    if archived is None or spec.run_id not in archived[1]:
        return None
    table, _ = archived
    rows = table[table["run_id"] == spec.run_id].drop(columns="run_id")
    return rows.reset_index(drop=True)


@functools.cache
def _archive(profile: str) -> tuple[pd.DataFrame, set[str]] | None:
    """The committed archive's rows and the ids of its runs that today's code reproduces."""
    folder = archive_dir(profile)
    if not (folder / "manifest.json").exists():
        return None
    table, manifest = load_archive(folder)
    same = equivalent_codes(code_fingerprint())
    current = {e["run_id"] for e in manifest["runs"] if e["status"] == "ok" and e["code"] in same}
    return table, current
