//! The memory estimate that guards every attack (`AttackConfig::working_set_bytes`, refused above
//! the engine's limit) against what an attack really allocates, counted by a global allocator:
//! never below the peak, and not so far above it that sound settings get refused.
mod common;

use common::adult;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use leakscope::table::Dataset;
use leakscope::{AttackConfig, AttackSpec, Runtime, run_attack};

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call goes straight to the system allocator; the counters only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                let now = CURRENT.fetch_add(new_size - layout.size(), Ordering::Relaxed) + new_size - layout.size();
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Peak bytes allocated while one attack runs, above what was held before it.
fn peak_of(data: &Dataset, config: &AttackConfig) -> usize {
    let rt = Runtime::cpu();
    // Warm up what lives for the whole process (rayon's pool, burn's device state).
    pollster::block_on(run_attack(
        &rt,
        data,
        &AttackConfig {
            iterations: 1,
            batch_size: 2,
            attack: common::tableak(2),
            ..Default::default()
        },
        &mut |_| true,
    ))
    .unwrap();
    let before = CURRENT.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    pollster::block_on(run_attack(&rt, data, config, &mut |_| true)).unwrap();
    PEAK.load(Ordering::Relaxed) - before
}

#[test]
fn the_memory_estimate_bounds_what_an_attack_allocates() {
    let data = adult();
    let cases = [
        AttackConfig {
            batch_size: 32,
            attack: common::tableak(30),
            ..Default::default()
        },
        AttackConfig {
            batch_size: 128,
            attack: common::tableak(40),
            hidden: vec![300, 200],
            ..Default::default()
        },
        AttackConfig {
            batch_size: 8,
            attack: common::tableak(200),
            ..Default::default()
        },
        AttackConfig {
            attack: AttackSpec::Cosine,
            batch_size: 256,
            hidden: vec![1000, 1000],
            ..Default::default()
        },
    ];
    for config in cases {
        let config = AttackConfig {
            iterations: 3,
            ..config
        };
        let peak = peak_of(&data, &config) as f64;
        let estimate = config.working_set_bytes(&data) as f64;
        eprintln!(
            "{} B={} N={} hidden {:?}: peak {:.1} MiB, estimate {:.1} MiB ({:.2}×)",
            config.kind(),
            config.batch_size,
            config.members(),
            config.hidden,
            peak / 1048576.0,
            estimate / 1048576.0,
            estimate / peak
        );
        assert!(estimate >= peak, "the estimate {estimate} is below the peak {peak}");
        assert!(
            estimate <= 2.5 * peak,
            "the estimate {estimate} is far above the peak {peak}"
        );
    }
}
