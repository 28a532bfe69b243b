//! The first layer's gradient as a prior on the rows. In FedSGD the first layer's weight gradient
//! is ∂L/∂W1 = (1/B) Σᵢ xᵢ δᵢᵀ ([d, h]), so every row xᵢ of the batch lies in its column space; in
//! FedAvg the first layer's update is a sum of such products over the local steps, still in the
//! span of the client's rows. The server computes that span by an SVD and penalises the part of
//! each dummy row outside it (`pointwise::subspace_terms`, in the definition and the accelerators
//! alike). The first layer's bias gradient adds a hyperplane every row lies on (`hyperplane`).
//! After the optimisation, `RowDecoder` solves a member row's continuous values inside the span
//! (and on the hyperplane) given its categorical choices, where that is well posed.
//!
//! The rank is read from the singular values against a noise floor measured on the update itself:
//! a categorical block's encoded columns satisfy Σⱼ stdⱼ·xⱼ = 0 for every row (its one-hot sums to
//! one), so those directions of the gradient hold no signal, only float error or the noise a
//! defence added. Signal directions are those above the Marchenko–Pastur edge of that noise.
use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::attack::inversion::relax::Layout;
use crate::attack::priors::spectrum::{Precision, Rank, Source, Spectrum};

/// The prior's weight against the cosine loss (which lies in [0, 2]). Measured on 4 Adult batches
/// of 32 (docs/fidelity.md): 0.3 recovered 90.9 %, 1 90.2 %, 3 82.0 %, 10 67.9 % (none: 85.6 %).
pub const DEFAULT_SUBSPACE_WEIGHT: f64 = 0.3;

/// A noise edge is raised by this margin so that the largest noise singular value stays below it.
const EDGE_MARGIN: f64 = 1.1;

/// What the first layer's gradient says about the rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Subspace {
    pub d: usize,
    /// Orthonormal basis of the rows' span as columns, [d, prior_rank] column-major: the prior
    /// and the row decoder read all of it, the proofs its first `rank()` (`determined_basis`).
    pub basis: Vec<f64>,
    pub prior_rank: usize,
    pub projector: Vec<f32>,
    /// v with vᵀxᵢ = 1 for every row (see `hyperplane`), where the bias gradient gives it.
    pub hyperplane: Option<Vec<f64>>,
    /// Whether no noise hides directions (the span read is the update's own).
    pub exact: bool,
    /// The spectrum the rank was read on (`spectrum`: the update's precision, and the noise the
    /// directions that carry no signal show).
    pub spectrum: Spectrum,
    pub summary: SubspaceSummary,
}

/// The prior as the report states it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SubspaceSummary {
    /// Dimension of the span the rows were placed in.
    pub rank: usize,
    /// Directions an encoded row can take at all (d less one per categorical feature).
    pub feasible: usize,
    /// The weight the optimisation used (0 when off).
    pub weight: f64,
    /// Why the prior is off, when it is.
    pub off: Option<String>,
    /// Noise per entry of the first layer's update, as measured on the directions that carry no
    /// signal (float error alone is ~1e-9 of the largest singular value).
    pub noise: f64,
    /// Whether the first layer's bias gradient gave the hyperplane every row lies on.
    pub hyperplane: bool,
    /// Share of the update's first-layer energy inside the span.
    pub energy_inside: f64,
    /// Rows whose continuous values were solved exactly in the span (of all members' rows).
    pub decoded_rows: usize,
    pub rows: usize,
    /// Rows of the batch proved exactly from the first layer's ReLU pattern (`attack::priors::activity`):
    /// the ensemble agrees on each.
    pub proved_rows: usize,
}

