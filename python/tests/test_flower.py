"""The Mod on Flower's own Message and ArrayRecord objects, for a PyTorch MLP on the Adult sample:
its record is the CLI's attack on the same update, blocking replaces the reply, a budget in work
gives the same records however slow the engine runs, a round over it is not attacked (its first
local batch is, apart, and never blocks as the round), a monitor lets the reply leave before its
audit and writes the gate's record, and an in-process run writes one record per round per client. The
client's optimiser (torch's SGD, Adam, AdamW, or by name) and row order are read into the recipe,
what the engine cannot replay is refused, and the engine's check of the recipe against the update
is recorded (a mismatch blocks a gate)."""
import json
import time
from types import SimpleNamespace

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
from leakscope._convert import camel  # noqa: E402
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


def round_message(model, server_round: int, node: int = 1, **config) -> Message:
    """A train instruction as the SuperNode delivers it to the ClientApp."""
    content = RecordDict({"arrays": ArrayRecord(model.state_dict()), "config": ConfigRecord({"server-round": server_round, **config})})
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
    # What the update shows of the batch, cell by cell: a FedAvg client's, checked against its rows.
    shown = theirs["reconstruction"]["details"].get("cells_shown")
    if recipe["protocol"] == "fedavg":
        assert (record["cells_shown"], record["cells_moved"]) == (shown["shown"], shown["tested"])
        assert record["cells_moved"] > 0
    else:
        assert shown is None and record["cells_shown"] is None and record["cells_moved"] is None
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


FEDAVG = dict(protocol="fedavg", local_epochs=1, local_batch=8, client_lr=0.05)
# What a record holds besides the timings and where it was audited.
TIMED = ("seconds", "held_seconds", "mode", "job")


def untimed(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in TIMED}


def work_of(recipe: dict) -> float:
    """The work the engine counts for the FedAvg round below (the same whatever the machine)."""
    client, mod, d = app(client_rows(100, 32), recipe, records=None)
    client(round_message(network(d, 7), 1), context())
    return mod.records[0]["work_gflop"]


def test_a_slowed_engine_gives_the_same_records():
    """The round fits its budget exactly; the engine slowed at every report (as on a busy machine:
    the retired max_seconds projected this pace past its limit and attacked something else)
    writes the same record, up to the seconds."""
    budget = work_of(FEDAVG)
    records, reports = [], []

    def throttled(p):
        reports.append(p)
        time.sleep(0.1)

    for progress in (None, throttled):
        client, mod, d = app(client_rows(100, 32), FEDAVG, budget_gflop=budget, block_above=0.9, records=None,
                             progress=progress)
        reply = client(round_message(network(d, 7), 1), context())
        records.append(mod.records[0])
        assert reply.has_error() == (mod.records[0]["blocked"] is not None)
    quick, slow = records
    # A bound from the pauses alone, whatever else the machine does.
    assert reports and slow["held_seconds"] >= 0.1 * len(reports), "the throttle slowed the engine"
    assert quick["attacked"] == "round" and quick["over_budget"] is None and quick["accuracy"] is not None
    assert untimed(quick) == untimed(slow)


def test_a_first_local_batch_never_blocks_as_if_it_were_the_round():
    """Past the budget the round is not attacked: its first local batch is, apart, and its figure
    passes block_above here, yet neither blocks nor is sent as the round's; what blocks (by
    default, in a gate with block_above) is that the round was not audited, and it says so."""
    budget = work_of(FEDAVG) / 2
    client, mod, d = app(client_rows(100, 32), FEDAVG, budget_gflop=budget, block_above=0.0, over_budget="send",
                         records=None)
    reply = client(round_message(network(d, 7), 1), context())
    record = mod.records[0]
    first = record["first_batch"]
    assert first["rows"] == 8 and first["accuracy"] > 0.0 and "neither an upper nor a lower bound" in first["bounds"]
    assert record["attacked"] == "nothing" and record["accuracy"] is None and record["over_budget"] == "send"
    assert "over the budget" in record["skipped"]
    assert not reply.has_error() and record["blocked"] is None
    metrics = reply.content.metric_records["metrics"]
    assert "leakscope.accuracy" not in metrics and metrics["leakscope.attacked"] == 0.0
    client, mod, d = app(client_rows(100, 32), FEDAVG, budget_gflop=budget, block_above=0.0, records=None)
    reply = client(round_message(network(d, 7), 1), context())
    assert reply.has_error() and "over budget_gflop" in reply.error.reason and "block_above" not in reply.error.reason
    assert mod.records[0]["over_budget"] == "block"
    client, mod, d = app(client_rows(100, 32), FEDAVG, budget_gflop=budget, over_budget="attack", records=None)
    client(round_message(network(d, 7), 1), context())
    assert mod.records[0]["attacked"] == "round" and mod.records[0]["over_budget"] == "attack"
    assert mod.records[0]["first_batch"] is None


