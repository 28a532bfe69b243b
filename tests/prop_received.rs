//! Property tests of received updates (issues 16, 18): safetensors pairs, numpy archives and JSON
//! documents, random, mutated byte by byte, with headers edited (shapes set huge, dtypes changed,
//! offsets moved),
//! truncated, or holding NaN and ±∞, never panic, never allocate more than a small multiple of the
//! files (a shape declares a size; the bytes must be there), and either read into an update whose
//! tensors fit together or fail with an error that names the file part at fault.
#[path = "common/prop.rs"]
mod support;

use std::collections::BTreeMap;

use leakscope::received::{ReceivedUpdate, UPDATE_FORMAT};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Value, json};

use support::{MIB, apply, apply_json, config, edits, json_edits, json_value, peak_of, specific};

#[global_allocator]
static ALLOCATOR: support::Counting = support::Counting;

fn fixture(file: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/tests/data/pytorch-update/{file}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// A network's tensors as PyTorch names them: (name, shape [out, in] or [out], values).
type Tensors = Vec<(String, Vec<usize>, Vec<f32>)>;

/// A small network: layer sizes and values.
fn network() -> impl Strategy<Value = (Tensors, Tensors, Option<usize>)> {
    (
        prop::collection::vec(1usize..5, 2..5),
        any::<u64>(),
        prop::option::of(0usize..6),
    )
        .prop_map(|(sizes, seed, rows)| {
            let value = |k: usize| ((seed.wrapping_mul(k as u64 + 1) % 2001) as f32 - 1000.0) / 250.0;
            let mut weights = Vec::new();
            let mut update = Vec::new();
            let mut k = 0;
            for (l, w) in sizes.windows(2).enumerate() {
                let (inp, out) = (w[0], w[1]);
                for (name, shape) in [
                    (format!("net.{}.weight", 2 * l), vec![out, inp]),
                    (format!("net.{}.bias", 2 * l), vec![out]),
                ] {
                    let n: usize = shape.iter().product();
                    let vw: Vec<f32> = (0..n).map(|i| value(k + i)).collect();
                    let vu: Vec<f32> = (0..n).map(|i| value(k + i + 7) / 100.0).collect();
                    k += n;
                    weights.push((name.clone(), shape.clone(), vw));
                    update.push((name, shape, vu));
                }
            }
            (weights, update, rows)
        })
}

/// A safetensors file of float32 tensors, as the `safetensors` package writes it.
fn safetensors(tensors: &Tensors, metadata: &BTreeMap<String, String>) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    if !metadata.is_empty() {
        header.insert("__metadata__".into(), json!(metadata));
    }
    let mut data = Vec::new();
    for (name, shape, values) in tensors {
        let start = data.len();
        data.extend(values.iter().flat_map(|v| v.to_le_bytes()));
        header.insert(
            name.clone(),
            json!({"dtype": "F32", "shape": shape, "data_offsets": [start, data.len()]}),
        );
    }
    with_header(&Value::Object(header), &data)
}

fn with_header(header: &Value, data: &[u8]) -> Vec<u8> {
    let mut h = serde_json::to_vec(header).unwrap();
    while !h.len().is_multiple_of(8) {
        h.push(b' ');
    }
    let mut out = (h.len() as u64).to_le_bytes().to_vec();
    out.extend(h);
    out.extend(data);
    out
}

/// A safetensors file's header and data.
fn split(file: &[u8]) -> (Value, Vec<u8>) {
    let n = u64::from_le_bytes(file[..8].try_into().unwrap()) as usize;
    (serde_json::from_slice(&file[8..8 + n]).unwrap(), file[8 + n..].to_vec())
}

/// The same network as a JSON update ([out][in] nested lists, as `tensor.tolist()` gives them).
fn json_update(weights: &Tensors, update: &Tensors, rows: Option<usize>) -> Value {
    let as_map = |ts: &Tensors| {
        let mut m = serde_json::Map::new();
        for (name, shape, values) in ts {
            let v = match shape.as_slice() {
                [_, inp] => json!(values.chunks(*inp).collect::<Vec<_>>()),
                _ => json!(values),
            };
            m.insert(name.clone(), v);
        }
        Value::Object(m)
    };
    let mut doc = json!({"format": UPDATE_FORMAT, "weights": as_map(weights), "update": as_map(update)});
    if let Some(r) = rows {
        doc["rows"] = json!(r);
        doc["labels"] = json!((0..r).map(|i| format!("class {}", i % 2)).collect::<Vec<_>>());
    }
    doc
}

