//! Property tests of the encoding file (issue 16): what `leakscope encoding` writes and a client's
//! pipeline may write by hand, random, mutated byte by byte or field by field, never panics, never
//! allocates more than a small multiple of the file, and either reads into a rowless dataset that
//! keeps its promises or fails with an error that names the problem.
#[path = "common/prop.rs"]
mod support;

use leakscope::table::{Dataset, DatasetOptions, Encoding, FeatureKind, Value, parse_csv};
use proptest::prelude::*;
use proptest::sample::Index;

use support::{MIB, apply, apply_json, config, edits, json_edits, peak_of, specific};

#[global_allocator]
static ALLOCATOR: support::Counting = support::Counting;

/// Cells longer than this to format one value would be an allocation no file asked for.
const MAX_FORMATTED: usize = 64 * 1024;

/// Encoding files: the one the PyTorch export used, and those of the bundled tables.
fn originals() -> &'static [serde_json::Value] {
    static ORIGINALS: std::sync::OnceLock<Vec<serde_json::Value>> = std::sync::OnceLock::new();
    ORIGINALS.get_or_init(|| {
        let dir = env!("CARGO_MANIFEST_DIR");
        let text = std::fs::read_to_string(format!("{dir}/tests/data/pytorch-update/encoding.json")).unwrap();
        let mut out = vec![serde_json::from_str(&text).unwrap()];
        out.push(with_codings(&out[0]));
        for (file, label) in [
            ("semicolon-decimal-comma.csv", "label"),
            ("stray-words.csv", "label"),
            ("thousands.csv", "label"),
        ] {
            let bytes = std::fs::read(format!("{dir}/tests/data/tables/{file}")).unwrap();
            let raw = parse_csv(&bytes, usize::MAX).unwrap();
            let label = if raw.headers.iter().any(|h| h == label) {
                label.to_string()
            } else {
                raw.headers.last().unwrap().clone()
            };
            let d = Dataset::from_raw(
                &raw,
                &DatasetOptions {
                    label,
                    ..Default::default()
                },
            )
            .unwrap();
            out.push(serde_json::to_value(Encoding::of(&d)).unwrap());
        }
        out
    })
}

/// An encoding as a scikit-learn pipeline might state it: the first categorical column one-hot
/// without its first category, the second ordinal, offsets and scalings to match.
fn with_codings(original: &serde_json::Value) -> serde_json::Value {
    let mut doc = original.clone();
    let (mean, std) = (
        doc["mean"].as_array().unwrap().clone(),
        doc["std"].as_array().unwrap().clone(),
    );
    let (mut new_mean, mut new_std, mut cats) = (Vec::new(), Vec::new(), 0);
    for f in doc["features"].as_array_mut().unwrap() {
        let at = f["offset"].as_u64().unwrap() as usize;
        f["offset"] = new_mean.len().into();
        let Some(categories) = f["categories"].as_array().cloned() else {
            new_mean.push(mean[at].clone());
            new_std.push(std[at].clone());
            continue;
        };
        cats += 1;
        let kept = match cats {
            1 => {
                f["dropped"] = categories[0].clone();
                at + 1..at + categories.len()
            }
            2 => {
                f["coding"] = "ordinal".into();
                new_mean.push(0.0.into());
                new_std.push(1.0.into());
                continue;
            }
            _ => at..at + categories.len(),
        };
        new_mean.extend(mean[kept.clone()].iter().cloned());
        new_std.extend(std[kept].iter().cloned());
    }
    doc["mean"] = new_mean.into();
    doc["std"] = new_std.into();
    doc
}

fn pick(which: &Index) -> &'static serde_json::Value {
    &originals()[which.index(originals().len())]
}

/// Read an encoding file as the CLI does and check what it promises.
fn check_encoding(bytes: &[u8]) -> Result<(), TestCaseError> {
    let (read, peak) = peak_of(|| {
        serde_json::from_slice::<Encoding>(bytes)
            .map_err(|e| format!("not an encoding ({e})"))
            .and_then(|e| e.into_dataset().map_err(|e| e.to_string()))
    });
    prop_assert!(
        peak <= 32 * bytes.len() + MIB,
        "reading allocated {peak} bytes for {} bytes",
        bytes.len()
    );
    match read {
        Ok(d) => check_dataset(&d),
        Err(e) => {
            prop_assert!(specific(&e), "vague error {e:?}");
            prop_assert!(
                e.starts_with("not an encoding") || e.starts_with("invalid setting: encoding: "),
                "{e}"
            );
            Ok(())
        }
    }
}

