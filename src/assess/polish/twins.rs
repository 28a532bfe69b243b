//! Rows twice. The ensemble can fall into one mode for several rows alike: rows of the
//! reconstruction that share every category, where the batch's rows differ in a few (Adult
//! [32, 32], B = 16, trained 5 epochs, seed 9: three free rows each "19, Local-gov,
//! Some-college, capital-loss 1721", the batch's three rows young clerks of Private / 11th,
//! Private / HS-grad and Local-gov / Some-college). The polish's moves, one row at a time, stop
//! there: each twin's fit of its continuous cells takes on the others' residual, and no single
//! replacement leaves less (the rows fitted the update to 1 − cos 3·10⁻⁸ with 10 cells wrong).
//!
//! Where the first layer's span holds the batch (its rank certain and the batch's) among at most
//! `SPAN_PER_ROW` rows per row, the category patterns of its rows that no row of the
//! reconstruction has are the batch's rows the twins stand in for (or one of the span's few
//! others). Each twin in turn takes the open pattern, of the `TRIED` whose gradient leaves least
//! as they are, that leaves least once the twins' continuous cells are fitted again jointly;
//! only where that leaves less than the twins fitted as they are.
use super::{Pool, Sum, misfit, norm2};
use crate::attack::inversion::setup::Setup;

/// The most rows of the span per row of the batch for its open patterns to stand for the
/// batch's: a crowded span's open patterns are mostly the span's own (Adult [100, 100], B = 32,
/// trained 5 epochs, seed 0: 497 rows for 32, a twin moved to one of them, 98.2 → 97.3 %).
const SPAN_PER_ROW: usize = 2;
/// Open patterns per twin fitted jointly with the other twins before they are judged.
const TRIED: usize = 8;

impl Setup<'_> {
    /// The rows of the first layer's span (encoded, with the columns their categories
    /// determine) whose patterns the twins may take, where the attack searched the span and it
    /// holds the batch as the module says; empty elsewhere. The polish searches no span of its
    /// own: where nothing before it asked for one, the search alone made HI [100, 100] trained
    /// 20 epochs 21 s an attack against 14 (a build beside it on the same cores).
    pub(super) fn span_patterns(&self) -> Vec<Vec<f64>> {
        let main = self.span_rows.get().and_then(|(main, _)| main.as_ref());
        main.filter(|s| s.certain && s.rank == s.batch && s.rows.len() <= SPAN_PER_ROW * s.batch)
            .map(|s| s.encoded.iter().map(|x| self.with_determined(x.clone())).collect())
            .unwrap_or_default()
    }

    /// The categories of encoded row `x`, feature by feature.
    fn pattern(&self, x: &[f64]) -> Vec<usize> {
        let features = self.dataset.features.iter().enumerate();
        features
            .filter(|(_, f)| f.is_categorical())
            .map(|(f, _)| self.category_of(x, f))
            .collect()
    }

    /// The twins among the rows of `free` given the span's open patterns, as the module says.
    /// How many twins took one.
    pub(super) fn untwin(&self, sum: &mut Sum, free: &[usize], label_of: &[usize], pool: &Pool) -> usize {
        if pool.span.is_empty() {
            return 0;
        }
        let patterns: Vec<Vec<usize>> = sum.x.iter().map(|x| self.pattern(x)).collect();
        let twins: Vec<usize> = free
            .iter()
            .copied()
            .filter(|&i| (0..patterns.len()).any(|j| j != i && patterns[j] == patterns[i]))
            .collect();
        if twins.is_empty() {
            return 0;
        }
        // The span's patterns no row has, each once.
        let (mut open, mut taken): (Vec<&Vec<f64>>, Vec<Vec<usize>>) = (Vec::new(), patterns);
        for x in &pool.span {
            let pattern = self.pattern(x);
            if !taken.contains(&pattern) {
                taken.push(pattern);
                open.push(x);
            }
        }
        if open.is_empty() {
            return 0;
        }
        let columns = self.moved_columns();
        // An open pattern with twin `i`'s continuous cells, and its gradient.
        let given = |sum: &Sum, i: usize, k: usize| {
            let mut x = open[k].clone();
            columns.iter().for_each(|&j| x[j] = sum.x[i][j]);
            let g = self.gradient_at(&x, label_of[i]);
            (x, g)
        };
        // The twins as they are, fitted jointly: the bar a pattern must clear.
        self.fit_continuous(sum, &twins, label_of);
        let (mut changed, mut given_away) = (0, vec![false; open.len()]);
        for &i in &twins {
            let own = sum.own(i);
            // The `TRIED` open patterns nearest what this twin is to explain, picked without a
            // sort (a sort of its own weighed in the page's module).
            let near: Vec<f64> = (0..open.len()).map(|k| misfit(&own, &given(sum, i, k).1)).collect();
            let mut tried: Vec<usize> = Vec::new();
            while let Some(k) = (0..open.len())
                .filter(|&k| tried.len() < TRIED && !tried.contains(&k) && !given_away[k])
                .min_by(|&a, &b| near[a].total_cmp(&near[b]))
            {
                tried.push(k);
            }
            let mut best: Option<(f64, Sum, usize)> = None;
            for k in tried {
                let (x, g) = given(sum, i, k);
                let mut trial = sum.clone();
                trial.replace(i, x, g);
                self.fit_continuous(&mut trial, &twins, label_of);
                let left = norm2(&trial.r);
                if left < best.as_ref().map_or(norm2(&sum.r), |b| b.0) {
                    best = Some((left, trial, k));
                }
            }
            if let Some((_, trial, k)) = best {
                *sum = trial;
                given_away[k] = true;
                changed += 1;
            }
        }
        changed
    }
}
