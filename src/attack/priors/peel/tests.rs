//! Peeling on batches built here: the update of the rows left, unlabelled points, wrong rows,
//! the span of what is left, repeated rows.
use super::*;
use crate::client::activation::Activation;

/// The mean FedSGD gradient of rows `x` with labels `y`, by the same explicit backward.
fn mean_gradient(params: &Params, model: Model, x: &[Vec<f64>], y: &[usize]) -> Update {
    let empty = Update::from_layers(
        (0..params.layers())
            .map(|l| vec![0.0; params.weights[l].len()])
            .collect(),
        (0..params.layers())
            .map(|l| vec![0.0; params.biases[l].len()])
            .collect(),
    );
    let mut sum = vec![0.0f64; empty.len()];
    for (row, &label) in x.iter().zip(y) {
        let pass = RowPass::new(params, model, row);
        let e: Vec<f64> = (0..pass.probs.len())
            .map(|o| pass.probs[o] - (o == label) as u8 as f64)
            .collect();
        pass.subtract_gradient(params, model, &e, -1.0, &mut sum);
    }
    let mut out = empty;
    out.values_mut()
        .zip(sum)
        .for_each(|(v, s)| *v = (s / x.len() as f64) as f32);
    out
}

/// The peeled update is the rows left's own, to 1e-3 of its largest entry.
fn assert_same_update(peeled: &Update, rest: &Update) {
    let err: f64 = peeled
        .values()
        .zip(rest.values())
        .map(|(a, b)| (a - b).abs() as f64)
        .fold(0.0, f64::max);
    let scale: f64 = rest.values().map(|v| v.abs() as f64).fold(0.0, f64::max);
    assert!(err < 1e-3 * scale, "peeled update off by {err} of {scale}");
}

fn rows(n: usize, d: usize, seed: usize) -> Vec<Vec<f64>> {
    (0..n)
        .map(|i| {
            (0..d)
                .map(|k| (((i + seed) * 31 + k * 17) % 29) as f64 / 9.0 - 1.5)
                .collect()
        })
        .collect()
}

/// A network with two hidden layers of 40, ten rows of 12 with alternating labels, and their
/// mean gradient.
fn batch() -> (Params, Model, Vec<Vec<f64>>, Vec<usize>, Update) {
    let params = Params::init(&[12, 40, 40, 2], 5);
    let model = Model {
        activation: Activation::Relu,
        head: Head::Softmax,
    };
    let x = rows(10, 12, 0);
    let y: Vec<usize> = (0..10).map(|i| i % 2).collect();
    let all = mean_gradient(&params, model, &x, &y);
    (params, model, x, y, all)
}

#[test]
fn peeling_proved_rows_leaves_the_update_of_the_rest() {
    let (params, model, x, y, all) = batch();
    let rest = mean_gradient(&params, model, &x[7..], &y[7..]);
    let mut near = x[..7].to_vec();
    near[2][0] += 1e-4;
    let peeler = Peeler::new(&params, model, &all, 10).expect("a batch of ten peels");
    let peeled = peeler.peel(&near).expect("seven proved rows peel");
    // The proved rows, one of them slightly off, are read exactly off the first layer.
    for (read, row) in peeled.rows.iter().zip(&x[..7]) {
        let off = read.iter().zip(row).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        assert!(off < 1e-4, "a proved row read {off} off");
    }
    let peeled = peeler.peel(&x[..7]).expect("seven proved rows peel").update;
    assert_same_update(&peeled, &rest);
}

/// Two rows that share their first-layer ReLU pattern (and differ in the second's): on that
/// pattern a row's activation is affine in it, so every point between them lies in the span
/// the certificate checks (Adult B = 64 seed 9 proved such a point). Peeling tells it: its
/// label residual is not a label's, and the other rows still peel.
#[test]
fn a_proved_point_between_two_rows_is_unlabelled_and_the_others_peel() {
    let (params, model, mut x, y, _) = batch();
    let patterns = |row: &[f64]| -> Vec<Vec<bool>> {
        let pass = RowPass::new(&params, model, row);
        pass.pre[..2]
            .iter()
            .map(|z| z.iter().map(|&v| v > 0.0).collect())
            .collect()
    };
    // Row 9: row 0 moved along one entry, as far as keeps its first-layer pattern and not its
    // second's.
    let twin = (0..12)
        .flat_map(|k| (1..=40).map(move |s| (k, s as f64 * 0.05)))
        .map(|(k, shift)| {
            let mut t = x[0].clone();
            t[k] += shift;
            t
        })
        .find(|t| {
            let (a, b) = (patterns(&x[0]), patterns(t));
            a[0] == b[0] && a[1] != b[1]
        })
        .expect("a twin of row 0");
    x[9] = twin;
    let all = mean_gradient(&params, model, &x, &y);
    let peeler = Peeler::new(&params, model, &all, 10).expect("a batch of ten peels");
    let between: Vec<f64> = x[0].iter().zip(&x[9]).map(|(a, b)| (a + b) / 2.0).collect();
    let mut proved = x[..8].to_vec();
    proved[0] = between.clone();
    assert_eq!(peeler.peel(&proved).err(), Some(Refused::Unlabelled(0)));
    // Every row proved: the batch's own rows give a label each, and the point does not.
    assert_eq!(peeler.unlabelled(&x), Some(vec![]));
    let mut all_proved = x.clone();
    all_proved[0] = between;
    assert!(peeler.unlabelled(&all_proved).unwrap().contains(&0));
    // Without it, the others peel, leaving the update of rows 0, 8 and 9.
    let left = [x[0].clone(), x[8].clone(), x[9].clone()];
    let rest = mean_gradient(&params, model, &left, &[y[0], y[8], y[9]]);
    let peeled = peeler.peel(&x[1..8]).expect("the others peel").update;
    assert_same_update(&peeled, &rest);
}

