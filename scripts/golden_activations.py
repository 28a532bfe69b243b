#!/usr/bin/env python3
"""Golden vectors for the client's activations and heads (issue 18), in float64 with PyTorch.

For each activation between the layers of a small [6, 5, 4, 3] network (ReLU, LeakyReLU(0.2),
GELU, Tanh, Sigmoid), for a [6, 3] network without a hidden layer (softmax regression), and with a
sigmoid head (one logit under BCEWithLogitsLoss) on [6, 5, 4, 1] (ReLU, GELU, Tanh) and [6, 1]
(logistic regression), and with a regression's head (one linear output under MSELoss on a
continuous label) on [6, 5, 4, 1] (ReLU, GELU, Tanh) and [6, 1] (linear regression), on 4 rows: the mean loss's parameter gradient (the client's explicit
backward pass), and, for a fixed tensor G of the gradient's shapes, the gradient of
S = Σ ⟨G, ∇θ L(x, θ)⟩ with respect to the rows x and to θ (the attacker's second-order gradient,
`attack::second_order::reverse`), and for the regression with respect to its label y too (the
server reconstructs it with the rows). Weights are written [in, out] (leakscope's layout), rows of x
have no zero pre-activation (ReLU's kink), so every activation is differentiable where it is used.

  python3 scripts/golden_activations.py > tests/fixtures/activation_grads.json

Needs torch (pip install torch).
"""
import json

import torch

torch.set_default_dtype(torch.float64)
SIZES = [6, 5, 4, 3]
ROWS = 4
ACTIVATIONS = [
    ({"kind": "relu"}, torch.nn.ReLU()),
    ({"kind": "leaky_relu", "slope": 0.2}, torch.nn.LeakyReLU(0.2)),
    ({"kind": "gelu"}, torch.nn.GELU()),
    ({"kind": "tanh"}, torch.nn.Tanh()),
    ({"kind": "sigmoid"}, torch.nn.Sigmoid()),
]


def network(sizes, activations, g, head="softmax"):
    rand = lambda *shape: torch.rand(*shape, generator=g) * 2 - 1
    weights = [rand(sizes[i], sizes[i + 1]) for i in range(len(sizes) - 1)]  # [in, out]
    biases = [rand(sizes[i + 1]) * 0.5 for i in range(len(sizes) - 1)]
    x0 = rand(ROWS, sizes[0]) * 1.5
    y = {
        "softmax": torch.tensor([0, 2, 1, 2]),
        "sigmoid": torch.tensor([0, 1, 1, 0]),
        "linear": torch.tensor([0.5, -1.25, 2.0, 0.1]),
    }[head]
    big_g = [rand(*w.shape) for w in weights], [rand(*b.shape) for b in biases]
    cases = []
    for spec, act in activations:
        x = x0.clone().requires_grad_(True)
        yv = y.clone().requires_grad_(head == "linear")
        theta = [t.clone().requires_grad_(True) for t in weights + biases]
        ws, bs = theta[: len(weights)], theta[len(weights):]
        h = x
        for l, (w, b) in enumerate(zip(ws, bs)):
            a = h @ w + b
            h = act(a) if l + 1 < len(ws) else a
        if head == "softmax":
            loss = torch.nn.functional.cross_entropy(h, y)
        elif head == "sigmoid":
            loss = torch.nn.functional.binary_cross_entropy_with_logits(h[:, 0], y.to(h.dtype))
        else:
            loss = torch.nn.functional.mse_loss(h[:, 0], yv)
        grads = torch.autograd.grad(loss, theta, create_graph=True)
        s = sum((gg * t).sum() for gg, t in zip(grads, big_g[0] + big_g[1]))
        wrt = [x] + theta + ([yv] if head == "linear" else [])
        dx, *rest = torch.autograd.grad(s, wrt)
        n = len(weights)
        dtheta = rest[: 2 * n]
        case = {
            "activation": spec,
            "loss": loss.item(),
            "grad": {"weights": [t.tolist() for t in grads[:n]], "biases": [t.tolist() for t in grads[n:]]},
            "dS_dx": dx.tolist(),
            "dS_dtheta": {"weights": [t.tolist() for t in dtheta[:n]], "biases": [t.tolist() for t in dtheta[n:]]},
        }
        if head == "linear":
            case["dS_dy"] = rest[2 * n].tolist()
        cases.append(case)
    return {
        "head": head,
        "sizes": sizes,
        "weights": [w.tolist() for w in weights],
        "biases": [b.tolist() for b in biases],
        "x": x0.tolist(),
        "y": y.tolist(),
        "G": {"weights": [t.tolist() for t in big_g[0]], "biases": [t.tolist() for t in big_g[1]]},
        "cases": cases,
    }


def main():
    g = torch.Generator().manual_seed(18)
    print(json.dumps({
        "description": __doc__.strip().splitlines()[0],
        # Two hidden layers, every activation; no hidden layer (softmax regression); and one logit
        # under BCE, with hidden layers and without (logistic regression).
        "networks": [
            network(SIZES, ACTIVATIONS, g),
            network([SIZES[0], SIZES[-1]], ACTIVATIONS[:1], g),
            network(SIZES[:-1] + [1], [ACTIVATIONS[0], ACTIVATIONS[2], ACTIVATIONS[3]], g, "sigmoid"),
            network([SIZES[0], 1], ACTIVATIONS[:1], g, "sigmoid"),
            # A regression: one linear output under the squared error, with and without hidden layers.
            network(SIZES[:-1] + [1], [ACTIVATIONS[0], ACTIVATIONS[2], ACTIVATIONS[3]], g, "linear"),
            network([SIZES[0], 1], ACTIVATIONS[:1], g, "linear"),
        ],
    }))


if __name__ == "__main__":
    main()