/// The readers' allocation: the values as f32, a transposed copy of each weight, a parsed JSON tree
/// (a few dozen bytes a number). Linear in the files: a shape alone never buys memory.
fn allowed(len: usize) -> usize {
    64 * len + MIB
}

/// An update read: layers that chain, every tensor as large as its shape, finite values, rows and
/// labels that agree.
fn check_update(r: &ReceivedUpdate) -> Result<(), TestCaseError> {
    let layers = r.update.layers();
    prop_assert!(layers >= 1);
    prop_assert_eq!(r.params.sizes.len(), layers + 1);
    prop_assert_eq!(r.params.weights.len(), layers);
    prop_assert_eq!(r.params.biases.len(), layers);
    for l in 0..layers {
        let (inp, out) = (r.params.sizes[l], r.params.sizes[l + 1]);
        prop_assert_eq!(r.params.weights[l].len(), inp * out);
        prop_assert_eq!(r.params.biases[l].len(), out);
        prop_assert_eq!(r.update.weight(l).len(), inp * out);
        prop_assert_eq!(r.update.bias(l).len(), out);
    }
    let values = r.params.weights.iter().chain(&r.params.biases).flatten();
    prop_assert!(values.into_iter().all(|v| v.is_finite()));
    // Embedding tables: each as large as its shape, in the model and the update alike.
    for t in &r.embeddings {
        prop_assert_eq!(t.weight.len(), t.rows * t.width);
        prop_assert_eq!(t.update.len(), t.rows * t.width);
        prop_assert!(t.weight.iter().chain(&t.update).all(|v| v.is_finite()));
    }
    prop_assert!(r.update.is_finite());
    if let (Some(n), Some(l)) = (r.rows, &r.labels) {
        prop_assert_eq!(n, l.len());
    }
    Ok(())
}

fn check_read(read: leakscope::Result<ReceivedUpdate>) -> Result<Option<String>, TestCaseError> {
    match read {
        Ok(r) => {
            check_update(&r)?;
            Ok(None)
        }
        Err(e) => {
            let m = e.to_string();
            prop_assert!(specific(&m), "vague error {e:?}");
            prop_assert!(matches!(e, leakscope::Error::Config(_)), "{e:?}");
            Ok(Some(m))
        }
    }
}

fn check_safetensors(weights: &[u8], update: &[u8]) -> Result<Option<String>, TestCaseError> {
    check_pair("from_safetensors", weights, update, || {
        ReceivedUpdate::from_safetensors(weights, update)
    })
}

/// A pair of files read: within its allowance of memory, into an update or an error that names
/// the file at fault.
fn check_pair(
    reader: &str,
    weights: &[u8],
    update: &[u8],
    read: impl FnOnce() -> leakscope::Result<ReceivedUpdate>,
) -> Result<Option<String>, TestCaseError> {
    let (read, peak) = peak_of(read);
    let len = weights.len() + update.len();
    prop_assert!(peak <= allowed(len), "{reader} allocated {peak} bytes for {len} bytes");
    let m = check_read(read)?;
    if let Some(m) = &m {
        prop_assert!(
            ["weights", "update", "the update", "holds a non-finite value"]
                .iter()
                .any(|w| m.contains(w)),
            "{m}"
        );
    }
    Ok(m)
}

fn check_json(bytes: &[u8]) -> Result<Option<String>, TestCaseError> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Ok(None);
    };
    let (read, peak) = peak_of(|| ReceivedUpdate::from_json(text));
    prop_assert!(
        peak <= allowed(text.len()),
        "from_json allocated {peak} bytes for {} bytes",
        text.len()
    );
    check_read(read)
}

/// One `.npy` member as numpy writes it: magic, version 1.0, the header dict padded to 64 bytes.
fn npy(descr: &str, fortran: bool, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let order = if fortran { "True" } else { "False" };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((header.len() as u16).to_le_bytes());
    out.extend(header.as_bytes());
    out.extend(data);
    out
}

