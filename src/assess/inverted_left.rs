//! The rows no proof reached inverted again, alone, against what the rows held leave of the
//! update. A FedSGD update is the mean of its rows' gradients, B·G = Σᵢ g(xᵢ, yᵢ): where the
//! update holds some rows (proved or consistent, each with the label the update pairs it with,
//! `assess::paired_labels`), what they leave of B·G, r, is the sum of the other k rows'
//! gradients, the update r / k of a client of those k rows alone. The ensemble inverts that
//! smaller batch from fresh members: the rows held no longer pull the members' other rows toward
//! themselves, and a row the whole batch's gradient hid behind larger residuals is one of k. Its
//! rows take the open slots where the reconstruction then explains the update better (1 − cos
//! of the whole update). They are never proved (r carries the rounding of the rows held and the
//! error of any consistent one); where the reconstruction then explains the update to near its
//! rounding (`seen_rows::EXPLAINED`) they are consistent with it, and otherwise stay the
//! ensemble's rows, which the fallback judges. Measured in docs/results/rounds.md (Adult [32, 32],
//! B = 16, trained 1 and 5 epochs: 99.2 → 100 % and 98.1 → 98.7 % of cells).
use crate::assess::reconstruct::Reconstruction;
use crate::assess::seen_rows::EXPLAINED;
use crate::attack::inversion::driver::Progress;
use crate::attack::inversion::setup::Setup;
use crate::attack::priors::activation_span::Unproved;
use crate::attack::spec::AttackSpec;
use crate::client::head::Head;
use crate::client::update::Update;
use crate::config::{AttackConfig, MemberRange, Protocol};
use crate::error::Result;
use crate::report::Provenance;
use crate::scenario::Scenario;
use crate::table::Value;

