//! Independent pieces of work spread over the cores where the build has threads (rayon,
//! natively; one after another in wasm, whose page splits work over its workers instead). Every
//! helper returns what one thread would, in the same order: the work is pure per item, and what
//! depends on earlier items is the caller's, done after, in order.

/// `f` of every item, in order.
#[cfg(feature = "rayon")]
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync + Send) -> Vec<R> {
    use rayon::prelude::*;
    items.par_iter().map(f).collect()
}

/// `f` of every item, in order.
#[cfg(not(feature = "rayon"))]
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync + Send) -> Vec<R> {
    items.iter().map(f).collect()
}

/// What a walk over items does after one (`walk_ahead`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// On to the next item; `Changed` where the state the work reads changed, so that work done
    /// ahead on the state before is done again.
    Same,
    Changed,
    Stop,
}

/// A loop `for item in items { let r = work(item, state); if visit(r, state) == Stop { break } }`
/// run with the work of the next `runtime::cpu_threads()` items (rayon's threads) done ahead, in parallel, on the state as it
/// stands; after a visit that changes the state (`Next::Changed`) the work done ahead of it is
/// done again. The visits, their order and what they see are the loop's on any number of threads
/// (one thread is that loop); the price is the work redone after each change.
pub fn walk_ahead<T: Sync, S: Sync, R: Send>(
    items: &[T],
    state: &mut S,
    work: impl Fn(&T, &S) -> R + Sync + Send,
    mut visit: impl FnMut(R, &mut S) -> Next,
) {
    let ahead = crate::runtime::cpu_threads().max(1);
    let mut at = 0;
    while at < items.len() {
        let chunk = &items[at..(at + ahead).min(items.len())];
        let done = {
            let state: &S = state;
            map(chunk, |item| work(item, state))
        };
        for r in done {
            at += 1;
            match visit(r, state) {
                Next::Same => {}
                Next::Changed => break,
                Next::Stop => return,
            }
        }
    }
}

#[cfg(all(test, feature = "rayon"))]
mod tests {
    use super::*;

    /// A walk whose work reads the state (the sum so far) and whose visits change it now and
    /// then: on 1 and on 4 threads, the loop's visits exactly.
    #[test]
    fn a_walk_ahead_visits_as_the_plain_loop_does() {
        let items: Vec<u64> = (0..200).map(|i| (i * 7919) % 101).collect();
        let looped = {
            let mut sum = 0u64;
            let mut seen = Vec::new();
            for &i in &items {
                let r = i * 3 + sum % 13;
                seen.push(r);
                if r % 5 == 0 {
                    sum += r;
                }
                if sum > 4000 {
                    break;
                }
            }
            seen
        };
        for threads in [1, 4] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let walked = pool.install(|| {
                let mut seen = Vec::new();
                let mut sum = 0u64;
                walk_ahead(
                    &items,
                    &mut sum,
                    |&i, sum| i * 3 + sum % 13,
                    |r, sum| {
                        seen.push(r);
                        let changed = r % 5 == 0;
                        if changed {
                            *sum += r;
                        }
                        match (*sum > 4000, changed) {
                            (true, _) => Next::Stop,
                            (false, true) => Next::Changed,
                            (false, false) => Next::Same,
                        }
                    },
                );
                seen
            });
            assert_eq!(walked, looped, "{threads} threads");
        }
    }
}