def test_a_monitor_lets_the_reply_leave_before_its_audit_and_writes_the_gates_record(tmp_path):
    """A monitor's reply leaves while its audit cannot even start (the test holds the spool's
    lock, so round 1's monitor leaves the job queued); round 2's monitor, in a process of its own,
    audits both, and round 1's record is the gate's."""
    import fcntl

    from leakscope import _monitor
    from leakscope.flower import drain_monitor

    client, gate, d = app(client_rows(100, 32), FEDAVG, records=None)
    client(round_message(network(d, 7), 1), context())
    path = tmp_path / "records.jsonl"
    client, mod, d = app(client_rows(100, 32), FEDAVG, mode="monitor", records=path)
    spool = _monitor.spool_of(path.resolve())
    spool.mkdir()
    with open(spool / "lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        reply = client(round_message(network(d, 7), 1), context())
        assert not reply.has_error() and not reply.content.metric_records, "the reply left as the client made it"
        _monitor.wait_started()
        assert not path.exists() and len(list(spool.glob("job-*.npz"))) == 1
        fcntl.flock(lock, fcntl.LOCK_UN)
    client(round_message(network(d, 7), 2), context())
    _monitor.wait_started()
    assert drain_monitor(path) == 0, "the monitor process wrote both"
    first, second = mod.wait()
    assert (first["round"], second["round"]) == (1, 2)
    assert first["mode"] == "monitor" and first["blocked"] is None and first["held_seconds"] < gate.records[0]["seconds"]
    assert untimed(first) == untimed(gate.records[0])
    assert not list(spool.glob("job-*.npz"))


def test_a_queued_audit_whose_monitor_never_ran_is_written_by_drain(tmp_path, monkeypatch):
    """A simulation's actors (and their monitors) may be killed when it ends: what they queued
    stays in the spool, and drain_monitor audits it, once."""
    from leakscope import _monitor
    from leakscope.flower import drain_monitor

    monkeypatch.setattr(_monitor, "_start", lambda spool, records: None)
    path = tmp_path / "records.jsonl"
    client, mod, d = app(client_rows(100, 32), FEDAVG, mode="monitor", records=path)
    client(round_message(network(d, 7), 1), context())
    client(round_message(network(d, 7), 2), context())
    assert not path.exists()
    assert drain_monitor(path) == 2 and drain_monitor(path) == 0
    assert [r["round"] for r in read_records(path).to_dict("records")] == [1, 2]
    assert [r["round"] for r in mod.wait()] == [1, 2]


@pytest.mark.parametrize(
    "given, says",
    [
        (dict(max_seconds=60), "budget_gflop"),
        (dict(mode="monitor", block_above=0.8), "block_above"),
        (dict(mode="monitor", over_budget="block"), "over_budget='block'"),
        (dict(mode="monitor", records=None), "records=None"),
        (dict(mode="shadow"), "gate, monitor"),
        (dict(over_budget="wait"), "block, send, attack"),
        (dict(budget_gflop=-1), "budget_gflop"),
    ],
)
def test_the_modes_and_the_budget_refuse_what_they_cannot_do(given, says):
    options = dict(protocol="fedavg", local_epochs=1, local_batch=8, records="r.jsonl")
    with pytest.raises(ValueError, match=None) as e:
        leakage_mod(client_rows(100, 32), label="salary", encoding=encoding(), **{**options, **given})
    assert says in str(e.value)


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


def test_flowers_simulation_engine_runs_the_example_as_a_gate_and_as_a_monitor(tmp_path):
    """The README's example in Flower's simulation engine: two clients, three rounds, a record per
    round per client with the recipe read off the client's optimiser (SGD, momentum 0.9, rows
    reshuffled every epoch, so the engine cannot check it), every round within the budget and
    attacked, and the updates over block_above blocked (not aggregated) with the reason. Run again
    as a monitor, the replies leave before their audits and the records are the gate's."""
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("ray")
    example = Path(__file__).resolve().parents[1] / "examples" / "flower_adult.py"
    runs = {}
    for mode in ("gate", "monitor"):
        cwd = tmp_path / mode
        cwd.mkdir()
        done = subprocess.run([sys.executable, str(example), "--mode", mode], cwd=cwd, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-3000:]
        rows = read_records(cwd / "leakscope-records.jsonl").to_dict("records")
        assert sorted((r["client"], r["round"]) for r in rows) == [(c, k) for c in ("0", "1") for k in (1, 2, 3)]
        assert len(read_records(cwd / "leakscope-client-seconds.jsonl")) == 6, "the client's time per round"
        for r in rows:
            assert (r["optimizer"], r["client_lr"], r["momentum"], r["local_order"]) == ("sgd", 0.05, 0.9, "shuffled"), r
            assert r["recipe_check"]["matches"] is None and not isinstance(r["recipe_mismatch"], str), r
            assert r["attacked"] == "round" and r["work_gflop"] < r["budget_gflop"] and r["mode"] == mode, r
        runs[mode] = (rows, done.stdout + done.stderr)
    rows, printed = runs["gate"]
    for r in rows:
        blocked = isinstance(r["blocked"], str)
        assert blocked == (r["accuracy"] > 0.82), r
        assert not blocked or "over block_above = 0.82" in r["blocked"]
    # Whether any round passes 0.82 is the attack's to say; each one that did was refused.
    any_blocked = any(isinstance(r["blocked"], str) for r in rows)
    assert any_blocked == ("blocked this update" in printed)
    if not any_blocked:  # the same models were sent in both runs
        same = lambda rows: [{k: v for k, v in untimed(r).items() if k != "blocked"} for r in rows]  # noqa: E731
        assert same(runs["monitor"][0]) == same(rows)


def test_the_example_under_dp_records_the_canaries_epsilon_beside_the_accountants_and_the_attack(tmp_path):
    """The example with DP-FedAvg (σ = 1, C = 1, Flower's server-side clipping) and 400 canaries:
    a record per round puts the ε the canaries measure beside leakscope's accountant and the
    Mod's recovery that round. Flower's noise is not seeded, so the estimate is held to 30 % of
    the Gaussian mechanism's ε over the rounds so far (about five of its standard errors)."""
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("ray")
    example = Path(__file__).resolve().parents[1] / "examples" / "flower_adult.py"
    done = subprocess.run([sys.executable, str(example), "--dp-noise", "1.0", "--canaries", "400"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    records = [json.loads(line) for line in (tmp_path / "leakscope-records.jsonl").read_text().splitlines()]
    private = [r for r in records if r.get("kind") == "privacy"]
    attacked = [r for r in records if r.get("kind") != "privacy"]
    assert [r["round"] for r in private] == [1, 2, 3] and len(attacked) == 6
    for r in private:
        t = r["round"]
        assert r["epsilon_accountant"] == pytest.approx(leakscope.privacy(1.0, t, sample_rate=1.0)["epsilon"])
        mechanism = leakscope.privacy(1.0 / np.sqrt(t), 1, sample_rate=1.0)["per_release"]
        assert abs(r["epsilon_measured"] - mechanism) <= 0.3 * mechanism, (t, mechanism, r)
        assert r["null_holds"] and not r["epsilon_measured_beyond_range"], r
        assert r["epsilon_measured"] <= r["epsilon_accountant"] * 1.3, r
        mine = [a for a in attacked if a["round"] == t]
        assert r["attack_accuracy"] == max(a["accuracy"] for a in mine), (r, mine)
        assert r["canaries"] == 400 and r["dimension"] > 4000
    assert "epsilon_measured" in done.stdout and "the model's accuracy on the table" in done.stdout
    assert (tmp_path / "leakscope-records.png").stat().st_size > 0


# The client's optimiser and row order.

def params():
    return torch.nn.Linear(3, 2).parameters()


def sgd_momentum(p):
    return torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=5e-4)


def adam(p):
    return torch.optim.Adam(p, lr=1e-3, betas=(0.8, 0.99))


@pytest.fixture
def engine(monkeypatch):
    """The engine's audit_round replaced by a stand-in that keeps the options it is handed and
    answers with `check` as its recipe check: the Mod's own part, without an attack."""
    seen = SimpleNamespace(options=[], check=None)

    def audit_round(encoding, update, weights, options, truth, budget_gflop=None, first_batch=True, progress=None):
        seen.options.append(json.loads(options))
        scored = {"accuracy": {"total": 0.7, "categorical": 0.7, "continuous": 0.7}, "random_baseline": 0.6,
                  "gain_over_random": 0.1, "rows_proved": 0, "rows_consistent": 0, "rows": 32,
                  "recipe_check": seen.check}
        work = {"gflop": 1.0, "members": 15, "iterations": 1500}
        return json.dumps({"scored": scored, "work": work, "budget_gflop": None, "skipped": None, "first_batch": None})

    monkeypatch.setattr(leakscope._native, "audit_round", audit_round)
    return seen


SGD_MOMENTUM = dict(optimizer="sgd", client_lr=0.05, momentum=0.9, dampening=0.0, nesterov=False, weight_decay=5e-4)
ADAM = dict(optimizer="adam", client_lr=1e-3, betas=[0.8, 0.99], adam_eps=1e-8, weight_decay=0.0)


def step(msg: Message, context: Context) -> Message:
    """A client's reply for the stand-in engine (which does not look): the model it was sent,
    moved a little."""
    moved = {k: v - 0.01 for k, v in msg.content["arrays"].to_torch_state_dict().items()}
    return Message(RecordDict({"arrays": ArrayRecord(moved)}), reply_to=msg)


def mod_of(**given):
    """A FedAvg Mod (one epoch in batches of 8) on 32 rows, and the model's input width."""
    options = dict(protocol="fedavg", local_epochs=1, local_batch=8, records=None, **given)
    return leakage_mod(client_rows(100, 32), label="salary", encoding=encoding(), **options), len(encoding()["mean"])


def approx(value):
    return pytest.approx(value) if isinstance(value, (float, list)) else value


@pytest.mark.parametrize(
    "given, recipe",
    [
        (dict(optimizer=sgd_momentum(params())), SGD_MOMENTUM),
        (dict(optimizer=sgd_momentum), SGD_MOMENTUM),  # the function the client calls in its fit()
        (dict(optimizer=adam(params())), ADAM),
        (dict(optimizer=adam), ADAM),
        (dict(optimizer=torch.optim.AdamW(params(), lr=0.01)),
         dict(optimizer="adamw", client_lr=0.01, betas=[0.9, 0.999], adam_eps=1e-8, weight_decay=0.01)),
        (dict(optimizer="adam", client_lr=1e-3, betas=(0.8, 0.99), adam_eps=1e-8, weight_decay=0.0), ADAM),
        (dict(optimizer="SGD", client_lr=0.05, momentum=0.9, weight_decay=5e-4, dampening=0.0, nesterov=False), SGD_MOMENTUM),
        # Stated twice, in agreement.
        (dict(optimizer=sgd_momentum(params()), client_lr=0.05, momentum=0.9), SGD_MOMENTUM),
    ],
    ids=["sgd", "sgd-function", "adam", "adam-function", "adamw", "adam-by-name", "sgd-by-name", "stated-twice"],
)
def test_the_recipe_is_read_off_the_clients_optimiser(given, recipe, engine):
    mod, d = mod_of(**given)
    assert not mod(round_message(network(d, 7), 1), context(), step).has_error()
    record, options = mod.records[0], engine.options[0]
    takes = {"sgd": ("momentum", "dampening", "nesterov"), "adam": ("betas", "adam_eps")}
    left_out = takes["adam" if recipe["optimizer"] == "sgd" else "sgd"]
    for key, value in {"protocol": "fedavg", "local_epochs": 1, "local_batch": 8, **recipe}.items():
        assert record[key] == approx(value), key
        assert options[camel(key)] == approx(value), key  # the engine's options, in its names
    for key in left_out:  # the settings this optimiser does not take: in neither
        assert record[key] is None and camel(key) not in options, key


@pytest.mark.parametrize("shuffle, order", [(True, "shuffled"), (False, "given")])
def test_shuffle_states_the_clients_row_order(shuffle, order, engine):
    mod, d = mod_of(shuffle=shuffle)
    mod(round_message(network(d, 7), 1), context(), step)
    assert mod.records[0]["local_order"] == order and engine.options[0]["localOrder"] == order


@pytest.mark.parametrize(
    "given, says",
    [
        (dict(optimizer=torch.optim.RMSprop(params())), "not RMSprop"),
        (dict(optimizer=torch.optim.SGD(params(), lr=0.1, maximize=True)), "maximize=True"),
        (dict(optimizer=torch.optim.Adam(params(), amsgrad=True)), "amsgrad=True"),
        (dict(optimizer=torch.optim.SGD([{"params": [torch.nn.Parameter(torch.zeros(2))], "weight_decay": 0.0},
                                         {"params": [torch.nn.Parameter(torch.zeros(2))]}], lr=0.1, weight_decay=5e-4)),
         "param groups differ (weight_decay"),
        (dict(optimizer="sgd", momentum=0.9, nesterov=True, dampening=0.1), "no dampening"),
        (dict(optimizer="sgd", nesterov=True), "momentum above 0"),
        (dict(optimizer="adam", momentum=0.9), "momentum, which adam does not take"),
        (dict(optimizer=sgd_momentum(params()), betas=(0.9, 0.99)), "betas, which sgd does not take"),
        (dict(betas=(0.9, 0.99)), "betas, which sgd does not take"),  # the default optimiser is SGD
        (dict(optimizer="rmsprop"), "'rmsprop'"),
        (dict(optimizer=3), "not int"),
        (dict(optimizer=lambda model: torch.optim.SGD(model.parameters(), lr=0.1)), "called with a list of parameters"),
        (dict(local_order="random"), "'random'"),
    ],
    ids=["rmsprop", "maximize", "amsgrad", "param-groups", "nesterov-dampening", "nesterov-no-momentum",
         "momentum-for-adam", "betas-for-sgd-instance", "betas-for-default", "unknown-name", "not-an-optimiser",
         "function-of-the-model", "unknown-order"],
)
def test_what_the_engine_cannot_replay_is_refused_by_name(given, says):
    with pytest.raises(ValueError, match="leakage_mod") as refused:
        leakage_mod(client_rows(100, 32), label="salary", encoding=encoding(), records=None, **given)
    assert says in str(refused.value)


@pytest.mark.parametrize(
    "given, says",
    [
        (dict(client_lr=0.1, optimizer=torch.optim.SGD(params(), lr=0.01)), "client_lr=0.1 disagrees with the optimiser's lr=0.01"),
        (dict(momentum=0.5, optimizer=sgd_momentum(params())), "momentum=0.5 disagrees with the optimiser's momentum=0.9"),
        (dict(adam_eps=1e-6, optimizer=adam), "adam_eps=1e-06 disagrees with the optimiser's eps=1e-08"),
        (dict(shuffle=True, local_order="given"), "shuffle=True disagrees with local_order='given'"),
    ],
    ids=["lr", "momentum", "eps", "order"],
)
def test_a_setting_stated_twice_must_agree(given, says):
    with pytest.raises(ValueError, match="state it once") as refused:
        leakage_mod(client_rows(100, 32), label="salary", encoding=encoding(), records=None, **given)
    assert says in str(refused.value)


def test_the_rounds_config_overrides_the_optimiser(engine):
    """A round's ConfigRecord naming another optimiser: its settings over the Mod's, and the Mod's
    settings the new optimiser does not take left out; a setting it does not take is refused."""
    mod, d = mod_of(optimizer=sgd_momentum(params()))
    mod(round_message(network(d, 7), 1, optimizer="adam", betas=[0.5, 0.9], client_lr=0.01), context(), step)
    record, options = mod.records[0], engine.options[0]
    assert (record["optimizer"], record["client_lr"], record["betas"], record["weight_decay"]) == ("adam", 0.01, [0.5, 0.9], 5e-4)
    assert record["momentum"] is None and "momentum" not in options and options["betas"] == [0.5, 0.9]
    mod(round_message(network(d, 7), 2), context(), step)
    assert mod.records[1]["optimizer"] == "sgd" and mod.records[1]["momentum"] == 0.9, "the next round is the Mod's again"
    with pytest.raises(ValueError, match="momentum, which adam does not take"):
        mod(round_message(network(d, 7), 3, optimizer="adam", momentum=0.9), context(), lambda m, c: pytest.fail("trained"))


MISMATCH = {"matches": False, "relative_gap": 0.83, "tolerance": 0.01, "reason": None}


def test_a_recipe_mismatch_is_recorded_and_blocks_a_gate(engine):
    """Where the engine finds that the stated recipe does not reproduce the update, the record
    says so beside its accuracy; a gate blocks the update whatever its accuracy, and without a
    gate the reply goes on with leakscope.recipe_mismatch = 1 in its metrics."""
    engine.check = MISMATCH
    mod, d = mod_of(block_above=0.9)
    reply = mod(round_message(network(d, 7), 1), context(), step)
    record = mod.records[0]
    assert record["recipe_check"] == MISMATCH and record["accuracy"] == 0.7
    assert "does not reproduce this update" in record["recipe_mismatch"] and "0.83" in record["recipe_mismatch"]
    assert reply.has_error() and reply.error.code == 6
    assert "stated recipe does not reproduce this update (relative gap 0.83, tolerance 0.01)" in reply.error.reason
    assert record["blocked"] in reply.error.reason
    mod, d = mod_of()
    reply = mod(round_message(network(d, 7), 1), context(), step)
    assert not reply.has_error() and mod.records[0]["blocked"] is None and mod.records[0]["recipe_mismatch"]
    assert reply.content["metrics"]["leakscope.recipe_mismatch"] == 1.0


@pytest.mark.parametrize("check", [{"matches": True, "relative_gap": 1e-6, "tolerance": 0.01, "reason": None},
                                   {"matches": None, "relative_gap": None, "tolerance": 0.01, "reason": "shuffled"}],
                         ids=["matches", "cannot-tell"])
def test_a_recipe_that_matches_or_cannot_be_checked_leaves_the_gate_to_the_accuracy(check, engine):
    engine.check = check
    mod, d = mod_of(block_above=0.9)
    reply = mod(round_message(network(d, 7), 1), context(), step)
    assert not reply.has_error() and mod.records[0]["recipe_check"] == check
    assert mod.records[0]["recipe_mismatch"] is None and reply.content["metrics"]["leakscope.recipe_mismatch"] == 0.0


def optimised_app(rows: bytes, make_optimizer, reshuffles: bool, **mod_options):
    """A ClientApp whose client trains the sample's MLP with FedAvg, 2 local epochs in batches of
    8, with the optimiser `make_optimizer` gives, over its rows in order or reshuffled every epoch."""
    enc = encoding()
    x, y = leakscope.encode(rows, enc)
    xs, ys = torch.from_numpy(x), torch.from_numpy(y)
    mod = leakage_mod(rows, label="salary", encoding=enc, protocol="fedavg", local_epochs=2, local_batch=8,
                      records=None, **ATTACK, **mod_options)

    def train_fn(msg: Message, context: Context) -> Message:
        model = network(x.shape[1], 0)
        model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
        opt = make_optimizer(model.parameters())
        for _ in range(2):
            order = torch.randperm(len(ys)) if reshuffles else torch.arange(len(ys))
            for start in range(0, len(ys), 8):
                batch = order[start : start + 8]
                opt.zero_grad()
                torch.nn.functional.cross_entropy(model(xs[batch]), ys[batch]).backward()
                opt.step()
        return Message(RecordDict({"arrays": ArrayRecord(model.state_dict())}), reply_to=msg)

    client = ClientApp(mods=[mod])
    client.train()(train_fn)
    return client, mod, x.shape[1]


@pytest.mark.parametrize(
    "trains, shuffle, told, matches",
    [
        (sgd_momentum, False, dict(optimizer=sgd_momentum), True),
        (adam, False, dict(optimizer=adam), True),
        (lambda p: torch.optim.AdamW(p, lr=0.01), False, dict(optimizer="adamw", client_lr=0.01, weight_decay=0.01), True),
        (adam, False, dict(optimizer="sgd", client_lr=1e-3), False),  # told plain SGD, trains with Adam
        (sgd_momentum, False, dict(optimizer="sgd", client_lr=0.05), False),  # told no momentum
        (sgd_momentum, True, dict(optimizer=sgd_momentum, shuffle=True), None),  # nobody knows the order
    ],
    ids=["sgd-momentum", "adam", "adamw-by-name", "adam-told-sgd", "momentum-told-plain", "shuffled"],
)
def test_the_engine_checks_the_stated_recipe_against_the_real_update(trains, shuffle, told, matches):
    """Against the real engine: the stated recipe replayed on the client's rows reproduces the
    update the client really sends (true), does not (false: recorded, and a gate blocks it), or
    cannot be replayed (null, rows reshuffled by the client)."""
    client, mod, d = optimised_app(client_rows(100, 32), trains, shuffle, block_above=1.0, **told)
    reply = client(round_message(network(d, 7), 1), context())
    record = mod.records[0]
    check = record["recipe_check"]
    assert check is not None and check["matches"] is matches, check
    assert check["tolerance"] > 0
    if matches is False:
        assert check["relative_gap"] > check["tolerance"]
        assert "does not reproduce this update" in record["recipe_mismatch"]
        # block_above = 1.0 never blocks on accuracy: the mismatch alone blocks the update.
        assert reply.has_error() and "stated recipe does not reproduce this update" in reply.error.reason
        assert record["blocked"]
    else:
        assert record["recipe_mismatch"] is None and not reply.has_error() and record["blocked"] is None
        if matches:
            assert check["relative_gap"] <= check["tolerance"]
        else:
            assert check["reason"] and record["local_order"] == "shuffled"


def test_the_flower_modules_import_in_one_direction():
    """flower imports the monitor's queue; the queue imports nothing of flower's (the monitor
    process's entry point, _monitor_main, joins the two); the server's canary strategy imports
    neither, and the canaries themselves not Flower."""
    import ast
    from pathlib import Path

    package = Path(leakscope.__file__).parent

    def imported(name):
        """The modules a module of the package imports, as written (relative ones with their dots)."""
        found = set()
        for node in ast.walk(ast.parse((package / f"{name}.py").read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = "." * node.level + (node.module or "")
                found |= {base} if node.module else {base + a.name for a in node.names}
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
        return found

    assert "._monitor" in imported("flower"), imported("flower")
    assert not any(n.endswith("flower") for n in imported("_monitor")), imported("_monitor")
    assert {"leakscope._monitor", "leakscope.flower"} <= imported("_monitor_main"), imported("_monitor_main")
    # The server's canary strategy and the client's Mod share nothing but the records' format.
    assert not any("canar" in n for n in imported("flower") | imported("_monitor")), imported("flower")
    assert not any(n.endswith("flower") or "monitor" in n for n in imported("flower_canaries")), imported("flower_canaries")
    assert not any("flwr" in n or "flower" in n for n in imported("canaries")), imported("canaries")
