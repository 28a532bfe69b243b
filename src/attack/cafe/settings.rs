//! CAFE's own settings (`AttackSpec::Cafe`): plain data.
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Most rows and rounds CAFE simulates (its normal equations are rows × rows).
pub const MAX_ROWS: usize = 4000;
pub const MAX_ROUNDS: usize = 100_000;

/// CAFE (Jin et al.) on vertically split rows: `rows` rows over `rounds` rounds of `batch_size`
/// indices each.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct CafeSettings {
    /// Parties holding column groups of the rows.
    pub parties: usize,
    /// Rows the parties share (the attack recovers all of them).
    pub rows: usize,
    /// Rounds the server observes, each on `batch_size` indices it chooses.
    pub rounds: usize,
    /// CAFE's countermeasure: each party sends fake gradients, the closest of this many draws.
    pub fake_gradients: Option<usize>,
}

impl Default for CafeSettings {
    /// The paper's setting: 4 parties, 800 rows; 2000 rounds (each row sampled 100 times at K = 40).
    fn default() -> Self {
        CafeSettings {
            parties: 4,
            rows: 800,
            rounds: 2000,
            fake_gradients: None,
        }
    }
}