/// A numpy archive of members (name without `.npy`), stored as `numpy.savez` stores them.
fn npz(members: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, bytes) in members {
        zip.start_file(format!("{name}.npy"), options).unwrap();
        std::io::Write::write_all(&mut zip, bytes).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

fn f32_npy(shape: &[usize], values: &[f32]) -> Vec<u8> {
    npy(
        "<f4",
        false,
        shape,
        &values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>(),
    )
}

/// A network's tensors as an archive: by name, or by position (`arr_0`, …) in the given order.
fn npz_of(tensors: &Tensors, positional: bool, extra: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut members: Vec<(String, Vec<u8>)> = tensors
        .iter()
        .enumerate()
        .map(|(i, (name, shape, values))| {
            let name = if positional { format!("arr_{i}") } else { name.clone() };
            (name, f32_npy(shape, values))
        })
        .collect();
    members.extend(extra.iter().cloned());
    npz(&members)
}

/// Class names as numpy stores `numpy.array(labels)`: fixed-width UTF-32.
fn labels_npy(labels: &[String]) -> Vec<u8> {
    let width = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0).max(1);
    let mut data = Vec::new();
    for l in labels {
        let mut chars: Vec<u32> = l.chars().map(|c| c as u32).collect();
        chars.resize(width, 0);
        data.extend(chars.iter().flat_map(|c| c.to_le_bytes()));
    }
    npy(&format!("<U{width}"), false, &[labels.len()], &data)
}

fn check_npz(weights: &[u8], update: &[u8]) -> Result<Option<String>, TestCaseError> {
    check_pair("from_files (npz)", weights, update, || {
        ReceivedUpdate::from_files(update, Some(weights))
    })
}

/// A safetensors header's tensors, in file order.
fn tensor_names(header: &Value) -> Vec<String> {
    header
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| *k != "__metadata__")
        .cloned()
        .collect()
}

const DTYPES: &[&str] = &[
    "BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "F64", "I64", "U64",
    "F4", "E8M0", "C64", "f32", "float32", "",
];

