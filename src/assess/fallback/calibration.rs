//! What the shadow client taught (`Calibration`): its thresholds, and the rules that say where
//! they do not speak for the client (an attack exhausted, a shadow that tested no ensemble row,
//! a shadow batch far easier or far harder than the client's); a regression's labels too.
use super::draws::AcrossShadows;
use crate::assess::matching::Rule;
use crate::assess::reconstruct::Reconstruction;
use crate::assess::update_choice::UPDATE_FIT_THRESHOLD;

/// How sure the shadow batch must make the server that keeping a candidate's ensemble cells beats
/// the marginal guess: the gain's one-sided lower bound at z standard errors (about 98 %). The
/// thresholds are the best of up to 121 candidates on one batch of a few hundred cells, so the
/// best gain alone is biased upwards: on Adult's [32, 32] network trained 1-20 epochs (seeds
/// 0-9) shadows whose ensemble scored from 7 points below the guess to barely above it (+0.2)
/// chose thresholds that kept cells, and the client's rows then scored up to 6.2 points below
/// guessing; with the bound, 9 of those 30 attacks below guessing became 2.
pub(crate) const LOWER_BOUND_Z: f64 = 2.0;

/// Entropy thresholds per kind of column: a cell above its kind's falls back.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    pub categorical: Option<f64>,
    pub continuous: Option<f64>,
}

impl Thresholds {
    /// Which cells fall back: those with an entropy above their kind's threshold, and where the
    /// kind has one, those without an entropy: a cell the members' confidence no longer covers
    /// (`update_choice` moved it from the members' vote) is no surer than the least sure. Before,
    /// such cells never fell back: on Flower's recipe ([32, 32], Adult, trained 3 epochs, seed 3)
    /// every cell was to fall back and 121 such continuous cells, 35 % right, stayed.
    pub fn mask(&self, rules: &[Rule], entropy: &[Vec<Option<f64>>]) -> Vec<Vec<bool>> {
        entropy
            .iter()
            .map(|row| {
                let mut row = rules
                    .iter()
                    .zip(row)
                    .map(|(r, e)| {
                        let above = if r.categorical {
                            self.categorical
                        } else {
                            self.continuous
                        };
                        match (above, e) {
                            (Some(t), Some(e)) => *e > t,
                            (Some(_), None) => true,
                            (None, _) => false,
                        }
                    })
                    .collect::<Vec<bool>>();
                // A column read from a category is right where the category is: it falls back
                // with it.
                for (f, r) in rules.iter().enumerate() {
                    if let Some(by) = r.follows {
                        row[f] = row[by];
                    }
                }
                row
            })
            .collect()
    }
}

/// How many times worse than the shadow's own (1 − cos) the client's reconstruction may explain
/// its update for the shadow's thresholds to speak for it (`Calibration::unlike_shadow`). Shadows
/// of the table's own rows (`assess::shadow_rows`), [32, 32], B = 32, seeds 0-9: where the
/// thresholds kept cells that then beat guessing, the client's fit was 0.20-3.35 times the
/// shadow's (Adult, trained 0-20 epochs) and 0.61-2.24 times (German Credit); where they kept
/// cells below guessing (Adult trained 5 epochs, seeds 0 and 5: 48 % and 43 % right), 10.3 and
/// 3.7 times.
const UNLIKE_SHADOW_FIT: f64 = 3.0;
/// ... and only where the client's reconstruction leaves more than this share of what the
/// marginals' guess leaves unexplained: fits near the update's rounding, or far below the
/// guess's, are explained updates, whatever their ratio (a linear regression on one row: 3.4e-6
/// against the shadow's 6e-7, every cell right; Adult [32, 32] untrained, seed 9: 0.061 against
/// 0.018, the guess's about 1, 67 % right against 64 % guessing). The two kept below guessing
/// above left 0.74 and 0.53 of the guess's.
const UNEXPLAINED: f64 = 0.25;

