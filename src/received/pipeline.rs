//! A received network and update rewritten from the client's own inputs (`table::Pipeline`) into
//! leakscope's (full one-hot blocks), where that is exact, so that every part of the attack (the
//! span, the proofs, the certificate) reads it as it reads a client of its own.
//!
//! In leakscope's terms a categorical column's first-layer weight has a row per category: the
//! pre-activation a row of category c adds. For one gradient (FedSGD, any scaling of it) that
//! row's gradient G'_c is the sum of δ over the rows of category c, and:
//! - **A dropped category** c0 has no input: its weight is 0, and since a row's one-hot block sums
//!   to 1, G'_c0 = Σ δ − Σ_{j kept} (std_j·G_j + mean_j·Σ δ), with Σ δ the bias's gradient.
//! - **An embedding** E [k, w] gives category c the weight row Σ_j E[c, j]·W_j. The table's
//!   gradient is zero on the categories absent from the batch (read exactly), and the shares of the
//!   m present ones solve Σ_c G'_c·[1, E_c] = [Σ δ, G_1..G_w]: unique where the m vectors
//!   [1, E_c] are independent (m ≤ w + 1), checked against the table's own gradient,
//!   dE_c = Σ_j W_jᵀ·G'_c.
//!
//! Over local steps (FedAvg) leakscope's network would train weights the client's lacks: refused.
//! Ordinal codes fold a column's categories into one input whose gradient holds Σ δ·code and no
//! table says which categories are present: refused, with the reason.
use std::borrow::Cow;

use super::{EmbeddingTable, ReceivedUpdate, no_embedding_stated};
use crate::config::{AttackConfig, Protocol};
use crate::error::{Error, Result};
use crate::table::{Coding, Dataset, EncodedFeature, FeatureKind, Pipeline};

/// The largest relative gap in the embedding's equations called consistent: float32 gradients
/// solved in float64 leave about 1e-6; a table or width that is not the client's leaves O(1).
const EMBEDDING_TOLERANCE: f64 = 1e-3;

fn fail<T>(m: String) -> Result<T> {
    Err(Error::Config(m))
}

/// `received` in the terms of `dataset` (the encoding's, read by `Encoding::into_dataset`):
/// itself where the client's pipeline is leakscope's own, rewritten where it is not.
pub fn in_dataset_terms<'a>(
    dataset: &Dataset,
    config: &AttackConfig,
    received: &'a ReceivedUpdate,
) -> Result<Cow<'a, ReceivedUpdate>> {
    let Some(pipeline) = &dataset.pipeline else {
        if !received.embeddings.is_empty() {
            return fail(no_embedding_stated(&received.embeddings));
        }
        return Ok(Cow::Borrowed(received));
    };
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
            "feature {:?} is coded as {}: under local training leakscope's one-hot network would train a weight \
             per category that the client's network does not have, so the rewriting is exact for one gradient \
             (FedSGD) only; this FedAvg update is not attacked",
            f.feature.name,
            f.describe()
        ));
    }
    let tables = assign_tables(pipeline, &received.embeddings)?;
    let h = received.params.sizes[1];
    let first = First {
        h,
        w: &received.params.weights[0],
        g: &received.update.layers[0].weight,
        g_bias: &received.update.layers[0].bias,
    };
    let d = dataset.d();
    let (mut w_out, mut g_out) = (vec![0f32; d * h], vec![0f32; d * h]);
    for ((client, canon), table) in pipeline.features.iter().zip(&dataset.features).zip(tables) {
        let (at, to) = (client.feature.offset, canon.offset);
        let out = |c: usize| (to + c) * h..(to + c + 1) * h;
        match (&canon.kind, table) {
            (FeatureKind::Continuous { .. }, _) => {
                w_out[out(0)].copy_from_slice(first.row_w(at));
                g_out[out(0)].copy_from_slice(first.row_g(at));
            }
            (FeatureKind::Categorical { categories }, None) => {
                let rows = one_hot_rows(&first, pipeline, client, categories.len());
                for (c, (wr, gr)) in rows.into_iter().enumerate() {
                    w_out[out(c)].copy_from_slice(&wr);
                    g_out[out(c)].copy_from_slice(&gr);
                }
            }
            (FeatureKind::Categorical { categories }, Some(t)) => {
                let rows = embedding_rows(&first, client, t, categories.len())?;
                for (c, (wr, gr)) in rows.into_iter().enumerate() {
                    w_out[out(c)].copy_from_slice(&wr);
                    g_out[out(c)].copy_from_slice(&gr);
                }
            }
        }
    }
    let mut out = received.clone();
    out.params.sizes[0] = d;
    out.params.weights[0] = w_out;
    out.update.layers[0].weight = g_out;
    out.embeddings.clear();
    Ok(Cow::Owned(out))
}

