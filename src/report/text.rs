//! A report as text for a terminal: what ran, how well, how sure, and the rows.
use std::fmt::Write;

use super::{Provenance, Report, confidence_mark, fmt_epsilon, pct};
use crate::assess::fallback::CONTROL_DRAWS;
use crate::config::{LabelMode, Protocol};
use crate::table::ColumnKind;

/// A readable report: summary, per-feature accuracy, entropy buckets, and up to `max_rows` rows.
pub fn render_text(r: &Report, max_rows: usize) -> String {
    let mut s = String::new();
    setting(r, &mut s);
    accuracy(r, &mut s);
    rows(r, max_rows, &mut s);
    for w in &r.warnings {
        let _ = writeln!(s, "note: {w}");
    }
    s
}

/// What ran: the attack, the client, the defence and what it guarantees.
fn setting(r: &Report, s: &mut String) {
    let c = &r.config;
    let name = c.attacker().title();
    let labels = match c.labels {
        _ if r.regression.is_some() => "a regression's label, reconstructed with each row".to_string(),
        LabelMode::Known => "known labels".to_string(),
        LabelMode::Restored => format!("restored labels, {:.0}% right", 100.0 * r.label_accuracy),
    };
    let steps = if c.attacker().inversion().is_none() {
        String::new()
    } else {
        format!(", {} steps at lr {}", c.iterations, c.optimiser().lr)
    };
    let batch = match &c.protocol {
        Protocol::Fedsgd if c.clients > 1 => format!(
            "the average of {} clients' batches of {} rows ({} rows in all)",
            c.clients,
            c.batch_size,
            c.rows()
        ),
        Protocol::Fedsgd => format!("a batch of {} rows", c.batch_size),
        Protocol::Fedavg(t) => format!("a FedAvg client's {} rows ({})", c.batch_size, t.describe()),
    };
    let _ = writeln!(s, "{name} on {batch}{steps}, {labels}, seed {}", c.seed);
    if let Some((l, fits)) = r
        .row_details()
        .and_then(|d| Some((d.epoch_prior?, &d.epoch_prior_fits)))
    {
        let how = if fits.len() > 1 {
            format!(
                ", chosen among {} by how well each reconstruction fits the update",
                fits.len()
            )
        } else {
            String::new()
        };
        let _ = writeln!(s, "epoch prior λ = {l}{how}");
    }
    let _ = writeln!(s, "backend {}, {:.2} s", r.backend.label, r.seconds);
    if c.training_epochs > 0 {
        let _ = writeln!(
            s,
            "the network was trained {} epoch{} on the table first ({} right on it)",
            c.training_epochs,
            if c.training_epochs == 1 { "" } else { "s" },
            pct(r.model_accuracy)
        );
    }
    if let Some(d) = &c.defence {
        let mut parts = Vec::new();
        if let Some(k) = d.fake_gradients {
            parts.push(format!("fake gradients (best of {k} draws)"));
        }
        if let Some(clip) = d.clip {
            parts.push(format!("clipping to norm {clip}"));
        }
        if d.noise > 0.0 {
            parts.push(format!(
                "Gaussian noise σ = {}{}",
                d.noise,
                if d.clip.is_some() { "·C" } else { "" }
            ));
        }
        let _ = writeln!(s, "defence: {}", parts.join(", "));
    }
    if let Some(p) = &r.privacy {
        let _ = match p.epsilon {
            Some(e) => writeln!(
                s,
                "privacy of one release: (ε = {}, δ = {:e}){}; releases over training compose",
                fmt_epsilon(e),
                p.delta,
                if p.clients > 1 {
                    format!(", inside the average of {} clients", p.clients)
                } else {
                    String::new()
                }
            ),
            None => writeln!(
                s,
                "privacy: no (ε, δ) guarantee: the update is not clipped, so its sensitivity is unbounded"
            ),
        };
    }
}