/// The reconstruction's fit of the update (1 − cos) no better than the marginal guess's, `[recon,
/// prior]` as `Calibration::fits`: the attack is exhausted (`Calibration::exhausted`).
pub fn explains_no_better([recon, prior]: [f64; 2]) -> bool {
    !(recon < prior)
}

/// The rows of `recon` the update holds: proved and consistent rows, or with `consistent_unheld`
/// only the settled ones (`Calibration::held`, and the shadow's own rows).
pub fn held_rows(recon: &Reconstruction, consistent_unheld: bool) -> Vec<bool> {
    (0..recon.rows.len())
        .map(|i| recon.provenance[i].held_by_update() && (!consistent_unheld || recon.settled(i)))
        .collect()
}

/// What the shadow client taught: the thresholds, and the shadow accuracies of the ensemble, the
/// marginal guess and the mix; for a regression, its labels' too; and how far the update is from
/// explained by the reconstruction and by the marginal guess (`Setup::fits`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    pub thresholds: Thresholds,
    /// The width of the table's prior on the ensemble's continuous cells, in members' spreads
    /// (`assess::table_prior`), where it served the shadow client better than none.
    pub prior_spread: Option<f64>,
    pub shadow: [f64; 3],
    pub labels: Option<LabelCalibration>,
    pub fits: Option<[f64; 2]>,
    /// How far the shadow client's update is from explained by its reconstruction (1 − cos),
    /// where the server replays the client's update.
    pub shadow_fit: Option<f64>,
    /// The L2 norms of the client's update and the shadow client's.
    pub norms: [f64; 2],
    /// Rows of the shadow batch its update did not hold (neither proved nor consistent): the
    /// ensemble's rows the thresholds were tested on; and its rows.
    pub shadow_open: usize,
    pub shadow_rows: usize,
    /// The shadow client's ensemble: as many members as the client's pooled.
    pub shadow_members: usize,
    /// Whether the shadow's rows are the table's own, outside the batch (`assess::shadow_rows`),
    /// rather than drawn from the marginals.
    pub shadow_of_table: bool,
    /// Whether the client's update holds some of its rows (`assess::rows::fall_back` sets it).
    pub holds_rows: bool,
    /// Whether the client's rows started from those its update picked among the first layer's
    /// span's rows (FedSGD's pursuit kept, `update_choice::Pursuit`; set with `holds_rows`).
    pub picked_from_span: bool,
    /// An Adam client's rows read by category (`assess::category_rows`): their gain in right
    /// cells over the marginals' guess on shadow clients, less two standard errors; they are put
    /// in only where it is above 0 (None: the reading does not hold).
    pub read_gain: Option<f64>,
    /// The cells that fall back in rows that keep others are imputed from the table's rows most
    /// like them (`assess::imputed`), where that served the shadow client better than the draw.
    pub imputed: bool,
    /// What a reshuffling client's shadow batches said together (`fallback::draws`), once
    /// `Setup::fallback_on` ran them.
    pub across: Option<AcrossShadows>,
    /// The shadow's rows that its update held only as consistent (neither proved nor placed near
    /// a batch row) scored surely below the marginals' draw there (`consistent_below_draw`): on
    /// the client such rows are not held either (`held`), and fall back as the ensemble's do.
    pub consistent_unheld: bool,
    /// The marginals' draw in the place of the client's rows held only as consistent
    /// reproduces its update to its float32 rounding (`Setup::consistent_like_draw`): those
    /// rows are not held (`held`).
    pub consistent_like_draw: bool,
}

impl Calibration {
    /// The rows of `recon` the update holds as this calibration reads it: proved and consistent
    /// rows (`Provenance::held_by_update`), or where the shadow's consistent rows scored surely
    /// below the draw (`consistent_unheld`) or the draw in their place reproduces the client's
    /// update (`consistent_like_draw`), only the settled ones (proved, or near a batch row).
    pub fn held(&self, recon: &Reconstruction) -> Vec<bool> {
        held_rows(recon, self.consistent_unheld || self.consistent_like_draw)
    }

