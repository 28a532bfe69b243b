//! Updates as numpy writes them: `numpy.savez(f, **state_dict)` (arrays by name) or
//! `numpy.savez(f, *arrays)` (`arr_0`, `arr_1`, … in `state_dict` order, as a Flower client holds
//! its parameters), stored or deflated (`savez_compressed`). Each member is read by npyz; zip opens
//! the archive. A member's declared shape must match the bytes it holds before anything is
//! allocated for it, so an edited header cannot ask for more memory than the file brings.
use std::io::{Cursor, Read};

use super::tensor::{Named, transpose};
use crate::error::{Error, Result};

fn fail<T>(m: String) -> Result<T> {
    Err(Error::Config(m))
}

/// What one archive holds: tensors (named, or positional in `state_dict` order) and the
/// optional `rows` (an integer) and `labels` (strings) a client may save beside them.
pub(super) struct Archive {
    pub tensors: Vec<Named>,
    /// True when the arrays are `arr_0`, `arr_1`, …: names come from their order.
    pub positional: bool,
    pub rows: Option<usize>,
    pub labels: Option<Vec<String>>,
}

/// Largest member leakscope inflates (4 GiB): beyond any network it attacks.
const MAX_MEMBER_BYTES: u64 = 4 << 30;

/// The zip signature numpy's archives start with.
pub(super) fn looks_like_npz(bytes: &[u8]) -> bool {
    bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06")
}

pub(super) fn read(what: &str, bytes: &[u8]) -> Result<Archive> {
    let bad = |m: String| Error::Config(format!("{what}: {m}"));
    let mut zip =
        zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| bad(format!("not a numpy .npz archive ({e})")))?;
    let mut tensors = Vec::new();
    let (mut rows, mut labels) = (None, None);
    for i in 0..zip.len() {
        let mut member = zip
            .by_index(i)
            .map_err(|e| bad(format!("member {i} of the archive cannot be read ({e})")))?;
        let file = member
            .name()
            .map_err(|e| bad(format!("member {i} has an unreadable name ({e})")))?
            .to_string();
        let Some(name) = npyz::npz::array_name_from_file_name(&file).map(str::to_string) else {
            return Err(bad(format!(
                "{file:?} is not a .npy array; an update archive holds only what numpy.savez writes"
            )));
        };
        let mut data = Vec::new();
        (&mut member)
            .take(MAX_MEMBER_BYTES + 1)
            .read_to_end(&mut data)
            .map_err(|e| bad(format!("{name}: cannot be inflated ({e})")))?;
        if data.len() as u64 > MAX_MEMBER_BYTES {
            return Err(bad(format!("{name}: larger than {} GiB", MAX_MEMBER_BYTES >> 30)));
        }
        let array = Array::parse(&data).map_err(|m| bad(format!("{name}: {m}")))?;
        match name.as_str() {
            "rows" => rows = Some(array.whole_number().map_err(|m| bad(format!("rows: {m}")))?),
            "labels" => labels = Some(array.strings().map_err(|m| bad(format!("labels: {m}")))?),
            _ => {
                let (shape, values) = array.floats().map_err(|m| bad(format!("{name}: {m}")))?;
                tensors.push(Named { name, shape, values });
            }
        }
    }
    if tensors.is_empty() {
        return fail(format!("{what}: the archive holds no arrays"));
    }
    let positional = tensors.iter().all(|t| position(&t.name).is_some());
    if positional {
        tensors.sort_by_key(|t| position(&t.name));
        if let Some(gap) = tensors.iter().enumerate().find(|(i, t)| position(&t.name) != Some(*i)) {
            return fail(format!(
                "{what}: positional arrays must be arr_0, arr_1, … without a gap; arr_{} is missing",
                gap.0
            ));
        }
    } else if let Some(t) = tensors.iter().find(|t| position(&t.name).is_some()) {
        return fail(format!(
            "{what}: {} is positional but other arrays are named: save the state dict by name \
             (numpy.savez(f, **state_dict)) or all by position (numpy.savez(f, *arrays))",
            t.name
        ));
    }
    Ok(Archive {
        tensors,
        positional,
        rows,
        labels,
    })
}

/// `arr_7` → 7: numpy's name for the eighth positional argument of `savez`.
fn position(name: &str) -> Option<usize> {
    let digits = name.strip_prefix("arr_")?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// Positional arrays in `state_dict` order (weight, bias, weight, bias, …) named as the layers
/// `names` (the other file's, or `layer0`, `layer1`, …).
pub(super) fn name_positional(what: &str, tensors: &mut [Named], names: Option<&[String]>) -> Result<()> {
    if !tensors.len().is_multiple_of(2) {
        return fail(format!(
            "{what}: {} positional arrays; a network of Linear layers has a weight and a bias per layer, \
             in state_dict order",
            tensors.len()
        ));
    }
    let layers = tensors.len() / 2;
    if let Some(names) = names
        && names.len() != layers
    {
        return fail(format!(
            "{what}: {} positional arrays make {layers} layers, but the other file has {} ({})",
            tensors.len(),
            names.len(),
            names.join(", ")
        ));
    }
    for (i, t) in tensors.iter_mut().enumerate() {
        let layer = names.map_or_else(|| format!("layer{}", i / 2), |n| n[i / 2].clone());
        let part = if i % 2 == 0 { "weight" } else { "bias" };
        t.name = format!("{layer}.{part}");
    }
    Ok(())
}

/// One `.npy` member, its header checked against its bytes.
struct Array<'a> {
    header: npyz::NpyHeader,
    data: &'a [u8],
    len: usize,
}