/// The labels the attack reconstructed: a regression's against the truth, or a classifier's read
/// row by row off the update.
fn labels(r: &Report, s: &mut String) {
    if let Some(g) = &r.regression {
        let _ = writeln!(
            s,
            "label {:?}: {} within ±{:.3} (mean error {:.3}; drawn from the table: {}, mean error {:.3}){}",
            g.label,
            pct(Some(g.within_tolerance)),
            g.tolerance,
            g.mean_absolute_error,
            pct(Some(g.random_within_tolerance)),
            g.random_mean_absolute_error,
            match g.read_off_update {
                _ if r.attack == crate::config::AttackKind::Random => "; the guess draws them from the table",
                true => "; each row's read off the update, which the rows explain exactly",
                false => "; estimated from the update with the reconstructed rows, not proved",
            }
        );
        if let (Some(update), Some(prior)) = (g.shadow_update_within_tolerance, g.shadow_prior_within_tolerance) {
            let _ = writeln!(
                s,
                "  on a shadow client the update's labels scored {} and the table's likeliest value {}: {}",
                pct(Some(update)),
                pct(Some(prior)),
                match g.prior_labels {
                    0 => "every label is the update's".to_string(),
                    n => format!("{n} rows not proved take the likeliest value"),
                }
            );
        }
    } else if r.rows.iter().all(|row| row.label.is_some()) && !r.rows.is_empty() {
        let right = match r.config.labels {
            LabelMode::Restored => format!(" ({} right)", pct(Some(r.label_accuracy))),
            LabelMode::Known => String::new(),
        };
        let _ = writeln!(
            s,
            "labels: each row's read off the update, which the rows explain exactly{right}"
        );
    }
}

/// Where the attack answered early, why it could.
fn answered_early(r: &Report, s: &mut String) {
    if let Some(steps) = r.row_details().and_then(|d| d.answered_after) {
        // Rows near a batch row, or held by rows that explain the update to its rounding
        // (consistent), settle the attack as proved ones do.
        let explained = (r.row_details().and_then(|d| d.chosen.as_ref()))
            .is_some_and(|c| c.fit_after <= crate::assess::update_choice::AT_ROUNDING);
        let settled = match (
            r.provenance.iter().any(|g| g.provenance != Provenance::Proved),
            explained,
        ) {
            (false, _) => "proved",
            (true, false) => "proved or consistent with the update (each such row says why it is not proved)",
            (true, true) => {
                "proved or held by rows that explain the update to its float32 rounding (consistent with it, not proved)"
            }
        };
        let _ = writeln!(
            s,
            "every row was {settled} after {steps} steps: the attack answered then, without its other {}",
            r.config.iterations.saturating_sub(steps)
        );
    }
}

/// Why rows that fell back whole took the marginals' draw where the server holds the table: its
/// guess did not beat the draw on nearly every batch it simulated (`GuessWeighed::taken`).
fn table_guess_not_taken(f: &crate::assess::fallback::FallbackSummary, s: &mut String) {
    if let Some(w) = f.table_guess.filter(|w| f.shadow_of_table && !w.taken) {
        let _ = writeln!(
            s,
            "the table's guess was not taken: on {} batches the server simulated from its rows it scored below \
             the marginals' draw on {} (more than one in twenty; {:+.1} points on the mean), so rows that fell \
             back whole took the draw, the guessing this report is set beside",
            w.batches,
            w.below,
            100.0 * w.gain
        );
    }
}

