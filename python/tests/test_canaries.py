"""Canaries in a training run's aggregates (leakscope.canaries, the engine's CanaryRun): on the
Gaussian mechanism fed round by round as a strategy feeds it, the estimate finds the analytic ε;
in a DP-FedAvg run the canaries leave the model's accuracy within the run-to-run noise of one
without them; and what a strategy hands over wrongly is refused by name."""
import numpy as np
import pytest

import leakscope
from client import client_rows, encoding
from leakscope.canaries import Canaries


def test_rounds_fed_one_by_one_measure_the_mechanism_the_accountant_bounds():
    """Three rounds of a model of two arrays (and an integer counter the canaries leave alone),
    averaged over n = 4 clients clipped to C = 2 with noise σ = 2: 800 canaries at C/n measure the
    ε of three releases at σ (the accountant's GDP figure, sampling every round), within 15 %."""
    sigma, clip, clients, delta = 2.0, 2.0, 4, 1e-5
    rng = np.random.default_rng(0)
    shapes = [(120, 100), (100,)]
    model = [np.zeros(s, np.float32) for s in shapes] + [np.array(7, np.int64)]
    canaries = Canaries(800, clip / clients, seed=3, delta=delta)
    for _ in range(3):
        noised = [m + rng.normal(0, sigma * clip / clients, m.shape).astype(np.float32) for m in model[:2]]
        released = canaries.insert(model, noised + [model[2] + 1])
        assert [r.dtype for r in released] == [np.float32, np.float32, np.int64]
        assert released[2] == model[2] + 1, "the counter is the strategy's"
        model = released
    estimate = canaries.estimate()
    assert canaries.rounds == 3 and canaries.joined == [800, 800, 800]
    assert estimate["dimension"] == 120 * 100 + 100
    # Three releases at σ compose to one at σ/√3 (the Gaussian mechanism's ε, δ = 1e-5).
    want = leakscope.privacy(sigma / np.sqrt(3), 1, sample_rate=1.0, delta=delta)["per_release"]
    every = estimate["every_round"]
    assert abs(every["epsilon"] - want) <= 0.15 * want, (want, every)
    assert every["interval"][0] <= want <= every["interval"][1], (want, every)
    assert every["null_holds"] and not every["beyond_range"], every


def dp_fedavg(z, y, seed: int, canaries):
    """Logistic regression trained by DP-FedAvg: 40 clients of 10 rows, each one local gradient
    step, updates clipped to C = 0.5, averaged, noise σ = 1 (std σC/n), 30 rounds; with `canaries`
    inserted into each released round. The final model's accuracy on the rows."""
    rng = np.random.default_rng(seed)
    clip, sigma, clients = 0.5, 1.0, 40
    w = [np.zeros(z.shape[1]), np.zeros(1)]
    parts = np.array_split(np.arange(len(y)), clients)
    for _ in range(30):
        total = [np.zeros_like(w[0]), np.zeros_like(w[1])]
        for part in parts:
            p = 1 / (1 + np.exp(-(z[part] @ w[0] + w[1])))
            step = [-z[part].T @ (p - y[part]) / len(part), -np.array([np.mean(p - y[part])])]
            norm = np.sqrt(sum(np.sum(s * s) for s in step))
            total = [t + s * min(1.0, clip / norm) for t, s in zip(total, step)]
        new = [wi + (t + rng.normal(0, sigma * clip, t.shape)) / clients for wi, t in zip(w, total)]
        w = new if canaries is None else canaries.insert(w, new)
    return float(np.mean(((z @ w[0] + w[1]) > 0) == (y == 1)))


def test_a_run_with_canaries_keeps_its_accuracy_within_the_runs_own_noise():
    """Five seeds of noise with and without 10 canaries, on 2,000 random ReLU features of the
    encoded rows (d ≈ 2,100: a canary's direction repeats every round, so over T rounds the k
    canaries weigh √(kT/d)/σ of the noise in the final model, here 0.38; the paper's models are
    far larger). The canaries move the accuracy less than the noise moves it from seed to seed;
    inserted at C instead of C/n (a strategy that forgot it averages), they cost many times that."""
    x, y = leakscope.encode(client_rows(0, 400), encoding())
    x, y = x.astype(np.float64), y.astype(np.float64)
    features = np.random.default_rng(0).normal(0, 1 / np.sqrt(x.shape[1]), (x.shape[1], 2000))
    z = np.hstack([x, np.maximum(x @ features, 0)])
    without = [dp_fedavg(z, y, s, None) for s in range(5)]
    with_ = [dp_fedavg(z, y, s, Canaries(10, 0.5 / 40, seed=s)) for s in range(5)]
    spread = np.std(without, ddof=1)
    assert np.mean(without) > 0.8, without  # the run learns despite its noise
    assert abs(np.mean(with_) - np.mean(without)) <= spread, (with_, without)
    too_big = [dp_fedavg(z, y, s, Canaries(10, 0.5, seed=s)) for s in range(5)]
    assert np.mean(without) - np.mean(too_big) > 3 * spread, (too_big, without)


@pytest.mark.parametrize(
    "previous, aggregated, says",
    [
        ([np.zeros(3)], [np.zeros(3), np.zeros(2)], "the model had 1 arrays and the aggregate has 2"),
        ([np.zeros(3)], [np.zeros(4)], "array 0 changed shape from (3,) to (4,)"),
        ([np.zeros(3)], [np.array([0.0, np.nan, 0.0])], "not finite"),
    ],
)
def test_what_a_strategy_hands_over_wrongly_is_refused_by_name(previous, aggregated, says):
    with pytest.raises((ValueError, leakscope.LeakscopeError), match=None) as e:
        Canaries(4, 1.0).insert(previous, aggregated)
    assert says in str(e.value)


def test_a_round_of_another_size_and_a_bad_query_are_refused():
    canaries = Canaries(4, 1.0)
    canaries.insert([np.zeros(10)], [np.ones(10)])
    with pytest.raises(leakscope.LeakscopeError, match="the aggregate has 11 parameters; the canaries were drawn for 10"):
        canaries.insert([np.zeros(11)], [np.ones(11)])
    with pytest.raises(ValueError, match="at least 2 inserted"):
        Canaries(1, 1.0).insert([np.zeros(10)], [np.ones(10)])
    with pytest.raises(ValueError, match="scale must be positive"):
        Canaries(4, 0.0)
    with pytest.raises(ValueError, match="no round yet"):
        Canaries(4, 1.0).estimate()
