"""Each silo's own data file: only that silo's tensors, checked on every read."""

from __future__ import annotations

import pytest
import torch

from data_prep import load
from data_prep.base import DataError, sha256sum
from playerfl_core.flower import silo_data


@pytest.fixture(scope="module")
def heart():
    return load("heart", profile="quick", seed=0)


def _write(heart, tmp_path):
    folders = [tmp_path / f"silo{k}" for k in range(len(heart.clients))]
    return folders, silo_data.write(heart, "quick", 0, folders)


def test_each_silo_folder_holds_its_own_rows_only(heart, tmp_path):
    folders, paths = _write(heart, tmp_path)
    for k, folder in enumerate(folders):
        assert sorted(p.name for p in folder.iterdir()) == [
            paths[k].name,
            paths[k].name + ".sha256",
        ]
        part = silo_data.read(folder, "heart", "quick", 0, k)
        assert part.n_clients == 4 and list(part.clients) == [k]
        own = heart.clients[k]
        for split in ("train", "val", "test"):
            for got, want in zip(part.client.split(split), own.split(split), strict=True):
                assert torch.equal(got, want)
        assert (part.model, part.num_classes, part.input_shape) == (
            heart.model,
            heart.num_classes,
            heart.input_shape,
        )
        assert part.focal_loss == heart.focal_loss


def test_a_missing_misplaced_or_corrupt_file_is_refused(heart, tmp_path):
    folders, paths = _write(heart, tmp_path)
    with pytest.raises(DataError, match=r"silo 1 has no data .* holds \['heart-quick-seed0-silo0"):
        silo_data.read(folders[0], "heart", "quick", 0, 1)
    with pytest.raises(DataError, match="no data for 'heart' \\(quick, seed 1\\)"):
        silo_data.read(folders[0], "heart", "quick", 1, 0)
    paths[0].rename(folders[1] / paths[0].name.replace("silo0", "silo1"))  # silo 0's, misnamed
    (folders[1] / (paths[1].name + ".sha256")).write_text(sha256sum(paths[1]))
    with pytest.raises(DataError, match="holds silo 0's data, not silo 1's"):
        silo_data.read(folders[1], "heart", "quick", 0, 1)
    corrupt = bytearray(paths[2].read_bytes())
    corrupt[len(corrupt) // 2] ^= 0xFF
    paths[2].write_bytes(bytes(corrupt))
    with pytest.raises(DataError, match="does not match its SHA-256"):
        silo_data.read(folders[2], "heart", "quick", 0, 2)
    (folders[3] / (paths[3].name + ".sha256")).unlink()
    with pytest.raises(DataError, match="has no SHA-256 beside it"):
        silo_data.read(folders[3], "heart", "quick", 0, 3)
