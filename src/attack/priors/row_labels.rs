//! Each row's label, exactly, once its row is known. The last layer's FedSGD gradient is
//! G = (1/B) Σᵢ hᵢ rᵢᵀ and its bias's g = (1/B) Σᵢ rᵢ, with hᵢ the row's input to that layer and
//! rᵢ = pᵢ − yᵢ its output residual (softmax cross-entropy and a sigmoid head's BCE alike). With
//! every row proved the server computes every hᵢ and pᵢ itself; the B residuals are then the
//! solution of (H + 1)·O linear equations in B·O unknowns, unique where the hᵢ (with a 1 for the
//! bias) are independent, and yᵢ = pᵢ − rᵢ is a one-hot vector (or 0/1) to float error. That is a
//! certificate: a wrong row leaves the system without an exact solution or a y that is no label.
//! Geng et al.'s restoration gives only the batch's counts, and those approximately.
use nalgebra::DMatrix;

use crate::attack::priors::spectrum::Precision;
use crate::client::head::{Head, Model};
use crate::client::network::Params;
use crate::client::update::Update;

/// The rows explain the last layer's gradient where the least-squares residual is within this
/// many times what the update's rounding and the client's rounding of the rows' last-layer
/// inputs leave (`Spectrum`'s rounding model, the update's own precision).
const EXPLAINED: f64 = 4.0;
/// How far a recovered y may be from a label (one-hot, or 0/1).
const OFF_LABEL: f64 = 0.05;
/// The rows' inputs to the last layer must be independent: their matrix, which leakscope builds
/// in float64 from rows it holds, has its smallest singular value above this share of its
/// largest (float64's rounding, not the update's: `spectrum::exact_rank`).
const INDEPENDENT: f64 = 1e-8;
/// The client's float32 forward pass to the last layer against ours in float64: about
/// u·√(fan-in + 1) per layer, this many times.
const FORWARD: f64 = 16.0;

/// The label (class index) of each of the `b` encoded rows `x` ([b, d] row-major) behind the
/// FedSGD `update` of `params`, or None where the rows do not certify them.
pub fn read_labels(params: &Params, model: Model, update: &Update, x: &[f64], b: usize) -> Option<Vec<usize>> {
    let (r, probs) = residuals(params, model, update, x, b, true)?;
    let classes = model.head.classes(params.sizes[params.layers()]);
    (0..b)
        .map(|i| {
            let y = label_of(model.head, &probs[i * classes..(i + 1) * classes], &r, i)?;
            let c = (0..classes).max_by(|&a, &b| y[a].total_cmp(&y[b]))?;
            let off = (0..classes)
                .map(|k| (y[k] - (k == c) as u8 as f64).abs())
                .fold(0.0, f64::max);
            (off <= OFF_LABEL).then_some(c)
        })
        .collect()
}

/// A regression's label of each of the `b` encoded rows `x` behind the FedSGD `update`, in the
/// standardised units the client trained on: yᵢ = zᵢ − rᵢ, or None where the rows do not explain
/// the last layer exactly. Only the fit certifies them: any yᵢ is a label.
pub fn read_values(params: &Params, model: Model, update: &Update, x: &[f64], b: usize) -> Option<Vec<f64>> {
    let (r, z) = residuals(params, model, update, x, b, true)?;
    Some((0..b).map(|i| z[i] - r[(i, 0)]).collect())
}

/// The same labels fitted by least squares to rows that need not be exact (the ensemble's): an
/// estimate, no certificate. None where the rows' last-layer inputs are dependent.
pub fn fit_values(params: &Params, model: Model, update: &Update, x: &[f64], b: usize) -> Option<Vec<f64>> {
    let (r, z) = residuals(params, model, update, x, b, false)?;
    Some((0..b).map(|i| z[i] - r[(i, 0)]).collect())
}