/// What fell back to the table's guess or its marginals, and why: the shadow client's choice,
/// and where the reconstruction explains the update no better than the guess, that the attack ran
/// out of strength.
fn fallback_lines(f: &crate::assess::fallback::FallbackSummary, s: &mut String) {
    // Where the server holds the table's rows, cells fall back to its guess from them
    // (`assess::table_guess`) where its own batches show that guess better than the marginals'
    // draw, else to the draw.
    let to_table = f.shadow_of_table && f.table_guess.is_none_or(|w| w.taken);
    let (to, guess, rows) = match to_table {
        true => (
            "the table's guess (rows of the table outside this batch, chosen without the update) where a \
             whole row falls back, else to the marginals' draw",
            "the table's guess",
            "the table's guess",
        ),
        false => (
            "the table's marginals",
            "the marginals' guess",
            "rows drawn from the marginals",
        ),
    };
    let _ = writeln!(
        s,
        "fell back to {to}: {} of {} cells ({} whole rows), as a shadow client the server \
         simulated chose (attacked as this one was{}; its rows {}, its update's norm {:.3} against this one's {:.3}; \
         there the ensemble alone scored {}, {guess} {}, the mix {}, and a gain is kept only where it is \
         sure); here the ensemble's cells are {} right, the fallen-back ones {}",
        f.prior_cells,
        f.cells,
        f.prior_rows,
        match f.shadow_members {
            0 => String::new(),
            1 => ", one member".to_string(),
            n => format!(", {n} members"),
        },
        match f.shadow_of_table {
            true => "the table's own outside this batch, each of the label the server gave its slot",
            false => "drawn from the marginals",
        },
        f.shadow_update_norm,
        f.update_norm,
        pct(Some(f.shadow_ensemble)),
        pct(Some(f.shadow_prior)),
        pct(Some(f.shadow_chosen)),
        pct(f.ensemble_cell_accuracy),
        pct(f.prior_cell_accuracy)
    );
    if let Some(k) = f.prior_spread {
        let _ = writeln!(
            s,
            "the ensemble's continuous cells were read with the table's own values as their prior (each moved \
             to the value the table makes likeliest within {k} of the members' spread), which the shadow client \
             showed to gain"
        );
    }
    table_guess_not_taken(f, s);
    if f.imputed {
        let _ = writeln!(
            s,
            "the cells that fell back in rows that kept others were imputed from the table's rows most like \
             them on the cells kept, not left to the guess, which the shadow client showed to gain"
        );
    }
    if let Some(w) = f.imputed_without_update {
        let _ = writeln!(
            s,
            "the same imputation around kept cells drawn from the marginals, with nothing from the update, \
             scores {} of these rows' cells (the mean of {CONTROL_DRAWS} draws): up to that figure, the gain \
             over guessing is the table's, not the update's",
            pct(Some(w))
        );
    }
    held_lines(s, f, guess);
    if let (true, false, Some(recon), Some(shadow)) = (f.unlike_shadow, f.exhausted, f.update_fit, f.shadow_update_fit)
    {
        let _ = writeln!(
            s,
            "the shadow client's batch was easier than this one: its reconstruction explained its update to \
             1 − cos {shadow:.3}, this one explains this update only to {recon:.3}, so the shadow's thresholds do \
             not speak for it and every cell of the rows the update does not hold is {guess}"
        );
    }
    shadow_batch_lines(s, f, guess);
    if let (true, Some(recon), Some(shadow)) = (f.shadow_harder, f.update_fit, f.shadow_update_fit) {
        let _ = writeln!(
            s,
            "the shadow client's batch was harder than this one: its reconstruction explained its update only to \
             1 − cos {shadow:.1e}, this one explains this update to {recon:.1e}, so the shadow's thresholds do not \
             speak for it and every cell the ensemble gives is kept"
        );
    }
    if let (Some(recon), Some(prior)) = (f.update_fit, f.prior_fit) {
        // An Adam client's rows read by category take the categorical cells of rows that fell back.
        let read = match f.read_gain.is_some_and(|g| g > 0.0) {
            true => ", but for the categories of the rows read by the units they reach",
            false => "",
        };
        let _ = match f.exhausted {
            true => writeln!(
                s,
                "the attack ran out of strength, not necessarily the client's rows their exposure: its \
                 reconstruction explains the update no better than {rows} (1 − cos {recon:.3} against \
                 {prior:.3}), so every cell of the rows the update's span does not hold is {guess}{read}"
            ),
            false if f.prior_cells > 0 => writeln!(
                s,
                "where cells fell back, the attack, not necessarily the client, ran out of strength; the \
                 reconstruction explains the update to 1 − cos {recon:.3} ({rows}: {prior:.3})"
            ),
            false => Ok(()),
        };
    }
}

