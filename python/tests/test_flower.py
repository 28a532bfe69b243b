"""The Mod on Flower's own Message and ArrayRecord objects, for a PyTorch MLP on the Adult sample:
its record is the CLI's attack on the same update, blocking replaces the reply, a round over budget
attacks its first local batch, and an in-process run writes one record per round per client."""
import json
import time

import numpy as np
import pytest

flwr = pytest.importorskip("flwr")
torch = pytest.importorskip("torch")

from flwr.app import (  # noqa: E402
    ArrayRecord,
    ConfigRecord,
    Context,
    Message,
    MessageType,
    Metadata,
    MetricRecord,
    RecordDict,
)
from flwr.clientapp import ClientApp  # noqa: E402

import leakscope  # noqa: E402
from client import client_rows, encoding, network, state, train  # noqa: E402
from conftest import read_json  # noqa: E402
from leakscope.flower import leakage_mod, plot_records, read_records  # noqa: E402

ATTACK = dict(ensemble=3, iterations=200)


def app(rows: bytes, recipe: dict, epsilon=None, **mod_options):
    """A ClientApp whose client trains the sample's MLP on `rows` as `recipe` says, with the Mod."""
    enc = encoding()
    x, y = leakscope.encode(rows, enc)
    mod = leakage_mod(rows, label="salary", encoding=enc, **recipe, **ATTACK, **mod_options)

    def train_fn(msg: Message, context: Context) -> Message:
        model = network(x.shape[1], 0)
        model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
        train(model, x, y, recipe["protocol"], recipe.get("local_epochs", 1), recipe.get("local_batch", 32), recipe["client_lr"])
        content = RecordDict({"arrays": ArrayRecord(model.state_dict())})
        if epsilon is not None:  # as a DP step before the Mod reports what it has spent
            content["metrics"] = MetricRecord({"num-examples": len(y), "epsilon": epsilon})
        return Message(content, reply_to=msg)

    client = ClientApp(mods=[mod])
    client.train()(train_fn)
    return client, mod, x.shape[1]


def round_message(model, server_round: int, node: int = 1) -> Message:
    """A train instruction as the SuperNode delivers it to the ClientApp."""
    content = RecordDict({"arrays": ArrayRecord(model.state_dict()), "config": ConfigRecord({"server-round": server_round})})
    meta = Metadata(run_id=1, message_id=f"m{server_round}-{node}", src_node_id=0, dst_node_id=node,
                    reply_to_message_id="", group_id=str(server_round), created_at=time.time(), ttl=3600.0,
                    message_type=MessageType.TRAIN)
    return Message(content=content, metadata=meta)


def context(node: int = 1) -> Context:
    return Context(run_id=1, node_id=node, node_config={}, state=RecordDict(), run_config={})


@pytest.mark.parametrize(
    "recipe",
    [dict(protocol="fedsgd", client_lr=0.05), dict(protocol="fedavg", local_epochs=1, local_batch=8, client_lr=0.05)],
    ids=["fedsgd", "fedavg"],
)
def test_the_record_is_the_clis_attack_on_the_same_update(recipe, cli, tmp_path):
    rows = client_rows(100, 32)
    client, mod, d = app(rows, recipe, records=tmp_path / "records.jsonl")
    model = network(d, 7)
    sent = state(model)
    reply = client(round_message(model, 1), context())
    assert not reply.has_error()
    record = mod.records[0]
    assert record["rows"] == 32 and record["attacked"] == "round" and record["round"] == 1
    assert reply.content["metrics"]["leakscope.accuracy"] == record["accuracy"]
    # The server's view of the same round, attacked by the CLI against the same rows.
    got = reply.content["arrays"].to_numpy_ndarrays()
    scale = recipe["client_lr"] if recipe["protocol"] == "fedsgd" else 1.0
    np.savez(tmp_path / "w.npz", *sent)
    update = [(a - b) / scale for a, b in zip(sent, got)]
    if recipe["protocol"] == "fedavg":  # the FedAvg server is given the labels in order
        classes = encoding()["classes"]
        np.savez(tmp_path / "u.npz", *update, labels=np.array([classes[i] for i in leakscope.encode(rows, encoding())[1]]))
    else:
        np.savez(tmp_path / "u.npz", *update)
    (tmp_path / "rows.csv").write_bytes(rows)
    leakscope_json = tmp_path / "enc.json"
    leakscope_json.write_text(json.dumps(encoding()))
    args = ["attack-update", "--encoding", str(leakscope_json), "--weights", str(tmp_path / "w.npz"),
            "--update", str(tmp_path / "u.npz"), "--truth", str(tmp_path / "rows.csv"), "--batch-size", "32",
            "--ensemble", "3", "--iterations", "200", "--quiet", "--json", str(tmp_path / "cli.json")]
    if recipe["protocol"] == "fedavg":
        args += ["--protocol", "fedavg", "--local-epochs", "1", "--local-batch", "8", "--client-lr", "0.05"]
    cli(*args)
    theirs = read_json(tmp_path / "cli.json")
    assert record["accuracy"] == theirs["accuracy"]["total"]
    assert record["rows_proved"] == theirs["rows_proved"]
    assert record["gain_over_random"] == pytest.approx(theirs["gain_over_random"])
    assert read_records(tmp_path / "records.jsonl") is not None