/// The first layer as received: its weight and gradient ([in, h], a row per input) and its bias's
/// gradient Σ δ.
struct First<'a> {
    h: usize,
    w: &'a [f32],
    g: &'a [f32],
    g_bias: &'a [f32],
}

impl First<'_> {
    fn row_w(&self, j: usize) -> &[f32] {
        &self.w[j * self.h..(j + 1) * self.h]
    }
    fn row_g(&self, j: usize) -> &[f32] {
        &self.g[j * self.h..(j + 1) * self.h]
    }
}

/// Each category's (weight row, gradient row) of a one-hot block, a dropped category's rebuilt.
fn one_hot_rows(first: &First, pipeline: &Pipeline, client: &EncodedFeature, k: usize) -> Vec<(Vec<f32>, Vec<f32>)> {
    let mut rows: Vec<(Vec<f32>, Vec<f32>)> = (0..k)
        .map(|c| match client.one_hot_input(c) {
            Some(j) => (first.row_w(j).to_vec(), first.row_g(j).to_vec()),
            None => (vec![0.0; first.h], Vec::new()),
        })
        .collect();
    if let Some(d0) = client.dropped_index() {
        // Σ δ·u_c0 = Σ δ − Σ_j (std_j·G_j + mean_j·Σ δ), accumulated in f64.
        let mut rest: Vec<f64> = first.g_bias.iter().map(|&v| v as f64).collect();
        for j in (0..k).filter_map(|c| client.one_hot_input(c)) {
            let (mean, std) = (pipeline.mean[j], pipeline.std[j]);
            for (u, r) in rest.iter_mut().enumerate() {
                *r -= std * first.row_g(j)[u] as f64 + mean * first.g_bias[u] as f64;
            }
        }
        rows[d0].1 = rest.into_iter().map(|r| r as f32).collect();
    }
    rows
}

/// The embedding tables assigned to the embedded features, in the features' order: the one a
/// feature names (`tensor`), else the one whose module's last name is the feature's
/// (`nn.ModuleDict` keyed by column), else the next unassigned one in natural order
/// (`nn.ModuleList` in the columns' order); each checked against its feature's categories and width.
fn assign_tables<'a>(pipeline: &Pipeline, tables: &'a [EmbeddingTable]) -> Result<Vec<Option<&'a EmbeddingTable>>> {
    let mut used = vec![false; tables.len()];
    let mut out = Vec::new();
    for f in &pipeline.features {
        if f.coding != Coding::Embedding {
            out.push(None);
            continue;
        }
        let name = &f.feature.name;
        let found = match &f.tensor {
            Some(t) => {
                let t = t.strip_suffix(".weight").unwrap_or(t);
                tables.iter().position(|e| e.name == t).ok_or_else(|| {
                    Error::Config(format!(
                        "feature {name:?} is embedded by {t:?}, which the network does not have (its tables: {})",
                        table_list(tables)
                    ))
                })?
            }
            None => match tables
                .iter()
                .position(|e| e.name.rsplit('.').next() == Some(name.as_str()))
            {
                Some(i) => i,
                None => (0..tables.len()).find(|&i| !used[i]).ok_or_else(|| {
                    Error::Config(format!(
                        "feature {name:?} is coded as an embedding but the network has no table left for it (its \
                         tables: {})",
                        table_list(tables)
                    ))
                })?,
            },
        };
        let t = &tables[found];
        let FeatureKind::Categorical { categories } = &f.feature.kind else {
            unreachable!("codings are checked to be categorical features'")
        };
        if used[found] || t.rows != categories.len() || Some(t.width) != f.width {
            return fail(format!(
                "feature {name:?} ({} categories, an embedding {} wide) cannot be {} [{}, {}]{}",
                categories.len(),
                f.width.unwrap_or(0),
                t.name,
                t.rows,
                t.width,
                if used[found] {
                    ", which embeds another column"
                } else {
                    ""
                }
            ));
        }
        used[found] = true;
        out.push(Some(t));
    }
    if let Some(i) = used.iter().position(|u| !u) {
        return fail(format!(
            "the network's table {} [{}, {}] embeds none of the encoding's columns: state which column it embeds",
            tables[i].name, tables[i].rows, tables[i].width
        ));
    }
    Ok(out)
}

