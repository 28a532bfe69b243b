//! An update received from elsewhere (a real client, another framework): the network's weights
//! and the update (a gradient, or θ0 − θE for FedAvg), read from safetensors (PyTorch's
//! `state_dict` saved with the `safetensors` package), numpy archives (`npz`: `numpy.savez`, as a
//! Flower client holds its parameters) or JSON, and checked against the table's encoding before
//! any attack. PyTorch's `nn.Linear` stores W as [out, in] and computes x Wᵀ + b; leakscope holds
//! W as [in, out], so weights and their updates are transposed on reading.
mod npz;
pub mod pipeline;
pub mod recipe;
pub mod round;
mod tensor;
pub mod truth;

use tensor::{Named, transpose};

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::client::head::Head;
use crate::client::network::Params;
use crate::client::update::Update;
use crate::config::{AttackConfig, LabelMode};
use crate::error::{Error, Result};
use crate::table::{Dataset, StatedModel};

/// The format tag of a JSON update.
pub const UPDATE_FORMAT: &str = "leakscope-update/1";

/// An `nn.Embedding` table as the server sent it and its update: [rows (categories), width],
/// row-major as PyTorch stores it.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddingTable {
    /// The module's name (the tensor's, less `.weight`).
    pub name: String,
    pub rows: usize,
    pub width: usize,
    pub weight: Vec<f32>,
    pub update: Vec<f32>,
}

/// What the server holds: the network it sent and the update it got back.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceivedUpdate {
    pub params: Params,
    /// The update, its layers named as the files name them.
    pub update: Update,
    /// Weights without a bias before the Linear layers: embedding tables, which the encoding
    /// assigns to its columns (`received::pipeline`); empty for a network of Linear layers alone.
    pub embeddings: Vec<EmbeddingTable>,
    /// Rows the client computed the update on, where the file says.
    pub rows: Option<usize>,
    /// The client's labels in its order, where the file carries them (class names).
    pub labels: Option<Vec<String>>,
}

fn fail<T>(m: String) -> Result<T> {
    Err(Error::Config(m))
}

/// Natural order of layer names: "2" before "10", "fc1" before "fc2", "0" before "layers.1".
fn natural_key(name: &str) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut digits = String::new();
    for c in name.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            if !digits.is_empty() {
                out.push((std::mem::take(&mut text), digits.parse().unwrap_or(u64::MAX)));
                digits.clear();
            }
            text.push(c);
        }
    }
    out.push((
        text,
        if digits.is_empty() {
            0
        } else {
            digits.parse().unwrap_or(u64::MAX)
        },
    ));
    out
}

/// A state dict's layers: Linear ones (names, weights, biases) and the weights without a bias.
type Layers = (Vec<String>, Vec<Named>, Vec<Named>, Vec<Named>);

