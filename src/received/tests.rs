//! A JSON update read: layers in natural order, transposed to the engine's layout, and what does
//! not fit said precisely.
use super::*;

fn layer(name: &str, out: usize, inp: usize, k: f32) -> serde_json::Value {
    let w: Vec<Vec<f32>> = (0..out)
        .map(|o| (0..inp).map(|i| k + (o * inp + i) as f32).collect())
        .collect();
    serde_json::json!({ format!("{name}.weight"): w, format!("{name}.bias"): vec![k; out] })
}

fn doc(weights: serde_json::Value, update: serde_json::Value) -> String {
    serde_json::json!({"format": UPDATE_FORMAT, "weights": weights, "update": update, "rows": 2}).to_string()
}

fn merge(a: serde_json::Value, b: serde_json::Value) -> serde_json::Value {
    let mut a = a.as_object().unwrap().clone();
    a.extend(b.as_object().unwrap().clone());
    serde_json::Value::Object(a)
}

#[test]
fn layers_are_read_in_natural_order_and_transposed() {
    // "10" after "2": natural order, not the text order.
    let w = merge(layer("net.2", 2, 3, 0.0), layer("net.10", 4, 2, 0.0));
    let w = merge(w, layer("net.0", 3, 5, 0.0));
    let r = ReceivedUpdate::from_json(&doc(w.clone(), w)).unwrap();
    assert_eq!(r.update.names(), ["net.0", "net.2", "net.10"]);
    assert_eq!(r.params.sizes, [5, 3, 2, 4]);
    // W[out = 1][in = 2] = 1·5 + 2 lands at [in = 2][out = 1].
    assert_eq!(r.params.weights[0][2 * 3 + 1], 7.0);
    assert_eq!(r.rows, Some(2));
}

#[test]
fn what_does_not_fit_is_said_precisely() {
    let w = merge(layer("0", 3, 5, 0.0), layer("2", 2, 3, 0.0));
    let cases = [
        (doc(w.clone(), layer("0", 3, 5, 0.0)), "missing [\"2\"]"),
        (
            doc(w.clone(), merge(layer("0", 3, 4, 0.0), layer("2", 2, 3, 0.0))),
            "the update's 0.weight is [3, 4] but the model's is [3, 5]",
        ),
        (
            doc(merge(layer("0", 3, 5, 0.0), layer("2", 2, 4, 0.0)), w.clone()),
            "0.weight gives 3 outputs but 2.weight takes 4 inputs",
        ),
        (
            doc(
                merge(w.clone(), serde_json::json!({"bn.running_mean": [0.0]})),
                w.clone(),
            ),
            "bn is a BatchNorm layer (bn.running_mean)",
        ),
        (
            doc(
                merge(
                    w.clone(),
                    serde_json::json!({"norm.weight": [1.0, 1.0], "norm.bias": [0.0, 0.0]}),
                ),
                w.clone(),
            ),
            "norm.weight is a 1-D weight [2], a normalisation layer's (LayerNorm",
        ),
        (
            doc(
                merge(w.clone(), serde_json::json!({"emb.weight": [[1.0, 2.0]]})),
                w.clone(),
            ),
            "the update's tensors without a bias are [] but the model's are [\"emb.weight\"]",
        ),
        (
            doc(
                w.clone(),
                merge(
                    layer("0", 3, 5, 0.0),
                    serde_json::json!({"2.weight": [[1.0, 2.0, 3.0], [1.0]], "2.bias": [0.0, 0.0]}),
                ),
            ),
            "a ragged array",
        ),
    ];
    for (text, want) in cases {
        let err = ReceivedUpdate::from_json(&text).unwrap_err().to_string();
        assert!(err.contains(want), "{err}\nwanted: {want}");
    }
}