/// What the shadow client said of the rows the update holds: none of the ensemble's tested
/// (`Calibration::untested`), or its consistent rows below `guess` (`consistent_unheld`); and
/// the marginals' draw reproducing the update in the place of the client's consistent rows
/// (`consistent_like_draw`).
fn held_lines(s: &mut String, f: &crate::assess::fallback::FallbackSummary, guess: &str) {
    if f.untested && !f.exhausted && f.prior_cells > 0 {
        let _ = writeln!(
            s,
            "the shadow client's update held every row of its batch, so no row the ensemble gave was tested \
             there: every cell of the rows this update does not hold is {guess}"
        );
    }
    if f.consistent_unheld {
        let _ = writeln!(
            s,
            "the rows the shadow client's update held only as consistent scored surely below {guess} there, so \
             this update's consistent rows were not held either: they fell back as the ensemble's rows do"
        );
    }
    if f.consistent_like_draw {
        let _ = writeln!(
            s,
            "the marginals' draw in the place of the rows this update held only as consistent reproduces it to \
             its float32 rounding: the update does not tell them from a guess, so they fell back as the \
             ensemble's rows do"
        );
    }
}

/// A reshuffling client's shadow batches (`assess::fallback::draws`): what they said together,
/// and which of their rules sent the rows the update does not hold back to `guess`.
fn shadow_batch_lines(s: &mut String, f: &crate::assess::fallback::FallbackSummary, guess: &str) {
    if let (Some(gain), Some(bound)) = (f.gain_across_shadows, f.gain_bound_across_shadows) {
        let batches = match f.shadow_batches {
            1 => "1 shadow batch".to_string(),
            n => format!("{n} shadow batches"),
        };
        let worst = f
            .worst_shadow_fit
            .map_or(String::new(), |w| format!(", the worst fit among them 1 − cos {w:.3}"));
        // Fewer than all: they stopped at one that explained its update no better than this one.
        let stopped = match f.shadow_batches_stopped {
            true => "; they stopped at one whose reconstruction explained its update no better than this one's",
            false => "",
        };
        let _ = writeln!(
            s,
            "this client reshuffles its rows, and its update turns on the orders it drew as much as on its rows: \
             the thresholds were weighed on {batches}, each with rows and orders of its own (their mix against \
             {guess}: {:+.1} points on average, {:+.1} less two standard errors of their spread{worst}){stopped}",
            100.0 * gain,
            100.0 * bound
        );
    }
    if let (true, false, Some(recon), Some(worst)) =
        (f.unlike_every_shadow, f.exhausted, f.update_fit, f.worst_shadow_fit)
    {
        let _ = writeln!(
            s,
            "this client's orders fell worse than any shadow batch's: its reconstruction explains its update only \
             to 1 − cos {recon:.3}, the worst shadow's its own to {worst:.3}, so their thresholds do not speak for \
             it and every cell of the rows the update does not hold is {guess}"
        );
    }
    if f.unsure_across_shadows && !f.exhausted && !f.unlike_every_shadow {
        let _ = writeln!(
            s,
            "this client's reconstruction explains its update worse than every shadow batch did its own, and the \
             thresholds' gain over {guess} was not sure across them, so every cell of the rows the update does not \
             hold is {guess}"
        );
    }
}

