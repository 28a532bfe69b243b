//! The nonlinearity between the client's layers, with the two derivatives the explicit backward
//! pass (σ′) and the attacker's second-order gradient (σ″) need. PyTorch's definitions: `nn.ReLU`,
//! `nn.LeakyReLU(slope)`, `nn.GELU()` (exact, with erf), `nn.Tanh`, `nn.Sigmoid`.
use burn::tensor::Tensor;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::error::{Error, Result};

/// PyTorch's default negative slope of `nn.LeakyReLU`.
pub const DEFAULT_LEAKY_SLOPE: f64 = 0.01;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS, Default)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Activation {
    #[default]
    Relu,
    LeakyRelu {
        /// The slope below zero (PyTorch's `negative_slope`, default 0.01).
        #[serde(default = "default_slope")]
        slope: f64,
    },
    Gelu,
    Tanh,
    Sigmoid,
}

fn default_slope() -> f64 {
    DEFAULT_LEAKY_SLOPE
}

const INV_SQRT_2: f64 = std::f64::consts::FRAC_1_SQRT_2;
/// 1/√(2π).
const INV_SQRT_2PI: f64 = 0.398_942_280_401_432_7;

impl Activation {
    /// The names the CLI takes.
    pub const NAMES: [&'static str; 5] = ["relu", "leaky_relu", "gelu", "tanh", "sigmoid"];

    pub fn name(&self) -> &'static str {
        match self {
            Activation::Relu => "relu",
            Activation::LeakyRelu { .. } => "leaky_relu",
            Activation::Gelu => "gelu",
            Activation::Tanh => "tanh",
            Activation::Sigmoid => "sigmoid",
        }
    }

