//! Which label each row the update holds takes, read from what the rows held leave of the first
//! layer's update. A FedSGD update is the mean of its rows' gradients, and a row's first-layer
//! gradient is x δᵀ (its inputs times the error at the first layer's units), so what the rows
//! held (each with its label) leave of B·G₁ is Σⱼ xⱼ δⱼᵀ over the k rows open: rank k at most. A
//! row held with a label not its own adds a term of rank one, x (δ' − δ)ᵀ. The last layer's
//! least-squares pairing (`row_labels::fit_labels`) reads the open rows too, which are the
//! ensemble's and may be wrong: on Adult [32, 32], B = 16, trained 5 and 20 epochs, it gave two
//! rows held each other's labels on three of four batches looked at, and the update's fit then
//! read 0.43 for rows 99.6 % of whose cells were right (5e-9 paired as here). The labels are swapped
//! two at a time, held rows among themselves or with an open slot, while a swap at least halves
//! the (k + 1)-th singular value of what the held rows leave; the singular values are read on a
//! fixed random projection of the units (k + `SKETCH` of them), which keeps a term of rank one.
use nalgebra::DMatrix;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::attack::inversion::setup::Setup;
use crate::table::{Value, encode_rows};

/// A swap is taken where it leaves at most this share of the (k + 1)-th singular value.
const SWAP: f64 = 0.5;
/// Projected units beyond the k open rows.
const SKETCH: usize = 8;
/// Swaps tried at most per pass (each an SVD): a batch of about 45 rows (larger batches keep the
/// last layer's pairing).
const MOST_PAIRS: usize = 2048;

impl Setup<'_> {
    /// `label_of` (each row's label, a FedSGD classifier's) with the rows `held` trading labels
    /// as the module says; as given where no row is held, k open rows leave no rank to read
    /// (k at least the inputs or the first layer's units), a defence changed the update, or
    /// there are more than `MOST_PAIRS` swaps to try.
    pub(super) fn labels_by_rank(&self, rows: &[Vec<Value>], held: &[bool], mut label_of: Vec<usize>) -> Vec<usize> {
        let params = &self.scenario.params;
        let (d, h) = (params.sizes[0], params.sizes[1]);
        let k = held.iter().filter(|&&h| !h).count();
        // A defence scales or perturbs the update: it is then no sum of the rows' gradients.
        if k == rows.len() || k >= d.min(h) || params.layers() < 2 || self.config.defence.is_some() {
            return label_of;
        }
        let m = (k + SKETCH).min(h);
        let mut rng = StdRng::seed_from_u64(0x1abe1);
        let omega: Vec<f64> = (0..h * m).map(|_| rng.random_range(-1.0..1.0)).collect();
        let omega = DMatrix::from_row_slice(h, m, &omega);
        let sketch = |delta: &[f64]| DMatrix::from_row_slice(1, h, delta) * &omega;
        // B·G₁ and each held row's x (δ(c)ᵀ Ω) for each label c, on the sketch.
        let bias_at: usize = params.weights.iter().map(Vec::len).sum();
        let whole = self.update_times(rows.len() as f64);
        let g1 = DMatrix::from_row_slice(d, h, &whole[..d * h]) * &omega;
        let classes = self.dataset.classes.len();
        let each: Vec<usize> = (0..rows.len()).filter(|&i| held[i]).collect();
        let pairs: Vec<(usize, usize)> = each
            .iter()
            .flat_map(|&i| (0..rows.len()).map(move |j| (i, j)))
            .filter(|&(i, j)| i != j && (!held[j] || i < j))
            .collect();
        if pairs.len() > MOST_PAIRS {
            return label_of;
        }
        let terms: Vec<Vec<DMatrix<f64>>> = crate::parallel::map(&each, |&i| {
            let x: Vec<f64> = encode_rows(self.dataset, std::slice::from_ref(&rows[i]))
                .iter()
                .map(|&v| v as f64)
                .collect();
            let x = DMatrix::from_column_slice(d, 1, &x);
            (0..classes)
                .map(|c| &x * sketch(&self.row_gradient(&rows[i], c)[bias_at..bias_at + h]))
                .collect()
        });
        let excess = |label_of: &[usize]| {
            let mut r = g1.clone();
            for (n, &i) in each.iter().enumerate() {
                r -= &terms[n][label_of[i]];
            }
            let mut sv: Vec<f64> = r.singular_values().iter().copied().collect();
            sv.sort_by(|a, b| b.total_cmp(a));
            sv[k]
        };
        let mut now = excess(&label_of);
        loop {
            let tried = crate::parallel::map(&pairs, |&(i, j)| match label_of[i] == label_of[j] {
                true => f64::INFINITY,
                false => {
                    let mut swapped = label_of.clone();
                    swapped.swap(i, j);
                    excess(&swapped)
                }
            });
            let Some((&best, &(i, j))) = tried.iter().zip(&pairs).min_by(|a, b| a.0.total_cmp(b.0)) else {
                break;
            };
            if !(best < SWAP * now) {
                break;
            }
            label_of.swap(i, j);
            now = best;
        }
        label_of
    }
}

#[cfg(test)]
mod tests {
    use crate::config::AttackConfig;

    /// A batch's labels, exact, from its own rows; two rows held given each other's labels, or a
    /// row held given an open slot's, are swapped back, whatever the open rows hold.
    #[test]
    fn a_held_row_given_a_label_not_its_own_gets_its_own_back() {
        let config = AttackConfig {
            batch_size: 16,
            hidden: vec![32, 32],
            training_epochs: 5,
            seed: 3,
            ..Default::default()
        };
        crate::assess::with_sample_setup(config, |setup| {
            let mut rows = setup.scenario.truth.as_ref().unwrap().rows.clone();
            let truth = setup
                .labels_of_rows(&rows)
                .expect("the batch's own rows explain its update");
            assert!(truth.contains(&0) && truth.contains(&1), "{truth:?}");
            // Three rows open, holding another row's values: what they hold is not read.
            let held: Vec<bool> = (0..rows.len()).map(|i| i >= 3).collect();
            for i in 0..3 {
                rows[i] = rows[15].clone();
            }
            let differ = |i: usize| (3..rows.len()).find(|&j| truth[j] != truth[i]).unwrap();
            let a = (3..rows.len()).find(|&i| truth[i] == 1).unwrap();
            let mut wrong = truth.clone();
            wrong.swap(a, differ(a));
            assert_ne!(wrong, truth);
            assert_eq!(setup.labels_by_rank(&rows, &held, wrong), truth);
            // A held row and an open slot of another label.
            let o = (0..3)
                .find(|&o| truth[o] != truth[a])
                .expect("an open slot of the other label");
            let mut wrong = truth.clone();
            wrong.swap(a, o);
            assert_eq!(setup.labels_by_rank(&rows, &held, wrong), truth);
            // Right labels stay.
            assert_eq!(setup.labels_by_rank(&rows, &held, truth.clone()), truth);
        });
    }
}