    /// The reconstruction explains the update no better than the marginal guess: the attack has
    /// nothing to go on beyond the marginals, whatever the shadow client showed.
    pub fn exhausted(&self) -> bool {
        self.fits.is_some_and(explains_no_better)
    }

    /// The shadow client's update held every row of its batch, so no ensemble row was tested
    /// there, and the client's update holds some of its rows: the ensemble's rows left beside
    /// those are the ones it could not recover, not a sample of its work, and the shadow's
    /// thresholds say nothing of them. On Adult's [100, 100] network trained 1, 5 and 20 epochs,
    /// 15 such rows over 6 of 9 attacks had 27 % of their cells right, against 62 % guessing,
    /// and shadows whose every row was proved kept them all. Where the update holds none of the
    /// client's rows, its ensemble's rows are its whole work, as the literature measures it,
    /// and keep the thresholds (Adult [32, 32] untrained, seed 1: every shadow row proved, the
    /// client's none, its ensemble 74 % right against 62 % guessing).
    pub fn untested(&self) -> bool {
        self.shadow_open == 0 && self.holds_rows
    }

    /// The client's reconstruction explains its update more than `UNLIKE_SHADOW_FIT` times worse
    /// (1 − cos) than the shadow's explained its own, where neither update holds a row (so both
    /// fits are the ensemble's whole work): the shadow's batch was not as hard as the client's,
    /// and its thresholds do not speak for it.
    pub fn unlike_shadow(&self) -> bool {
        self.shadow_fit.is_some_and(|shadow| {
            self.weighed_against_shadow() && self.fits.is_some_and(|[recon, _]| recon > UNLIKE_SHADOW_FIT * shadow)
        })
    }

    /// The mirror of `unlike_shadow`: the client's reconstruction explains its update more than
    /// `UNLIKE_SHADOW_FIT` times better than the shadow's explained its own, where neither update
    /// holds a row, and fits it (1 − cos at most `UPDATE_FIT_THRESHOLD`, what the report calls a
    /// fit) with rows its update picked among the first layer's span's rows (`picked_from_span`).
    /// The shadow's batch was harder than the client's, and its thresholds, which weighed the
    /// ensemble's cells where it explained its update worse, do not speak for it: every cell the
    /// ensemble gives is kept. Adult [32, 32], B = 32, trained 0-20 epochs, seeds 0-4: it holds
    /// on four attacks (the client's fit 5·10⁻⁵-1.5·10⁻² against the shadow's 3-500 times that),
    /// whose thresholds had sent 32, 32, 32 and some rows to the guess: 69.9 → 83.9, 72.1 → 79.0,
    /// 70.8 → 73.4 and 83.3 → 89.3 % of cells. Where it does not, the thresholds cost 1-8 points
    /// on three attacks at ratios of 1.4-2.2 and saved 21 points at 1.04. A fit alone is no sign
    /// of rows: Adult seed 7 trained 20 epochs fitted 0.097, four times better than its shadow,
    /// with 65.6 % of cells right against the table's guess's 69.6 %; on HI [32, 32], whose batch
    /// fills every direction a row can take, so that rows that are not the batch fit it too, the
    /// ensemble's rows fitted 0.014 and 0.026 (27 and 10 times better than the shadows') with
    /// 55.2 and 65.4 % right against 69.8 %.
    pub fn shadow_harder(&self) -> bool {
        self.shadow_fit.is_some_and(|shadow| {
            self.shadow_open == self.shadow_rows
                && !self.holds_rows
                && self.picked_from_span
                && self
                    .fits
                    .is_some_and(|[recon, _]| recon <= UPDATE_FIT_THRESHOLD && shadow > UNLIKE_SHADOW_FIT * recon)
        })
    }

    /// A reshuffling client's reconstruction explains its update far worse than the worst of its
    /// shadow batches did theirs (`AcrossShadows::unlike_every_shadow`): its orders fell worse
    /// than any the shadows drew, and their thresholds do not speak for it.
    pub fn unlike_every_shadow(&self) -> bool {
        match (self.across, self.fits) {
            (Some(a), Some([recon, _])) => a.unlike_every_shadow(recon),
            _ => false,
        }
    }

