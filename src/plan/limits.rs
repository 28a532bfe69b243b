//! The engine's limits: what one run may hold in memory, and what a page checks before handing
//! input over. Pure numbers; the attacks' registry applies them (`attack::registry`).
use serde::{Deserialize, Serialize};
use ts_rs::TS;

const GIB: f64 = (1u64 << 30) as f64;

/// What the attack may hold at once: a wasm32 tab has a 4 GiB address space; natively, stay well
/// inside a workstation's memory rather than swap.
#[cfg(target_arch = "wasm32")]
pub const MAX_WORKING_SET_BYTES: u64 = 2 << 30;
#[cfg(not(target_arch = "wasm32"))]
pub const MAX_WORKING_SET_BYTES: u64 = 16 << 30;

/// What an attack's memory depends on.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkingSet {
    /// Layer widths [d, hidden..., classes].
    pub sizes: Vec<usize>,
    /// Rows behind the update.
    pub rows: usize,
    /// Members inverted (0: none).
    pub members: usize,
    /// Dummy rows per member.
    pub rows_per_member: usize,
    /// Local steps a member's loss unrolls (1 for FedSGD).
    pub local_steps: usize,
    /// Bytes FedSGD's pursuit among a crowded span's rows holds at most
    /// (`assess::span_pursuit::working_bytes`; 0 where it does not run).
    pub pursuit_bytes: u64,
    /// Bytes the span search keeps of its sums at most (`enumerate::SUM_CACHE_BYTES`; 0 where it
    /// does not run).
    pub span_search_bytes: u64,
    /// Whether the report checks which rows a FedSGD classifier's update shows
    /// (`assess::seen_rows`): the rows' gradients summed, the received update, and one row's
    /// gradient twice over, in f64.
    pub shows_rows: bool,
}

impl WorkingSet {
    /// Bytes the attack holds at its peak, in f32: the client's network and its simulated gradient
    /// on the batch (every attack), and for the inverting attacks what the CPU kernel allocates
    /// (`attack::accel::cpu::Workspace` per member: the relaxed rows and their companions, every
    /// layer's activations and their derivatives, a parameter-gradient copy; z and Adam's two
    /// moments; the final relaxation of the whole ensemble). Saturating: absurd settings estimate
    /// as u64::MAX rather than wrap.
    pub fn bytes(&self) -> u64 {
        let sizes: Vec<u64> = self.sizes.iter().map(|&s| s as u64).collect();
        let d = sizes[0];
        let b = self.rows as u64;
        let members = self.members as u64;
        let sum = |f: &dyn Fn(u64, u64) -> u64| sizes.windows(2).fold(0u64, |acc, w| acc.saturating_add(f(w[0], w[1])));
        let params = sum(&|i, o| i.saturating_mul(o).saturating_add(o));
        let outs = sum(&|_, o| o);
        let ins = sum(&|i, _| i);
        // The client, simulated: the parameters on the host and on a device, its gradient and the
        // observed update, the accelerators' copies of both; one pass over the batch.
        let client = params
            .saturating_mul(8)
            .saturating_add(b.saturating_mul(ins.saturating_add(outs.saturating_mul(3))));
        // Per inverted row: x, probs, sig, z̄ (4d) + z, m, v (3d) + the final relaxation's x, probs,
        // sig (3d); per layer its output, δ and d̄ (3·out) and h̄ (in). Per member a gradient copy,
        // and on FedAvg every local step's parameters and tape (rows × (in + 2·out)).
        let rows = self.rows_per_member as u64;
        let steps = self.local_steps as u64;
        let per_row = d
            .saturating_mul(10)
            .saturating_add(outs.saturating_mul(3))
            .saturating_add(ins);
        let trajectory = if steps > 1 {
            steps.saturating_mul(params.saturating_add(b.saturating_mul(ins.saturating_add(outs.saturating_mul(2)))))
        } else {
            0
        };
        let inversion = members.saturating_mul(
            rows.saturating_mul(per_row)
                .saturating_add(params)
                .saturating_add(trajectory),
        );
        // Four f64 vectors of the parameters' size: eight f32 units each.
        let shown = if self.shows_rows { params.saturating_mul(8) } else { 0 };
        client
            .saturating_add(inversion)
            .saturating_add(shown)
            .saturating_mul(4)
            .saturating_add(self.pursuit_bytes)
            .saturating_add(self.span_search_bytes)
    }

    /// Refuse a working set past the engine's limit, saying what it holds and what to change.
    pub fn check(&self) -> Result<(), String> {
        let need = self.bytes();
        if need <= MAX_WORKING_SET_BYTES {
            return Ok(());
        }
        let sizes = self.sizes.iter().map(usize::to_string).collect::<Vec<_>>().join("-");
        let what = if self.members > 0 {
            format!(
                "an ensemble of {} × {} rows on a {sizes} network",
                self.members, self.rows_per_member
            )
        } else {
            format!("simulating a batch of {} rows on a {sizes} network", self.rows)
        };
        Err(format!(
            "{what} needs about {:.1} GiB of memory for the attack; this engine allows {:.0} GiB: \
             use fewer members, a smaller batch or smaller hidden layers",
            need as f64 / GIB,
            MAX_WORKING_SET_BYTES as f64 / GIB
        ))
    }
}

/// The engine's limits, for a page to check input before handing it over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Largest CSV the engine reads, in bytes.
    pub max_csv_bytes: usize,
    /// Most workers one ensemble is split over.
    pub max_workers: usize,
    /// Most classes a label has without a warning (more looks like a wrong column).
    pub max_label_classes: usize,
}

impl Limits {
    pub fn of_this_engine() -> Limits {
        Limits {
            max_csv_bytes: crate::table::MAX_CSV_BYTES,
            max_workers: crate::plan::MAX_WORKERS,
            max_label_classes: crate::table::inference::MAX_LABEL_CLASSES,
        }
    }
}
