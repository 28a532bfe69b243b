//! A tensor as a file holds it, shared by the readers of every format.

/// One named tensor as read: its shape as stored and its values, row-major.
pub(super) struct Named {
    pub name: String,
    pub shape: Vec<usize>,
    pub values: Vec<f32>,
}

/// [out, in] row-major → [in, out] row-major.
pub(super) fn transpose(values: &[f32], out: usize, inp: usize) -> Vec<f32> {
    let mut t = vec![0f32; values.len()];
    for o in 0..out {
        for i in 0..inp {
            t[i * out + o] = values[o * inp + i];
        }
    }
    t
}
