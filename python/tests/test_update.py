"""Received updates: every file form and the in-memory forms are the same update, and scored
against the client's rows they give the CLI's accuracy."""
import numpy as np
import pytest

import leakscope
from conftest import FIXTURES, read_json

OPTS = dict(ensemble=3, iterations=200)


def test_files_npz_and_in_memory_arrays_give_the_same_reconstruction():
    enc = FIXTURES / "encoding.json"
    run = lambda w, u, **o: leakscope.attack_update(enc, w, u, progress=False, **OPTS, **o)["rows"]
    st = run(FIXTURES / "weights.safetensors", FIXTURES / "update.safetensors")
    assert run(FIXTURES / "weights.npz", FIXTURES / "update.npz") == st
    assert run(None, FIXTURES / "update.json") == st
    # In memory: the archive's arrays by name (with its rows and labels) are the file.
    weights, update = dict(np.load(FIXTURES / "weights.npz")), dict(np.load(FIXTURES / "update.npz"))
    assert run(weights, update) == st
    assert run((FIXTURES / "weights.npz").read_bytes(), (FIXTURES / "update.npz").read_bytes()) == st
    # A list in state_dict order, as a Flower client holds its parameters, is the archive by
    # position; neither says its rows or labels, so both are given or restored alike.
    by_position = run(FIXTURES / "weights-arrays.npz", FIXTURES / "update-arrays.npz", batch_size=8)
    as_list = run(list(weights.values()), [v for k, v in update.items() if k not in ("rows", "labels")], batch_size=8)
    assert as_list == by_position
    assert [r["cells"] for r in by_position] == [r["cells"] for r in st]


def test_scored_against_the_clients_rows_it_is_the_clis(cli, tmp_path):
    from client import client_rows

    truth = tmp_path / "rows.csv"
    truth.write_bytes(client_rows(0, 8))
    ours = leakscope.attack_update(
        FIXTURES / "encoding.json", FIXTURES / "weights.npz", FIXTURES / "update.npz", truth=truth, progress=False, **OPTS
    )
    out = tmp_path / "cli.json"
    cli("attack-update", "--encoding", str(FIXTURES / "encoding.json"), "--weights", str(FIXTURES / "weights.npz"),
        "--update", str(FIXTURES / "update.npz"), "--truth", str(truth), "--ensemble", "3", "--iterations", "200",
        "--quiet", "--json", str(out))
    theirs = read_json(out)
    assert ours["accuracy"] == theirs["accuracy"]
    assert ours["rows_proved"] == theirs["rows_proved"] and ours["rows"] == 8
    assert 0 <= ours["random_baseline"] < ours["accuracy"]["total"]


def test_wrong_rows_and_files_are_named(tmp_path):
    from client import client_rows

    with pytest.raises(leakscope.LeakscopeError, match="has 7 complete rows but the update was computed on 8"):
        leakscope.attack_update(FIXTURES / "encoding.json", FIXTURES / "weights.npz", FIXTURES / "update.npz",
                                truth=client_rows(0, 7), progress=False, **OPTS)
    with pytest.raises(leakscope.LeakscopeError, match="give the model's state dict as well"):
        leakscope.attack_update(FIXTURES / "encoding.json", None, FIXTURES / "update.npz", progress=False)