/// Orthonormal basis of the directions every encoded row is orthogonal to: one per categorical
/// block, stdⱼ on its columns.
fn constraint_basis(layout: &Layout) -> DMatrix<f64> {
    let d = layout.d();
    let blocks: Vec<_> = layout.blocks.iter().filter(|b| b.2).collect();
    let mut c = DMatrix::<f64>::zeros(d, blocks.len());
    for (k, &&(offset, width, _)) in blocks.iter().enumerate() {
        for j in offset..offset + width {
            c[(j, k)] = layout.std[j];
        }
    }
    // Blocks are disjoint: normalising each column makes the set orthonormal.
    for mut col in c.column_iter_mut() {
        let n = col.norm();
        if n > 0.0 {
            col /= n;
        }
    }
    c
}

/// The hyperplane every row lies on, from the first layer's weight gradient G = (1/B) Xᵀ Δ in the
/// span's coordinates (C = UᵀG = (1/B) A Δ, xᵢ = U aᵢ) and its bias gradient g = (1/B) Δᵀ1: with
/// A invertible (the rank is the row count), wᵀC = gᵀ for w = A⁻ᵀ1, so aᵢᵀw = 1, i.e.
/// xᵢᵀ(Uw) = 1 for every row. FedAvg's update has the same form (each row's δ summed over the
/// local steps). None when wᵀC = gᵀ does not hold to 1e-4 (then the update is not of that form).
fn hyperplane(basis: &DMatrix<f64>, g: &DMatrix<f64>, bias: &[f32]) -> Option<Vec<f64>> {
    let c = basis.transpose() * g;
    let gb = DVector::from_iterator(bias.len(), bias.iter().map(|&v| v as f64));
    let w = c.transpose().svd(true, true).solve(&gb, 1e-12).ok()?;
    let misfit = (c.transpose() * &w - &gb).norm();
    (misfit <= HYPERPLANE_FIT * gb.norm()).then(|| (basis * w).iter().copied().collect())
}

/// How closely the bias gradient must fit the span's coordinates for the hyperplane to be used.
const HYPERPLANE_FIT: f64 = 1e-4;

/// Gavish & Donoho's hard threshold for an unknown noise level, as a multiple of the median
/// singular value of an m × n matrix (β = m/n ≤ 1).
fn gavish_donoho(beta: f64) -> f64 {
    0.56 * beta.powi(3) - 0.95 * beta.powi(2) + 1.82 * beta + 1.43
}

impl Subspace {
    /// The span of the rows from the first layer's weight update ([d, h] row-major, as
    /// `Params` lays out W: x W + b) of `rows` rows.
    pub fn from_first_layer(
        update: &[f32],
        bias: &[f32],
        d: usize,
        h: usize,
        layout: Option<&Layout>,
        rows: usize,
        weight: f64,
    ) -> Subspace {
        Subspace::from_update(update, bias, (d, h), layout, rows, weight, Source::Gradient)
    }

    /// The same for an update made as `source` says (FedAvg's local training: its rounding is
    /// relative to the weights).
    pub fn from_update(
        update: &[f32],
        bias: &[f32],
        shape: (usize, usize),
        layout: Option<&Layout>,
        rows: usize,
        weight: f64,
        source: Source,
    ) -> Subspace {
        Subspace::with_rounding(update, bias, shape, layout, (rows, weight, source), 0.0)
    }

    /// The same for what is left of an update once rows are peeled off it: it carries the whole
    /// update's rounding, `rounding` in its units (`Spectrum::with_rounding`).
    pub fn from_peeled_update(
        update: &[f32],
        bias: &[f32],
        shape: (usize, usize),
        layout: Option<&Layout>,
        (rows, weight, source): (usize, f64, Source),
        rounding: f64,
    ) -> Subspace {
        Subspace::with_rounding(update, bias, shape, layout, (rows, weight, source), rounding)
    }