    /// From its name (and the slope, for `leaky_relu`).
    pub fn parse(name: &str, slope: Option<f64>) -> Result<Activation> {
        let a = match name.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "relu" => Activation::Relu,
            "leaky_relu" | "leakyrelu" => Activation::LeakyRelu {
                slope: slope.unwrap_or(DEFAULT_LEAKY_SLOPE),
            },
            "gelu" => Activation::Gelu,
            "tanh" => Activation::Tanh,
            "sigmoid" => Activation::Sigmoid,
            other => {
                return Err(Error::Config(format!(
                    "unknown activation {other:?}: use one of {}",
                    Self::NAMES.join(", ")
                )));
            }
        };
        if slope.is_some() && !matches!(a, Activation::LeakyRelu { .. }) {
            return Err(Error::Config(format!("a slope is leaky_relu's; {} has none", a.name())));
        }
        a.validate()?;
        Ok(a)
    }

    pub fn validate(&self) -> Result<()> {
        if let Activation::LeakyRelu { slope } = self
            && !slope.is_finite()
        {
            return Err(Error::Config(format!(
                "leaky_relu's slope {slope} must be a finite number"
            )));
        }
        Ok(())
    }

    /// ReLU: what the exact proofs from the activation pattern (`attack::priors::activity`) and the fused
    /// and GPU kernels are written for.
    pub fn is_relu(&self) -> bool {
        matches!(self, Activation::Relu)
    }

    /// Affine on each side of zero (ReLU, leaky ReLU): a row's activation is affine in its
    /// continuous values within its ReLU cell, which the second layer's certificate reasons on.
    pub fn is_piecewise_linear(&self) -> bool {
        matches!(self, Activation::Relu | Activation::LeakyRelu { .. })
    }

    /// σ(a), σ′(a) and, where it is not zero everywhere, σ″(a).
    pub fn apply(&self, a: Tensor<3>) -> (Tensor<3>, Tensor<3>, Option<Tensor<3>>) {
        match *self {
            Activation::Relu => {
                let mask = a.clone().greater_elem(0.0).float();
                (a * mask.clone(), mask, None)
            }
            Activation::LeakyRelu { slope } => {
                // σ′ = slope + (1 − slope)·[a > 0].
                let d = a
                    .clone()
                    .greater_elem(0.0)
                    .float()
                    .mul_scalar(1.0 - slope)
                    .add_scalar(slope);
                (a * d.clone(), d, None)
            }
            Activation::Gelu => {
                // σ = a Φ(a), σ′ = Φ(a) + a φ(a), σ″ = φ(a) (2 − a²).
                let cdf = a.clone().mul_scalar(INV_SQRT_2).erf().add_scalar(1.0).mul_scalar(0.5);
                let sq = a.clone() * a.clone();
                let pdf = sq.clone().mul_scalar(-0.5).exp().mul_scalar(INV_SQRT_2PI);
                let h = a.clone() * cdf.clone();
                let d1 = cdf + a * pdf.clone();
                let d2 = pdf * sq.neg().add_scalar(2.0);
                (h, d1, Some(d2))
            }
            Activation::Tanh => {
                // σ′ = 1 − t², σ″ = −2 t σ′.
                let t = a.tanh();
                let d1 = (t.clone() * t.clone()).neg().add_scalar(1.0);
                let d2 = t.clone().mul_scalar(-2.0) * d1.clone();
                (t, d1, Some(d2))
            }
            Activation::Sigmoid => {
                // σ′ = s(1 − s), σ″ = σ′ (1 − 2s).
                let s = burn::tensor::activation::sigmoid(a);
                let d1 = s.clone() * s.clone().neg().add_scalar(1.0);
                let d2 = d1.clone() * s.clone().mul_scalar(-2.0).add_scalar(1.0);
                (s, d1, Some(d2))
            }
        }
    }

    /// σ′(a) of one value on the host, in f64 (the second layer's certificate fits rows by it).
    pub fn host_slope(&self, a: f64) -> f64 {
        match *self {
            Activation::Relu => (a > 0.0) as u8 as f64,
            Activation::LeakyRelu { slope } => {
                if a > 0.0 {
                    1.0
                } else {
                    slope
                }
            }
            Activation::Gelu => 0.5 * (1.0 + libm::erf(a * INV_SQRT_2)) + a * INV_SQRT_2PI * (-0.5 * a * a).exp(),
            Activation::Tanh => 1.0 - a.tanh().powi(2),
            Activation::Sigmoid => {
                let s = 1.0 / (1.0 + (-a).exp());
                s * (1.0 - s)
            }
        }
    }

    /// σ(a) of one value on the host, in f64 (label restoration, certificates).
    pub fn host(&self, a: f64) -> f64 {
        match *self {
            Activation::Relu => a.max(0.0),
            Activation::LeakyRelu { slope } => {
                if a > 0.0 {
                    a
                } else {
                    slope * a
                }
            }
            Activation::Gelu => 0.5 * a * (1.0 + libm::erf(a * INV_SQRT_2)),
            Activation::Tanh => a.tanh(),
            Activation::Sigmoid => 1.0 / (1.0 + (-a).exp()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_slopes_belong_to_leaky_relu() {
        for name in Activation::NAMES {
            assert_eq!(Activation::parse(name, None).unwrap().name(), name);
        }
        assert_eq!(
            Activation::parse("LeakyReLU", Some(0.2)).unwrap(),
            Activation::LeakyRelu { slope: 0.2 }
        );
        let e = Activation::parse("swish", None).unwrap_err().to_string();
        assert!(
            e.contains("unknown activation \"swish\": use one of relu, leaky_relu"),
            "{e}"
        );
        let e = Activation::parse("gelu", Some(0.1)).unwrap_err().to_string();
        assert!(e.contains("a slope is leaky_relu's; gelu has none"), "{e}");
        assert!(Activation::parse("leaky_relu", Some(f64::NAN)).is_err());
    }

    #[test]
    fn host_values_are_pytorchs() {
        // torch.nn.functional.gelu(torch.tensor(1.0, dtype=torch.float64)) = 0.8413447460685429.
        assert!((Activation::Gelu.host(1.0) - 0.841_344_746_068_542_9).abs() < 1e-12);
        assert_eq!(Activation::LeakyRelu { slope: 0.1 }.host(-2.0), -0.2);
        assert!((Activation::Sigmoid.host(0.0) - 0.5).abs() < 1e-15);
    }

    #[test]
    fn host_slopes_are_the_derivatives_of_host_values() {
        let all = [
            Activation::Relu,
            Activation::LeakyRelu { slope: 0.2 },
            Activation::Gelu,
            Activation::Tanh,
            Activation::Sigmoid,
        ];
        for a in all {
            for x in [-2.3, -0.4, 0.7, 1.9] {
                let numeric = (a.host(x + 1e-6) - a.host(x - 1e-6)) / 2e-6;
                assert!((a.host_slope(x) - numeric).abs() < 1e-6, "{} at {x}", a.name());
            }
        }
    }
}
