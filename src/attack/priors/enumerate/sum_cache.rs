//! The second half's sums of a span search, each formed once and kept, where they fit: a
//! search pairs each with many of the first half's (on Adult at B = 128, 1.3 million pairs of
//! 6,720 sums, forming them per pair was a third of the attack's work after its steps, for a
//! search refused in the end). The same sums, added in the same order.
use nalgebra::DVector;

/// Numbers a search keeps of the second half's sums at most...
pub const SUM_CACHE: usize = 1 << 20;
/// ...in bytes (8 MiB), which the attack's working set counts (`plan::limits::WorkingSet`).
pub const SUM_CACHE_BYTES: u64 = (SUM_CACHE * std::mem::size_of::<f64>()) as u64;

/// The second half's sums by combination, each kept once formed, where they fit `keep` numbers.
pub struct SumCache {
    d: usize,
    sums: Vec<f64>,
    formed: Vec<bool>,
}

impl SumCache {
    pub fn new(combinations: usize, d: usize, keep: usize) -> SumCache {
        let fits = combinations * d <= keep;
        SumCache {
            d,
            sums: vec![0.0; if fits { combinations * d } else { 0 }],
            formed: vec![false; if fits { combinations } else { 0 }],
        }
    }

    /// Combination `i`'s sum into `into`: the one kept, or `form`'s (kept where it fits).
    pub fn sum_of(&mut self, i: usize, into: &mut DVector<f64>, form: impl FnOnce(&mut DVector<f64>)) {
        let span = i * self.d..(i + 1) * self.d;
        match self.formed.get_mut(i) {
            Some(true) => into.as_mut_slice().copy_from_slice(&self.sums[span]),
            Some(formed) => {
                form(into);
                *formed = true;
                self.sums[span].copy_from_slice(into.as_slice());
            }
            None => form(into),
        }
    }
}