    /// A reshuffling client's reconstruction explains its update worse than every shadow batch did
    /// its own, and the thresholds gain over the whole guess on them by less than their spread
    /// makes sure (`AcrossShadows::unsure`).
    pub fn unsure_across_shadows(&self) -> bool {
        match (self.across, self.fits) {
            (Some(a), Some([recon, _])) => a.unsure(recon),
            _ => false,
        }
    }

    /// Whether `unlike_shadow` turns on the ratio of the fits alone: neither update holds a row
    /// and the client's reconstruction leaves more than `UNEXPLAINED` of what the guess leaves.
    fn weighed_against_shadow(&self) -> bool {
        self.shadow_open == self.shadow_rows
            && !self.holds_rows
            && self.fits.is_some_and(|[recon, prior]| recon > UNEXPLAINED * prior)
    }

    /// Whether the shadow's fit is to be read with its `whole` ensemble (`ShadowRun::whole_fit`):
    /// the ratio of the fits decides, the client fits its update worse than the shadow fitted its
    /// own with as many members (else the shadow was no easier, whatever more members would
    /// fit), and the shadow ran fewer members than that.
    pub fn wants_whole_shadow_fit(&self, whole: usize) -> bool {
        let worse = matches!((self.fits, self.shadow_fit), (Some([recon, _]), Some(shadow)) if recon > shadow);
        worse && self.weighed_against_shadow() && self.shadow_members < whole
    }

    /// Which cells fall back: those above the shadow client's thresholds, and where the attack is
    /// exhausted or the shadow tested no ensemble row (`untested`), every cell of a row the
    /// update's span does not hold (`held`: the second layer's
    /// certificate or the first layer's span found it, and it fits). The fits are of the whole
    /// update, which a trained network's few rows of large residual make: one such row missed
    /// reads the rest as unexplained (Adult [100, 100] trained 5 epochs, seed 0: 31 rows right of
    /// 32 fitted at 1 − cos 1.00 against the marginals' 0.96, and five rows the span held, every
    /// cell right, fell back).
    pub fn mask(&self, rules: &[Rule], entropy: &[Vec<Option<f64>>], held: &[bool]) -> Vec<Vec<bool>> {
        let every = Thresholds {
            categorical: Some(f64::NEG_INFINITY),
            continuous: Some(f64::NEG_INFINITY),
        };
        let whole = self.exhausted()
            || self.untested()
            || self.unlike_shadow()
            || self.unlike_every_shadow()
            || self.unsure_across_shadows();
        let thresholds = match !whole && self.shadow_harder() {
            true => Thresholds {
                categorical: None,
                continuous: None,
            },
            false => self.thresholds,
        };
        thresholds
            .mask(rules, entropy)
            .into_iter()
            .zip(every.mask(rules, entropy))
            .zip(held)
            .map(|((calibrated, every), &held)| match whole && !held {
                true => every,
                false => calibrated,
            })
            .collect()
    }
}

/// A regression's labels on the shadow client: the share within tolerance of the labels the
/// attack reconstructed and of the table's likeliest value guessed for every row. Where the guess
/// scores higher, the labels of rows not proved are the guess.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LabelCalibration {
    pub shadow_update: f64,
    pub shadow_prior: f64,
    pub prior_value: f64,
    /// The shadow client's rows.
    pub rows: usize,
}

/// A shadow client of fewer rows does not decide a regression's labels: one row's hit or miss is
/// luck (German Credit's linear regression on one row: its label right on 5 seeds of 5, but one
/// one-row shadow missed it where the likeliest value hit, and the fallback lost it).
const MIN_LABEL_SHADOW_ROWS: usize = 4;

impl LabelCalibration {
    pub fn falls_back(&self) -> bool {
        self.rows >= MIN_LABEL_SHADOW_ROWS && self.shadow_prior > self.shadow_update
    }
}
