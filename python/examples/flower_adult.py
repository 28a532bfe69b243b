"""Two Flower clients train a PyTorch MLP on the Adult sample with FedAvg for three rounds in
Flower's simulation engine, as Flower's quickstart-pytorch trains (SGD with momentum 0.9 over a
DataLoader that reshuffles the rows every epoch); the leakscope Mod, given the same optimiser and
shuffle=True, attacks each update and writes a record per round per client. The clients encode
their rows as a tabular user would, with a scikit-learn ColumnTransformer (one-hot categories,
standardised numbers) fitted on the federation's table; the Mod is handed that transformer and
attacks in its terms.

Two modes (`--mode`): a gate (the default) attacks each update before it leaves and blocks one
that leaks more than BLOCK_ABOVE; a monitor lets it leave at once and attacks it in a process of
its own beside the training. Either way a round's attack is held to a budget of work
(`--budget-gflop`, the engine's count from the problem's sizes): the same rounds are attacked on a
quiet and on a busy machine.

    pip install ./python "flwr[simulation]" torch matplotlib pandas scikit-learn
    python python/examples/flower_adult.py                  # from the repository's root: a gate
    python python/examples/flower_adult.py --mode monitor   # the replies leave at once
    python python/examples/flower_adult.py --dp-noise 1.0   # DP-FedAvg, with 1,000 canaries

With `--dp-noise σ` the server clips each update to `--clip` and noises the average (Flower's
DifferentialPrivacyServerSideFixedClipping), and leakscope's CanaryStrategy inserts `--canaries`
random canaries into each released round: every round's record of kind "privacy" puts the ε the
canaries measure beside the accountant's and the Mod's recovery (the update the server saw before
its noise), and the model's accuracy on the table is printed per round.

Writes leakscope-records.jsonl, leakscope-records.png and leakscope-client-seconds.jsonl (each
round's time in the client: its training and the Mod) in the working directory."""
import argparse
import csv
import io
import json
import os
import shutil
import time
from pathlib import Path
from typing import Optional

import pandas as pd
import torch
from sklearn.compose import ColumnTransformer
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from torch.utils.data import DataLoader, TensorDataset
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import DifferentialPrivacyServerSideFixedClipping, FedAvg
from flwr.simulation import run_simulation

from leakscope.flower import drain_monitor, leakage_mod, plot_records, read_records
from leakscope.flower_canaries import CanaryStrategy