/// What the second layer's peeling found, and FedAvg's adoptions it put back.
fn second_layer_lines(r: &Report, s: &mut String) {
    let Some(l) = r.row_details().and_then(|d| d.second_layer.as_ref()) else {
        return;
    };
    if l.peeled_rows > 0 {
        let _ = writeln!(
            s,
            "{} of the rows proved were found on the update left once the others were peeled off it (rows of its span, or copies of proved rows)",
            l.peeled_rows
        );
    }
    if let Some(undone) = l.undone_sentence() {
        let _ = writeln!(s, "{undone}");
    }
}

/// How well: the accuracy against the random baseline, per feature, and per entropy band.
fn accuracy(r: &Report, s: &mut String) {
    let a = &r.accuracy;
    let _ = writeln!(
        s,
        "\naccuracy {} (categorical {}, continuous {}), rows recovered exactly {}",
        pct(Some(a.total)),
        pct(a.categorical),
        pct(a.continuous),
        pct(Some(a.exact_rows))
    );
    let _ = writeln!(
        s,
        "random baseline {} → gain {:+.1} points",
        pct(Some(r.random_baseline)),
        100.0 * r.gain_over_random
    );
    if let Some(t) = r.table_baseline {
        let _ = writeln!(
            s,
            "the table's guess, rows of it chosen without the update (what a server holding the table's \
             other rows guesses, and where it does what cells fall back to) {} → gain {:+.1} points over it",
            pct(Some(t)),
            100.0 * (a.total - t)
        );
    }
    if !r.provenance.is_empty() {
        let groups: Vec<String> = r
            .provenance
            .iter()
            .map(|g| format!("{} {} ({} right)", g.rows, g.provenance.words(), pct(Some(g.accuracy))))
            .collect();
        let _ = writeln!(s, "rows: {}", groups.join(", "));
        for reason in r.provenance.iter().flat_map(|g| &g.reasons) {
            let _ = writeln!(s, "  not proved ({}): {}", counted(reason.rows, "row"), reason.why);
        }
        second_layer_lines(r, s);
        for line in crate::attack::registry::not_applied_lines(&r.not_applied) {
            let _ = writeln!(s, "{line}");
        }
        labels(r, s);
        answered_early(r, s);
        if let Some(e) = r.row_details().and_then(|d| d.ensemble.as_ref()) {
            let _ = writeln!(s, "{}", ensemble_line(e));
        }
        if let Some(c) = r.row_details().and_then(|d| d.chosen.as_ref()) {
            let _ = writeln!(s, "{}", c.sentence());
        }
        if let Some(c) = r.row_details().and_then(|d| d.categories_held.as_ref()) {
            let _ = writeln!(s, "{}", c.sentence());
        }
        if let Some(shown) = r.row_details().and_then(|d| d.shown.as_ref()) {
            let _ = writeln!(s, "{}", shown.sentence());
        }
        if let Some(shown) = r.row_details().and_then(|d| d.cells_shown.as_ref()) {
            let _ = writeln!(s, "{}", shown.sentence());
        }
        for d in r.row_details().map_or(&[][..], |d| &d.determined[..]) {
            let _ = writeln!(s, "{}", d.sentence());
        }
    }
    if let Some(f) = r.row_details().and_then(|d| d.fallback.as_ref()) {
        fallback_lines(f, s);
    }
    let _ = writeln!(s, "\nper feature:");
    for (f, acc) in r.features.iter().zip(&a.per_feature) {
        let _ = writeln!(s, "  {:<24} {:>6}", f.name, pct(Some(*acc)));
    }
    if !r.entropy_buckets.is_empty() {
        let _ = writeln!(
            s,
            "\nconfidence (ensemble entropy; lower = more confident) against accuracy:"
        );
        for bkt in &r.entropy_buckets {
            let kind = match bkt.kind {
                ColumnKind::Categorical => "categorical",
                ColumnKind::Continuous => "continuous ",
            };
            let edge = |e: Option<f64>, unbounded: &str| e.map_or(unbounded.to_string(), |v| format!("{v:.2}"));
            let _ = writeln!(
                s,
                "  {kind} [{:>5}, {:>5}): {:>5} cells, {} right",
                edge(bkt.from, "-inf"),
                edge(bkt.to, "inf"),
                bkt.cells,
                pct(bkt.accuracy)
            );
        }
    }
    for q in &r.confident_quarter {
        let kind = match q.kind {
            ColumnKind::Categorical => "categorical",
            ColumnKind::Continuous => "continuous",
        };
        let _ = writeln!(
            s,
            "the attacker's surest quarter of {kind} cells ({} of {}, entropy ≤ {:.2}): {} right, against {} of all",
            q.quarter_cells,
            q.cells,
            q.quarter_entropy_max,
            pct(Some(q.quarter_accuracy)),
            pct(Some(q.accuracy))
        );
    }
}