    fn with_rounding(
        update: &[f32],
        bias: &[f32],
        (d, h): (usize, usize),
        layout: Option<&Layout>,
        (rows, weight, source): (usize, f64, Source),
        rounding: f64,
    ) -> Subspace {
        let g = DMatrix::<f64>::from_row_iterator(d, h, update.iter().map(|&v| v as f64));
        let total = g.norm_squared();
        let constraints = layout.map(constraint_basis).unwrap_or_else(|| DMatrix::zeros(d, 0));
        let k = constraints.ncols();
        // Split off the constraint directions: what is left there is noise.
        let inside_c = &constraints * (constraints.transpose() * &g);
        let free = &g - &inside_c;
        let feasible = d - k;
        let precision = Precision::of(update.iter().copied());
        let spectrum = Spectrum::of_update(free.clone(), precision, rows, false, source);
        let s = spectrum.values.clone();
        let (noise, edge) = if k > 0 {
            let sigma = (inside_c.norm_squared() / (k * h) as f64).sqrt();
            (
                sigma,
                sigma * ((feasible as f64).sqrt() + (h as f64).sqrt()) * EDGE_MARGIN,
            )
        } else {
            // No categorical columns: the median singular value stands in for the noise.
            let (m, n) = (d.min(h) as f64, d.max(h) as f64);
            let median = s[s.len() / 2];
            let sigma = median / (n.sqrt() * (1.0 + (m / n).sqrt()) * 0.5).max(1e-300);
            (sigma, gavish_donoho(m / n) * median)
        };
        // Without categorical columns the median stands in only where the rows cannot fill the
        // layer; the rounding model bounds what is left.
        let measured = if k > 0 || rows < d.min(h) / 2 { edge } else { 0.0 };
        let spectrum = spectrum.with_measured(measured).with_rounding(rounding);
        let rank = spectrum.determined().min(feasible);
        let exact = !spectrum.noisy();
        let basis_m = spectrum.basis(rank);
        // The prior pulls members towards the span and proves nothing: a direction above η but
        // too near it to place (`Rank::Uncertain`) is still the span's best reading, so where
        // those make up the batch's rank the prior takes them (on FedAvg [32, 32], German B = 32:
        // 85 % of cells with them, 70 % with the prior off). The proofs read `rank` alone.
        let covers = |r: Rank| match r {
            Rank::Certain(n) => n == rows,
            Rank::Uncertain {
                determined,
                above_noise,
            } => determined < rows && rows <= above_noise,
        };
        let prior_rank = if covers(spectrum.rank()) {
            rows.min(feasible)
        } else {
            rank
        };
        let prior_basis = spectrum.basis(prior_rank);
        let projector_m = &prior_basis * prior_basis.transpose();
        let prior_rank = prior_basis.ncols();
        let inside: f64 = s.iter().take(rank).map(|v| v * v).sum();
        // The span holds every row only when its rank is the update's row count: the rank falls
        // short where δ's rows are dependent (on Adult: rank 30–31 in 2 of 10 batches of 32, 42–51
        // in every batch of 64), and where a defence's noise hides directions (σ = 0.001 at B = 32
        // kept 15 and cost 10 points). It says something only when the rows leave out directions.
        let off = if !exact {
            Some(format!("noise of about {noise:.1e} per entry hides part of the span"))
        } else if rows >= feasible {
            Some(format!("{rows} rows can fill all {feasible} directions a row can take"))
        } else if !covers(spectrum.rank()) {
            Some(format!(
                "its rank {rank} is not the update's {rows} rows: it does not hold every row"
            ))
        } else {
            None
        };
        let weight = if off.is_none() { weight } else { 0.0 };
        // The first layer's ReLU-pattern proof reads the hyperplane: only on a certain rank.
        let certain = spectrum.rank() == Rank::Certain(rows);
        let hyperplane = (off.is_none() && certain)
            .then(|| hyperplane(&basis_m, &free, bias))
            .flatten();
        Subspace {
            d,
            basis: prior_basis.as_slice().to_vec(),
            prior_rank,
            projector: projector_m.iter().map(|&v| v as f32).collect(),
            summary: SubspaceSummary {
                hyperplane: hyperplane.is_some(),
                rank,
                feasible,
                weight,
                off,
                noise,
                energy_inside: if total > 0.0 { inside / total } else { 0.0 },
                decoded_rows: 0,
                rows: 0,
                proved_rows: 0,
            },
            hyperplane,
            exact,
            spectrum,
        }
    }