/// A rowless dataset from an encoding: contiguous features as wide as mean and std, positive
/// finite std, at least two classes; a row of any inputs decodes into the columns' ranges, and
/// formatting a value stays small.
fn check_dataset(d: &Dataset) -> Result<(), TestCaseError> {
    prop_assert!(d.rows.is_empty() && d.classes.len() >= 2 && !d.features.is_empty());
    prop_assert!(d.mean.len() == d.d() && d.std.len() == d.d());
    prop_assert!(d.mean.iter().all(|m| m.is_finite()));
    prop_assert!(d.std.iter().all(|s| *s > 0.0 && s.is_finite()));
    let mut next = 0;
    for f in &d.features {
        prop_assert_eq!(f.offset, next);
        next += f.width();
    }
    // The client's own inputs, where its pipeline is not leakscope's: as wide as it says.
    if let Some(p) = &d.pipeline {
        let row: Vec<Value> = d
            .features
            .iter()
            .map(|f| match f.kind {
                FeatureKind::Categorical { .. } => Value::Cat(0),
                FeatureKind::Continuous { min, .. } => Value::Num(min),
            })
            .collect();
        let x = p.encode(&row);
        prop_assert_eq!(x.len(), p.d());
        prop_assert!(x.iter().all(|v| !v.is_nan()), "{x:?}");
    }
    let (lo, hi) = d.bounds();
    prop_assert!(lo.iter().chain(&hi).all(|v| !v.is_nan()), "bounds {lo:?} {hi:?}");
    for z in [0.0f32, 1.0, -3.0] {
        let decoded = d.decode(&vec![z; d.d()]);
        for (k, (f, v)) in d.features.iter().zip(decoded).enumerate() {
            match (&f.kind, v) {
                (FeatureKind::Categorical { categories }, Value::Cat(c)) => {
                    prop_assert!((c as usize) < categories.len())
                }
                (FeatureKind::Continuous { min, max, decimals, .. }, Value::Num(x)) => {
                    prop_assert!(
                        x.is_finite() && *min <= x && x <= *max,
                        "column {}: input {z} decodes to {x} outside [{min}, {max}]",
                        f.name
                    );
                    // A report formats every cell: the decimals the file states must not make that
                    // an allocation of gigabytes.
                    prop_assert!(
                        (*decimals as usize) < MAX_FORMATTED,
                        "column {} states {decimals} decimals: formatting one value would allocate that many bytes",
                        f.name
                    );
                    let (text, peak) = peak_of(|| d.format(k, v));
                    prop_assert!(!text.is_empty() && peak <= 4 * MAX_FORMATTED);
                }
                (kind, v) => prop_assert!(false, "{v:?} decoded in a {kind:?} column"),
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(10000))]

    #[test]
    fn random_bytes_read_or_fail_specifically(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        check_encoding(&bytes)?;
    }

    /// Encodings with bytes flipped, cut short, lines repeated, numbers replaced by NaN, ±∞ or huge
    /// values.
    #[test]
    fn mutated_files_read_or_fail_specifically(which in any::<Index>(), pretty in any::<bool>(), edits in edits(6)) {
        let original = pick(&which);
        let text = if pretty {
            serde_json::to_vec_pretty(original).unwrap()
        } else {
            serde_json::to_vec(original).unwrap()
        };
        check_encoding(&apply(&text, &edits))?;
    }

    /// Encodings with fields removed, retyped, set to edge values, or added.
    #[test]
    fn files_with_fields_changed_read_or_fail_specifically(which in any::<Index>(), edits in json_edits(4)) {
        let doc = apply_json(pick(&which), &edits);
        check_encoding(&serde_json::to_vec(&doc).unwrap())?;
    }

    /// Every encoding written reads back as itself.
    #[test]
    fn written_encodings_read_back(which in any::<Index>()) {
        let text = serde_json::to_string(pick(&which)).unwrap();
        let enc: Encoding = serde_json::from_str(&text).unwrap();
        let d = enc.clone().into_dataset().unwrap();
        check_dataset(&d)?;
        prop_assert_eq!(Encoding::of(&d), enc);
    }
}
