"""Chapters check their papermill parameters before computing anything."""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat
import pytest

from playerfl_core.chapter_checks import SPECS, check_parameters, parameters_of
from playerfl_core.checks import OptionError

CHAPTERS = Path(__file__).resolve().parent.parent / "chapters"


def _parameters_cell(stem: str) -> str:
    nb = nbformat.read(CHAPTERS / f"{stem}.ipynb", 4)
    return next(c.source for c in nb.cells if "parameters" in c.metadata.get("tags", []))


def _namespace(stem: str, **changes) -> dict:
    """A chapter's globals after its parameters cell and papermill's injected one."""
    source = _parameters_cell(stem)
    namespace: dict = {}
    exec(source, namespace)  # noqa: S102 -- the chapter's own parameter cell
    injected = "# Parameters\n" + "".join(f"{k} = {v!r}\n" for k, v in changes.items())
    exec(injected, namespace)  # noqa: S102
    namespace["In"] = ["", source, injected]
    return namespace


@pytest.mark.parametrize("stem", sorted(p.stem for p in CHAPTERS.glob("*.ipynb")))
def test_every_chapter_checks_exactly_its_parameters(stem, monkeypatch):
    nb = nbformat.read(CHAPTERS / f"{stem}.ipynb", 4)
    cells = [c.source for c in nb.cells if c.cell_type == "code"]
    assert f'check_parameters("{stem}", globals())' in cells[1], "the cell after the parameters"
    tree = ast.parse(_parameters_cell(stem))
    declared = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets}
    assert declared == set(parameters_of(stem))
    monkeypatch.chdir(CHAPTERS)  # papermill runs chapters there (--cwd chapters)
    check_parameters(stem, _namespace(stem))  # the defaults pass


@pytest.mark.parametrize(
    "stem, changes, message",
    [
        ("01_playerfl_in_one_run", {"rounds": 0}, r"-p rounds: 0 is outside the valid range"),
        ("01_playerfl_in_one_run", {"threshold": -0.5}, r"-p threshold: -0.5 is outside"),
        ("01_playerfl_in_one_run", {"dataset": "heart,nosuch"}, r"-p dataset: unknown dataset"),
        ("01_playerfl_in_one_run", {"profile": "huge"}, r"-p profile: 'huge' is not valid"),
        ("01_playerfl_in_one_run", {"device": "tpu"}, r"-p device: 'tpu'"),
        ("02_layerwise_divergence", {"seeds": "0,abc"}, r"-p seeds: 'abc' .* not an integer"),
        ("02_layerwise_divergence", {"profile": "standard"}, r"use one of quick, paper"),
        ("03_federation_sensitivity", {"thresholds": "1,-2"}, r"-p thresholds: '-2'"),
        ("04_does_the_rule_pick_the_right_split", {"het_base": "heart"}, r"heterogeneity base"),
        ("04_does_the_rule_pick_the_right_split", {"het_mixed": "rotate"}, r"kind:alpha pair"),
        ("04_does_the_rule_pick_the_right_split", {"store": "/no/such.csv"}, r"does not exist"),
        ("05_playerfl_vs_baselines", {"algorithms": "fedavg,fedsgd"}, r"unknown algorithm"),
        ("05_playerfl_vs_baselines", {"n_boot": 10}, r"-p n_boot: 10 is outside"),
        ("00_federated_learning_in_one_hour", {"dataset": "heart"}, r"no Dirichlet label split"),
        ("01_playerfl_in_one_run", {"dataset_module": "/no/file.py"}, r"does not exist"),
        ("01_playerfl_in_one_run", {"seeds": "0,1"}, r"unknown parameter 'seeds' \(did you mean"),
    ],
)
def test_a_bad_parameter_stops_the_chapter_by_name(stem, changes, message):
    with pytest.raises(OptionError, match=message):
        check_parameters(stem, _namespace(stem, **changes))


def test_every_chapter_has_a_spec():
    assert set(SPECS) == {p.stem for p in CHAPTERS.glob("*.ipynb")}


def test_papermill_stops_at_the_check_cell(tmp_path):
    import papermill
    from papermill.exceptions import PapermillExecutionError

    with pytest.raises(PapermillExecutionError, match=r"-p rounds: -3 is outside") as err:
        papermill.execute_notebook(
            str(CHAPTERS / "01_playerfl_in_one_run.ipynb"),
            str(tmp_path / "out.ipynb"),
            parameters={"rounds": -3},
            cwd=str(CHAPTERS),
            kernel_name="python3",
            progress_bar=False,
        )
    assert err.value.exec_count <= 3  # the parameters, papermill's, then the check


# -- every glued value is guarded, or says why it cannot be ---------------------------------------
UNGUARDED = "# Not compared by nbval:"


@pytest.mark.parametrize("path", sorted(CHAPTERS.glob("*.ipynb")), ids=lambda p: p.stem)
def test_every_cell_that_glues_is_compared_by_nbval_or_says_why_not(path):
    """nbval compares a cell's outputs only when it is tagged ``nbval-check-output``; a glued
    value that no check compares can change with no test failing. A cell that glues must be
    compared, or open with a comment that says why its values cannot be (timings, one seed's
    training outcome)."""
    nb = nbformat.read(path, 4)
    loose = [
        i
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        and "glue(" in cell.source
        and "nbval-check-output" not in cell.metadata.get("tags", [])
        and UNGUARDED not in cell.source
    ]
    assert not loose, f"{path.name}: cells {loose} glue values that nbval never compares"


@pytest.mark.parametrize("path", sorted(CHAPTERS.glob("*.ipynb")), ids=lambda p: p.stem)
def test_no_committed_output_carries_a_progress_bar_or_a_checked_stderr(path):
    """Stop 31's CI failed on chapters executed outside ``make execute`` (progress bars on): a
    progress bar's timings differ on every run, so in a cell nbval compares it fails the test
    (``make`` turns them off with ``TQDM_DISABLE``), and on the page it is a log, not a result."""
    nb = nbformat.read(path, 4)
    bars, checked = [], []
    for i, cell in enumerate(nb.cells):
        streams = [o for o in cell.get("outputs", []) if o.get("name") == "stderr"]
        if any(("it/s]" in o.text or "s/it]" in o.text) for o in streams):
            bars.append(i)
        if streams and "nbval-check-output" in cell.metadata.get("tags", []):
            checked.append(i)
    assert not bars, f"{path.name}: progress bars in the outputs of cells {bars}; `make execute`"
    assert not checked, f"{path.name}: cells {checked} are compared by nbval and print to stderr"