/// Layers from a state dict: every tensor a `<layer>.weight` [out, in] or `<layer>.bias` [out],
/// in natural order of the layer names, chaining in → out; a 2-D weight without a bias is kept
/// apart as an embedding table [categories, width] (in natural order of the names).
fn layers_of(what: &str, tensors: Vec<Named>) -> Result<Layers> {
    refuse_layers_not_linear(what, &tensors)?;
    let mut weights: BTreeMap<String, Named> = BTreeMap::new();
    let mut biases: BTreeMap<String, Named> = BTreeMap::new();
    for t in tensors {
        if let Some(layer) = t.name.strip_suffix(".weight") {
            if t.shape.len() != 2 {
                return fail(format!(
                    "{what}: {} has shape {:?}; a Linear layer's weight is [out, in]",
                    t.name, t.shape
                ));
            }
            weights.insert(layer.to_string(), t);
        } else if let Some(layer) = t.name.strip_suffix(".bias") {
            if t.shape.len() != 1 {
                return fail(format!("{what}: {} has shape {:?}; a bias is [out]", t.name, t.shape));
            }
            biases.insert(layer.to_string(), t);
        } else {
            return fail(format!(
                "{what}: tensor {:?} is neither a Linear layer's weight nor its bias; leakscope attacks fully \
                 connected ReLU networks (nn.Linear layers only, names ending in .weight and .bias)",
                t.name
            ));
        }
    }
    if weights.is_empty() {
        return fail(format!(
            "{what}: no Linear layers (tensors named <layer>.weight and <layer>.bias)"
        ));
    }
    for name in biases.keys() {
        if !weights.contains_key(name) {
            return fail(format!("{what}: {name}.bias has no {name}.weight"));
        }
    }
    let mut tables: Vec<Named> = Vec::new();
    for name in weights.keys().cloned().collect::<Vec<_>>() {
        if !biases.contains_key(&name) {
            tables.push(weights.remove(&name).unwrap());
        }
    }
    tables.sort_by_key(|t| natural_key(&t.name));
    if weights.is_empty() {
        return fail(format!(
            "{what}: no Linear layers with a bias (tensors named <layer>.weight and <layer>.bias)"
        ));
    }
    let mut names: Vec<String> = weights.keys().cloned().collect();
    names.sort_by_key(|n| natural_key(n));
    let mut ws = Vec::new();
    let mut bs = Vec::new();
    for name in &names {
        let w = weights.remove(name).unwrap();
        let b = biases.remove(name).expect("every weight left has its bias");
        if b.shape[0] != w.shape[0] {
            return fail(format!(
                "{what}: {name}.weight is {:?} ([out, in]) but {name}.bias has {} values",
                w.shape, b.shape[0]
            ));
        }
        ws.push(w);
        bs.push(b);
    }
    for pair in ws.windows(2) {
        if pair[1].shape[1] != pair[0].shape[0] {
            return fail(format!(
                "{what}: layers in name order do not chain: {} gives {} outputs but {} takes {} inputs",
                pair[0].name, pair[0].shape[0], pair[1].name, pair[1].shape[1]
            ));
        }
    }
    Ok((names, ws, bs, tables))
}

/// The layers tabular networks add, named with why they are not attacked: a state dict holding
/// a normalisation layer is refused before its tensors are read as Linear ones.
fn refuse_layers_not_linear(what: &str, tensors: &[Named]) -> Result<()> {
    let layer_of = |t: &Named| t.name.rsplit_once('.').map_or(t.name.clone(), |(l, _)| l.to_string());
    if let Some(t) = tensors.iter().find(|t| {
        [".running_mean", ".running_var", ".num_batches_tracked"]
            .iter()
            .any(|s| t.name.ends_with(s))
    }) {
        return fail(format!(
            "{what}: {} is a BatchNorm layer ({}): in training mode BatchNorm1d normalises each unit by the batch's \
             own mean and variance, so every row's gradient depends on all the others' and the per-row structure \
             the attack and its proofs read is gone; leakscope does not simulate it, and an update through it is \
             not attacked (no figure rather than a wrong one)",
            layer_of(t),
            t.name
        ));
    }
    if let Some(t) = tensors
        .iter()
        .find(|t| t.name.ends_with(".weight") && t.shape.len() == 1)
    {
        return fail(format!(
            "{what}: {} is a 1-D weight [{}], a normalisation layer's (LayerNorm, or BatchNorm1d without running \
             statistics): leakscope's client is a stack of nn.Linear layers and does not simulate normalisation, \
             so this update is not attacked",
            t.name, t.shape[0]
        ));
    }
    Ok(())
}

/// Why tables the encoding does not assign are refused.
pub(crate) fn no_embedding_stated(tables: &[EmbeddingTable]) -> String {
    let names: Vec<String> = tables
        .iter()
        .map(|t| format!("{} [{}, {}]", t.name, t.rows, t.width))
        .collect();
    format!(
        "the network has weights without a bias ({}): nn.Embedding tables, or Linear layers with bias=False, \
         which leakscope does not take; for embeddings, state in the encoding which column each embeds \
         (\"coding\": \"embedding\", docs/usage/real-updates.md)",
        names.join(", ")
    )
}