impl Setup<'_> {
    /// `recon` with its open rows (those the ensemble alone gave) replaced by the ensemble's rows
    /// of what the held rows leave, where they explain the update better (consistent where they
    /// explain it to `EXPLAINED`); then, where the update is still not explained, the consistent
    /// rows it does not support inverted with them (`assess::misfits`); then the rows no proof
    /// reached polished against the whole update (`assess::polish`). As it was where that does
    /// not apply (`may_invert_left`, `opens`). Last, in every case, `end_rows`; where that opens
    /// copies of proved rows, they are inverted again as the open rows were.
    pub(crate) async fn invert_left(
        &self,
        recon: Reconstruction,
        progress: &mut dyn FnMut(&Progress) -> bool,
    ) -> Result<Reconstruction> {
        // Rows that explain the update to its rounding leave nothing to invert.
        let recon = if !self.may_invert_left() || recon.rows.len() != self.config.rows() || recon.explains_update() {
            recon
        } else {
            let recon = self.invert_open_rows(recon, progress).await?;
            let recon = self.reopen_misfits(recon, progress).await?;
            self.polish_left(self.place_in_span(recon))
        };
        let (recon, copies) = self.end_rows(recon);
        // Copies of proved rows opened last (`assess::held_once`) stand for rows of the batch
        // that are missing: inverted alone against what the held rows leave, as the open rows
        // were (HI [32, 32], B = 16, trained 5 epochs, seed 7: two copies, then the two rows
        // missing found, 94.3 → 100 % of cells).
        if copies == 0 || !self.may_invert_left() {
            return Ok(recon);
        }
        let recon = self.invert_open_rows(recon, progress).await?;
        Ok(self.end_rows(recon).0)
    }

    /// How every run's rows end: the rows the update cannot see guessed from what it says of
    /// them (`assess::unseen_rows`), and no row of the batch held twice (`assess::held_once`);
    /// with how many copies of proved rows that opened.
    pub(crate) fn end_rows(&self, recon: Reconstruction) -> (Reconstruction, usize) {
        let mut recon = self.guess_unseen(recon);
        let copies = crate::assess::held_once::open_copies(self.dataset, &mut recon);
        (recon, copies)
    }

    /// `invert_left` on the rows the ensemble alone gave.
    async fn invert_open_rows(
        &self,
        mut recon: Reconstruction,
        progress: &mut dyn FnMut(&Progress) -> bool,
    ) -> Result<Reconstruction> {
        let open: Vec<usize> = (0..recon.rows.len())
            .filter(|&i| !recon.provenance[i].held_by_update())
            .collect();
        if !opens(&recon, &open) {
            return Ok(recon);
        }
        let label_of = self.labels_paired(&recon);
        let before = self.fits_without(&recon.rows, &[], &label_of).0;
        let found = self.invert_open(&recon.rows, &open, &label_of, progress).await?;
        let (rows, entropy) = found.placed_over(&recon.rows, &recon.entropy);
        let fit = self.fits_without(&rows, &[], &label_of).0;
        if !(fit < before) {
            return Ok(recon);
        }
        recon.rows = rows;
        recon.entropy = entropy;
        // Every row found is consistent where the whole fit is explained, even one whose own
        // gradient the fit does not pin (`assess::seen_rows`): left to the fallback, such rows
        // (Adult [100, 100] trained 20 epochs, seeds 0 and 4: 71-79 % of their cells right)
        // fell to the marginals' 50 %, 98.4 -> 96.9 % and 99.3 -> 98.7 % of cells.
        for &i in &open {
            (recon.provenance[i], recon.unproved[i]) = match fit <= EXPLAINED {
                true => (
                    Provenance::Consistent,
                    Some(Unproved::InvertedLeft { left: open.len(), fit }),
                ),
                false => (Provenance::Ensemble, None),
            };
        }
        recon.row_labels = self.labels_of_rows(&recon.rows);
        Ok(recon)
    }

    /// The ensemble's rows of what the rows of `rows` not `open` leave of the update, each with
    /// its label in `label_of` (the open rows' labels a smaller batch's).
    pub(super) async fn invert_open(
        &self,
        rows: &[Vec<Value>],
        open: &[usize],
        label_of: &[usize],
        progress: &mut dyn FnMut(&Progress) -> bool,
    ) -> Result<Found> {
        // The open rows in the order of their labels, as the smaller batch's labels are sorted:
        // its j-th row takes the j-th open slot, whose label it was inverted with.
        let mut open = open.to_vec();
        open.sort_by_key(|&i| label_of[i]);
        let left = self.left_by_held(rows, &open, label_of);
        let config = AttackConfig {
            batch_size: open.len(),
            clients: 1,
            attack: match &self.config.attack {
                AttackSpec::Tableak(t) => AttackSpec::Tableak(crate::config::TableakSettings {
                    subspace: false,
                    second_layer: false,
                    prior_fallback: false,
                    update_choice: false,
                    stop_members: false,
                    ..t.clone()
                }),
                other => other.clone(),
            },
            ..self.config.clone()
        };
        let scenario = Scenario::of_update(
            self.scenario.params.clone(),
            self.update_of(&left, 1.0 / open.len() as f64),
            open.iter().map(|&i| label_of[i]).collect(),
        );
        let alone = Setup::new(self.runtime, self.dataset, &config, scenario);
        let range = MemberRange {
            first: 0,
            count: alone.members,
        };
        let mut relabel = |p: &Progress| {
            progress(&Progress {
                phase: "rows left".into(),
                ..p.clone()
            })
        };
        let cadence = self.runtime.cadence(config.report_every);
        let members = alone.invert_with(range, &config, cadence, &mut relabel).await?;
        let again = alone.reconstruct_once(members).await?;
        Ok(Found {
            slots: open,
            rows: again.rows,
            entropy: again.entropy,
        })
    }

    /// Whether the rows left may be inverted again: an update that is the mean of its rows'
    /// gradients (`sums_row_gradients`), inverted by a relaxed ensemble with the update's choice
    /// on.
    pub(crate) fn may_invert_left(&self) -> bool {
        self.config.priors().choice && self.inverts.relaxed && self.sums_row_gradients()
    }

    /// Whether the update is the mean of its rows' gradients and nothing else: a FedSGD
    /// classifier's, undefended, of one round, with no cells known.
    pub(crate) fn sums_row_gradients(&self) -> bool {
        let config = self.config;
        config.protocol == Protocol::Fedsgd
            && config.defence.is_none()
            && config.head != Head::Linear
            && self.dataset.target.is_none()
            && self.scenario.known.is_none()
            && self.scenario.later_rounds.is_empty()
    }

    /// `flat` (laid out as `ExactGradient::flat`: every layer's weights, then the biases) times
    /// `scale`, as an update.
    pub(super) fn update_of(&self, flat: &[f64], scale: f64) -> Update {
        let params = &self.scenario.params;
        let mut at = 0;
        let mut take = |n: usize| {
            let out: Vec<f32> = flat[at..at + n].iter().map(|&v| (scale * v) as f32).collect();
            at += n;
            out
        };
        let weights: Vec<Vec<f32>> = params.weights.iter().map(|w| take(w.len())).collect();
        let biases: Vec<Vec<f32>> = params.biases.iter().map(|b| take(b.len())).collect();
        Update::from_layers(weights, biases)
    }
}

/// Whether `open` rows may be inverted alone: some held, some open, none fallen back.
pub(super) fn opens(recon: &Reconstruction, open: &[usize]) -> bool {
    !open.is_empty() && open.len() < recon.rows.len() && recon.provenance.iter().all(|p| *p != Provenance::Prior)
}

/// What `invert_open` found: the open slots in the order of the rows found, those rows, and
/// their cells' entropy.
pub(super) struct Found {
    slots: Vec<usize>,
    rows: Vec<Vec<Value>>,
    entropy: Entropy,
}

/// Each row's cells' entropy, where the ensemble gave them.
type Entropy = Option<Vec<Vec<Option<f64>>>>;

impl Found {
    /// `rows` and their `entropy` with the rows found in their slots.
    pub(super) fn placed_over(&self, rows: &[Vec<Value>], entropy: &Entropy) -> (Vec<Vec<Value>>, Entropy) {
        let (mut rows, mut entropy) = (rows.to_vec(), entropy.clone());
        for (n, &i) in self.slots.iter().enumerate() {
            rows[i] = self.rows[n].clone();
            if let (Some(e), Some(f)) = (entropy.as_mut(), self.entropy.as_ref()) {
                e[i] = f[n].clone();
            }
        }
        (rows, entropy)
    }
}