/// The first `max_rows` rows, true above reconstructed, each cell marked right or wrong and by
/// confidence.
fn rows(r: &Report, max_rows: usize, s: &mut String) {
    let shown = r.rows.len().min(max_rows);
    if shown > 0 {
        let _ = writeln!(
            s,
            "\nfirst {shown} of {} rows: T = true, R = reconstructed; ✓/✗ right or wrong; ● ◐ ○ high / medium / low confidence",
            r.rows.len()
        );
        let widths: Vec<usize> = r
            .features
            .iter()
            .enumerate()
            .map(|(f, h)| {
                r.rows[..shown]
                    .iter()
                    .flat_map(|row| [row.truth[f].chars().count(), row.reconstructed[f].chars().count() + 2])
                    .chain([h.name.chars().count()])
                    .max()
                    .unwrap_or(4)
                    .min(22)
            })
            .collect();
        let cell = |text: &str, w: usize| {
            let t: String = text.chars().take(w).collect();
            format!("{t:<w$} ")
        };
        let mut header = String::from("      ");
        for (h, &w) in r.features.iter().zip(&widths) {
            header += &cell(&h.name, w);
        }
        // A regression's label, which the server reconstructs with the row, last.
        if let Some(g) = &r.regression {
            header += &cell(&format!("[{}]", g.label), 22);
        }
        let _ = writeln!(s, "{}", header.trim_end());
        for (i, row) in r.rows[..shown].iter().enumerate() {
            let mut t = format!("{:>3} T ", i + 1);
            let mut rec = String::from("    R ");
            for (f, &w) in widths.iter().enumerate() {
                t += &cell(&row.truth[f], w);
                let mark = if row.correct[f] { "✓" } else { "✗" };
                let conf = confidence_mark(row.confidence[f]);
                let text: String = row.reconstructed[f].chars().take(w.saturating_sub(2)).collect();
                rec += &cell(&format!("{text}{mark}{conf}"), w);
            }
            if let (Some(truth), Some(label), Some(right)) = (&row.truth_label, &row.label, row.label_correct) {
                t += &cell(truth, 22);
                rec += &cell(&format!("{label}{}", if right { "✓" } else { "✗" }), 22);
            }
            let _ = writeln!(s, "{}\n{}", t.trim_end(), rec.trim_end());
        }
    }
}

/// "1 row", "2 rows": a count with its noun.
pub(super) fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// What an ensemble run by its stopping rule did, in one line.
pub fn ensemble_line(e: &crate::attack::inversion::ensemble::EnsembleRounds) -> String {
    let rounds: Vec<String> = e
        .rounds
        .iter()
        .map(|r| format!("{} members: {:.1} %", r.members, 100.0 * r.changed))
        .collect();
    let changed = match rounds.is_empty() {
        true => String::new(),
        false => format!(
            " (cells changed among those called sure or fairly sure, per round: {})",
            rounds.join(", ")
        ),
    };
    format!(
        "ensemble: {} of up to {} members, by its stopping rule: {}{changed}",
        e.members, e.most, e.rule
    )
}