impl ReceivedUpdate {
    /// Weights and update from their tensors, checked against each other.
    fn from_tensors(
        weights: Vec<Named>,
        update: Vec<Named>,
        rows: Option<usize>,
        labels: Option<Vec<String>>,
    ) -> Result<Self> {
        let (names, ws, bs, tables) = layers_of("weights", weights)?;
        let (unames, uws, ubs, utables) = layers_of("update", update)?;
        let table_names = |t: &[Named]| t.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
        if table_names(&tables) != table_names(&utables) {
            return fail(format!(
                "the update's tensors without a bias are {:?} but the model's are {:?}",
                table_names(&utables),
                table_names(&tables)
            ));
        }
        if unames != names {
            let missing: Vec<&String> = names.iter().filter(|n| !unames.contains(n)).collect();
            let extra: Vec<&String> = unames.iter().filter(|n| !names.contains(n)).collect();
            return fail(format!(
                "the update's layers are not the model's: missing {missing:?}, not in the model {extra:?}"
            ));
        }
        for (a, b) in ws
            .iter()
            .chain(&bs)
            .chain(&tables)
            .zip(uws.iter().chain(&ubs).chain(&utables))
        {
            if a.shape != b.shape {
                return fail(format!(
                    "the update's {} is {:?} but the model's is {:?}",
                    b.name, b.shape, a.shape
                ));
            }
        }
        for t in ws
            .iter()
            .chain(&bs)
            .chain(&uws)
            .chain(&ubs)
            .chain(&tables)
            .chain(&utables)
        {
            if let Some(i) = t.values.iter().position(|v| !v.is_finite()) {
                return fail(format!("{} holds a non-finite value at element {i}", t.name));
            }
        }
        let mut sizes = vec![ws[0].shape[1]];
        sizes.extend(ws.iter().map(|w| w.shape[0]));
        let params = Params {
            sizes: sizes.clone(),
            weights: ws
                .iter()
                .map(|w| transpose(&w.values, w.shape[0], w.shape[1]))
                .collect(),
            biases: bs.iter().map(|b| b.values.clone()).collect(),
        };
        let update = Update::named(
            names,
            uws.iter()
                .map(|w| transpose(&w.values, w.shape[0], w.shape[1]))
                .collect(),
            ubs.into_iter().map(|b| b.values).collect(),
        );
        if let (Some(r), Some(l)) = (rows, &labels)
            && l.len() != r
        {
            return fail(format!("the update says {r} rows but carries {} labels", l.len()));
        }
        let embeddings = tables
            .into_iter()
            .zip(utables)
            .map(|(w, u)| EmbeddingTable {
                name: w.name.strip_suffix(".weight").unwrap_or(&w.name).to_string(),
                rows: w.shape[0],
                width: w.shape[1],
                weight: w.values,
                update: u.values,
            })
            .collect();
        Ok(ReceivedUpdate {
            params,
            update,
            embeddings,
            rows,
            labels,
        })
    }

    /// From two safetensors files: the model's `state_dict` and the update (same names and
    /// shapes). The update's metadata may say `rows` (a number) and `labels` (a JSON array of
    /// class names, in the client's order).
    pub fn from_safetensors(weights: &[u8], update: &[u8]) -> Result<ReceivedUpdate> {
        let w = read_safetensors("weights", weights)?;
        let u = read_safetensors("update", update)?;
        Self::from_tensors(w.tensors, u.tensors, u.rows, u.labels)
    }

    /// From two numpy archives (`numpy.savez`): arrays by name (`**model.state_dict()`) or by
    /// position (`arr_0`, `arr_1`, … in `state_dict` order: weight, bias, weight, …); the update
    /// may hold `rows` (an integer) and `labels` (an array of class names) beside its tensors.
    pub fn from_npz(weights: &[u8], update: &[u8]) -> Result<ReceivedUpdate> {
        Self::from_parts(npz_part("weights", weights)?, npz_part("update", update)?)
    }