impl<'a> Array<'a> {
    fn parse(bytes: &'a [u8]) -> std::result::Result<Self, String> {
        let mut cursor = Cursor::new(bytes);
        let header = npyz::NpyHeader::from_reader(&mut cursor).map_err(|e| format!("not a .npy array ({e})"))?;
        if header.uses_pickled_array() {
            return Err("holds Python objects (pickled); save numeric arrays".into());
        }
        let len = header
            .shape()
            .iter()
            .try_fold(1u64, |n, &d| n.checked_mul(d))
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| format!("shape {:?} is too large", header.shape()))?;
        let item = header
            .dtype()
            .num_bytes()
            .ok_or_else(|| format!("dtype {} has no fixed size", header.dtype().descr()))?;
        let data = &bytes[cursor.position() as usize..];
        if len.checked_mul(item) != Some(data.len()) {
            return Err(format!(
                "shape {:?} of {} needs {} bytes but the array holds {}",
                header.shape(),
                header.dtype().descr(),
                len.saturating_mul(item),
                data.len()
            ));
        }
        Ok(Array { header, data, len })
    }

    fn file(&self) -> npyz::NpyFile<&'a [u8]> {
        npyz::NpyFile::with_header(self.header.clone(), self.data)
    }

    fn type_char(&self) -> Option<npyz::TypeChar> {
        match self.header.dtype() {
            npyz::DType::Plain(t) => Some(t.type_char()),
            _ => None,
        }
    }

    /// Float32 or float64 values, row-major whatever order the file stores.
    fn floats(&self) -> std::result::Result<(Vec<usize>, Vec<f32>), String> {
        let size = match self.header.dtype() {
            npyz::DType::Plain(t) if t.type_char() == npyz::TypeChar::Float => t.size_field(),
            other => {
                return Err(format!(
                    "is {}; save float32 or float64 arrays (tensor.float().numpy())",
                    other.descr()
                ));
            }
        };
        let values: Vec<f32> = match size {
            4 => self.file().into_vec::<f32>(),
            8 => self
                .file()
                .into_vec::<f64>()
                .map(|v| v.into_iter().map(|x| x as f32).collect()),
            _ => {
                return Err(format!(
                    "is {}; save float32 or float64 arrays",
                    self.header.dtype().descr()
                ));
            }
        }
        .map_err(|e| e.to_string())?;
        debug_assert_eq!(values.len(), self.len);
        let shape: Vec<usize> = self.header.shape().iter().map(|&d| d as usize).collect();
        let values = match (self.header.order(), shape.as_slice()) {
            (npyz::Order::Fortran, [rows, cols]) => transpose(&values, *cols, *rows),
            (npyz::Order::Fortran, s) if s.len() > 2 => {
                return Err(format!("a {}-dimensional array in Fortran order", s.len()));
            }
            _ => values,
        };
        Ok((shape, values))
    }

    fn whole_number(&self) -> std::result::Result<usize, String> {
        if self.len != 1 {
            return Err(format!(
                "must be one number, not an array of shape {:?}",
                self.header.shape()
            ));
        }
        let e = |e: std::io::Error| e.to_string();
        let size = match self.header.dtype() {
            npyz::DType::Plain(t) => t.size_field(),
            _ => 0,
        };
        let value: i128 = match (self.type_char(), size) {
            (Some(npyz::TypeChar::Int), 1) => self.file().into_vec::<i8>().map_err(e)?[0].into(),
            (Some(npyz::TypeChar::Int), 2) => self.file().into_vec::<i16>().map_err(e)?[0].into(),
            (Some(npyz::TypeChar::Int), 4) => self.file().into_vec::<i32>().map_err(e)?[0].into(),
            (Some(npyz::TypeChar::Int), 8) => self.file().into_vec::<i64>().map_err(e)?[0].into(),
            (Some(npyz::TypeChar::Uint), 1) => self.file().into_vec::<u8>().map_err(e)?[0].into(),
            (Some(npyz::TypeChar::Uint), 2) => self.file().into_vec::<u16>().map_err(e)?[0].into(),
            (Some(npyz::TypeChar::Uint), 4) => self.file().into_vec::<u32>().map_err(e)?[0].into(),
            (Some(npyz::TypeChar::Uint), 8) => self.file().into_vec::<u64>().map_err(e)?[0].into(),
            _ => return Err(format!("is {}, not a whole number", self.header.dtype().descr())),
        };
        usize::try_from(value).map_err(|_| format!("{value} is not a number of rows"))
    }

    fn strings(&self) -> std::result::Result<Vec<String>, String> {
        if self.header.shape().len() != 1 {
            return Err(format!(
                "must be a list of class names, not shape {:?}",
                self.header.shape()
            ));
        }
        match self.type_char() {
            Some(npyz::TypeChar::UnicodeStr) => self.file().into_vec::<String>().map_err(|e| e.to_string()),
            _ => Err(format!(
                "is {}, not strings (numpy.array(labels) of str)",
                self.header.dtype().descr()
            )),
        }
    }
}