    /// ‖x − Px‖² / ‖x‖² of an encoded row: 0 for a row in the span.
    pub fn outside_share(&self, x: &[f64]) -> f64 {
        let u = self.basis_matrix();
        let x = DVector::from_column_slice(x);
        let inside = u.tr_mul(&x).norm_squared();
        let total = x.norm_squared();
        if total > 0.0 {
            ((total - inside) / total).max(0.0)
        } else {
            0.0
        }
    }

    pub fn rank(&self) -> usize {
        self.summary.rank
    }

    pub fn weight(&self) -> f64 {
        self.summary.weight
    }

    fn basis_matrix(&self) -> DMatrix<f64> {
        DMatrix::from_column_slice(self.d, self.prior_rank, &self.basis)
    }

    /// The determined directions alone, [d, rank]: what a proof may read.
    pub fn determined_basis(&self) -> DMatrix<f64> {
        DMatrix::from_column_slice(self.d, self.rank(), &self.basis[..self.d * self.rank()])
    }

    /// Every encoded row's span where this one holds the batch: the determined directions and
    /// the directions every encoded row has a fixed part along (one per categorical block,
    /// split off before the span is read), [d, rank + blocks], orthonormal.
    pub fn rows_basis(&self, layout: &Layout) -> DMatrix<f64> {
        let (span, fixed) = (self.determined_basis(), constraint_basis(layout));
        let columns: Vec<_> = span
            .column_iter()
            .chain(fixed.column_iter())
            .map(|c| c.into_owned())
            .collect();
        match columns.is_empty() {
            true => DMatrix::zeros(self.d, 0),
            false => DMatrix::from_columns(&columns),
        }
    }

    /// The exact decoder of rows in this span for an encoding (see `RowDecoder`).
    pub fn row_decoder<'a>(&'a self, layout: &'a Layout) -> RowDecoder<'a> {
        let u = self.basis_matrix();
        let continuous = layout.continuous();
        let u_cont = DMatrix::from_fn(continuous.len(), self.prior_rank, |i, j| u[(continuous[i], j)]);
        // The hyperplane vᵀx = 1 as v̂ᵀx = β with ‖v̂‖ = 1, so its misfit is a distance as Qx is.
        let (v_hat, beta) = match &self.hyperplane {
            Some(v) => {
                let v = DVector::from_column_slice(v);
                let n = v.norm();
                (v / n, 1.0 / n)
            }
            None => (DVector::zeros(self.d), 0.0),
        };
        let v_cont = DVector::from_iterator(continuous.len(), continuous.iter().map(|&j| v_hat[j]));
        // M = SᵀQS + SᵀV̂V̂ᵀS = I − U_c U_cᵀ + v_c v_cᵀ; its pseudo-inverse over the directions the
        // span and the hyperplane determine.
        let m = DMatrix::<f64>::identity(continuous.len(), continuous.len()) - &u_cont * u_cont.transpose()
            + &v_cont * v_cont.transpose();
        let eig = m.symmetric_eigen();
        let mut inv = DMatrix::<f64>::zeros(continuous.len(), continuous.len());
        let mut determined = DMatrix::<f64>::zeros(continuous.len(), continuous.len());
        let fully_determined = eig.eigenvalues.iter().all(|&l| l > UNDETERMINED * UNDETERMINED);
        for (k, &l) in eig.eigenvalues.iter().enumerate() {
            if l > UNDETERMINED * UNDETERMINED {
                let v = eig.eigenvectors.column(k);
                inv += (&v * v.transpose()) / l;
                determined += &v * v.transpose();
            }
        }
        RowDecoder {
            span: self,
            layout,
            blocks: layout.blocks.iter().filter(|b| b.2).map(|b| (b.0, b.1)).collect(),
            u,
            continuous,
            u_cont,
            v_hat,
            v_cont,
            beta,
            m_inv: inv,
            determined,
            fully_determined,
        }
    }
}