    /// From the files as a client wrote them, whatever their formats: a JSON document alone
    /// (it carries the weights), or the update with the model's weights, each a safetensors
    /// file or a numpy archive (told apart by their first bytes, not their names).
    pub fn from_files(update: &[u8], weights: Option<&[u8]>) -> Result<ReceivedUpdate> {
        let kind = Format::of(update);
        match (kind, weights) {
            (Format::Json, None) => {
                let text =
                    std::str::from_utf8(update).map_err(|_| Error::Config("update: JSON that is not UTF-8".into()))?;
                Self::from_json(text)
            }
            (Format::Json, Some(_)) => fail("a JSON update carries its weights: give the JSON file alone".into()),
            (_, None) => fail(format!(
                "the update is {}, which holds the update only: give the model's state dict as well",
                kind.describe()
            )),
            (_, Some(weights)) => {
                let part = |what: &str, bytes: &[u8]| match Format::of(bytes) {
                    Format::Npz => npz_part(what, bytes),
                    Format::Safetensors => read_safetensors(what, bytes),
                    Format::Json => fail(format!(
                        "{what}: a JSON document; the model's weights go in a safetensors file or a numpy archive \
                         (or both weights and update in one leakscope-update/1 JSON)"
                    )),
                    Format::Unknown => fail(format!(
                        "{what}: neither a safetensors file, a numpy .npz archive nor a leakscope-update/1 JSON document"
                    )),
                };
                Self::from_parts(part("weights", weights)?, part("update", update)?)
            }
        }
    }

    /// Two files' tensors, positional ones named after the other file's layers (or `layer0`, …).
    fn from_parts(mut w: Part, mut u: Part) -> Result<ReceivedUpdate> {
        match (w.positional, u.positional) {
            (true, true) => {
                npz::name_positional("weights", &mut w.tensors, None)?;
                npz::name_positional("update", &mut u.tensors, None)?;
            }
            (true, false) => npz::name_positional("weights", &mut w.tensors, Some(&layer_names(&u.tensors)))?,
            (false, true) => npz::name_positional("update", &mut u.tensors, Some(&layer_names(&w.tensors)))?,
            (false, false) => {}
        }
        Self::from_tensors(w.tensors, u.tensors, u.rows, u.labels)
    }

    /// From one JSON document: {"format": "leakscope-update/1", "weights": {name: nested array},
    /// "update": {name: nested array}, "rows"?: n, "labels"?: [class, …]}, arrays as PyTorch's
    /// `tensor.tolist()` gives them ([out][in] for a weight).
    pub fn from_json(text: &str) -> Result<ReceivedUpdate> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            format: String,
            weights: BTreeMap<String, serde_json::Value>,
            update: BTreeMap<String, serde_json::Value>,
            rows: Option<usize>,
            labels: Option<Vec<String>>,
        }
        let file: File = serde_json::from_str(text).map_err(|e| Error::Config(format!("update JSON: {e}")))?;
        if file.format != UPDATE_FORMAT {
            return fail(format!(
                "update JSON: format {:?} is not {UPDATE_FORMAT:?}",
                file.format
            ));
        }
        let tensors = |what: &str, map: BTreeMap<String, serde_json::Value>| -> Result<Vec<Named>> {
            map.into_iter()
                .map(|(name, v)| {
                    let (shape, values) = flatten(&v).map_err(|m| Error::Config(format!("{what}: {name}: {m}")))?;
                    Ok(Named { name, shape, values })
                })
                .collect()
        };
        Self::from_tensors(
            tensors("weights", file.weights)?,
            tensors("update", file.update)?,
            file.rows,
            file.labels,
        )
    }
}

/// One file's tensors and what it says about the client.
struct Part {
    tensors: Vec<Named>,
    /// Tensors named by position only (numpy's `arr_0`, …), in `state_dict` order.
    positional: bool,
    rows: Option<usize>,
    labels: Option<Vec<String>>,
}

/// The formats an update comes in, told apart by their first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Safetensors,
    Npz,
    Json,
    Unknown,
}

impl Format {
    fn of(bytes: &[u8]) -> Format {
        if npz::looks_like_npz(bytes) {
            return Format::Npz;
        }
        // safetensors: an 8-byte little-endian header length, then the JSON header.
        if bytes.len() > 8 && bytes[8] == b'{' {
            let n = u64::from_le_bytes(bytes[..8].try_into().unwrap());
            if n <= (bytes.len() - 8) as u64 {
                return Format::Safetensors;
            }
        }
        let text = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
        match text.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'{') => Format::Json,
            _ => Format::Unknown,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Format::Safetensors => "a safetensors file",
            Format::Npz => "a numpy archive",
            Format::Json => "a JSON document",
            Format::Unknown => "in no format leakscope reads",
        }
    }
}

