//! What the attacker minimises per member: how far the simulated update of its dummy rows is from
//! the observed one (SPEC §4), and the derivative of that with respect to the simulated update.
use burn::tensor::Tensor;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::attack::inversion::pointwise::{SQUARED_ERROR_ALPHA, SQUARED_ERROR_BETA, cosine_terms, objective_gradient};
use crate::client::gradient::ParamGrads;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum Objective {
    /// 1 − cos(g(x), g_true) over all parameters as one vector.
    Cosine,
    /// ‖g(x) − g_true‖² (DLG).
    SquaredError,
}

impl Objective {
    /// Per-member loss [N, 1] of the simulated updates `g` against the observed `target` (one
    /// member, broadcast), and, when asked, G = dloss/dg = α·target + β·g per member.
    pub fn evaluate(
        self,
        g: &ParamGrads,
        target: &ParamGrads,
        target_norm: f64,
        with_grad: bool,
    ) -> (Tensor<2>, Option<ParamGrads>) {
        let n = g.weights[0].dims()[0];
        let (loss, alpha, beta) = match self {
            Objective::Cosine => {
                let (loss, alpha, beta) = cosine_terms(g.dot(target), g.norm_sq(), target_norm.max(1e-30) as f32);
                (loss, alpha.reshape([n, 1, 1]), beta.reshape([n, 1, 1]))
            }
            Objective::SquaredError => {
                let device = g.weights[0].device();
                let constant = |v: f32| Tensor::<3>::ones([1, 1, 1], &device).mul_scalar(v);
                (
                    g.dist_sq(target),
                    constant(SQUARED_ERROR_ALPHA),
                    constant(SQUARED_ERROR_BETA),
                )
            }
        };
        let grad =
            with_grad.then(|| target.zip_with(g, |t, gk| objective_gradient(t, alpha.clone(), gk, beta.clone())));
        (loss, grad)
    }
}
