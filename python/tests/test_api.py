"""The API on the bundled samples: the same reports as the CLI, tables in every form, the
engine's errors by name, progress and cancelling."""
import json

import pytest

import leakscope
from conftest import ADULT, GERMAN, read_json

SMALL = dict(batch_size=8, ensemble=3, iterations=150, seed=3)


def test_inspect_reads_both_samples_as_the_cli_does(cli):
    for path in (ADULT, GERMAN):
        assert leakscope.inspect(path) == json.loads(cli("inspect", "--csv", str(path), "--json"))


def test_attack_gives_the_cli_report(cli, tmp_path):
    ours = leakscope.attack(GERMAN, label="credit_risk", progress=False, **SMALL)
    out = tmp_path / "r.json"
    cli("attack", "--csv", str(GERMAN), "--label", "credit_risk", "--batch-size", "8", "--ensemble", "3",
        "--iterations", "150", "--seed", "3", "--quiet", "--json", str(out))
    theirs = read_json(out)
    assert set(ours) == set(theirs)
    assert ours["accuracy"] == theirs["accuracy"]
    assert [r["reconstructed"] for r in ours["rows"]] == [r["reconstructed"] for r in theirs["rows"]]


def test_a_table_as_bytes_or_dataframe_is_the_same_table():
    by_path = leakscope.attack(ADULT, label="salary", progress=False, **SMALL)
    by_bytes = leakscope.attack(ADULT.read_bytes(), label="salary", progress=False, **SMALL)
    assert by_bytes["rows"] == by_path["rows"]
    pd = pytest.importorskip("pandas")
    frame = pd.read_csv(ADULT, dtype=str, keep_default_na=False)
    by_frame = leakscope.attack(frame, label="salary", progress=False, **SMALL)
    assert by_frame["rows"] == by_path["rows"]


def test_unknown_options_and_bad_tables_are_named():
    with pytest.raises(leakscope.LeakscopeError, match="unknown field `batch_sise`"):
        leakscope.attack(ADULT, label="salary", batch_sise=8)
    with pytest.raises(leakscope.LeakscopeError, match="no_such_column"):
        leakscope.attack(ADULT, label="no_such_column")
    with pytest.raises(TypeError, match="a table is a CSV path"):
        leakscope.inspect(42)
    with pytest.raises(leakscope.LeakscopeError):
        leakscope.inspect(b"\x00\x01\x02binary")


def test_progress_reaches_the_callback_and_false_cancels():
    seen = []
    leakscope.attack(ADULT, label="salary", progress=seen.append, **SMALL)
    assert seen and all({"phase", "step", "of", "loss", "elapsed"} <= set(p) for p in seen)
    assert seen[-1]["step"] <= seen[-1]["of"]
    with pytest.raises(leakscope.Cancelled, match="returned False"):
        leakscope.attack(ADULT, label="salary", progress=lambda p: False, **SMALL)
    with pytest.raises(ZeroDivisionError):
        leakscope.attack(ADULT, label="salary", progress=lambda p: 1 / 0, **SMALL)


def test_defaults_and_attacks_are_the_engines():
    d = leakscope.defaults()
    assert d["batch_size"] == 32 and d["protocol"] == "fedsgd" and "label" in d
    names = [a["name"] for a in leakscope.attacks()]
    assert "tableak" in names and "random" in names


def test_privacy_is_the_cli_accounting(cli):
    ours = leakscope.privacy(1.1, 50, sample_rate=0.02)
    theirs = json.loads(cli("privacy", "--noise-multiplier", "1.1", "--rounds", "50", "--sample-rate", "0.02", "--json"))
    assert ours == theirs
    assert ours["canaries"] is None


def test_privacy_measures_epsilon_with_canaries_as_the_cli_does(cli):
    canaries = dict(inserted=200, held_out=300, dimension=20_000, seed=4)
    ours = leakscope.privacy(2.0, 1, canaries=canaries)
    theirs = json.loads(cli("privacy", "--noise-multiplier", "2", "--rounds", "1", "--canaries", "200",
                            "--held-out", "300", "--dimension", "20000", "--canary-seed", "4", "--json"))
    assert ours == theirs
    c = ours["canaries"]
    assert (c["canaries"], c["held_out"], c["dimension"]) == (200, 300, 20_000)
    # σ = 2: the canaries stand μ = 1/√(σ² + k/d) ≈ 0.499 apart, read to within 4 standard errors.
    assert abs(c["final_model"]["mu"] - 0.499) <= 4 / 200 ** 0.5, c["final_model"]
    lo, hi = c["final_model"]["interval"]
    assert lo < c["final_model"]["epsilon"] < hi
    with pytest.raises(leakscope.LeakscopeError, match="at least 2 inserted"):
        leakscope.privacy(2.0, 1, canaries=dict(inserted=1, dimension=100))


def test_audit_runs_a_small_grid():
    report = leakscope.audit(
        GERMAN, label="credit_risk", run=dict(ensemble=2, iterations=60), batches=1, batch_sizes=[8],
        attacks=["tableak", "random"], noise_scales=[], clients=[], local_epochs=[], local_batches=[],
        training_epochs=[], client_rows=[], reference_batch=8, progress=False,
    )
    audit = report["audit"]
    assert audit["options"]["batchSizes"] == [8] and audit["options"]["run"]["ensemble"] == 2
    assert len(audit["cells"]) == 2 and audit["verdict"]
    assert "| B = 8 | TabLeak |" in report["markdown"]


def test_ctrl_c_interrupts_a_run():
    import os
    import signal

    seen = []

    def interrupt_once(p):
        if not seen:
            os.kill(os.getpid(), signal.SIGINT)
        seen.append(p)

    # A shell's background job (`cmd &`, nohup, some CI runners) starts with SIGINT ignored: the
    # test sets the handling it relies on, Python's own, and puts back what it found (issue 46).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            leakscope.attack(ADULT, label="salary", progress=interrupt_once, **SMALL)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert len(seen) <= 2, "the run stopped at the report after Ctrl-C"


def test_the_installed_wheel_carries_both_licences():
    from importlib.metadata import distribution

    dist = distribution("leakscope")
    licences = {p.name: p.read_text().lstrip().split("\n")[0].strip() for p in dist.files if "licenses" in p.parts}
    assert licences == {"LICENSE-MIT": "MIT License", "LICENSE-APACHE": "Apache License"}
    assert dist.metadata["License-Expression"] == "MIT OR Apache-2.0"
