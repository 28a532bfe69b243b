//! What the fallback chose and what it gave, as the report states it (`assess::fallback`).
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// What the calibration chose and what it gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct FallbackSummary {
    /// Accuracy on the shadow batch of the ensemble alone, of the guess alone (the table's where
    /// the server holds its rows, else the marginals' draw), and of the mix chosen (the server
    /// knows the shadow batch's truth, not the client's).
    pub shadow_ensemble: f64,
    pub shadow_prior: f64,
    pub shadow_chosen: f64,
    /// A categorical cell whose entropy is above this falls back to the guess (null: none does).
    pub categorical_above: Option<f64>,
    /// The same for continuous cells (their entropy is on another scale).
    pub continuous_above: Option<f64>,
    /// The width of the table's prior on the ensemble's continuous cells, in the members'
    /// spreads, where the shadow client showed it gains (`assess::table_prior`; null: none).
    pub prior_spread: Option<f64>,
    /// Cells of the client's batch taken from the guess, of all its cells.
    pub prior_cells: usize,
    pub cells: usize,
    /// Rows whose every cell came from the guess.
    pub prior_rows: usize,
    /// On a simulated client, the share of right cells among those from the ensemble and among
    /// those from the guess (null where there were none or no truth).
    pub ensemble_cell_accuracy: Option<f64>,
    pub prior_cell_accuracy: Option<f64>,
    /// How far the update is from explained (1 − cos between the update the rows would send and
    /// the one received) by the reconstruction, and by the guess's rows; a reshuffling
    /// client's in the orders its update chose for the rows (null where none were chosen, or
    /// where a defence randomises the update).
    pub update_fit: Option<f64>,
    pub prior_fit: Option<f64>,
    /// The same for the shadow client's reconstruction of its own update: how well the attack
    /// explained the batch its thresholds were chosen on (null for a reshuffling client: not
    /// weighed against its fit, `Calibration::unlike_shadow`).
    pub shadow_update_fit: Option<f64>,
    /// The L2 norms of the client's update and of the shadow client's: on a trained network the
    /// shadow's rows, drawn column by column, are ones it is less sure of than the client's, and
    /// its update is larger (Adult [32, 32] trained 1-20 epochs, five runs: 2.2-3.6 times;
    /// untrained, 1.2 times).
    pub update_norm: f64,
    pub shadow_update_norm: f64,
    /// The reconstruction explains the update no better than the guess does: the
    /// attack ran out of strength, and every cell of the rows neither proved nor held by the
    /// update's span fell back (`assess::rows::fall_back`).
    pub exhausted: bool,
    /// The shadow client's update held every row of its batch, so no ensemble row was tested
    /// there, and the client's holds some: every cell of the rows the ensemble gave beside those
    /// fell back (`Calibration::untested`).
    pub untested: bool,
    /// The client's reconstruction explains its update far worse than the shadow's explained its
    /// own, so the shadow's thresholds do not speak for it: every cell the update does not hold
    /// fell back (`Calibration::unlike_shadow`).
    #[serde(default)]
    pub unlike_shadow: bool,
    /// The client's reconstruction explains its update far better than the shadow's explained
    /// its own, and fits it: the shadow's batch was harder, its thresholds do not speak for
    /// it, and every cell the ensemble gives is kept (`Calibration::shadow_harder`).
    #[serde(default)]
    pub shadow_harder: bool,
    /// The shadow client's rows were rows of the table outside the batch, each of its slot's
    /// label (`assess::shadow_rows`); false: drawn from the marginals.
    #[serde(default)]
    pub shadow_of_table: bool,
    /// An Adam client's rows read by category: their gain in right cells over the marginals' guess
    /// on shadow clients, less two standard errors (`assess::category_rows`; they are put in only
    /// above 0; null where the reading does not hold).
    #[serde(default)]
    pub read_gain: Option<f64>,
    /// The cells that fell back in rows that kept others were imputed from the table's rows most
    /// like them on the cells kept, not drawn from the marginals (`assess::imputed`): the shadow
    /// client scored better so.
    #[serde(default)]
    pub imputed: bool,
    /// Where it imputed, on a simulated client: the accuracy the same imputation gives around
    /// kept cells drawn from the marginals instead of read from the update (`imputed::without_update`,
    /// the mean of 8 draws). What the server's table alone gives it: the gain over guessing up to
    /// this figure is the table's, not the update's.
    #[serde(default)]
    pub imputed_without_update: Option<f64>,
    /// The members of the shadow client's ensemble: as many as the client's pooled, so that its
    /// thresholds are read off the same pooling (0: a report from before this was stated).
    #[serde(default)]
    pub shadow_members: usize,
    /// The shadow batches the thresholds were weighed on: a reshuffling client's several, each
    /// with rows and orders of its own (`fallback::draws`; 0: a report from before this was
    /// stated).
    #[serde(default)]
    pub shadow_batches: usize,
    /// Fewer batches ran than the most: they stopped at one whose reconstruction explained its
    /// update no better than the client's, past which neither rule can hold.
    #[serde(default)]
    pub shadow_batches_stopped: bool,
    /// Where there were several: the worst fit among their reconstructions (1 − cos, in the
    /// orders each update chose), the mean gain in right cells of the thresholds' mix over the
    /// whole guess, and that gain less two standard errors of the batches' spread.
    #[serde(default)]
    pub worst_shadow_fit: Option<f64>,
    #[serde(default)]
    pub gain_across_shadows: Option<f64>,
    #[serde(default)]
    pub gain_bound_across_shadows: Option<f64>,
    /// The client's reconstruction explains its update far worse than the worst shadow batch
    /// did its own: every cell the update does not hold fell back (`Calibration::unlike_every_shadow`).
    #[serde(default)]
    pub unlike_every_shadow: bool,
    /// The thresholds' gain over the whole guess was not sure across the shadow batches: every
    /// cell the update does not hold fell back (`Calibration::unsure_across_shadows`).
    #[serde(default)]
    pub unsure_across_shadows: bool,
    /// Where the server holds the table: its guess weighed against the marginals' draw on
    /// batches it simulated from its rows (`table_guess::weigh_against_draw`). Rows that fell
    /// back whole took the table's guess only where it beat the draw on nearly every batch
    /// (`GuessWeighed::taken`), else the draw; null where it was not weighed.
    #[serde(default)]
    pub table_guess: Option<crate::assess::table_guess::GuessWeighed>,
    /// The shadow's rows its update held only as consistent scored surely below the marginals'
    /// draw there, so the client's consistent rows were not held: they fell back as the
    /// ensemble's rows do, and are reported as the ensemble's (`Calibration::consistent_unheld`).
    #[serde(default)]
    pub consistent_unheld: bool,
    /// The marginals' draw in the place of the rows this update held only as consistent
    /// reproduced it to its float32 rounding: the update does not tell them from a guess, so
    /// they fell back as the ensemble's rows do (`Calibration::consistent_like_draw`).
    #[serde(default)]
    pub consistent_like_draw: bool,
}

/// Share of right cells among those the mask selects (`want` true) or leaves (`want` false),
/// `correct` being per true row and `assignment` its reconstructed row.
pub fn accuracy_of(correct: &[Vec<bool>], assignment: &[usize], mask: &[Vec<bool>], want: bool) -> Option<f64> {
    let (mut right, mut all) = (0usize, 0usize);
    for (row, &j) in correct.iter().zip(assignment) {
        for (&c, &m) in row.iter().zip(&mask[j]) {
            if m == want {
                all += 1;
                right += c as usize;
            }
        }
    }
    (all > 0).then(|| right as f64 / all as f64)
}
