//! Rows moved within their columns, as both certificate generators build them
//! (`common/adversarial.rs`, `common/near_dependent.rs`).
use leakscope::table::{Dataset, FeatureKind, Value};

/// The continuous columns.
pub fn continuous(d: &Dataset) -> Vec<usize> {
    (0..d.features.len())
        .filter(|&f| !d.features[f].is_categorical())
        .collect()
}

/// A continuous value moved by `by` of its std, at its column's precision and in its range.
pub fn moved(f: &FeatureKind, v: f64, by: f64) -> f64 {
    let FeatureKind::Continuous {
        min,
        max,
        decimals,
        std,
    } = *f
    else {
        return v;
    };
    let scale = 10f64.powi(decimals as i32);
    (((v + by * std) * scale).round() / scale).clamp(min, max)
}

/// The point a share `lambda` of the way from `a` to `b` (categories of `a`).
pub fn between(d: &Dataset, a: &[Value], b: &[Value], lambda: f64) -> Vec<Value> {
    let mut out = a.to_vec();
    for f in continuous(d) {
        let v = a[f].num() + lambda * (b[f].num() - a[f].num());
        out[f] = Value::Num(moved(&d.features[f].kind, v, 0.0));
    }
    out
}