/// Decodes a row exactly in the span: the categorical choices that, with continuous values solved
/// by least squares, put the row in the span (a row of the batch lies in it exactly; a wrong
/// choice rarely does). Starting from the optimisation's choices, it changes one block at a time,
/// each time the change that brings the row closest to the span, until the row lies in it: the
/// fewest changes first, since a small batch's span can also hold mixtures of its rows. Where a combination of continuous columns lies (nearly)
/// inside the span the span cannot tell its value: it keeps the optimisation's.
pub struct RowDecoder<'a> {
    span: &'a Subspace,
    layout: &'a Layout,
    /// The categorical blocks, (offset, width).
    blocks: Vec<(usize, usize)>,
    /// The span's basis U [d, rank], and its rows on the continuous columns.
    u: DMatrix<f64>,
    continuous: Vec<usize>,
    u_cont: DMatrix<f64>,
    /// The hyperplane v̂ᵀx = β (v̂ = 0 without one), and v̂ on the continuous columns.
    v_hat: DVector<f64>,
    v_cont: DVector<f64>,
    beta: f64,
    /// M⁺ and the projector M M⁺ on the determined directions of the continuous values.
    m_inv: DMatrix<f64>,
    determined: DMatrix<f64>,
    fully_determined: bool,
}

impl RowDecoder<'_> {
    /// Encoded value of categorical column j when hot and when cold.
    fn hot_cold(&self, j: usize) -> (f64, f64) {
        let (mean, std) = (self.layout.mean[j], self.layout.std[j]);
        ((1.0 - mean) / std, -mean / std)
    }

    /// t = SᵀQa + v_c·e for the categorical part a (continuous columns 0) with w = Uᵀa and
    /// e = v̂ᵀa − β: the best continuous values are −M⁺t.
    fn t(&self, w: &DVector<f64>, e: f64) -> DVector<f64> {
        -(&self.u_cont * w) + &self.v_cont * e
    }

    /// The squared distance of the categorical part a (‖a‖², w and e given) to the span and the
    /// hyperplane, with the best continuous values: ‖Qa‖² + e² − tᵀM⁺t.
    fn residual(&self, a_sq: f64, w: &DVector<f64>, e: f64) -> f64 {
        let t = self.t(w, e);
        a_sq - w.norm_squared() + e * e - (t.transpose() * &self.m_inv * &t)[(0, 0)]
    }

    /// The row ([d], encoded) decoded in the span, or None when no choice the search reaches puts
    /// it there to within `tolerance` of its squared norm.
    pub fn decode(&self, row: &[f64], tolerance: f64) -> Option<Vec<f64>> {
        let (d, blocks) = (self.span.d, &self.blocks);
        // The optimisation's choices: the largest raw value per block (as `Dataset::decode`).
        let mut hot: Vec<usize> = blocks
            .iter()
            .map(|&(o, w)| {
                (o..o + w)
                    .max_by(|&a, &b| {
                        let raw = |j: usize| row[j] * self.layout.std[j] + self.layout.mean[j];
                        raw(a).total_cmp(&raw(b))
                    })
                    .expect("a block has columns")
            })
            .collect();
        let mut a = DVector::<f64>::zeros(d);
        for &(o, w) in blocks.iter() {
            for j in o..o + w {
                a[j] = self.hot_cold(j).1;
            }
        }
        for &h in &hot {
            a[h] = self.hot_cold(h).0;
        }
        let mut a_sq = a.norm_squared();
        let mut w = self.u.transpose() * &a;
        let mut e = self.v_hat.dot(&a) - self.beta;
        let mut best = self.residual(a_sq, &w, e);
        // With continuous directions inside the span, other rows' categorical parts can lie in it
        // too (measured on Adult at B = 32): the search runs only where every direction counts.
        let passes = if self.fully_determined { MAX_PASSES } else { 0 };
        for _ in 0..passes {
            if best <= tolerance * a_sq {
                break;
            }
            // The one change of one block that brings the row closest to the span.
            let mut pick = None;
            for (f, &(o, width)) in blocks.iter().enumerate() {
                let h = hot[f];
                let (hh, hc) = self.hot_cold(h);
                for k in (o..o + width).filter(|&k| k != h) {
                    let (kh, kc) = self.hot_cold(k);
                    let sq = a_sq - hh * hh + hc * hc - kc * kc + kh * kh;
                    let w2 = &w + self.u.row(h).transpose() * (hc - hh) + self.u.row(k).transpose() * (kh - kc);
                    let e2 = e + self.v_hat[h] * (hc - hh) + self.v_hat[k] * (kh - kc);
                    let r = self.residual(sq, &w2, e2);
                    if r < best - 1e-12 * a_sq {
                        best = r;
                        pick = Some((f, k, sq, w2, e2));
                    }
                }
            }
            let Some((f, k, sq, w2, e2)) = pick else { break };
            let h = hot[f];
            a[h] = self.hot_cold(h).1;
            a[k] = self.hot_cold(k).0;
            (a_sq, w, e, hot[f]) = (sq, w2, e2, k);
        }
        // Continuous values: c = −M⁺t on the determined directions, the optimisation's elsewhere.
        let t = self.t(&w, e);
        let c0 = DVector::from_iterator(self.continuous.len(), self.continuous.iter().map(|&j| row[j]));
        let c = -(&self.m_inv * &t) + &c0 - &self.determined * &c0;
        let mut x = a;
        for (k, &j) in self.continuous.iter().enumerate() {
            x[j] = c[k];
        }
        let misfit = self.v_hat.dot(&x) - self.beta;
        let residual = x.norm_squared() - (self.u.transpose() * &x).norm_squared() + misfit * misfit;
        (residual <= tolerance * x.norm_squared()).then(|| x.iter().copied().collect())
    }
}

