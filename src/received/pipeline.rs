//! A received network and update rewritten from the client's own inputs (`table::Pipeline`) into
//! leakscope's (full one-hot blocks), where that is exact, so that every part of the attack (the
//! span, the proofs, the certificate) reads it as it reads a client of its own.
//!
//! A dropped category c0 of a block has no input and so no first-layer weight: in leakscope's
//! terms its weight is 0, and its gradient row follows from the others, because a row's one-hot
//! block sums to 1: Σ δ·u_c0 = Σ δ − Σ_{j kept} Σ δ·u_j, with Σ δ the first layer's bias gradient
//! and Σ δ·u_j = std_j·G_j + mean_j·Σ δ undoing the input's scaling. That holds for one gradient
//! (FedSGD, any scaling of it); over local steps leakscope's network would train the weight the
//! client's lacks, so there it is refused. Ordinal codes fold a column's categories into one
//! input whose gradient holds Σ δ·code, not a row per category: refused, with the reason.
use std::borrow::Cow;

use super::ReceivedUpdate;
use crate::config::{AttackConfig, Protocol};
use crate::error::{Error, Result};
use crate::table::{Coding, Dataset, FeatureKind};

/// `received` in the terms of `dataset` (the encoding's, read by `Encoding::into_dataset`):
/// itself where the client's pipeline is leakscope's own, rewritten where it drops categories.
pub fn in_dataset_terms<'a>(
    dataset: &Dataset,
    config: &AttackConfig,
    received: &'a ReceivedUpdate,
) -> Result<Cow<'a, ReceivedUpdate>> {
    let Some(pipeline) = &dataset.pipeline else {
        return Ok(Cow::Borrowed(received));
    };
    let fail = |m: String| Err(Error::Config(m));
    let inputs = received.params.sizes[0];
    if inputs != pipeline.d() {
        return fail(format!(
            "the network takes {inputs} inputs but the encoding's pipeline makes rows {} wide: is it the encoding \
             the client used?",
            pipeline.d()
        ));
    }
    if let Some(f) = pipeline.features.iter().find(|f| f.coding == Coding::Ordinal) {
        return fail(format!(
            "feature {:?} is coded as ordinal codes: its categories share one input, whose gradient is the sum of \
             the rows' signals weighted by their codes, not one per category, and leakscope's attack (a softmax \
             over one input per category) cannot be set up on it; not attacked. A one-hot coding of that column \
             can be",
            f.feature.name
        ));
    }
    if matches!(config.protocol, Protocol::Fedavg(_)) {
        let f = pipeline
            .features
            .iter()
            .find(|f| !f.is_plain())
            .expect("a pipeline differs somewhere");
        return fail(format!(
            "feature {:?} is coded {}: under local training the client's network has no weight for the dropped \
             category while leakscope's one-hot network would train one, so the rewriting is exact for one \
             gradient (FedSGD) only; this FedAvg update is not attacked",
            f.feature.name,
            f.describe()
        ));
    }
    let h = received.params.sizes[1];
    let (w, g) = (&received.params.weights[0], &received.update.layers[0].weight);
    let g_bias = &received.update.layers[0].bias;
    let d = dataset.d();
    let (mut w_out, mut g_out) = (vec![0f32; d * h], vec![0f32; d * h]);
    for (client, canon) in pipeline.features.iter().zip(&dataset.features) {
        let (at, to) = (client.feature.offset, canon.offset);
        let FeatureKind::Categorical { categories } = &canon.kind else {
            w_out[to * h..(to + 1) * h].copy_from_slice(&w[at * h..(at + 1) * h]);
            g_out[to * h..(to + 1) * h].copy_from_slice(&g[at * h..(at + 1) * h]);
            continue;
        };
        let dropped = client.dropped_index();
        // Σ δ·u_c0 = Σ δ − Σ_j (std_j·G_j + mean_j·Σ δ), accumulated in f64.
        let mut rest: Vec<f64> = g_bias.iter().map(|&v| v as f64).collect();
        for c in 0..categories.len() {
            let j = match dropped {
                Some(d0) if c == d0 => continue,
                Some(d0) if c > d0 => at + c - 1,
                _ => at + c,
            };
            let row = (to + c) * h..(to + c + 1) * h;
            w_out[row.clone()].copy_from_slice(&w[j * h..(j + 1) * h]);
            g_out[row].copy_from_slice(&g[j * h..(j + 1) * h]);
            let (mean, std) = (pipeline.mean[j], pipeline.std[j]);
            for (k, r) in rest.iter_mut().enumerate() {
                *r -= std * g[j * h + k] as f64 + mean * g_bias[k] as f64;
            }
        }
        if let Some(d0) = dropped {
            let row = (to + d0) * h..(to + d0 + 1) * h;
            for (out, r) in g_out[row].iter_mut().zip(rest) {
                *out = r as f32;
            }
        }
    }
    let mut out = received.clone();
    out.params.sizes[0] = d;
    out.params.weights[0] = w_out;
    out.update.layers[0].weight = g_out;
    Ok(Cow::Owned(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::fedavg::LocalTraining;
    use crate::client::head::{Head, Model};
    use crate::client::network::Params;
    use crate::client::simulate::{Round, simulate_round};
    use crate::table::{Encoding, Value};

    /// A client with a continuous column and a one-hot block that drops "b" (scaled as a
    /// StandardScaler after the OneHotEncoder would), and its encoding in leakscope's terms.
    fn client(coding: &str) -> Dataset {
        // An ordinal column takes one input, a one-hot one dropping a category three.
        let (age_at, mean, std) = match coding.contains("ordinal") {
            true => (1, "[0.25, 40]", "[0.5, 12]"),
            false => (3, "[0.25, 0.5, 0.125, 40]", "[0.5, 0.75, 2.0, 12]"),
        };
        let json = format!(
            r#"{{"format": "leakscope-encoding/1", "label": "y", "classes": ["n", "p"],
            "features": [
              {{"name": "c", "kind": "categorical", "categories": ["a", "b", "c", "d"], "offset": 0, {coding}}},
              {{"name": "age", "kind": "continuous", "min": 18, "max": 90, "decimals": 0, "std": 12,
                "offset": {age_at}}}],
            "mean": {mean}, "std": {std}}}"#
        );
        serde_json::from_str::<Encoding>(&json).unwrap().into_dataset().unwrap()
    }

    fn rows() -> Vec<Vec<Value>> {
        [(0, 30.0), (1, 61.0), (3, 19.0), (1, 44.0), (2, 80.0)]
            .into_iter()
            .map(|(c, a)| vec![Value::Cat(c), Value::Num(a)])
            .collect()
    }

    fn update_of(params: &Params, x: Vec<f32>) -> crate::client::update::Update {
        // Both classes among the targets: the softmax head's one-hot labels.
        let targets = [1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0];
        let round = Round::fedsgd(Model {
            head: Head::Softmax,
            ..Default::default()
        });
        pollster::block_on(simulate_round(params, &x, &targets, &round)).unwrap()
    }

    #[test]
    fn a_dropped_categorys_gradient_is_rebuilt_exactly_from_the_bias() {
        let dataset = client(r#""dropped": "b""#);
        let pipeline = dataset.pipeline.clone().unwrap();
        assert_eq!((pipeline.d(), dataset.d()), (4, 5));
        let params = Params::init(&[4, 6, 2], 7);
        let client_x: Vec<f32> = rows()
            .iter()
            .flat_map(|r| pipeline.encode(r))
            .map(|v| v as f32)
            .collect();
        let received = ReceivedUpdate {
            update: update_of(&params, client_x),
            params,
            rows: Some(5),
            labels: None,
        };
        let config = AttackConfig {
            batch_size: 5,
            ..Default::default()
        };
        let ours = in_dataset_terms(&dataset, &config, &received).unwrap().into_owned();
        assert_eq!(ours.params.sizes, [5, 6, 2]);
        // The same rows in leakscope's terms through the rewritten network: the same update,
        // the dropped category's row included.
        let x: Vec<f32> = rows()
            .iter()
            .flat_map(|r| dataset.encode(r))
            .map(|v| v as f32)
            .collect();
        let direct = update_of(&ours.params, x);
        let (mut gap, mut norm) = (0f64, 0f64);
        for (a, b) in direct.values().zip(ours.update.values()) {
            gap = gap.max((a - b).abs() as f64);
            norm = norm.max(a.abs() as f64);
        }
        assert!(gap <= 1e-5 * norm, "largest gap {gap} against {norm}");
        // The dropped category's row is not zero: the rows of category "b" send it.
        let h = 6;
        assert!(
            ours.update.layers[0].weight[h..2 * h]
                .iter()
                .any(|&v| v.abs() > 1e-4 * norm as f32)
        );
        assert!(ours.params.weights[0][h..2 * h].iter().all(|&v| v == 0.0));
        // Its own update back in its own terms reads the same.
        assert_eq!(Encoding::of(&dataset).features, pipeline.features);
    }

    #[test]
    fn ordinal_codes_and_a_dropped_category_under_local_training_are_refused_by_name() {
        let dataset = client(r#""coding": "ordinal""#);
        let pipeline = dataset.pipeline.clone().unwrap();
        let params = Params::init(&[pipeline.d(), 3, 2], 1);
        let x: Vec<f32> = rows()
            .iter()
            .flat_map(|r| pipeline.encode(r))
            .map(|v| v as f32)
            .collect();
        assert_eq!(
            pipeline.encode(&rows()[4])[0],
            (2.0 - 0.25) / 0.5,
            "the code is the category's index"
        );
        let received = ReceivedUpdate {
            update: update_of(&params, x),
            params,
            rows: Some(5),
            labels: None,
        };
        let e = in_dataset_terms(&dataset, &AttackConfig::default(), &received)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("feature \"c\" is coded as ordinal codes") && e.contains("not attacked"),
            "{e}"
        );
        let dropped = client(r#""dropped": "a""#);
        let fedavg = AttackConfig {
            protocol: Protocol::Fedavg(LocalTraining::default()),
            ..Default::default()
        };
        let p = dropped.pipeline.clone().unwrap();
        let params = Params::init(&[p.d(), 3, 2], 1);
        let x: Vec<f32> = rows().iter().flat_map(|r| p.encode(r)).map(|v| v as f32).collect();
        let received = ReceivedUpdate {
            update: update_of(&params, x),
            params,
            rows: Some(5),
            labels: None,
        };
        let e = in_dataset_terms(&dropped, &fedavg, &received).unwrap_err().to_string();
        assert!(e.contains("one-hot without \"a\"") && e.contains("FedSGD"), "{e}");
    }
}
