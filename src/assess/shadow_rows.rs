//! The shadow client's rows (`assess::fallback`). The shadow client stands in for the client so
//! that the server learns which of the ensemble's cells beat a guess; it does so faithfully only
//! where its rows are like the client's. Rows drawn column by column from the marginals are rows
//! a trained network is less sure of than real ones: on Adult's [32, 32] network trained 1-20
//! epochs their update was 2.2-3.6 times the client's, the attack did better on them than on the
//! client's rows, and the fallback kept cells that scored below guessing (E = 1 seed 9: the
//! shadow's ensemble 73 % right, the client's kept cells 52 %). So where the table holds rows
//! outside the client's batch, the shadow's rows are such rows, each of the label the server
//! gives its slot: a server holding a sample of the population, as it holds its marginals. Where
//! it does not (a regression, whose labels the server does not know; an update received and
//! scored against the client's own rows, which are the batch), they are drawn from the marginals.
use std::collections::HashSet;

use rand::{Rng, SeedableRng, rngs::StdRng};

use crate::attack::baselines::random_rows;
use crate::attack::inversion::setup::Setup;
use crate::table::{Dataset, Value};

impl Setup<'_> {
    /// The shadow client's rows, drawn by `seed`: rows of the table outside the batch where it
    /// holds them (`population_rows`), else drawn from `marginals`; and whether they are the
    /// table's.
    pub(crate) fn shadow_rows_seeded(&self, marginals: &Dataset, seed: u64) -> (Vec<Vec<Value>>, bool) {
        match self.population_rows(marginals, seed) {
            Some(rows) => (rows, true),
            None => (random_rows(marginals, self.config.rows(), seed), false),
        }
    }

    /// A row of the table outside the client's batch for each slot, of the slot's label, none
    /// twice; None where `marginals` is not this attack's table, the table is a regression's, the
    /// batch's rows in it are not known, or some label has too few rows outside the batch.
    fn population_rows(&self, marginals: &Dataset, seed: u64) -> Option<Vec<Vec<Value>>> {
        let truth = self.scenario.truth.as_ref()?;
        if !std::ptr::eq(marginals, self.dataset) || marginals.target.is_some() || truth.indices.is_empty() {
            return None;
        }
        let batch: HashSet<usize> = truth.indices.iter().copied().collect();
        let mut by_class: Vec<Vec<usize>> = vec![Vec::new(); marginals.classes.len()];
        for (i, &c) in marginals.labels.iter().enumerate() {
            if !batch.contains(&i) && c < by_class.len() {
                by_class[c].push(i);
            }
        }
        let mut rng = StdRng::seed_from_u64(seed);
        let mut rows = Vec::with_capacity(self.scenario.labels.len());
        for &label in &self.scenario.labels {
            // A partial Fisher-Yates draw: each row taken is moved out of the class's pool.
            let pool = by_class.get_mut(label)?;
            if pool.is_empty() {
                return None;
            }
            let k = rng.random_range(0..pool.len());
            let i = pool.swap_remove(k);
            rows.push(marginals.rows[i].clone());
        }
        Some(rows)
    }
}

#[cfg(test)]
mod tests {
    use crate::config::AttackConfig;
    use crate::seed::seed_for;

    /// The shadow's rows are the table's, none of the batch's, each of its slot's label; drawn
    /// for a table that is not the attack's (a received update's own rows), from its marginals.
    #[test]
    fn the_shadows_rows_are_the_tables_own_outside_the_batch_with_their_slots_labels() {
        let config = AttackConfig {
            batch_size: 16,
            hidden: vec![32, 32],
            seed: 4,
            ..Default::default()
        };
        crate::assess::with_sample_setup(config, |setup| {
            let data = setup.dataset;
            let batch = setup.scenario.truth.as_ref().unwrap().indices.clone();
            let labels = setup.scenario.labels.clone();
            assert!(labels.contains(&0) && labels.contains(&1), "{labels:?}");
            let (rows, of_table) = setup.shadow_rows_seeded(data, seed_for(4, 14));
            assert!(of_table);
            assert_eq!(rows.len(), 16);
            let mut taken = Vec::new();
            for (row, &label) in rows.iter().zip(&labels) {
                let i = (0..data.n())
                    .find(|&i| {
                        &data.rows[i] == row && data.labels[i] == label && !batch.contains(&i) && !taken.contains(&i)
                    })
                    .expect("a row of the table outside the batch, of its slot's label");
                taken.push(i);
            }
            // The same seed draws the same rows.
            assert_eq!(setup.shadow_rows_seeded(data, seed_for(4, 14)).0, rows);
            // Another table (a copy: not the attack's own) is drawn from its marginals.
            let other = data.clone();
            let (drawn, of_table) = setup.shadow_rows_seeded(&other, seed_for(4, 14));
            assert!(!of_table);
            assert_eq!(
                drawn,
                crate::attack::baselines::random_rows(&other, 16, crate::seed::seed_for(4, 14))
            );
        });
    }
}