/// Most blocks the search changes in a row.
const MAX_PASSES: usize = 3;

/// A combination of continuous columns whose part outside the span is below this share of its
/// norm is left where the optimisation put it.
pub(crate) const UNDETERMINED: f64 = 0.05;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rand::{Rng, SeedableRng, rngs::StdRng};

    /// A layout of `d` columns with categorical blocks `cat` (offset, width), the rest continuous;
    /// std 1, range ±3 (shared with `activity`'s tests).
    pub(crate) fn layout(d: usize, cat: &[(usize, usize)]) -> Layout {
        let mut blocks: Vec<(usize, usize, bool)> = cat.iter().map(|&(o, w)| (o, w, true)).collect();
        let covered: Vec<usize> = cat.iter().flat_map(|&(o, w)| o..o + w).collect();
        blocks.extend((0..d).filter(|j| !covered.contains(j)).map(|j| (j, 1, false)));
        blocks.sort_unstable();
        // A block of width w has mean 1/w on each of its columns, as `problem`'s rows do.
        let mut mean = vec![0.0; d];
        for &(o, w) in cat {
            (o..o + w).for_each(|j| mean[j] = 1.0 / w as f64);
        }
        Layout {
            blocks,
            mean,
            std: vec![1.0; d],
            lo: vec![-3.0; d],
            hi: vec![3.0; d],
        }
    }

    /// A batch of rows obeying the layout's constraints (each block sums to 0 with std 1), and the
    /// gradient Σ xᵢ δᵢᵀ they make with random δ, plus noise.
    fn problem(
        d: usize,
        h: usize,
        b: usize,
        cat: &[(usize, usize)],
        noise: f64,
        seed: u64,
    ) -> (Vec<f64>, Vec<f32>, Vec<f32>) {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut rows = vec![0f64; b * d];
        for row in rows.chunks_exact_mut(d) {
            for v in row.iter_mut() {
                *v = rng.random_range(-1.0..1.0);
            }
            for &(o, w) in cat {
                let hot = rng.random_range(0..w);
                for j in o..o + w {
                    row[j] = if j == o + hot { 1.0 } else { 0.0 } - 1.0 / w as f64;
                }
            }
        }
        let delta: Vec<f64> = (0..b * h).map(|_| rng.random_range(-1.0..1.0)).collect();
        let mut g = vec![0f32; d * h];
        for i in 0..d {
            for j in 0..h {
                let s: f64 = (0..b).map(|r| rows[r * d + i] * delta[r * h + j]).sum::<f64>() / b as f64;
                let n: f64 = (0..12).map(|_| rng.random_range(-0.5..0.5)).sum();
                g[i * h + j] = (s + noise * n) as f32;
            }
        }
        let bias = (0..h)
            .map(|j| ((0..b).map(|r| delta[r * h + j]).sum::<f64>() / b as f64) as f32)
            .collect();
        (rows, g, bias)
    }

    /// Share of a row's squared norm outside the span.
    fn outside_share(s: &Subspace, row: &[f64]) -> f64 {
        let x = DVector::from_column_slice(row);
        let u = s.basis_matrix();
        (x.norm_squared() - (u.transpose() * &x).norm_squared()) / x.norm_squared()
    }

    #[test]
    fn the_rank_of_a_clean_gradient_is_the_batch_and_every_row_lies_in_its_span() {
        let cat = [(0, 4), (4, 6)];
        let (rows, g, bias) = problem(24, 30, 7, &cat, 0.0, 1);
        let s = Subspace::from_first_layer(&g, &bias, 24, 30, Some(&layout(24, &cat)), 7, 1.0);
        assert_eq!(s.rank(), 7);
        assert_eq!(s.summary.feasible, 22);
        assert_eq!(s.weight(), 1.0);
        // Every row lies in the span, and on the hyperplane the bias gradient gives.
        let v = s.hyperplane.as_ref().expect("a hyperplane");
        for row in rows.chunks_exact(24) {
            assert!(outside_share(&s, row) < 1e-10, "{}", outside_share(&s, row));
            let on: f64 = row.iter().zip(v).map(|(a, b)| a * b).sum();
            assert!((on - 1.0).abs() < 1e-4, "vᵀx = {on}");
        }
        let stray: Vec<f64> = (0..24).map(|j| if j == 12 { 1.0 } else { 0.0 }).collect();
        assert!(outside_share(&s, &stray) > 0.3);
        // Said to come from 9 rows, a span of rank 7 cannot hold them all: the prior is off.
        let short = Subspace::from_first_layer(&g, &bias, 24, 30, Some(&layout(24, &cat)), 9, 1.0);
        assert_eq!(short.weight(), 0.0);
        assert!(
            short.summary.off.as_deref().unwrap().contains("rank 7"),
            "{:?}",
            short.summary.off
        );
    }

    #[test]
    fn a_rank_that_fills_the_feasible_directions_turns_the_prior_off() {
        let cat = [(0, 4)];
        let (_, g, bias) = problem(10, 30, 20, &cat, 0.0, 2);
        let s = Subspace::from_first_layer(&g, &bias, 10, 30, Some(&layout(10, &cat)), 20, 1.0);
        assert_eq!((s.rank(), s.summary.feasible, s.weight()), (9, 9, 0.0));
    }

    #[test]
    fn noise_is_measured_on_the_constraint_directions_and_kept_out_of_the_rank() {
        let cat = [(0, 5), (5, 5), (10, 5), (15, 5)];
        let (_, clean, clean_bias) = problem(40, 60, 5, &cat, 0.0, 3);
        let (_, noisy, noisy_bias) = problem(40, 60, 5, &cat, 0.01, 3);
        let l = layout(40, &cat);
        let a = Subspace::from_first_layer(&clean, &clean_bias, 40, 60, Some(&l), 5, 1.0);
        let b = Subspace::from_first_layer(&noisy, &noisy_bias, 40, 60, Some(&l), 5, 1.0);
        assert_eq!(a.rank(), 5);
        assert!(a.summary.noise < 1e-6, "{}", a.summary.noise);
        // The sum of 12 U(−½, ½) has variance 1.
        assert!((b.summary.noise / 0.01 - 1.0).abs() < 0.2, "{}", b.summary.noise);
        assert!(b.rank() <= 5, "{}", b.rank());
        // Noise hides directions of the span: the prior is off.
        assert_eq!((a.weight(), b.weight()), (1.0, 0.0));
    }

    #[test]
    fn a_row_is_decoded_exactly_from_wrong_choices_and_rough_values() {
        let cat = [(0, 4), (4, 6)];
        let (rows, g, bias) = problem(16, 40, 3, &cat, 0.0, 4);
        let l = layout(16, &cat);
        let s = Subspace::from_first_layer(&g, &bias, 16, 40, Some(&l), 3, 1.0);
        let decoder = s.row_decoder(&l);
        let row = &rows[16..32];
        // One block's choice wrong, continuous values off by 0.3.
        let mut guess = row.to_vec();
        let hot = (4..10).find(|&j| row[j] > 0.5).unwrap();
        let wrong = if hot == 4 { 5 } else { 4 };
        guess[hot] = -1.0 / 6.0;
        guess[wrong] = 1.0 - 1.0 / 6.0;
        (10..16).for_each(|j| guess[j] += 0.3);
        let decoded = decoder.decode(&guess, 1e-8).expect("the row lies in the span");
        for j in 0..16 {
            assert!(
                (decoded[j] - row[j]).abs() < 1e-6,
                "column {j}: {} against {}",
                decoded[j],
                row[j]
            );
        }
        // A row from elsewhere ends on a row of the batch (a few choices away) or on none.
        let stranger: Vec<f64> = problem(16, 40, 1, &cat, 0.0, 99).0;
        if let Some(snapped) = decoder.decode(&stranger, 1e-8) {
            assert!(
                rows.chunks_exact(16)
                    .any(|r| r.iter().zip(&snapped).all(|(a, b)| (a - b).abs() < 1e-6)),
                "{snapped:?}"
            );
        }
    }
}