/// The layers a named file holds, in the order `layers_of` chains them.
fn layer_names(tensors: &[Named]) -> Vec<String> {
    let mut names: Vec<String> = tensors
        .iter()
        .filter_map(|t| t.name.strip_suffix(".weight").map(str::to_string))
        .collect();
    names.sort_by_key(|n| natural_key(n));
    names
}

fn npz_part(what: &str, bytes: &[u8]) -> Result<Part> {
    let a = npz::read(what, bytes)?;
    Ok(Part {
        tensors: a.tensors,
        positional: a.positional,
        rows: a.rows,
        labels: a.labels,
    })
}

/// A safetensors file's tensors (float32 or float64) and its metadata's `rows` and `labels`.
fn read_safetensors(what: &str, bytes: &[u8]) -> Result<Part> {
    let (_, meta) = safetensors::SafeTensors::read_metadata(bytes)
        .map_err(|e| Error::Config(format!("{what}: not a safetensors file ({e})")))?;
    let file = safetensors::SafeTensors::deserialize(bytes)
        .map_err(|e| Error::Config(format!("{what}: not a safetensors file ({e})")))?;
    let mut tensors = Vec::new();
    for (name, view) in file.tensors() {
        let data = view.data();
        let values: Vec<f32> = match view.dtype() {
            safetensors::Dtype::F32 => data
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
            safetensors::Dtype::F64 => data
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap()) as f32)
                .collect(),
            other => {
                return fail(format!(
                    "{what}: {name} is {other:?}; save float32 or float64 tensors (model.float())"
                ));
            }
        };
        tensors.push(Named {
            name,
            shape: view.shape().to_vec(),
            values,
        });
    }
    let meta = meta.metadata().clone().unwrap_or_default();
    let rows = match meta.get("rows") {
        Some(r) => Some(
            r.trim()
                .parse::<usize>()
                .map_err(|_| Error::Config(format!("{what}: metadata rows = {r:?} is not a whole number")))?,
        ),
        None => None,
    };
    let labels = match meta.get("labels") {
        Some(l) => Some(serde_json::from_str::<Vec<String>>(l).map_err(|e| {
            Error::Config(format!(
                "{what}: metadata labels must be a JSON array of class names ({e})"
            ))
        })?),
        None => None,
    };
    Ok(Part {
        tensors,
        positional: false,
        rows,
        labels,
    })
}

/// A nested JSON array of numbers → (shape, row-major values); ragged arrays are refused.
fn flatten(v: &serde_json::Value) -> std::result::Result<(Vec<usize>, Vec<f32>), String> {
    match v {
        serde_json::Value::Number(n) => Ok((Vec::new(), vec![n.as_f64().unwrap_or(f64::NAN) as f32])),
        serde_json::Value::Array(items) => {
            let mut shape = None;
            let mut values = Vec::new();
            for item in items {
                let (s, vs) = flatten(item)?;
                match &shape {
                    None => shape = Some(s),
                    Some(prev) if *prev != s => return Err(format!("a ragged array ({prev:?} beside {s:?})")),
                    _ => {}
                }
                values.extend(vs);
            }
            let mut full = vec![items.len()];
            full.extend(shape.unwrap_or_default());
            Ok((full, values))
        }
        other => Err(format!("expected numbers, found {other}")),
    }
}