proptest! {
    #![proptest_config(config(5000))]

    #[test]
    fn random_bytes_are_refused_specifically(w in prop::collection::vec(any::<u8>(), 0..200), u in prop::collection::vec(any::<u8>(), 0..200)) {
        prop_assert!(check_safetensors(&w, &u)?.is_some());
        check_json(&u)?;
    }

    /// A small network reads the same from safetensors and from JSON, as written.
    #[test]
    fn written_updates_read_back((weights, update, rows) in network()) {
        let meta: BTreeMap<String, String> = rows.map(|r| {
            [("rows".to_string(), r.to_string()),
             ("labels".to_string(), serde_json::to_string(&(0..r).map(|i| format!("class {}", i % 2)).collect::<Vec<_>>()).unwrap())]
                .into_iter().collect()
        }).unwrap_or_default();
        let st = ReceivedUpdate::from_safetensors(&safetensors(&weights, &BTreeMap::new()), &safetensors(&update, &meta));
        let js = ReceivedUpdate::from_json(&json_update(&weights, &update, rows).to_string());
        let st = st.map_err(|e| TestCaseError::fail(e.to_string()))?;
        check_update(&st)?;
        prop_assert_eq!(Ok(st), js);
    }

    /// The PyTorch exports' files (a plain MLP's, and an embedding MLP's with its tables), either
    /// of them with bytes flipped, cut short, inserted, deleted.
    #[test]
    fn mutated_safetensors_read_or_fail_specifically(which in 0u8..3, dir in prop::sample::select(vec!["", "embedding/"]), edits in edits(5)) {
        let (w, u) = (fixture(&format!("{dir}weights.safetensors")), fixture(&format!("{dir}update.safetensors")));
        let (w, u) = match which {
            0 => (apply(&w, &edits), u),
            1 => (w, apply(&u, &edits)),
            _ => (apply(&w, &edits), apply(&u, &edits)),
        };
        check_safetensors(&w, &u)?;
        // An embedding MLP's update that still reads is rewritten into one-hot terms or refused
        // with a specific reason, whatever its values.
        if let (true, Ok(r)) = (dir == "embedding/", ReceivedUpdate::from_safetensors(&w, &u)) {
            let enc: leakscope::table::Encoding = serde_json::from_slice(&fixture("embedding/encoding.json")).unwrap();
            let dataset = enc.into_dataset().unwrap();
            let config = leakscope::AttackConfig { batch_size: 8, ..Default::default() };
            match leakscope::received::pipeline::in_dataset_terms(&dataset, &config, &r) {
                Ok(ours) => prop_assert_eq!(ours.params.sizes[0], dataset.d()),
                Err(e) => prop_assert!(specific(&e.to_string()), "vague error {e:?}"),
            }
        }
    }

    /// Small networks with their headers edited: fields removed, retyped, set to edge values.
    #[test]
    fn safetensors_with_headers_edited_read_or_fail_specifically((weights, update, rows) in network(), in_update in any::<bool>(), edits in json_edits(3)) {
        let meta: BTreeMap<String, String> = rows.map(|r| [("rows".to_string(), r.to_string())].into_iter().collect()).unwrap_or_default();
        let (mut w, mut u) = (safetensors(&weights, &BTreeMap::new()), safetensors(&update, &meta));
        let target = if in_update { &mut u } else { &mut w };
        let (header, data) = split(target);
        *target = with_header(&apply_json(&header, &edits), &data);
        check_safetensors(&w, &u)?;
    }

    /// Shapes set huge (their product overflowing, or a size no file holds): refused, not allocated.
    #[test]
    fn huge_shapes_are_refused_unallocated(
        in_update in any::<bool>(),
        which in any::<Index>(),
        shape in prop::collection::vec(prop_oneof![
            Just(0usize), Just(1), Just(1 << 20), Just(1 << 31), Just(1 << 40), Just(usize::MAX / 4), Just(usize::MAX),
            any::<usize>(),
        ], 1..4),
    ) {
        let (mut w, mut u) = (fixture("weights.safetensors"), fixture("update.safetensors"));
        let target = if in_update { &mut u } else { &mut w };
        let (mut header, data) = split(target);
        let names = tensor_names(&header);
        let name = &names[which.index(names.len())];
        header[name]["shape"] = json!(shape);
        *target = with_header(&header, &data);
        let m = check_safetensors(&w, &u)?;
        // Only a shape with the same number of elements leaves a file that reads (whose layers
        // then no longer fit).
        let elements = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        if m.is_none() {
            prop_assert!(elements.is_some());
        }
    }

    /// Dtypes other than float32 and float64 are refused, naming the tensor.
    #[test]
    fn other_dtypes_are_refused_by_name(in_update in any::<bool>(), which in any::<Index>(), dtype in prop::sample::select(DTYPES)) {
        let (mut w, mut u) = (fixture("weights.safetensors"), fixture("update.safetensors"));
        let target = if in_update { &mut u } else { &mut w };
        let (mut header, data) = split(target);
        let names = tensor_names(&header);
        let name = &names[which.index(names.len())];
        header[name]["dtype"] = json!(dtype);
        *target = with_header(&header, &data);
        let m = check_safetensors(&w, &u)?;
        if dtype != "F32" {
            let m = m.expect("another dtype read");
            prop_assert!(m.contains("not a safetensors file") || (m.contains(name.as_str()) && m.contains("float32")), "{m}");
        }
    }

    /// NaN and ±∞ anywhere in the weights or the update are refused, naming the tensor.
    #[test]
    fn non_finite_values_are_refused_by_name(in_update in any::<bool>(), at in any::<Index>(), v in prop::sample::select(vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -f32::NAN])) {
        let (mut w, mut u) = (fixture("weights.safetensors"), fixture("update.safetensors"));
        let target = if in_update { &mut u } else { &mut w };
        let (header, mut data) = split(target);
        let k = 4 * at.index(data.len() / 4);
        data[k..k + 4].copy_from_slice(&v.to_le_bytes());
        *target = with_header(&header, &data);
        let m = check_safetensors(&w, &u)?.expect("a non-finite value read");
        let name = tensor_names(&header).into_iter().find(|n| {
            let o = &header[n]["data_offsets"];
            o[0].as_u64().unwrap() as usize <= k && k < o[1].as_u64().unwrap() as usize
        }).unwrap();
        prop_assert!(m.contains(&format!("{name} holds a non-finite value")), "{m}");
    }

    /// Safetensors metadata: rows and labels of any text.
    #[test]
    fn metadata_of_any_text_reads_or_fails_specifically(rows in prop::option::of(".{0,12}"), labels in prop::option::of(".{0,24}")) {
        let (w, u) = (fixture("weights.safetensors"), fixture("update.safetensors"));
        let (mut header, data) = split(&u);
        header["__metadata__"] = json!({});
        if let Some(r) = &rows {
            header["__metadata__"]["rows"] = json!(r);
        }
        if let Some(l) = &labels {
            header["__metadata__"]["labels"] = json!(l);
        }
        if let Some(m) = check_safetensors(&w, &with_header(&header, &data))? {
            prop_assert!(m.contains("metadata"), "{m}");
        }
    }

    /// A small network reads the same from numpy archives, by name (with rows and labels) or by
    /// position, as from safetensors.
    #[test]
    fn written_npz_reads_back((weights, update, rows) in network(), positional in any::<bool>()) {
        let labels: Option<Vec<String>> = rows.map(|r| (0..r).map(|i| format!("class {}", i % 2)).collect());
        let mut extra = Vec::new();
        if let (Some(r), Some(l)) = (rows, &labels) {
            extra.push(("rows".to_string(), npy("<i8", false, &[], &(r as i64).to_le_bytes())));
            extra.push(("labels".to_string(), labels_npy(l)));
        }
        let read = ReceivedUpdate::from_files(&npz_of(&update, positional, &extra), Some(&npz_of(&weights, positional, &[])))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        check_update(&read)?;
        let st = ReceivedUpdate::from_safetensors(&safetensors(&weights, &BTreeMap::new()), &safetensors(&update, &BTreeMap::new())).unwrap();
        prop_assert_eq!(&read.params, &st.params);
        prop_assert!(read.update.values().eq(st.update.values()));
        prop_assert_eq!(read.rows, rows);
        prop_assert_eq!(read.labels, labels);
    }

    /// The PyTorch export's archives (by name and by position), bytes flipped, cut, inserted, deleted.
    #[test]
    fn mutated_npz_read_or_fail_specifically(which in 0u8..3, positional in any::<bool>(), edits in edits(5)) {
        let suffix = if positional { "-arrays" } else { "" };
        let (w, u) = (fixture(&format!("weights{suffix}.npz")), fixture(&format!("update{suffix}.npz")));
        let (w, u) = match which {
            0 => (apply(&w, &edits), u),
            1 => (w, apply(&u, &edits)),
            _ => (apply(&w, &edits), apply(&u, &edits)),
        };
        check_npz(&w, &u)?;
    }

    /// A member's header edited: any dtype, shape (huge ones included) or order, against the bytes
    /// it holds: read where it still fits, else refused naming the array, and never allocated for.
    #[test]
    fn npy_headers_of_any_dtype_and_shape_are_refused_unallocated(
        (weights, update, _) in network(),
        in_update in any::<bool>(),
        which in any::<Index>(),
        descr in prop::sample::select(vec!["<f4", ">f4", "<f8", "<f2", "<i4", "<i8", "|u1", "|b1", "<U3", "|O", "<c8", "f4", "<f16", "[('a', '<f4')]", ""]),
        fortran in any::<bool>(),
        shape in prop::collection::vec(prop_oneof![
            Just(0usize), Just(1), Just(2), Just(3), Just(1 << 20), Just(1 << 40), Just(usize::MAX), any::<usize>(),
        ], 0..4),
    ) {
        let (mut w, mut u) = (weights, update);
        let target = if in_update { &mut u } else { &mut w };
        let k = which.index(target.len());
        let (name, _, values) = target.remove(k);
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let edited = (name.clone(), npy(descr, fortran, &shape, &bytes));
        let rest = npz_of(target, false, &[edited]);
        let other = npz_of(if in_update { &w } else { &u }, false, &[]);
        let (wb, ub) = if in_update { (other, rest) } else { (rest, other) };
        if let Some(m) = check_npz(&wb, &ub)? {
            prop_assert!(m.contains(name.as_str()) || m.contains("layers") || m.contains("update's") || m.contains("missing"), "{m}");
        }
    }

    /// JSON updates: the export's and small ones, with bytes flipped, cut short, numbers replaced.
    #[test]
    fn mutated_json_reads_or_fails_specifically(real in any::<bool>(), (weights, update, rows) in network(), edits in edits(5)) {
        let text = if real {
            fixture("update.json")
        } else {
            json_update(&weights, &update, rows).to_string().into_bytes()
        };
        check_json(&apply(&text, &edits))?;
    }

    /// JSON updates with fields removed, retyped, set to edge values, or added.
    #[test]
    fn json_with_fields_edited_reads_or_fails_specifically((weights, update, rows) in network(), edits in json_edits(4)) {
        let doc = apply_json(&json_update(&weights, &update, rows), &edits);
        check_json(doc.to_string().as_bytes())?;
    }

    /// A tensor replaced by any JSON value: read when it still fits, else refused naming it.
    #[test]
    fn json_tensors_of_any_value_are_named_when_refused((weights, update, rows) in network(), which in any::<Index>(), in_update in any::<bool>(), v in json_value()) {
        let mut doc = json_update(&weights, &update, rows);
        let part = if in_update { "update" } else { "weights" };
        let names: Vec<String> = doc[part].as_object().unwrap().keys().cloned().collect();
        let name = &names[which.index(names.len())];
        doc[part][name] = v;
        if let Some(m) = check_json(doc.to_string().as_bytes())? {
            prop_assert!(m.contains(name.as_str()) || m.contains("layers") || m.contains("update's"), "{m}");
        }
    }
}