def test_blocking_replaces_the_reply_by_an_error_naming_why(tmp_path):
    client, mod, d = app(client_rows(100, 32), dict(protocol="fedsgd", client_lr=0.05), block_above=0.5, records=None)
    reply = client(round_message(network(d, 7), 3), context())
    assert reply.has_error() and reply.error.code == 6
    assert "over block_above = 0.5" in reply.error.reason
    assert mod.records[0]["blocked"] and mod.records[0]["accuracy"] > 0.5


def test_epsilon_spent_is_read_from_the_reply_and_the_figures_join_its_metrics():
    client, mod, d = app(client_rows(100, 32), dict(protocol="fedsgd", client_lr=0.05), epsilon=2.5, records=None)
    reply = client(round_message(network(d, 7), 1), context())
    assert mod.records[0]["epsilon"] == 2.5
    metrics = reply.content.metric_records
    assert list(metrics) == ["metrics"], "one MetricRecord, as Flower's strategies require"
    assert metrics["metrics"]["leakscope.accuracy"] == mod.records[0]["accuracy"]
    assert metrics["metrics"]["num-examples"] == 32
    client, mod, d = app(client_rows(100, 32), dict(protocol="fedsgd", client_lr=0.05), records=None)
    client(round_message(network(d, 7), 1), context())
    assert mod.records[0]["epsilon"] is None


def test_a_round_over_budget_attacks_its_first_local_batch(tmp_path):
    recipe = dict(protocol="fedavg", local_epochs=1, local_batch=8, client_lr=0.05)
    client, mod, d = app(client_rows(100, 32), recipe, max_seconds=1e-6, records=None)
    reply = client(round_message(network(d, 7), 1), context())
    assert not reply.has_error()
    record = mod.records[0]
    assert record["attacked"] == "first local batch" and "max_seconds" in record["budget"]
    assert record["rows"] == 8 and record["accuracy"] is not None


def test_an_in_process_run_writes_one_record_per_round_per_client(tmp_path):
    recipe = dict(protocol="fedavg", local_epochs=1, local_batch=8, client_lr=0.05)
    path = tmp_path / "records.jsonl"
    clients = {node: app(client_rows(32 * node, 32), recipe, records=path)[0] for node in (1, 2)}
    model = network(clients and encoding() and len(encoding()["mean"]), 7)
    for server_round in (1, 2, 3):
        replies = [c(round_message(model, server_round, node), context(node)) for node, c in clients.items()]
        arrays = [r.content["arrays"].to_numpy_ndarrays() for r in replies]
        averaged = [np.mean(a, axis=0) for a in zip(*arrays)]
        model.load_state_dict({k: torch.from_numpy(v) for k, v in zip(model.state_dict(), averaged)})
    records = read_records(path)
    rows = records.to_dict("records") if hasattr(records, "to_dict") else records
    assert sorted((r["client"], r["round"]) for r in rows) == [(c, k) for c in ("1", "2") for k in (1, 2, 3)]
    pytest.importorskip("matplotlib")
    fig = plot_records(records, tmp_path / "records.png")
    assert len(fig.axes) == 2 and (tmp_path / "records.png").stat().st_size > 0
    assert all(len(ax.lines[2].get_xdata()) == 0 for ax in fig.axes), "no round was blocked"


def test_flowers_simulation_engine_runs_the_example(tmp_path):
    """The README's example in Flower's simulation engine: two clients, three rounds, a record per
    round per client, and the updates over block_above blocked (not aggregated) with the reason."""
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("ray")
    example = Path(__file__).resolve().parents[1] / "examples" / "flower_adult.py"
    done = subprocess.run([sys.executable, str(example)], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = read_records(tmp_path / "leakscope-records.jsonl").to_dict("records")
    assert sorted((r["client"], r["round"]) for r in rows) == [(c, k) for c in ("0", "1") for k in (1, 2, 3)]
    for r in rows:
        blocked = isinstance(r["blocked"], str)
        assert blocked == (r["accuracy"] > 0.82), r
        assert not blocked or "over block_above = 0.82" in r["blocked"]
    assert "blocked this update" in done.stdout + done.stderr