/// Each row's likeliest label where the rows need not be exact (an attack's rows, some wrong):
/// row i sits in the slot of label `labels[i]`; the rows marked `free` trade those slots' labels
/// among themselves so that the y = p − r the least-squares residuals give them come nearest
/// their labels' one-hot vectors in all (Hungarian); the others keep theirs. An estimate, no
/// certificate; None where the rows' last-layer inputs are dependent.
pub fn fit_labels(
    params: &Params,
    model: Model,
    update: &Update,
    x: &[f64],
    labels: &[usize],
    free: &[bool],
) -> Option<Vec<usize>> {
    let b = labels.len();
    let (r, probs) = residuals(params, model, update, x, b, false)?;
    let classes = model.head.classes(params.sizes[params.layers()]);
    let y: Vec<Vec<f64>> = (0..b)
        .map(|i| label_of(model.head, &probs[i * classes..(i + 1) * classes], &r, i))
        .collect::<Option<_>>()?;
    let moving: Vec<usize> = (0..b).filter(|&i| free[i]).collect();
    let mut out = labels.to_vec();
    if moving.is_empty() {
        return Some(out);
    }
    // Cost of free row i taking free slot k's label: how far its y is from that one-hot vector.
    let weights: Vec<i64> = moving
        .iter()
        .flat_map(|&i| {
            let y = &y;
            moving.iter().map(move |&k| {
                let off: f64 = (0..classes)
                    .map(|c| (y[i][c] - (c == labels[k]) as u8 as f64).powi(2))
                    .sum();
                (off.min(1e6) * 1e6).round() as i64
            })
        })
        .collect();
    let costs = pathfinding::matrix::Matrix::from_vec(moving.len(), moving.len(), weights).ok()?;
    let (_, slot_of_row) = pathfinding::kuhn_munkres::kuhn_munkres_min(&costs);
    for (n, &i) in moving.iter().enumerate() {
        out[i] = labels[moving[slot_of_row[n]]];
    }
    Some(out)
}

/// Row `i`'s y = p − r per class (its probabilities `p`, the residuals `r`): its label's one-hot
/// vector where the row and its residual are exact. None for a regression.
fn label_of(head: Head, p: &[f64], r: &DMatrix<f64>, i: usize) -> Option<Vec<f64>> {
    match head {
        Head::Softmax => Some((0..p.len()).map(|c| p[c] - r[(i, c)]).collect()),
        // One output, the second class's: y = p(yes) − r.
        Head::Sigmoid => {
            let yes = p[1] - r[(i, 0)];
            Some(vec![1.0 - yes, yes])
        }
        Head::Linear => None,
    }
}