#[test]
fn a_wrong_proved_row_does_not_peel() {
    let (params, model, x, _, all) = batch();
    let peeler = Peeler::new(&params, model, &all, 10).expect("a batch of ten peels");
    let mut wrong = x[..7].to_vec();
    wrong[3][2] += 0.7;
    assert!(peeler.peel(&wrong).is_err());
    // A row from outside the batch in place of a proved one.
    wrong[3] = rows(1, 12, 40)[0].clone();
    assert!(peeler.peel(&wrong).is_err());
}

#[test]
fn the_rows_a_peeled_update_holds_are_the_rows_of_its_span_the_table_can_hold() {
    // Two continuous columns, then blocks of 4 and 5 categories, standardised.
    let layout = Layout {
        blocks: vec![(0, 1, false), (1, 1, false), (2, 4, true), (6, 5, true)],
        mean: vec![0.5, -0.2, 0.3, 0.2, 0.25, 0.25, 0.1, 0.3, 0.2, 0.2, 0.2],
        std: vec![1.2, 0.8, 0.46, 0.4, 0.43, 0.43, 0.3, 0.46, 0.4, 0.4, 0.4],
        lo: vec![-3.0; 11],
        hi: vec![3.0; 11],
    };
    let encode = |cont: [f64; 2], a: usize, b: usize| -> Vec<f64> {
        let mut raw = vec![cont[0], cont[1]];
        raw.extend((0..4).map(|k| (k == a) as u8 as f64));
        raw.extend((0..5).map(|k| (k == b) as u8 as f64));
        raw.iter()
            .enumerate()
            .map(|(c, v)| (v - layout.mean[c]) / layout.std[c])
            .collect()
    };
    let rows = [
        encode([1.5, 0.25], 0, 3),
        encode([-0.5, 1.0], 2, 1),
        encode([0.0, -1.25], 3, 4),
    ];
    let h = 20;
    // G = Σ xᵢ δᵢᵀ with δ's of some rows' ReLU pattern: zero at about half the units.
    let update = |rows: &[Vec<f64>]| -> Vec<f32> {
        let mut g = vec![0f32; 11 * h];
        for (i, x) in rows.iter().enumerate() {
            for u in 0..h {
                let delta = if (u * 7 + i * 3) % 5 < 2 {
                    0.0
                } else {
                    ((u * 13 + i * 5) % 11) as f64 / 11.0 - 0.4
                };
                for (c, v) in x.iter().enumerate() {
                    g[c * h + u] += (v * delta) as f32;
                }
            }
        }
        g
    };
    // Two rows that share their categories: their span has one categorical direction fewer
    // than rows, and both categories are still found (continuous values left to the fit).
    let twins = [rows[0].clone(), encode([-1.0, 2.0], 0, 3), rows[2].clone()];
    let found = span_rows(&update(&twins), &layout, (11, h), 3);
    let categories = |x: &[f32]| -> Vec<usize> { (2..11).filter(|&c| x[c] > 0.0).collect() };
    let mut found: Vec<Vec<usize>> = found.chunks_exact(11).map(categories).collect();
    found.sort();
    assert_eq!(found, vec![vec![2, 9], vec![5, 10]]);
    let found = span_rows(&update(&rows), &layout, (11, h), 3);
    let found: Vec<&[f32]> = found.chunks_exact(11).collect();
    for x in &rows {
        assert!(
            found
                .iter()
                .any(|f| f.iter().zip(x).all(|(a, b)| (*a as f64 - b).abs() < 1e-4)),
            "a row of the update is not among the {} found",
            found.len()
        );
    }
    // Every row found is one the table can hold; here the three rows are all there is.
    assert_eq!(found.len(), 3);
    // The third row's gradient a thousandth of the others', and a perturbation under it along
    // one of its cold categories: the span's basis turns by a small angle towards that entry,
    // and the row reads off its one-hot values by more than 10⁻³ but well within what the angle
    // allows. It is still found, and nothing else is.
    let mut weak = update(&rows[..2]);
    let all = update(&rows);
    for (w, a) in weak.iter_mut().zip(&all) {
        *w += 1e-3 * (a - *w);
    }
    for u in 0..h {
        weak[6 * h + u] += 1e-5 * (((u * 37) % 17) as f32 / 8.5 - 1.0);
    }
    let (values, _) = left_singular(&DMatrix::from_row_iterator(11, h, weak.iter().map(|&v| v as f64)));
    let tolerance = snap_tolerance(&values, 3);
    assert!(tolerance > SNAP_LEAST && tolerance < SNAP_MOST, "{tolerance}");
    let found = span_rows(&weak, &layout, (11, h), 3);
    let mut found: Vec<Vec<usize>> = found.chunks_exact(11).map(categories).collect();
    found.sort();
    assert_eq!(found, vec![vec![2, 9], vec![4, 7], vec![5, 10]]);
}