fn table_list(tables: &[EmbeddingTable]) -> String {
    match tables {
        [] => "none".into(),
        t => t.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", "),
    }
}

/// Each category's (weight row, gradient row) of an embedded column: the weight Σ_j E[c, j]·W_j,
/// the gradient 0 for a category absent from the batch and the present ones' shares solved from
/// the bias's and the embedded inputs' gradients, checked against the table's own.
fn embedding_rows(
    first: &First,
    client: &EncodedFeature,
    t: &EmbeddingTable,
    k: usize,
) -> Result<Vec<(Vec<f32>, Vec<f32>)>> {
    let (h, w, at) = (first.h, t.width, client.feature.offset);
    let e = |c: usize, j: usize| t.weight[c * w + j] as f64;
    let mut rows = Vec::with_capacity(k);
    for c in 0..k {
        let mut row = vec![0f64; h];
        for j in 0..w {
            for (r, &v) in row.iter_mut().zip(first.row_w(at + j)) {
                *r += e(c, j) * v as f64;
            }
        }
        rows.push((row.into_iter().map(|v| v as f32).collect::<Vec<f32>>(), vec![0f32; h]));
    }
    let present: Vec<usize> = (0..k)
        .filter(|&c| t.update[c * w..(c + 1) * w].iter().any(|&v| v != 0.0))
        .collect();
    let m = present.len();
    // The system's rows [1, E_c] for the present categories, and its Gram matrix.
    let basis: Vec<Vec<f64>> = present
        .iter()
        .map(|&c| std::iter::once(1.0).chain((0..w).map(|j| e(c, j))).collect())
        .collect();
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let gram: Vec<Vec<f64>> = basis
        .iter()
        .map(|a| basis.iter().map(|b| dot(a, b)).collect())
        .collect();
    let name = &client.feature.name;
    let Some(chol) = cholesky(&gram) else {
        return fail(format!(
            "feature {name:?}: {m} of its categories are in the batch but its embedding is {w} wide, so the update \
             does not say how much each category's rows add to the first layer (that needs at most {} present, \
             their embeddings independent); not attacked",
            w + 1
        ));
    };
    let (mut gap, mut norm) = (0f64, 0f64);
    let mut shares = vec![vec![0f64; h]; m];
    for u in 0..h {
        let rhs: Vec<f64> = std::iter::once(first.g_bias[u] as f64)
            .chain((0..w).map(|j| first.row_g(at + j)[u] as f64))
            .collect();
        let x = chol.solve(&basis.iter().map(|b| dot(b, &rhs)).collect::<Vec<_>>());
        for (i, r) in rhs.iter().enumerate() {
            let fitted: f64 = (0..m).map(|a| x[a] * basis[a][i]).sum();
            gap += (fitted - r).powi(2);
            norm += r * r;
        }
        for a in 0..m {
            shares[a][u] = x[a];
        }
    }
    // The table's own gradient: dE_c = Σ_j W_jᵀ·G'_c.
    for (a, &c) in present.iter().enumerate() {
        for j in 0..w {
            let predicted: f64 = first
                .row_w(at + j)
                .iter()
                .zip(&shares[a])
                .map(|(&v, s)| v as f64 * s)
                .sum();
            let got = t.update[c * w + j] as f64;
            gap += (predicted - got).powi(2);
            norm += got * got;
        }
    }
    let relative = if norm > 0.0 { (gap / norm).sqrt() } else { 0.0 };
    if relative > EMBEDDING_TOLERANCE {
        return fail(format!(
            "feature {name:?}: the update is not that of an embedding {} [{}, {}] feeding the first layer's inputs \
             {at}..{} (its equations are off by {relative:.2e}): is the stated order of the inputs the client's?",
            t.name,
            t.rows,
            t.width,
            at + w
        ));
    }
    for (a, &c) in present.iter().enumerate() {
        rows[c].1 = shares[a].iter().map(|&v| v as f32).collect();
    }
    Ok(rows)
}