/// The rows' output residuals rᵢ = pᵢ − yᵢ [b, outputs] that explain the last layer's FedSGD
/// gradient exactly, and the rows' p (the head's probabilities, or a regression's outputs); None
/// where the rows' last-layer inputs are dependent or (with `exact`) leave no exact solution.
fn residuals(
    params: &Params,
    model: Model,
    update: &Update,
    x: &[f64],
    b: usize,
    exact: bool,
) -> Option<(DMatrix<f64>, Vec<f64>)> {
    let last = params.layers() - 1;
    let (h, outputs) = (params.sizes[last], params.sizes[last + 1]);
    if b == 0 || b > h + 1 {
        return None;
    }
    let (inputs, probs) = params.forward_host(x, b, model);
    // M [(h + 1), b]: column i is (hᵢ, 1); T = B·[G; g] / s, [(h + 1), outputs].
    let m = DMatrix::from_fn(h + 1, b, |j, i| if j < h { inputs[i * h + j] } else { 1.0 });
    let (gw, gb) = (update.weight(last), update.bias(last));
    let t = DMatrix::from_fn(h + 1, outputs, |j, o| {
        b as f64
            * if j < h {
                gw[j * outputs + o] as f64
            } else {
                gb[o] as f64
            }
    });
    let svd = m.clone().svd(true, true);
    let (largest, smallest) = (svd.singular_values.max(), svd.singular_values.min());
    if largest.is_nan() || largest <= 0.0 || smallest < INDEPENDENT * largest {
        return None;
    }
    // What the rounding leaves: the update's own (its precision, over T) and the client's float32
    // inputs against ours, through every layer to the last.
    let precision = Precision::of(gw.iter().chain(gb).copied());
    let forward = FORWARD
        * precision.unit.max(Precision::F32.unit)
        * params.sizes[..last + 1]
            .iter()
            .map(|&n| ((n + 1) as f64).sqrt())
            .sum::<f64>();
    let rounding = 8.0 * precision.unit * t.norm() + forward * t.norm();
    // A label read less precisely than OFF_LABEL / LABEL_MARGIN says nothing: the rows' inputs
    // are too near dependent to tell their residuals apart.
    let r = svd.solve(&t, 0.0).ok()?;
    let residual = (&m * &r - &t).norm();
    if residual.is_nan() || (exact && residual > EXPLAINED * rounding) {
        return None;
    }
    Some((r / model.head.scale(), probs))
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Device, Tensor, TensorData};

    use super::*;
    use crate::client::activation::Activation;
    use crate::client::gradient::param_grads;
    use crate::client::network::Net;

    /// A FedSGD gradient of `b` rows with these labels, and the rows.
    fn gradient(sizes: &[usize], model: Model, labels: &[usize]) -> (Params, Update, Vec<f64>) {
        let params = Params::init(sizes, 3);
        let (b, d) = (labels.len(), sizes[0]);
        let x: Vec<f64> = (0..b * d).map(|k| ((k * 37 % 23) as f64 - 11.0) / 7.0).collect();
        let device = &Device::flex();
        let classes = if model.head == Head::Sigmoid {
            2
        } else {
            *sizes.last().unwrap()
        };
        let xt = Tensor::<3>::from_data(
            TensorData::new(x.iter().map(|&v| v as f32).collect(), [1, b, d]),
            device,
        );
        let outputs = *sizes.last().unwrap();
        let y = Tensor::<3>::from_data(
            TensorData::new(model.head.targets(labels, classes), [1, b, outputs]),
            device,
        );
        let (g, _) = param_grads(&Net::new(&params, device).with_model(model), &xt, &y);
        let read = |t: &Tensor<3>| pollster::block_on(crate::runtime::read_f32(t.clone())).unwrap();
        let update = Update::from_layers(
            g.weights.iter().map(read).collect(),
            g.biases.iter().map(read).collect(),
        );
        (params, update, x)
    }

    #[test]
    fn every_rows_label_is_read_from_the_last_layer_for_either_head() {
        let labels = [2, 0, 1, 1, 0, 2, 2, 0];
        let softmax = Model::default();
        let (params, update, x) = gradient(&[5, 12, 10, 3], softmax, &labels);
        assert_eq!(read_labels(&params, softmax, &update, &x, 8), Some(labels.to_vec()));
        let sigmoid = Model {
            activation: Activation::Gelu,
            head: Head::Sigmoid,
        };
        let yes_no = [1, 0, 0, 1, 1, 1, 0, 1];
        let (params, update, x) = gradient(&[5, 12, 10, 1], sigmoid, &yes_no);
        assert_eq!(read_labels(&params, sigmoid, &update, &x, 8), Some(yes_no.to_vec()));
    }

    #[test]
    fn rows_in_any_order_and_one_wrong_take_their_own_labels_from_the_fit() {
        let labels = [2, 0, 1, 1, 0, 2, 2, 0];
        let model = Model::default();
        let (params, update, x) = gradient(&[5, 12, 10, 3], model, &labels);
        // The rows in another order, as a proof leaves them in the slots of the labels used
        // (sorted), and one row moved: no exact solution, so `read_labels` certifies nothing.
        let order = [3, 7, 0, 5, 1, 6, 2, 4];
        let mut moved: Vec<f64> = order.iter().flat_map(|&i| x[i * 5..(i + 1) * 5].to_vec()).collect();
        moved[7 * 5 + 2] += 0.05;
        assert_eq!(read_labels(&params, model, &update, &moved, 8), None);
        let mut used = labels;
        used.sort();
        let fitted = fit_labels(&params, model, &update, &moved, &used, &[true; 8]).unwrap();
        let own: Vec<usize> = order.iter().map(|&i| labels[i]).collect();
        assert_eq!(fitted, own);
        let mut counts = fitted.clone();
        counts.sort();
        assert_eq!(counts, used, "the labels used, each once");
        // Rows not free keep their slots' labels; the free ones trade among their slots only.
        let mut free = [true; 8];
        free[0] = false;
        let fitted = fit_labels(&params, model, &update, &moved, &used, &free).unwrap();
        assert_eq!(fitted[0], used[0]);
        assert_ne!(fitted, own);
    }

    #[test]
    fn a_wrong_row_or_too_many_rows_certify_nothing() {
        let labels = [2, 0, 1, 1, 0, 2, 2, 0];
        let model = Model::default();
        let (params, update, mut x) = gradient(&[5, 12, 10, 3], model, &labels);
        let mut moved = x.clone();
        moved[7] += 0.5;
        assert_eq!(read_labels(&params, model, &update, &moved, 8), None);
        // Two rows swapped keep the system solvable: the labels follow their rows.
        x.swap(0, 5);
        x.swap(1, 6);
        x.swap(2, 7);
        x.swap(3, 8);
        x.swap(4, 9);
        let swapped = read_labels(&params, model, &update, &x, 8).unwrap();
        assert_eq!((swapped[0], swapped[1]), (labels[1], labels[0]));
        // More rows than the last layer's inputs (+1): the residuals are not determined.
        let (params, update, x) = gradient(&[5, 4, 3], model, &labels);
        assert_eq!(read_labels(&params, model, &update, &x, 8), None);
    }
}