#[test]
fn a_batch_that_repeats_rows_gives_each_rows_copies_and_their_labels() {
    let (params, model, x, _, _) = batch();
    // Rows 0, 0, 0, 1, 2, 2 with labels 1, 0, 1, 0, 1, 1.
    let rows = [&x[0], &x[0], &x[0], &x[1], &x[2], &x[2]].map(|r| r.clone());
    let all = mean_gradient(&params, model, &rows, &[1, 0, 1, 0, 1, 1]);
    let distinct = vec![x[0].clone(), x[1].clone(), x[2].clone()];
    let counts = copies(&params, model, &all, &distinct, 6).expect("copies read");
    assert_eq!(counts, vec![vec![1, 2], vec![1, 0], vec![0, 2]]);
    // Rows that are not the batch's distinct rows give no whole counts.
    let wrong = vec![x[0].clone(), x[1].clone(), x[3].clone()];
    assert!(copies(&params, model, &all, &wrong, 6).is_none());
}

#[test]
fn sixteen_rows_left_are_read_off_their_span() {
    // Held-out HI trained 5 epochs ([100, 100], B = 32, seed 3): 14 and 15 rows left, their
    // span 13 directions clear of the rounding; with at most 12 enumerated none was read.
    // Two continuous columns and five categorical blocks (6, 5, 4, 4, 3): 24 entries.
    let sizes = [6, 5, 4, 4, 3];
    let mut blocks = vec![(0, 1, false), (1, 1, false)];
    for &w in &sizes {
        let off = blocks.last().map_or(0, |&(o, w, _)| o + w);
        blocks.push((off, w, true));
    }
    let d = 24;
    let mean: Vec<f64> = (0..d).map(|c| if c < 2 { 0.1 } else { 0.2 }).collect();
    let std: Vec<f64> = (0..d).map(|c| if c < 2 { 1.1 } else { 0.4 }).collect();
    let layout = Layout {
        blocks,
        mean: mean.clone(),
        std: std.clone(),
        lo: vec![-4.0; d],
        hi: vec![4.0; d],
    };
    let rows: Vec<Vec<f64>> = (0..16)
        .map(|i| {
            let mut raw = vec![(i as f64 * 0.37) % 2.0 - 1.0, (i as f64 * 0.61) % 1.5 - 0.5];
            let mut at = 0;
            for (b, &w) in sizes.iter().enumerate() {
                let hot = (i * (b + 2) + i / w + b) % w;
                raw.extend((0..w).map(|k| (k == hot) as u8 as f64));
                at += w;
            }
            assert_eq!(at + 2, d);
            raw.iter().enumerate().map(|(c, v)| (v - mean[c]) / std[c]).collect()
        })
        .collect();
    let h = 48;
    let mut g = vec![0f32; d * h];
    for (i, x) in rows.iter().enumerate() {
        for u in 0..h {
            let delta = match (u * 7 + i * 3) % 5 < 2 {
                true => 0.0,
                false => ((u * 13 + i * 5) % 11) as f64 / 11.0 - 0.4 + 0.01 * i as f64,
            };
            for (c, v) in x.iter().enumerate() {
                g[c * h + u] += (v * delta) as f32;
            }
        }
    }
    let found = span_rows(&g, &layout, (d, h), rows.len());
    let found: Vec<&[f32]> = found.chunks_exact(d).collect();
    for (i, x) in rows.iter().enumerate() {
        assert!(
            found
                .iter()
                .any(|f| f.iter().zip(x).all(|(a, b)| (*a as f64 - b).abs() < 1e-3)),
            "row {i} is not among the {} found",
            found.len()
        );
    }
}