impl ReceivedUpdate {
    /// The attack's options for this update, from a caller's `options` (attack, protocol, members,
    /// steps): the model as `stated` (by the caller, or beside the encoding: `StatedModel::merged`),
    /// its hidden widths and head checked against the weights' and its activation taken (the
    /// weights cannot show it), the label of `dataset` (the encoding), the rows the caller gives (`rows`) or
    /// the file says, and the labels as the caller asks (`labels`) or else the file's where it
    /// carries them and restored from the update where not.
    pub fn attack_options(
        &self,
        dataset: &Dataset,
        mut options: crate::options::RunOptions,
        rows: Option<usize>,
        labels: Option<LabelMode>,
        stated: &StatedModel,
    ) -> Result<crate::options::RunOptions> {
        options.batch_size = match (rows, self.rows, &self.labels) {
            (Some(r), Some(f), _) if r != f => {
                return fail(format!(
                    "the batch size is given as {r} but the update says it was computed on {f} rows"
                ));
            }
            (Some(r), _, _) | (None, Some(r), _) => r,
            (None, None, Some(l)) => l.len(),
            (None, None, None) => {
                return fail("the update does not say how many rows it was computed on: give the batch size".into());
            }
        };
        let sizes = &self.params.sizes;
        let found = &sizes[1..sizes.len() - 1];
        if let Some(stated) = stated.hidden.as_deref()
            && stated != found
        {
            let says = |h: &[usize]| match h {
                [] => "no hidden layer (logistic regression)".to_string(),
                h => format!("hidden layers {h:?}"),
            };
            return fail(format!(
                "the model is stated with {} but the weights have {}",
                says(stated),
                says(found)
            ));
        }
        options.hidden = found.to_vec();
        options.head = Self::head_of(*sizes.last().unwrap_or(&0), dataset, stated.head)?;
        if let Some(a) = stated.activation {
            options.activation = a;
        }
        options.label = dataset.label.clone();
        options.task = dataset.task();
        // A regression's labels are reconstructed with the rows: nothing to restore.
        options.labels = labels.unwrap_or(if self.labels.is_some() || dataset.target.is_some() {
            LabelMode::Known
        } else {
            LabelMode::Restored
        });
        Ok(options)
    }

    /// The head behind a last layer of `outputs` outputs: one per class is softmax's, one for a
    /// two-class label sigmoid's, a regression's one linear output; a stated head must be the one
    /// the weights have.
    fn head_of(outputs: usize, dataset: &Dataset, stated: Option<Head>) -> Result<Head> {
        if dataset.target.is_some() {
            let head = dataset.task().head(stated)?;
            if outputs != 1 {
                return fail(format!(
                    "the encoding's label {:?} is a regression's (one output under the squared error) but the \
                     weights' last layer has {outputs} outputs",
                    dataset.label
                ));
            }
            return Ok(head);
        }
        let classes = dataset.classes.len();
        let found = match outputs {
            1 if classes == 2 => Head::Sigmoid,
            _ => Head::Softmax,
        };
        match stated {
            Some(h) if h.outputs(classes) != outputs => fail(format!(
                "the model is stated with a {} head ({} for a {classes}-class label) but the weights' last \
                 layer has {outputs} output{}",
                h.name(),
                match h.outputs(classes) {
                    1 => "1 output".to_string(),
                    k => format!("{k} outputs"),
                },
                if outputs == 1 { "" } else { "s" }
            )),
            Some(h) => Ok(h),
            None => Ok(found),
        }
    }

    /// Check the update against the encoding and the attack's settings: the network's widths, the
    /// rows, and that nothing describes a simulated client.
    pub fn check_against(&self, dataset: &Dataset, config: &AttackConfig) -> Result<()> {
        if !self.embeddings.is_empty() {
            return fail(no_embedding_stated(&self.embeddings));
        }
        let sizes = &self.params.sizes;
        let (inputs, outputs) = (sizes[0], *sizes.last().unwrap_or(&0));
        if inputs != dataset.d() || outputs != config.head.outputs(dataset.classes.len()) {
            return fail(format!(
                "the network takes {inputs} inputs and gives {outputs} outputs, but the encoding makes rows {} wide \
                 with {} classes ({}), {} outputs under a {} head: is it the encoding the client used?",
                dataset.d(),
                dataset.classes.len(),
                dataset.classes.join(", "),
                config.head.outputs(dataset.classes.len()),
                config.head.name()
            ));
        }
        if config.layer_sizes(dataset) != *sizes {
            return fail(format!(
                "the received network's layers are {:?} but the attack's settings say hidden {:?}",
                sizes, config.hidden
            ));
        }
        if let Some(r) = self.rows
            && r != config.rows()
        {
            return fail(format!(
                "the update was computed on {r} rows but the attack is set for {}",
                config.rows()
            ));
        }
        if config.clients > 1 || config.training_epochs > 0 || config.defence.is_some() {
            return fail(
                "clients, training epochs and defences describe a simulated client; a received update is \
                 attacked as it came"
                    .into(),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