ADULT = Path(__file__).resolve().parents[2] / "data" / "adult-sample.csv"
ROWS, EPOCHS, BATCH, LR, ROUNDS, BLOCK_ABOVE = 32, 1, 8, 0.05, 3, 0.82
# A round here counts 574.6 GFLOP (the records' work_gflop: the attack and its shadow client, each
# at most twice over and with the replays that choose rows); this machine's pace is in each record's seconds.
BUDGET_GFLOP = 1000.0
RECORDS = Path("leakscope-records.jsonl").resolve()
CLIENT_SECONDS = Path("leakscope-client-seconds.jsonl").resolve()
# The federation's preprocessing, fitted on its table's complete rows ("?" marks a missing cell).
FEDERATION = pd.read_csv(ADULT, na_values="?").dropna()
CATEGORICAL = [c for c in FEDERATION.columns if c != "salary" and not pd.api.types.is_numeric_dtype(FEDERATION[c])]
NUMERIC = [c for c in FEDERATION.columns if c != "salary" and c not in CATEGORICAL]
PREPROCESS = ColumnTransformer(
    [("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), CATEGORICAL), ("num", StandardScaler(), NUMERIC)]
).fit(FEDERATION.drop(columns="salary"))
CLASSES = sorted(FEDERATION["salary"].unique())  # the network's outputs, in order


def partition(k: int) -> bytes:
    """Client k's rows: complete rows 32k .. 32k + 31 of the sample, as a CSV of their own."""
    with open(ADULT, newline="") as f:
        header, *body = list(csv.reader(f))
    complete = [r for r in body if not any(c.strip() in ("", "?") for c in r)]
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([header, *complete[ROWS * k : ROWS * (k + 1)]])
    return out.getvalue().encode()


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    d = len(PREPROCESS.get_feature_names_out())
    return torch.nn.Sequential(
        torch.nn.Linear(d, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2)
    )


def optimizer(params) -> torch.optim.Optimizer:
    """The client's optimiser, made afresh each round: the Mod is handed this same function."""
    return torch.optim.SGD(params, lr=LR, momentum=0.9)


def train(msg: Message, context: Context) -> Message:
    frame = pd.read_csv(io.BytesIO(partition(context.node_config["partition-id"])))
    x = torch.tensor(PREPROCESS.transform(frame.drop(columns="salary")), dtype=torch.float32)
    y = torch.tensor([CLASSES.index(v) for v in frame["salary"]])
    rows = DataLoader(TensorDataset(x, y), batch_size=BATCH, shuffle=True)
    model = mlp()
    model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    opt = optimizer(model.parameters())
    for _ in range(EPOCHS):  # as quickstart-pytorch: the rows reshuffled every epoch
        for xb, yb in rows:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
    content = RecordDict({"arrays": ArrayRecord(model.state_dict()), "metrics": MetricRecord({"num-examples": len(y)})})
    return Message(content, reply_to=msg)


def timed(msg: Message, context: Context, call_next) -> Message:
    """A Mod listed before leakscope's: the client's time per round (its training and the Mod)."""
    start = time.perf_counter()
    reply = call_next(msg, context)
    with open(CLIENT_SECONDS, "a") as f:
        seconds = time.perf_counter() - start
        f.write(json.dumps({"round": msg.content["config"]["server-round"], "client": str(context.node_config["partition-id"]),
                            "seconds": seconds}) + "\n")
    return reply


def client_app(mode: str, budget_gflop: float) -> ClientApp:
    mod = leakage_mod(
        lambda context: partition(context.node_config["partition-id"]),  # each node's own rows
        label="salary",
        transformer=PREPROCESS,  # the client's own encoding: the attack reads the update in its terms
        fitted_on=ADULT,  # the table it was fitted on (its numeric columns' ranges)
        protocol="fedavg",
        local_epochs=EPOCHS,
        local_batch=BATCH,
        optimizer=optimizer,  # lr, momentum and the rest read off the client's own optimiser
        shuffle=True,  # the DataLoader reshuffles: the order is the client's secret
        mode=mode,  # "gate": decide before the reply leaves; "monitor": send it, attack beside
        block_above=BLOCK_ABOVE if mode == "gate" else None,
        budget_gflop=budget_gflop,  # work, not seconds: the same rounds attacked under any load
        records=RECORDS,
    )
    app = ClientApp(mods=[timed, mod])
    app.train()(train)
    return app


def model_accuracy(server_round: int, arrays: ArrayRecord) -> MetricRecord:
    """The global model's accuracy on the federation's table, after each round."""
    model = mlp()
    model.load_state_dict(arrays.to_torch_state_dict())
    x = torch.tensor(PREPROCESS.transform(FEDERATION.drop(columns="salary")), dtype=torch.float32)
    y = torch.tensor([CLASSES.index(v) for v in FEDERATION["salary"]])
    with torch.no_grad():
        accuracy = float((model(x).argmax(1) == y).float().mean())
    print(f"round {server_round}: the model's accuracy on the table {100 * accuracy:.1f} %")
    return MetricRecord({"accuracy": accuracy})


def server_app(dp_noise: Optional[float], clip: float, canaries: int) -> ServerApp:
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        strategy = FedAvg(fraction_evaluate=0.0, min_train_nodes=2, min_available_nodes=2)
        if dp_noise is not None:  # the server clips each update and noises their average
            strategy = DifferentialPrivacyServerSideFixedClipping(strategy, noise_multiplier=dp_noise,
                                                                  clipping_norm=clip, num_sampled_clients=2)
            if canaries > 0:  # canaries in each released round: an ε measured beside the accountant's
                strategy = CanaryStrategy(strategy, canaries=canaries, records=RECORDS)
        strategy.start(grid=grid, initial_arrays=ArrayRecord(mlp().state_dict()), num_rounds=ROUNDS,
                       train_config=ConfigRecord({"lr": LR}), evaluate_fn=model_accuracy)

    return app


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="The leakscope Mod in Flower's simulation engine.")
    parser.add_argument("--mode", choices=("gate", "monitor"), default="gate")
    parser.add_argument("--budget-gflop", type=float, default=BUDGET_GFLOP)
    parser.add_argument("--dp-noise", type=float, help="DP-FedAvg's noise multiplier σ (default: no DP)")
    parser.add_argument("--clip", type=float, default=1.0, help="DP-FedAvg's clipping norm C")
    parser.add_argument("--canaries", type=int, default=1000, help="canaries inserted under DP (0: none)")
    args = parser.parse_args()
    # A fresh run: the records, the client's times, and a monitor's queue (`<records>.pending`).
    for path in (RECORDS, CLIENT_SECONDS):
        path.unlink(missing_ok=True)
    shutil.rmtree(f"{RECORDS}.pending", ignore_errors=True)
    # Ray runs its workers (here, the clients and the Mod) at nice 15 unless told otherwise: on a
    # busy machine they would get almost no CPU, which a real client, a process of its own, does.
    os.environ.setdefault("RAY_worker_niceness", "0")
    start = time.perf_counter()
    run_simulation(server_app(args.dp_noise, args.clip, args.canaries), client_app(args.mode, args.budget_gflop), num_supernodes=2,
                   backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0}})
    trained = time.perf_counter() - start
    if args.mode == "monitor":
        drain_monitor(RECORDS)  # the audits still running, or left queued when the simulation's actors stopped
    print(f"{args.mode}: training took {trained:.1f} s; with every audit written, {time.perf_counter() - start:.1f} s")
    table = read_records(RECORDS)
    if "kind" in table:  # the canary strategy's rounds: ε measured, ε accounted, the attack, one record each
        private = table[table.kind == "privacy"]
        table = table[table.kind != "privacy"]
        print(private[["round", "epsilon_accountant", "epsilon_measured", "epsilon_measured_interval",
                       "epsilon_measured_final_model", "attack_accuracy", "attack_random_baseline",
                       "attack_rows_proved", "canary_seconds"]].to_string())
    print(table[["round", "client", "attacked", "accuracy", "random_baseline", "rows_proved", "work_gflop", "seconds"]].to_string())
    print(table[["round", "client", "optimizer", "momentum", "local_order", "recipe_mismatch"]].to_string())
    print(table[table.blocked.notna()][["round", "client", "blocked"]].to_string())
    print(read_records(CLIENT_SECONDS).to_string())  # the client's time per round, training and Mod
    plot_records(read_records(RECORDS), RECORDS.with_suffix(".png"))