/// A Cholesky factor of a small symmetric positive definite matrix, or None where it is (near)
/// singular: a pivot under 1e-9 of the largest diagonal entry.
struct Cholesky(Vec<Vec<f64>>);

fn cholesky(a: &[Vec<f64>]) -> Option<Cholesky> {
    let n = a.len();
    let scale = (0..n).map(|i| a[i][i]).fold(0.0, f64::max);
    let mut l = vec![vec![0f64; n]; n];
    for i in 0..n {
        for j in 0..=i {
            let s: f64 = a[i][j] - (0..j).map(|k| l[i][k] * l[j][k]).sum::<f64>();
            if i == j {
                if s <= 1e-9 * scale {
                    return None;
                }
                l[i][i] = s.sqrt();
            } else {
                l[i][j] = s / l[j][j];
            }
        }
    }
    Some(Cholesky(l))
}

impl Cholesky {
    fn solve(&self, b: &[f64]) -> Vec<f64> {
        let (l, n) = (&self.0, b.len());
        let mut y = vec![0f64; n];
        for i in 0..n {
            y[i] = (b[i] - (0..i).map(|k| l[i][k] * y[k]).sum::<f64>()) / l[i][i];
        }
        let mut x = vec![0f64; n];
        for i in (0..n).rev() {
            x[i] = (y[i] - (i + 1..n).map(|k| l[k][i] * x[k]).sum::<f64>()) / l[i][i];
        }
        x
    }
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

    /// The FedSGD update of a network of `sizes` (seed `seed`) on `rows()`, their inputs as the
    /// client's pipeline makes them.
    fn client_update(pipeline: &Pipeline, sizes: &[usize], seed: u64) -> ReceivedUpdate {
        let params = Params::init(sizes, seed);
        let x: Vec<f32> = rows()
            .iter()
            .flat_map(|r| pipeline.encode(r))
            .map(|v| v as f32)
            .collect();
        ReceivedUpdate {
            embeddings: Vec::new(),
            update: update_of(&params, x),
            params,
            rows: Some(5),
            labels: None,
        }
    }

    #[test]
    fn a_dropped_categorys_gradient_is_rebuilt_exactly_from_the_bias() {
        let dataset = client(r#""dropped": "b""#);
        let pipeline = dataset.pipeline.clone().unwrap();
        assert_eq!((pipeline.d(), dataset.d()), (4, 5));
        let received = client_update(&pipeline, &[4, 6, 2], 7);
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
        assert_eq!(
            pipeline.encode(&rows()[4])[0],
            (2.0 - 0.25) / 0.5,
            "the code is the category's index"
        );
        let received = client_update(&pipeline, &[pipeline.d(), 3, 2], 1);
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
        let received = client_update(&p, &[p.d(), 3, 2], 1);
        let e = in_dataset_terms(&dropped, &fedavg, &received).unwrap_err().to_string();
        assert!(e.contains("one-hot without \"a\"") && e.contains("FedSGD"), "{e}");
    }
}