/// A row decoded in the span must lie in it to within this share of its squared norm...
const DECODE_TOLERANCE: f64 = 1e-4;
/// ...and its continuous values within their column's range, give or take this share of it.
const DECODE_SLACK: f64 = 0.05;

impl Subspace {
    /// TabLeak with the subspace prior: each member row decoded exactly in the span (its categorical
    /// choices searched and its continuous values solved, `subspace::RowDecoder`), where that
    /// proves itself: the row then lies in the span, with values within their columns' ranges.
    /// A decoded row's probabilities become its one-hots. Returns, per member row, whether it was
    /// decoded (it then lies in the span: certified).
    pub fn decode_members(&self, layout: &Layout, x: &mut [f32], probs: &mut [f32]) -> Vec<bool> {
        let d = layout.lo.len();
        let decoder = self.row_decoder(layout);
        let (lo, hi) = (&layout.lo, &layout.hi);
        let mut solved = Vec::with_capacity(x.len() / d);
        for (row, p) in x.chunks_exact_mut(d).zip(probs.chunks_exact_mut(d)) {
            let current: Vec<f64> = row.iter().map(|&v| v as f64).collect();
            let Some(decoded) = decoder.decode(&current, DECODE_TOLERANCE) else {
                solved.push(false);
                continue;
            };
            let within = layout.blocks.iter().filter(|b| !b.2).all(|&(j, ..)| {
                let slack = DECODE_SLACK * (hi[j] - lo[j]);
                decoded[j] >= lo[j] - slack && decoded[j] <= hi[j] + slack
            });
            if !within {
                solved.push(false);
                continue;
            }
            for &(o, w, categorical) in &layout.blocks {
                for j in o..o + w {
                    if categorical {
                        row[j] = decoded[j] as f32;
                        p[j] = (decoded[j] * layout.std[j] + layout.mean[j]).round() as f32;
                    } else {
                        row[j] = decoded[j].clamp(lo[j], hi[j]) as f32;
                    }
                }
            }
            solved.push(true);
        }
        solved
    }
}
