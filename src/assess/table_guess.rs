//! What a server holding the table's other rows guesses without the update: rows of the table
//! outside the client's batch, chosen as a set to be like a batch of the slots' labels.
//!
//! The scoring matches the guessed rows to the batch's one to one (`assess::matching`), so the
//! best guess is not B draws of the table (each row's cells together, about 66 % on full Adult at
//! B = 32) nor B copies of the likeliest row (about 55 %), but a set that covers the population
//! as a batch of it falls: typical rows, spread like the table. The server can find such a set
//! with what it holds: it simulates batches of the slots' labels from its rows, and swaps rows of
//! a starting draw in and out while the set's matched agreement with the simulated batches rises.
//! On full Adult, B = 32, 60 batches (`scripts/table_guesses.py`, the same search), such a set
//! scored 69.8 % against the table's rows drawn whole (65.7 %) and the marginals' draw (61.4 %),
//! German Credit 64.5 % (62.4, 60.2), with nothing from the update. It is the report's
//! `table_baseline` and, where the table is held and the guess beats the marginals' draw on
//! nearly every batch the server simulates (`GuessWeighed`), what rows that fall back whole take
//! (`assess::imputed::Guess`): an attack whose every cell falls back scores it exactly. Elsewhere
//! they take the draw, and such an attack scores guessing exactly.
pub(crate) mod typical;

pub(crate) use typical::TableGuess;
pub use typical::{GuessWeighed, MOST_BELOW, rows_at, typical_set, weigh_against_draw};

use super::imputed::Guess;
use crate::attack::baselines::{random_rows, rows_outside};
use crate::attack::inversion::setup::Setup;
use crate::seed::seed_for;
use crate::table::{Dataset, Value};

impl Setup<'_> {
    /// What a server holding the table's other rows guesses without the update
    /// (`assess::table_guess`): its rows outside the batch, chosen as a set for the slots' labels
    /// (a regression's, for every slot alike). None where the batch's rows in the table are not
    /// known (a received update, a shadow client) or too few rows are left outside it. Made once
    /// per setup. It is the report's `table_baseline` whether or not cells fall back to it.
    pub(crate) fn table_guess(&self) -> Option<&[Vec<Value>]> {
        self.made_table_guess().map(|g| &g.rows[..])
    }

    /// How the table's guess weighed against the marginals' draw on the server's own batches.
    pub(crate) fn table_guess_weighed(&self) -> Option<GuessWeighed> {
        self.made_table_guess().and_then(|g| g.weighed)
    }

    /// The rows that fall back whole take the table's guess only where the server's batches show
    /// it better than the marginals' draw (or where it was not weighed, past the work
    /// bound); else they take the draw, the report's guessing.
    pub(crate) fn fallback_table_guess(&self) -> Option<&[Vec<Value>]> {
        self.made_table_guess()
            .filter(|g| g.weighed.is_none_or(|w| w.taken))
            .map(|g| &g.rows[..])
    }

    fn made_table_guess(&self) -> Option<&TableGuess> {
        self.table_guess.get_or_init(|| self.make_table_guess()).as_ref()
    }

    fn make_table_guess(&self) -> Option<TableGuess> {
        let truth = self.scenario.truth.as_ref()?;
        let rows = self.config.rows();
        if truth.indices.is_empty() || truth.rows.len() != rows {
            return None;
        }
        let labels = &self.scenario.labels[..];
        let labels = (self.dataset.target.is_none() && labels.len() == rows).then_some(labels);
        let outside = rows_outside(self.dataset, &truth.indices);
        let set = typical_set(
            &self.rules,
            self.dataset,
            &outside,
            labels,
            rows,
            seed_for(self.config.seed, 50),
        )?;
        let weighed = weigh_against_draw(
            &self.rules,
            self.dataset,
            &outside,
            labels,
            &set,
            &self.random_guess(),
            seed_for(self.config.seed, 51),
        );
        Some(TableGuess {
            rows: rows_at(self.dataset, &set),
            weighed,
        })
    }

    /// The guess the shadow client's cells fall back to, made as the client's is: the marginals'
    /// draw, and where its rows (`truth`) are the table's own (`of_table`), the table's guess from
    /// its rows outside the client's batch and the shadow's.
    pub(crate) fn shadow_guess(&self, dataset: &Dataset, truth: &[Vec<Value>], of_table: bool) -> Guess {
        let seed = seed_for(self.config.seed, 15);
        let table = || {
            let batch = self.scenario.truth.as_ref()?;
            let outside: Vec<usize> = rows_outside(dataset, &batch.indices)
                .into_iter()
                .filter(|&i| !truth.contains(&dataset.rows[i]))
                .collect();
            let labels = Some(&self.scenario.labels[..]).filter(|l| l.len() == truth.len());
            typical_set(&self.rules, dataset, &outside, labels, truth.len(), seed).map(|set| rows_at(dataset, &set))
        };
        // The shadow's whole rows take the table's guess where the client's would.
        let of_table = of_table && self.fallback_table_guess().is_some();
        Guess {
            draw: random_rows(dataset, self.config.rows(), seed),
            table: of_table.then(table).flatten(),
        }
    }
}
