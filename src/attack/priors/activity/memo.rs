//! Null spaces read once per solver. `ActivitySolver::null_at` is an SVD of R's rows at some
//! units, and the solver asks for the same units again and again: the subsets' draws land on one
//! row's zeros over and over (at B = 32 on Adult, 4,800–40,000 reads of 25–91 distinct sets per
//! solve), and every candidate is certified again at each level. The memo keeps what each list of
//! units gave. Exact: the same units in the same order give the same matrix and the same SVD.
use std::sync::{Mutex, MutexGuard};

use rustc_hash::FxHashMap;

/// Units kept over all the memo's keys (4 bytes each): a few MiB at most, after which it reads
/// without keeping.
const MOST_UNITS: usize = 1 << 20;

/// Values by a list of units and a flag (what else the read asked for).
pub(super) struct Memo<V> {
    inner: Mutex<Inner<V>>,
}

struct Inner<V> {
    map: FxHashMap<(Vec<u32>, bool), V>,
    /// Units held in `map`'s keys.
    units: usize,
}

impl<V: Clone> Memo<V> {
    pub(super) fn new() -> Self {
        Memo {
            inner: Mutex::new(Inner {
                map: FxHashMap::default(),
                units: 0,
            }),
        }
    }

    /// What `read` gives for `units` and `flag`: kept from the first read where there is room.
    /// The lock is not held while reading, so solvers on several threads read in parallel (two
    /// may read the same key at once; both get the same value).
    pub(super) fn get_or(&self, units: &[usize], flag: bool, read: impl FnOnce() -> V) -> V {
        let key = (units.iter().map(|&u| u as u32).collect::<Vec<u32>>(), flag);
        if let Some(v) = self.lock().map.get(&key) {
            return v.clone();
        }
        let v = read();
        let mut inner = self.lock();
        if inner.units + key.0.len() <= MOST_UNITS {
            inner.units += key.0.len();
            inner.map.insert(key, v.clone());
        }
        v
    }

    fn lock(&self) -> MutexGuard<'_, Inner<V>> {
        // A read that panicked left the map whole (it inserts only after reading).
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn reads_each_key_once_and_tells_order_and_flag_apart() {
        let memo = Memo::new();
        let reads = Cell::new(0);
        let read = |v: u32| {
            reads.set(reads.get() + 1);
            v
        };
        assert_eq!(memo.get_or(&[1, 2, 3], false, || read(7)), 7);
        assert_eq!(memo.get_or(&[1, 2, 3], false, || read(8)), 7);
        assert_eq!(reads.get(), 1);
        // Another order, another flag: other keys.
        assert_eq!(memo.get_or(&[3, 2, 1], false, || read(9)), 9);
        assert_eq!(memo.get_or(&[1, 2, 3], true, || read(10)), 10);
        assert_eq!(reads.get(), 3);
    }

    #[test]
    fn past_its_budget_it_reads_without_keeping() {
        let memo = Memo::new();
        let big: Vec<usize> = (0..MOST_UNITS).collect();
        assert_eq!(memo.get_or(&big, false, || 1), 1);
        assert_eq!(
            memo.get_or(&big, false, || 2),
            1,
            "the first key fits exactly and is kept"
        );
        assert_eq!(memo.get_or(&[0], false, || 3), 3);
        assert_eq!(memo.get_or(&[0], false, || 4), 4, "no room left: read again");
    }
}
