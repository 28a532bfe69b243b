// Generated from the engine's Rust types by tests/typescript.rs (ts-rs): do not edit.
// Regenerate with `LEAKSCOPE_UPDATE_TYPES=1 cargo test --test typescript`.

/**
 * An attack as a caller describes it in one object: the table's reading (label, kinds, columns
 * left out) and the attack's settings. The npm package's `run` takes this (camelCase); every
 * field but `label` has the engine's default.
 */
export type RunOptions = { 
/**
 * Name of the label column.
 */
label: string, 
/**
 * Column name → kind, replacing the inferred kind.
 */
kinds?: { [key in string]?: ColumnKind }, 
/**
 * Columns to leave out.
 */
ignore?: Array<string>, 
/**
 * Columns the reading leaves out by default (an identifier, pandas' index column; see the
 * schema's `treatment`) to use after all.
 */
include?: Array<string>, attack?: AttackKind, 
/**
 * FedSGD's batch, or a FedAvg client's rows.
 */
batchSize?: number, 
/**
 * Members of the ensemble, all of them run (TabLeak: by default the engine's, up to 30 for
 * FedSGD by its stopping rule, 15 for FedAvg; the attribute attack: 5).
 */
ensemble?: number, iterations?: number, 
/**
 * "fedsgd" (the client sends a gradient) or "fedavg" (θ0 − θE after local training).
 */
protocol?: ProtocolKind, 
/**
 * FedAvg: rows per local step, local epochs, and the client's SGD step.
 */
localBatch?: number, localEpochs?: number, clientLr?: number, 
/**
 * FedAvg: the client's optimiser, with torch.optim's settings: "sgd" (the default; momentum,
 * dampening, nesterov, weightDecay), "adam" or "adamw" (betas, adamEps, weightDecay).
 */
optimizer?: OptimizerKind, momentum?: number, dampening?: number, nesterov?: boolean, weightDecay?: number, betas?: [number, number], adamEps?: number, 
/**
 * FedAvg: "given" (the client's rows in the same order every epoch, the default) or
 * "shuffled" (reshuffled every epoch, in an order the server does not know).
 */
localOrder?: LocalOrder, 
/**
 * TabLeak on FedAvg over rows reshuffled every epoch: the epoch prior's weight λ; "auto"
 * chooses it without the truth. (In the given order every epoch shares one copy of the rows.)
 */
epochPrior?: EpochPrior, seed?: number, labels?: LabelMode, hidden?: Array<number>, 
/**
 * Between the client's layers: {kind: 'relu'} (the default), 'leaky_relu' (with its slope),
 * 'gelu', 'tanh' or 'sigmoid'.
 */
activation?: Activation, 
/**
 * The output layer: 'softmax' (one logit per class, the default) or 'sigmoid' (one logit
 * with binary cross-entropy, for a two-class label).
 */
head?: Head, 
/**
 * 'classification' (the default) or 'regression': one linear output under the squared error
 * on a numeric label, which the server does not know and reconstructs with each row.
 */
task?: Task, 
/**
 * Epochs of ordinary training on the table before the attacked round (default 0).
 */
trainingEpochs?: number, 
/**
 * Clients averaged before the server sees the update (secure aggregation; default 1).
 */
clients?: number, 
/**
 * Defence: clip each client's update to this L2 norm.
 */
clip?: number, 
/**
 * Defence: Gaussian noise multiplier σ (std σ·clip, or σ without clipping; default 0).
 */
noise?: number, 
/**
 * Defence: CAFE's fake gradients, the best of this many draws.
 */
fakeGradients?: number, 
/**
 * The δ of the (ε, δ) reported for a clipped, noised update (default 1e-5).
 */
delta?: number, 
/**
 * Adam's step; default 0.1 for TabLeak, 0.06 for the baselines.
 */
lr?: number, 
/**
 * Report progress (and check for cancellation) at least every this many steps.
 */
reportEvery?: number, 
/**
 * TabLeak: the first layer's span as a prior on the rows (default on; see
 * `TableakSettings::subspace`).
 */
subspace?: boolean, 
/**
 * TabLeak: certify rows by the second layer's span of activations (default on; see
 * `TableakSettings::second_layer`).
 */
secondLayer?: boolean, 
/**
 * TabLeak: under a defence that perturbs the update, fall back cell by cell to the table's
 * marginals where a shadow client shows they score higher (default on; see
 * `TableakSettings::prior_fallback`).
 */
priorFallback?: boolean, 
/**
 * TabLeak on FedAvg in a known order: let the client's simulated update choose among the
 * members' rows and cells, and run the ensemble again from the rows it chose; on FedSGD, run
 * it again on what the rows the update holds leave of it (default on; see
 * `TableakSettings::update_choice`).
 */
updateChoice?: boolean, 
/**
 * Stop members whose loss has stopped improving (default on).
 */
earlyStop?: boolean, 
/**
 * The attribute attack: the sensitive column it reconstructs.
 */
sensitive?: string, 
/**
 * The attribute attack: match the updates by squared error (the L2 baseline), not cosine.
 */
l2?: boolean, 
/**
 * The attribute attack: whether the server knows which rows the client used (default known).
 */
membership?: Membership, 
/**
 * CAFE: parties (default 4), rows they share (default 800), rounds observed (default 2000);
 * `batchSize` is the indices per round. `rounds` is also the attribute attack's (default 1).
 */
parties?: number, cafeRows?: number, rounds?: number, };

/**
 * An attack's name, without its settings: what tables, plots and the command line list.
 */
export type AttackKind = "tableak" | "cosine" | "dlg" | "random" | "attribute" | "cafe";

/**
 * The protocol by name, for flat options (the CLI's and the page's) and the protocols an attack
 * takes (`attack::describe`).
 */
export type ProtocolKind = "fedsgd" | "fedavg";

/**
 * The weight λ of TabLeak-FedAvg's epoch-matching prior (SPEC §7).
 */
export type EpochPrior = "auto" | { "fixed": number };

export type LabelMode = "known" | "restored";

export type ColumnKind = "categorical" | "continuous";

export type SchemaSummary = { columns: Array<ColumnInfo>, rows: number, 
/**
 * Rows with a missing value in a used column, a stray word in a numeric one counting as
 * missing (dropped by default).
 */
rows_with_missing: number, 
/**
 * Used columns with 2..=20 distinct values, the likely labels, most plausible first.
 */
label_candidates: Array<string>, 
/**
 * How the file was read: encoding, delimiter, decimal mark.
 */
dialect: Dialect, 
/**
 * The dialect in words ("UTF-8, semicolon-separated, decimal comma"), as the CLI and the
 * page show it.
 */
read_as: string, 
/**
 * Every decision that changes what is read: rows, columns or cells dropped, columns left
 * out, the encoding guessed. The same words as a run's report.
 */
warnings: Array<string>, };

/**
 * What a person sees before running: one entry per CSV column, with how it will be read and why.
 */
export type ColumnInfo = { name: string, kind: ColumnKind, distinct: number, missing: number, 
/**
 * A handful of example values, for display.
 */
examples: Array<string>, 
/**
 * Used, or left out (an identifier, pandas' index: `include` puts it back), or dropped (empty).
 */
treatment: Treatment, 
/**
 * Why the column is read the way it is, when that is not plain (empty otherwise).
 */
notes: Array<string>, 
/**
 * A continuous column's values that are not numbers (read as missing).
 */
non_numeric: NonNumeric | null, };

/**
 * What the engine does with a column by default.
 */
export type Treatment = "used" | "identifier" | "index" | "empty";

/**
 * The cells of a numeric column that are not numbers: they count as missing.
 */
export type NonNumeric = { count: number, 
/**
 * Values in the column (cells not missing), numbers and not.
 */
present: number, 
/**
 * The most frequent of them (at most 5), distinct.
 */
values: Array<string>, };

/**
 * How the file was read: shown with the schema, so a misread is visible.
 */
export type Dialect = { 
/**
 * What separates the fields: ",", ";", "\t" or "|".
 */
delimiter: string, 
/**
 * Numbers are written 1,5 and 1.234,5.
 */
decimal_comma: boolean, encoding: TextEncoding, };

/**
 * How the file's bytes were read as text.
 */
export type TextEncoding = "utf-8" | "utf-8-bom" | "utf-16le" | "utf-16be" | "windows-1252";

/**
 * Progress of a long computation, as reported to the caller.
 */
export type Progress = { phase: string, step: number, of: number, 
/**
 * Mean loss over the ensemble at this step, when one was read back.
 */
loss: number | null, elapsed: number, };

/**
 * Where a run's inversions spent their time on the host, summed over every inversion the run
 * started (an early answer's stages, an ensemble's rounds): what the browser bench and the
 * report's `timing` show. On a GPU, issuing a step only records its kernels; the device runs them
 * meanwhile, and the host waits for it at a readback. On the CPU, issuing is computing.
 */
export type StepTiming = { 
/**
 * Inversions run (each builds its engine's state: buffers, uploads).
 */
inversions: number, 
/**
 * Steps issued, each a step of every member still running.
 */
steps: number, 
/**
 * Seconds spent issuing steps.
 */
issue_seconds: number, 
/**
 * Readbacks awaited (losses, stopped members, the final rows)...
 */
readbacks: number, 
/**
 * ...and the seconds spent waiting for them.
 */
wait_seconds: number, 
/**
 * Seconds from the run's start until the first losses were read (after the first step: on a
 * GPU it holds the kernels' compilation where they were not compiled before).
 */
first_loss_seconds: number | null, };

export type Report = { 
/**
 * `REPORT_FORMAT`.
 */
format: string, attack: AttackKind, backend: BackendInfo, seconds: number, config: AttackConfig, accuracy: Accuracy, 
/**
 * Total accuracy of rows drawn from the marginals, on the same batch.
 */
random_baseline: number, random_accuracy: Accuracy, gain_over_random: number, 
/**
 * Total accuracy of the table's guess: rows of the table outside the batch chosen, without
 * the update, as a set like a batch of the slots' labels (`assess::table_guess`): what a
 * server holding the table's other rows (as the fallback's shadow client and imputation
 * assume) guesses with no update, and where it holds them the rows the fallback puts in,
 * so that an attack whose every cell falls back scores this exactly. On a simulated client
 * of a table; null elsewhere.
 */
table_baseline: number | null, 
/**
 * Share of the batch's labels the server had right (1 with known labels; a regression's:
 * within tolerance, `regression`).
 */
label_accuracy: number, 
/**
 * A regression's reconstructed labels against the truth (null for a classifier).
 */
regression: RegressionLabels | null, features: Array<FeatureHeader>, rows: Array<RowReport>, 
/**
 * Rows by how they were obtained (proved, ensemble, prior) with the share of their cells
 * that are right; empty where the attack does not say.
 */
provenance: Array<ProvenanceGroup>, 
/**
 * Parts the attack asks for that the client's model rules out, and why.
 */
not_applied: Array<NotApplied>, entropy_buckets: Array<EntropyBucket>, 
/**
 * Accuracy of the lowest-entropy quarter of cells against all, per feature kind.
 */
confident_quarter: Array<ConfidentQuarter>, 
/**
 * Per feature, the mean entropy over the batch (null without an ensemble): with
 * `accuracy.per_feature`, which columns leak most.
 */
per_feature_entropy: Array<number | null>, confidence_levels: ConfidenceLevels, 
/**
 * What the defence guarantees one client's update, per release (null without clipping or
 * noise).
 */
privacy: Privacy | null, 
/**
 * After `config.training_epochs` of training: the network's accuracy on the table.
 */
model_accuracy: number | null, loss_curve: Array<[number, number]>, table_rows: number, dropped_rows: number, warnings: Array<string>, 
/**
 * Steps each member of the ensemble took before it stopped improving (empty where none ran).
 */
member_steps: Array<number>, 
/**
 * Where the inversions' time went on the host (null where the run was split over workers,
 * or ran no inversion in this process).
 */
timing: StepTiming | null, 
/**
 * What this attack alone reports.
 */
details: AttackDetails, };

/**
 * What a report says about one attack alone, by what it reconstructs.
 */
export type AttackDetails = { "kind": "rows" } & RowDetails | { "kind": "attribute" } & AttributeReport | { "kind": "cafe" } & CafeReport;

/**
 * What an attack on a table's rows composed: the epoch prior on FedAvg and the first layer's span
 * (TabLeak; the baselines compose neither).
 */
export type RowDetails = { 
/**
 * TabLeak on FedAvg: the epoch prior's weight used (the one `auto` chose)...
 */
epoch_prior: number | null, 
/**
 * ...and, when it chose, how well each candidate's pooled rows fit the observed update
 * (1 − cos of their simulated update: lower is better; the truth plays no part).
 */
epoch_prior_fits: Array<PriorFit>, 
/**
 * The first layer's span as a prior on the rows: its rank, weight and the rows it solved
 * and proved (null when the attack did not use it).
 */
subspace: SubspaceSummary | null, 
/**
 * The second layer's certificate: rows proved from the span of the rows' first-layer
 * activations (null where it did not apply: FedAvg, the baselines, a span too wide to check).
 */
second_layer: SecondLayerSummary | null, 
/**
 * Cells that fell back to the table's marginals under a perturbing defence, with the shadow
 * client's figures that chose them (null where the attack did not fall back).
 */
fallback: FallbackSummary | null, 
/**
 * Where every row of the batch was proved (or consistent: placed near a batch row, held by
 * rows that explain the update to its rounding, `assess::seen_rows`, or inverted alone on
 * what the others leave and explaining it with them, `assess::inverted_left`) after this
 * many steps, the attack answered then and did not run the rest (null: it ran them all).
 */
answered_after: number | null, 
/**
 * Where the ensemble ran by its stopping rule: the members pooled, of the most, and what
 * each round changed (null: the ensemble ran whole, as configured).
 */
ensemble: EnsembleRounds | null, 
/**
 * FedAvg in a known order or reshuffled, and FedSGD: the rows the client's simulated update
 * chose among the members' and the span's (`assess::update_choice`; null where it did not
 * run).
 */
chosen: UpdateChoice | null, 
/**
 * An Adam or AdamW client: the categories its update shows its rows hold, beside what the
 * attack recovers (`attack::priors::categories_held`; null elsewhere).
 */
categories_held: CategoriesHeld | null, 
/**
 * Continuous columns the table determines from a category, which the attack read from each
 * pooled row's category (`table::determined`) where no member's row was solved in the first
 * layer's span.
 */
determined: Array<ReadFromCategory>, 
/**
 * A simulated FedSGD client: the rows of its batch whose gradient shows in its update, and
 * the cells right on those and the others (`assess::seen_rows`; null elsewhere).
 */
shown?: RowsShown, 
/**
 * A FedAvg client whose rows are at hand and whose recipe replays: the cells of its batch
 * its update shows, and the cells right on those and the others (`assess::cells_shown`;
 * null elsewhere).
 */
cells_shown?: CellsShown, };

export type ReconstructionReport = { 
/**
 * `RECONSTRUCTION_FORMAT`.
 */
format: string, attack: AttackKind, backend: BackendInfo, seconds: number, config: AttackConfig, features: Array<FeatureHeader>, rows: Array<ReconstructedRow>, 
/**
 * The rows by provenance (proved, consistent, ensemble), strongest first.
 */
provenance: Array<ProvenanceCount>, 
/**
 * The labels the attack used (given with the update, or restored from it), as class names;
 * none for a regression, whose labels the attack reconstructs (`rows[].label`).
 */
labels: Array<string>, 
/**
 * Parts the attack asks for that the client's model rules out, and why.
 */
not_applied: Array<NotApplied>, 
/**
 * A regression's labels (`rows[].label`): read off the update exactly (every row proved),
 * or estimated with the reconstructed rows; null for a classifier.
 */
regression_labels_exact: boolean | null, confidence_counts: Array<ConfidenceCount>, per_feature_entropy: Array<number | null>, confidence_levels: ConfidenceLevels, loss_curve: Array<[number, number]>, 
/**
 * Steps each member of the ensemble took before it stopped improving.
 */
member_steps: Array<number>, 
/**
 * What the attack composed: the epoch prior, the first layer's span.
 */
details: RowDetails, 
/**
 * How well the reconstruction explains the update (null where not computed).
 */
update_fit: UpdateFit | null, };

export type ReconstructedRow = { cells: Array<string>, entropy: Array<number | null>, confidence: Array<Confidence>, 
/**
 * The row's label, where the attack read it off the update (the rows explain its last layer
 * exactly: `attack::priors::row_labels`); null elsewhere.
 */
label: string | null, 
/**
 * How the row was obtained: proved a row of the client's batch, consistent with the update
 * but not proved, or pooled from the ensemble.
 */
provenance: Provenance | null, 
/**
 * Why a row that fits the update is not proved (`consistent` rows only).
 */
why_not_proved: string | null, };

/**
 * Cells per confidence level, per feature kind.
 */
export type ConfidenceCount = { kind: ColumnKind, high: number, medium: number, low: number, };

export type Accuracy = { total: number, categorical: number | null, continuous: number | null, 
/**
 * Per feature, in table order.
 */
per_feature: Array<number>, 
/**
 * Share of rows recovered on every feature.
 */
exact_rows: number, };

export type FeatureHeader = { name: string, kind: ColumnKind, };

/**
 * One true row beside the reconstructed row matched to it.
 */
export type RowReport = { truth: Array<string>, reconstructed: Array<string>, correct: Array<boolean>, 
/**
 * Per cell, lower = more confident; null for attacks without an ensemble.
 */
entropy: Array<number | null>, 
/**
 * Per cell, the entropy read on `confidence_levels`.
 */
confidence: Array<Confidence>, 
/**
 * How the reconstructed row was obtained (null where the attack does not say).
 */
provenance: Provenance | null, 
/**
 * Why a row that fits the update is not proved (`consistent` rows only).
 */
why_not_proved: string | null, 
/**
 * The reconstructed row's label, where the attack read it off the update (the rows explain
 * its last layer exactly: `attack::priors::row_labels`), and a regression's always (the server
 * reconstructs it with the row); null elsewhere.
 */
label: string | null, 
/**
 * A regression's true label of the row, and whether the reconstructed one is within the
 * label's tolerance of it (null for a classifier).
 */
truth_label: string | null, label_correct: boolean | null, };

/**
 * How far the attacker can trust a reconstructed cell, from the ensemble's entropy.
 */
export type Confidence = "high" | "medium" | "low" | "none";

/**
 * The entropy below which a cell is of high, and of medium, confidence, per feature kind. The same
 * scale as `entropy_buckets`' first two edges.
 */
export type ConfidenceLevels = { categorical: [number, number], continuous: [number, number], };

/**
 * Accuracy of the cells whose entropy falls in [from, to); a null edge is unbounded.
 */
export type EntropyBucket = { kind: ColumnKind, from: number | null, to: number | null, cells: number, accuracy: number | null, };

/**
 * The paper's Table 4: how right the attacker is on the cells it is surest of. Per feature kind,
 * the accuracy of the quarter of cells with the lowest ensemble entropy against all cells.
 */
export type ConfidentQuarter = { kind: ColumnKind, cells: number, accuracy: number, 
/**
 * The lowest-entropy quarter (rounded up), its accuracy, and the entropy it reaches up to.
 */
quarter_cells: number, quarter_accuracy: number, quarter_entropy_max: number, };

/**
 * One epoch-prior candidate's fit to the observed update.
 */
export type PriorFit = { lambda: number, fit: number, };

/**
 * The prior as the report states it.
 */
export type SubspaceSummary = { 
/**
 * Dimension of the span the rows were placed in.
 */
rank: number, 
/**
 * Directions an encoded row can take at all (d less one per categorical feature).
 */
feasible: number, 
/**
 * The weight the optimisation used (0 when off).
 */
weight: number, 
/**
 * Why the prior is off, when it is.
 */
off: string | null, 
/**
 * Noise per entry of the first layer's update, as measured on the directions that carry no
 * signal (float error alone is ~1e-9 of the largest singular value).
 */
noise: number, 
/**
 * Whether the first layer's bias gradient gave the hyperplane every row lies on.
 */
hyperplane: boolean, 
/**
 * Share of the update's first-layer energy inside the span.
 */
energy_inside: number, 
/**
 * Rows whose continuous values were solved exactly in the span (of all members' rows).
 */
decoded_rows: number, rows: number, 
/**
 * Rows of the batch proved exactly from the first layer's ReLU pattern (`attack::priors::activity`):
 * the ensemble agrees on each.
 */
proved_rows: number, };

/**
 * What the second layer's certificate did, for the report.
 */
export type SecondLayerSummary = { 
/**
 * The span's dimension (the second layer's gradient's rank) and the first layer's width.
 */
rank: number, width: number, 
/**
 * Rows of the batch whose first-layer activation was proved to lie in the span: each one
 * is a row of the batch (categories exact, continuous values within their tolerance).
 * On FedAvg (`proof` false) the rows adopted for lying near the span, which proves nothing.
 */
certified_rows: number, 
/**
 * Rows proved on the update left once the rows proved were peeled off it, or copies of
 * proved rows where the batch repeats them (`assess::peeled`), beside `certified_rows`.
 */
peeled_rows: number, 
/**
 * Rows whose activation lies in the span but which the certificate does not prove (the
 * rows' `why_not_proved` says why): counted in neither of the above.
 */
consistent_rows: number, 
/**
 * Whether an adopted row is proved (FedSGD) or only scored near the span (FedAvg).
 */
proof: boolean, 
/**
 * FedAvg's adoptions undone because with them the rows no longer reproduced an update the
 * rows before them did (`assess::adoptions`); the counts above no longer hold them.
 */
undone_adoptions: number, };

/**
 * What an ensemble run by its stopping rule (`assess::stopping`) did: the members it pooled, of the most it would have, and after each
 * round the share of the batch's cells that changed among those either pooling calls sure.
 */
export type EnsembleRounds = { members: number, most: number, rounds: Array<RoundChange>, rule: string, };

/**
 * One round: the members pooled after it, and the share of cells it changed.
 */
export type RoundChange = { members: number, changed: number, };

/**
 * What the calibration chose and what it gave.
 */
export type FallbackSummary = { 
/**
 * Accuracy on the shadow batch of the ensemble alone, of the guess alone (the table's where
 * the server holds its rows, else the marginals' draw), and of the mix chosen (the server
 * knows the shadow batch's truth, not the client's).
 */
shadow_ensemble: number, shadow_prior: number, shadow_chosen: number, 
/**
 * A categorical cell whose entropy is above this falls back to the guess (null: none does).
 */
categorical_above: number | null, 
/**
 * The same for continuous cells (their entropy is on another scale).
 */
continuous_above: number | null, 
/**
 * The width of the table's prior on the ensemble's continuous cells, in the members'
 * spreads, where the shadow client showed it gains (`assess::table_prior`; null: none).
 */
prior_spread: number | null, 
/**
 * Cells of the client's batch taken from the guess, of all its cells.
 */
prior_cells: number, cells: number, 
/**
 * Rows whose every cell came from the guess.
 */
prior_rows: number, 
/**
 * On a simulated client, the share of right cells among those from the ensemble and among
 * those from the guess (null where there were none or no truth).
 */
ensemble_cell_accuracy: number | null, prior_cell_accuracy: number | null, 
/**
 * How far the update is from explained (1 − cos between the update the rows would send and
 * the one received) by the reconstruction, and by the guess's rows; a reshuffling
 * client's in the orders its update chose for the rows (null where none were chosen, or
 * where a defence randomises the update).
 */
update_fit: number | null, prior_fit: number | null, 
/**
 * The same for the shadow client's reconstruction of its own update: how well the attack
 * explained the batch its thresholds were chosen on (null for a reshuffling client: not
 * weighed against its fit, `Calibration::unlike_shadow`).
 */
shadow_update_fit: number | null, 
/**
 * The L2 norms of the client's update and of the shadow client's: on a trained network the
 * shadow's rows, drawn column by column, are ones it is less sure of than the client's, and
 * its update is larger (Adult [32, 32] trained 1-20 epochs, five runs: 2.2-3.6 times;
 * untrained, 1.2 times).
 */
update_norm: number, shadow_update_norm: number, 
/**
 * The reconstruction explains the update no better than the guess does: the
 * attack ran out of strength, and every cell of the rows neither proved nor held by the
 * update's span fell back (`assess::rows::fall_back`).
 */
exhausted: boolean, 
/**
 * The shadow client's update held every row of its batch, so no ensemble row was tested
 * there, and the client's holds some: every cell of the rows the ensemble gave beside those
 * fell back (`Calibration::untested`).
 */
untested: boolean, 
/**
 * The client's reconstruction explains its update far worse than the shadow's explained its
 * own, so the shadow's thresholds do not speak for it: every cell the update does not hold
 * fell back (`Calibration::unlike_shadow`).
 */
unlike_shadow: boolean, 
/**
 * The client's reconstruction explains its update far better than the shadow's explained
 * its own, and fits it: the shadow's batch was harder, its thresholds do not speak for
 * it, and every cell the ensemble gives is kept (`Calibration::shadow_harder`).
 */
shadow_harder: boolean, 
/**
 * The shadow client's rows were rows of the table outside the batch, each of its slot's
 * label (`assess::shadow_rows`); false: drawn from the marginals.
 */
shadow_of_table: boolean, 
/**
 * An Adam client's rows read by category: their gain in right cells over the marginals' guess
 * on shadow clients, less two standard errors (`assess::category_rows`; they are put in only
 * above 0; null where the reading does not hold).
 */
read_gain: number | null, 
/**
 * The cells that fell back in rows that kept others were imputed from the table's rows most
 * like them on the cells kept, not drawn from the marginals (`assess::imputed`): the shadow
 * client scored better so.
 */
imputed: boolean, 
/**
 * Where it imputed, on a simulated client: the accuracy the same imputation gives around
 * kept cells drawn from the marginals instead of read from the update (`imputed::without_update`,
 * the mean of 8 draws). What the server's table alone gives it: the gain over guessing up to
 * this figure is the table's, not the update's.
 */
imputed_without_update: number | null, 
/**
 * The members of the shadow client's ensemble: as many as the client's pooled, so that its
 * thresholds are read off the same pooling (0: a report from before this was stated).
 */
shadow_members: number, 
/**
 * The shadow batches the thresholds were weighed on: a reshuffling client's several, each
 * with rows and orders of its own (`fallback::draws`; 0: a report from before this was
 * stated).
 */
shadow_batches: number, 
/**
 * Fewer batches ran than the most: they stopped at one whose reconstruction explained its
 * update no better than the client's, past which neither rule can hold.
 */
shadow_batches_stopped: boolean, 
/**
 * Where there were several: the worst fit among their reconstructions (1 − cos, in the
 * orders each update chose), the mean gain in right cells of the thresholds' mix over the
 * whole guess, and that gain less two standard errors of the batches' spread.
 */
worst_shadow_fit: number | null, gain_across_shadows: number | null, gain_bound_across_shadows: number | null, 
/**
 * The client's reconstruction explains its update far worse than the worst shadow batch
 * did its own: every cell the update does not hold fell back (`Calibration::unlike_every_shadow`).
 */
unlike_every_shadow: boolean, 
/**
 * The thresholds' gain over the whole guess was not sure across the shadow batches: every
 * cell the update does not hold fell back (`Calibration::unsure_across_shadows`).
 */
unsure_across_shadows: boolean, 
/**
 * Where the server holds the table: its guess weighed against the marginals' draw on
 * batches it simulated from its rows (`table_guess::weigh_against_draw`). Rows that fell
 * back whole took the table's guess only where it beat the draw on nearly every batch
 * (`GuessWeighed::taken`), else the draw; null where it was not weighed.
 */
table_guess: GuessWeighed | null, 
/**
 * The shadow's rows its update held only as consistent scored surely below the marginals'
 * draw there, so the client's consistent rows were not held: they fell back as the
 * ensemble's rows do, and are reported as the ensemble's (`Calibration::consistent_unheld`).
 */
consistent_unheld: boolean, 
/**
 * The marginals' draw in the place of the rows this update held only as consistent
 * reproduced it to its float32 rounding: the update does not tell them from a guess, so
 * they fell back as the ensemble's rows do (`Calibration::consistent_like_draw`).
 */
consistent_like_draw: boolean, };

/**
 * The table's guess weighed against the marginals' draw (the report's guessing) on batches the
 * server simulates from its own rows: their mean gain in right cells, and on how many the guess
 * scored below the draw. A report is about one batch, so the guess is taken only where it beats
 * (or ties) the draw on nearly every batch, 19 in 20 (`MOST_BELOW`), not on the mean alone: on
 * tables whose columns hold little of one another (four synthetic ones, 40 client batches each)
 * the guess scored 0.2-1.7 points above the draw on the mean and below it on 9-18 batches of
 * 40 (by up to 5.7 points), and every attack whose cells all fell back to it then scored below
 * guessing. Elsewhere rows that fall back whole take the draw.
 */
export type GuessWeighed = { batches: number, gain: number, below: number, 
/**
 * Whether rows that fall back whole take the guess: it scored below the draw on at most
 * `MOST_BELOW` of the batches.
 */
taken: boolean, };

/**
 * What the search did, as the report states it (`RowDetails::chosen`).
 */
export type UpdateChoice = { 
/**
 * Whether it searched: only where the pooled rows reproduce the update (`fit_before` at most
 * `UPDATE_FIT_THRESHOLD`).
 */
searched: boolean, 
/**
 * Rows of the first layer's span it could choose from (0: none).
 */
span_rows: number, 
/**
 * Rows of the batch it changed.
 */
changed_rows: number, 
/**
 * 1 − cos of the pooled rows' simulated update against the observed one, before and after.
 */
fit_before: number, fit_after: number, 
/**
 * Client updates it simulated.
 */
simulations: number, 
/**
 * The ensemble run again from the chosen rows (`assess::refine`; None where it did not run).
 */
rerun: Rerun | null, 
/**
 * A reshuffling client: an order of each epoch for the rows, chosen by the update
 * (`assess::epoch_orders`; not necessarily the client's); None for a client in a known order.
 */
orders?: EpochOrders, 
/**
 * FedSGD among a crowded span's rows: the rows whose gradients' sum the update picks
 * (`assess::span_pursuit`), tried before the rows one at a time; None where it did not run.
 */
pursuit?: Pursuit, };

/**
 * The ensemble run again from the rows the update chose, pooled and chosen in turn.
 */
export type Rerun = { 
/**
 * 1 − cos of the rerun's rows (after its own choice) against the observed update; the first
 * rows' is the choice's `fit_after`.
 */
fit: number, 
/**
 * Whether its rows are the report's: only where they fit better.
 */
kept: boolean, 
/**
 * A reshuffling client's: the orders the rerun's own pooling chose for its rows (which
 * stand as the rerun's first epoch visits them, not as the first rows do).
 */
orders?: EpochOrders, };

/**
 * Orders of a reshuffling client's epochs for the reconstruction's rows, as the update chose
 * them: the layout in which the attack replays the rows best, not necessarily the client's.
 */
export type EpochOrders = { 
/**
 * `order[e][j]`: the reconstruction's row the replay visits j-th in epoch e.
 */
order: Array<Array<number>>, 
/**
 * 1 − cos of the pooled rows in the orders the best member's epoch copies gave, and in the
 * orders after rows traded places (the choice's `fit_before`).
 */
fit_proposed: number, fit: number, 
/**
 * Client updates simulated for them.
 */
simulations: number, };

/**
 * The batch picked among the span's rows by the update's sum (`assess::span_pursuit`).
 */
export type Pursuit = { 
/**
 * What the picks' gradients leave of the update (B·G), over its norm, as the search tracked it.
 */
residual: number, 
/**
 * 1 − cos of the picked rows' simulated update against the observed one.
 */
fit: number, 
/**
 * Whether they replaced the pooled rows: only where they fit better, within
 * `UPDATE_FIT_THRESHOLD`, and the choice searched.
 */
kept: boolean, 
/**
 * Points of the span's rows and lines that the row test read as rows of the batch, each
 * with its label (`assess::row_test`); None where the test did not hold (the first layer's
 * rank uncertain, or more than one direction free).
 */
placed?: number, 
/**
 * Whether the picks were among those points (their sum fitted the update better than the
 * span's rows').
 */
from_placed: boolean, 
/**
 * Whether the picks were among the rows of the span of every direction the first layer's
 * update shows above the noise its tail shows (`Setup::span_of_every_direction`): they
 * fitted the update better than the picks among the determined span's rows.
 */
every_direction: boolean, 
/**
 * Whether the picks, points of the span's lines, stand where the span's search put them
 * rather than at each line's point nearest the pooled row: they fitted the update better.
 */
on_lines: boolean, };

/**
 * What a simulated FedSGD client's update shows of its own batch (`assess::seen_rows`): the
 * rows whose gradient shows in it, and the cells the attack got right on those and on the
 * others. A row the update does not show is one no attack on this update can tell from any row
 * the network is as sure of: the figure bounds every attacker, not only this one.
 */
export type RowsShown = { 
/**
 * The batch's rows, and those whose gradient shows in the update (the batch's own rows
 * fit it less well without the row, beyond its float32 rounding).
 */
rows: number, shown: number, 
/**
 * Share of cells right on the rows shown and on the others (null where there are none).
 */
accuracy_shown: number | null, accuracy_hidden: number | null, };

/**
 * What a FedAvg client's update shows of its own batch, cell by cell (`assess::cells_shown`):
 * the cells whose move just past their scoring tolerance moves the client's replayed update
 * clear of what its own rows leave, and the cells right on those and on the others. A cell the
 * update does not show is one no attack on it can pin down at the scoring's resolution; where
 * it shows nearly every cell and the attack is near guessing, the attack, not the update, ran
 * out.
 */
export type CellsShown = { 
/**
 * The batch's cells, those moved (within their column's range; a random draw of them where
 * `drawn`), and those shown.
 */
cells: number, tested: number, shown: number, 
/**
 * ‖replay − update‖ / ‖update‖ of the client's own rows, against which each move is measured,
 * and the least gap a move must add beyond it besides (float32's rounding, over ten times).
 */
own_gap: number, floor: number, 
/**
 * The least change of that gap among the moves that show (null where none shows).
 */
least_shown: number | null, 
/**
 * Share of cells right among those shown and among the others moved (null where there are
 * none).
 */
accuracy_shown: number | null, accuracy_hidden: number | null, 
/**
 * Whether the cells moved are a random draw (replaying every cell would take too long).
 */
drawn: boolean, 
/**
 * Whether the client reshuffles its rows and was replayed in its own orders, which the
 * server is not told: the cells the update pins given the order.
 */
own_orders: boolean, };

/**
 * What an Adam client's update says outright: which categories its rows hold
 * (`attack::priors::categories_held`). Read, not proved: measured right on every category of 40
 * classifiers' clients, and checked here against the client's rows where they are at hand. A
 * category not shown is held by no row, or only by rows whose first-layer gradient is too small
 * for the update to show: a regression's row whose label the network nearly predicts (the Adult
 * sample's hours-per-week, seed 0: one such category of 98).
 */
export type CategoriesHeld = { features: Array<FeatureHeld>, 
/**
 * Categories shown held, of all the encoding's.
 */
held: number, categories: number, 
/**
 * Against the client's rows, where at hand: categories read wrongly (held but absent, or
 * absent but held); null without them.
 */
misread: number | null, 
/**
 * Of those, the categories some row holds that the update does not show held.
 */
missed: number | null, 
/**
 * Rows whose every category was then read by the units it reaches
 * (`attack::priors::rows_by_category`) and put in the reconstruction (provenance `read`).
 */
rows_read: number, 
/**
 * What the rows read gained over the marginals' guess on shadow clients, less two standard
 * errors, as a share of cells (`assess::category_rows`): they are put in only above 0; null
 * where no fallback ran.
 */
read_gain: number | null, };

/**
 * One categorical feature's categories the update shows held.
 */
export type FeatureHeld = { feature: string, 
/**
 * The categories some row holds, in the encoding's order.
 */
held: Array<string>, 
/**
 * The feature's categories in the encoding.
 */
of: number, };

/**
 * What a report says of a determined column.
 */
export type ReadFromCategory = { 
/**
 * The continuous column...
 */
column: string, 
/**
 * ...read from this categorical one...
 */
by: string, 
/**
 * ...whose categories (this many of them held by the table's rows) each fix its value.
 */
categories: number, 
/**
 * log₁₀ of the chance that a column independent of the category would show it.
 */
log10_chance: number, };

/**
 * How a reconstructed row was obtained.
 */
export type Provenance = "proved" | "consistent" | "read" | "ensemble" | "prior";

/**
 * The rows of one provenance and how many of their cells are right.
 */
export type ProvenanceGroup = { provenance: Provenance, rows: number, accuracy: number, 
/**
 * Why the group's rows are not proved, with how many rows each reason holds (consistent
 * rows only; empty otherwise).
 */
reasons: Array<ReasonCount>, };

/**
 * One reason a row is not proved, and how many rows of the batch it holds.
 */
export type ReasonCount = { why: string, rows: number, };

/**
 * Rows of one provenance, and why those of a consistent group are not proved.
 */
export type ProvenanceCount = { provenance: Provenance, rows: number, reasons: Array<ReasonCount>, };

/**
 * How well the best reconstruction explains the update it came from: without the client's rows,
 * the one check of the encoding, the model and the recipe stated that the server also has.
 */
export type UpdateFit = { 
/**
 * 1 − cos between the update the reconstructed rows (with the labels used) would send from
 * the same network under the stated recipe, and the update received: 0 is a perfect fit.
 */
distance: number, threshold: number, 
/**
 * distance ≤ threshold.
 */
fits: boolean, 
/**
 * What that means, in a sentence (the text report's and the page's).
 */
says: string, };

/**
 * The attribute attack as the report states it.
 */
export type AttributeReport = { 
/**
 * The sensitive column and how many values it takes.
 */
column: string, values: number, 
/**
 * Whether the updates were matched by squared error (the L2 baseline) rather than cosine.
 */
l2: boolean, 
/**
 * Share of the client's rows whose sensitive value the attack got right.
 */
accuracy: number, 
/**
 * What an attacker gets without the update: a uniform guess (1/K), the public split's most
 * frequent value, and a classifier trained on the public split.
 */
random: number, marginal: number, public_classifier: number, 
/**
 * Rows of the public split the baselines learnt from.
 */
public_rows: number, 
/**
 * The attack with the public classifier as a prior: per row the value maximising
 * 2·log p̄_attack + log p_public (p̄: the members' mean probability; see `combine`). An attacker holding public
 * data would use both; where the update says little (large clients) the prior decides.
 */
with_public_prior: number, 
/**
 * With unknown membership: how well the server told the client's rows from the others.
 */
membership: MembershipReport | null, };

export type AttackSpec = { "kind": "tableak" } & TableakSettings | { "kind": "cosine" } | { "kind": "dlg" } | { "kind": "random" } | { "kind": "attribute" } & AttributeSettings | { "kind": "cafe" } & CafeSettings;

/**
 * One attack as the engine offers it.
 */
export type AttackInfo = { 
/**
 * The `attack` option's value.
 */
name: AttackKind, label: string, 
/**
 * One sentence for people: what it does and whom it stands for.
 */
summary: string, 
/**
 * The protocols it takes; the first is the one it faces unless told otherwise.
 */
protocols: Array<ProtocolKind>, 
/**
 * Whether it runs optimisation steps (`iterations`, a loss curve, progress in steps).
 */
inverts: boolean, 
/**
 * Whether it attacks an update received from elsewhere.
 */
received: boolean, 
/**
 * Its own settings, beyond those every attack shares.
 */
settings: Array<SettingInfo>, };

/**
 * One setting of an attack, as an option of `RunOptions`.
 */
export type SettingInfo = { 
/**
 * The option's name in `RunOptions` (camelCase).
 */
option: string, label: string, hint: string, input: SettingInput, };

/**
 * What a setting takes, and its default.
 */
export type SettingInput = { "kind": "whole", min: number, max: number, default: number, defaultFedavg: number, quick: number | null, } | { "kind": "choice", values: Array<string>, default: string, } | { "kind": "column" } | { "kind": "flag", default: boolean, };

/**
 * TabLeak (Vero et al.): a softmax-relaxed ensemble, matched and median-pooled, with entropies.
 */
export type TableakSettings = { 
/**
 * Members of the ensemble (per epoch-prior candidate).
 */
ensemble: number, 
/**
 * On FedAvg over reshuffled rows: the epoch prior's weight.
 */
epoch_prior: EpochPrior, 
/**
 * Keep the dummy rows in the span of the first layer's gradient and prove rows from its ReLU
 * pattern (`attack::priors::subspace`, `attack::priors::activity`); both switch themselves off where the
 * span says nothing.
 */
subspace: boolean, 
/**
 * Certify rows by the second layer's span of activations (`attack::priors::activation_span`), on
 * FedSGD where the span leaves checks; it switches itself off elsewhere.
 */
second_layer: boolean, 
/**
 * Under a defence that perturbs the update (noise, fake gradients), fall back cell by cell to
 * the table's marginals where a shadow client the server simulates shows the ensemble's cells
 * score below them (`assess::fallback`).
 */
prior_fallback: boolean, 
/**
 * On FedAvg in a known order, change pooled rows to their members' rows, their members'
 * cells or the first layer's span's rows where the client's simulated update fits the
 * observed one better (`assess::update_choice`), then run the ensemble again from the rows
 * chosen and keep its rows where they fit better still (`assess::refine`). On FedSGD the
 * same where the pooled rows, or the rows the update's sum picks among a crowded span's
 * (`assess::span_pursuit`), fit the update (1 − cos ≤ 0.05), the span's rows tried first;
 * and run it again on what the rows the update holds leave of it, for the rows left
 * (`assess::inverted_left`).
 */
update_choice: boolean, 
/**
 * Run the ensemble by the stopping rule where no proof can reach the batch
 * (`assess::stopping`): up to `ensemble` members, stopping once a round leaves the cells it
 * is sure of as they were. False where the caller fixed the ensemble.
 */
stop_members: boolean, };

/**
 * Attribute reconstruction (Lyu & Chen): the server knows every column of the client's rows but
 * `column` and relaxes that one alone.
 */
export type AttributeSettings = { 
/**
 * The sensitive column the server does not know (categorical).
 */
column: string, 
/**
 * Match the updates by squared error instead of cosine (the paper's L2 baseline).
 */
l2: boolean, 
/**
 * Whether the server knows which rows the client trained on (`attack::attribute::membership`).
 */
membership: Membership, 
/**
 * Rounds the server observes (the first ones): in each the client trains from the model the
 * previous round's update left, and the attack sums the rounds' losses. 1 by default.
 */
rounds: number, 
/**
 * Members averaged.
 */
ensemble: number, };

/**
 * Whether the server knows which rows the client trained on.
 */
export type Membership = "known" | "unknown";

/**
 * Membership as the report states it.
 */
export type MembershipReport = { 
/**
 * "span" (distance to the first layer's span) or "gradient variance" (the paper's mixture).
 */
method: string, 
/**
 * Candidate rows the server held (the client's and as many others).
 */
candidates: number, 
/**
 * Share of the rows taken as the client's that were: precision and recall alike, as the
 * server takes exactly as many as the client used.
 */
accuracy: number, 
/**
 * The mixture's two means and weights on the score's logarithm (the lower is the members').
 */
means: [number, number], weights: [number, number], };

/**
 * CAFE (Jin et al.) on vertically split rows: `rows` rows over `rounds` rounds of `batch_size`
 * indices each.
 */
export type CafeSettings = { 
/**
 * Parties holding column groups of the rows.
 */
parties: number, 
/**
 * Rows the parties share (the attack recovers all of them).
 */
rows: number, 
/**
 * Rounds the server observes, each on `batch_size` indices it chooses.
 */
rounds: number, 
/**
 * CAFE's countermeasure: each party sends fake gradients, the closest of this many draws.
 */
fake_gradients: number | null, };

/**
 * CAFE as the report states it.
 */
export type CafeReport = { parties: number, 
/**
 * The parties' rows (all recovered), the rounds observed and the indices per round.
 */
rows: number, rounds: number, batch: number, 
/**
 * Rows at least one round sampled.
 */
covered: number, 
/**
 * Relative error of step I's V and of step II's X against the simulation's own (‖·‖_F).
 */
step1_error: number, step2_error: number, 
/**
 * With fake gradients: the draws, and the training loss over the rows after `rounds` SGD
 * steps (lr `TRAINING_LR`) with the true gradients and with the fake ones.
 */
fake_gradients: number | null, training_loss: number | null, training_loss_fake: number | null, };

/**
 * The (ε, δ) of one release.
 */
export type Privacy = { 
/**
 * ε of one release; null when the update is not clipped (unbounded sensitivity: no
 * guarantee at all).
 */
epsilon: number | null, delta: number, 
/**
 * The noise multiplier σ each client adds (noise std / clipping norm).
 */
noise_multiplier: number, 
/**
 * Clients averaged before the server sees the update; ε is at multiplier σ√clients.
 */
clients: number, };

/**
 * What a client's data is protected by over a run of rounds.
 */
export type OverRounds = { noise_multiplier: number, sample_rate: number, rounds: number, delta: number, 
/**
 * ε after every round, by RDP accounting with amplification by sampling (what Opacus and
 * TensorFlow Privacy report).
 */
epsilon: number, 
/**
 * The RDP order that gives it.
 */
order: number, 
/**
 * ε of one round by the same accountant.
 */
per_round: number, 
/**
 * ε of one release alone, exactly (the analytic Gaussian mechanism, no sampling).
 */
per_release: number, 
/**
 * The rounds the server expects to see the client in (⌈q·T⌉).
 */
releases_seen: number, 
/**
 * ε against the server, which knows whom it sampled: the releases it sees, composed by
 * RDP without amplification.
 */
epsilon_against_server: number, };

export type Activation = { "kind": "relu" } | { "kind": "leaky_relu", 
/**
 * The slope below zero (PyTorch's `negative_slope`, default 0.01).
 */
slope: number, } | { "kind": "gelu" } | { "kind": "tanh" } | { "kind": "sigmoid" };

export type Head = "softmax" | "sigmoid" | "linear";

/**
 * What the client's network predicts: a label's class, or a continuous label.
 */
export type Task = "classification" | "regression";

/**
 * A regression's labels as the attack reconstructed them, against the truth.
 */
export type RegressionLabels = { label: string, 
/**
 * A label counts as right within this distance (0.319 of its std, as a continuous cell).
 */
tolerance: number, 
/**
 * Share of rows whose reconstructed label is within the tolerance, and the mean distance.
 */
within_tolerance: number, mean_absolute_error: number, 
/**
 * The same for labels drawn from the table (what the server knows without the update).
 */
random_within_tolerance: number, random_mean_absolute_error: number, 
/**
 * Whether the labels were read off the last layer exactly (every row proved,
 * `attack::priors::row_labels::read_values`) rather than pooled from the ensemble.
 */
read_off_update: boolean, 
/**
 * Rows whose label is the table's likeliest value (`baselines::likeliest_value`) rather than
 * the update's: on a shadow client the guess scored higher (never a proved row's).
 */
prior_labels: number, 
/**
 * On that shadow client, the share of labels within tolerance from the update and from the
 * guess (null where no shadow client ran).
 */
shadow_update_within_tolerance: number | null, shadow_prior_within_tolerance: number | null, };

/**
 * A part an attack would compose that the client's model rules out, and why: what the report
 * says instead of leaving it silently off.
 */
export type NotApplied = { part: string, why: string, };

/**
 * What to account, as the npm package's `Leakscope.privacy` takes it.
 */
export type PrivacyQuery = { noiseMultiplier: number, 
/**
 * Default 1: every client in every round.
 */
sampleRate?: number, rounds: number, 
/**
 * Default `privacy::DEFAULT_DELTA`.
 */
delta?: number, 
/**
 * Canaries to run through the same mechanism, for an ε measured beside the accountant's
 * (`client::canary`; null: none).
 */
canaries?: CanaryQuery, };

/**
 * The canaries to insert and hold out.
 */
export type CanaryQuery = { 
/**
 * Canaries inserted into the aggregation (k).
 */
inserted: number, 
/**
 * Canaries drawn alike and never inserted (k'; default k).
 */
heldOut?: number, 
/**
 * The model's number of parameters d. The estimate reads each canary with the others taken
 * out, but the model they train carries them all: d should be well above k·T/σ².
 */
dimension: number, seed?: number, };

/**
 * What `privacy` answers: the accountant's figures and, where canaries were asked for, the ε
 * they measure on the Gaussian mechanism alone.
 */
export type PrivacyAnswer = { canaries: CanaryAudit | null, noise_multiplier: number, sample_rate: number, rounds: number, delta: number, 
/**
 * ε after every round, by RDP accounting with amplification by sampling (what Opacus and
 * TensorFlow Privacy report).
 */
epsilon: number, 
/**
 * The RDP order that gives it.
 */
order: number, 
/**
 * ε of one round by the same accountant.
 */
per_round: number, 
/**
 * ε of one release alone, exactly (the analytic Gaussian mechanism, no sampling).
 */
per_release: number, 
/**
 * The rounds the server expects to see the client in (⌈q·T⌉).
 */
releases_seen: number, 
/**
 * ε against the server, which knows whom it sampled: the releases it sees, composed by
 * RDP without amplification.
 */
epsilon_against_server: number, };

/**
 * Both threat models' estimates, and what they were measured on.
 */
export type CanaryAudit = { canaries: number, held_out: number, dimension: number, rounds: number, every_round: CanaryEstimate, final_model: CanaryEstimate, 
/**
 * What the canaries ran in: "the Gaussian mechanism alone" or a training run's name.
 */
mechanism: string, };

/**
 * The ε one threat model's canaries give.
 */
export type CanaryEstimate = { threat: Threat, 
/**
 * The inserted canaries' mean statistic μ: their separation from the null (mean 0), in the
 * null's standard deviations (1 exactly).
 */
mu: number, 
/**
 * ε(δ) of the Gaussian mechanism with that separation.
 */
epsilon: number, 
/**
 * Its 95 % interval; the upper end is null where the canaries separate completely.
 */
interval: [number | null, number | null], delta: number, 
/**
 * Every inserted canary above every held-out one: ε is beyond what these canaries measure,
 * and `epsilon` is a floor.
 */
beyond_range: boolean, 
/**
 * Standard deviation of the inserted canaries' statistic (1 for the Gaussian mechanism; far
 * from 1, the fit to a Gaussian mechanism is rough).
 */
spread: number, 
/**
 * The held-out canaries' mean and standard deviation, which the null says are 0 and 1...
 */
held_out_mean: number, held_out_std: number, 
/**
 * ...and whether they are, within 4 standard errors.
 */
null_holds: boolean, 
/**
 * The aggregate held nothing but the canaries (no noise, no client): each is seen exactly,
 * ε is unbounded, and `epsilon` is only a large floor.
 */
unbounded: boolean, };

/**
 * What the server is taken to see.
 */
export type Threat = "every_round" | "final_model";

export type AttackConfig = { 
/**
 * The attack, with its own settings.
 */
attack: AttackSpec, 
/**
 * FedSGD's batch, or a FedAvg client's rows; CAFE's indices per round.
 */
batch_size: number, protocol: Protocol, 
/**
 * Optimisation steps of the attacks that invert.
 */
iterations: number, seed: number, labels: LabelMode, hidden: Array<number>, 
/**
 * The nonlinearity between the client's layers (ReLU by default).
 */
activation: Activation, 
/**
 * The output layer and its loss (softmax cross-entropy by default).
 */
head: Head, 
/**
 * Epochs of ordinary training on the whole table (`client::training`) before the attacked
 * round; 0 attacks the network at initialisation, as the paper does.
 */
training_epochs: number, 
/**
 * Clients whose updates are averaged before the server sees them (what secure aggregation
 * reveals): the attack faces `clients × batch_size` rows. Each client applies `defence` to
 * its own update first.
 */
clients: number, defence: Defence | null, 
/**
 * None: the attack's own default (`Attack::default_optimiser`).
 */
optimiser: Optimiser | null, 
/**
 * Read the loss back (and report progress) every this many steps. On a GPU the engine may
 * report less often, so that a slow readback never stalls the device (see `attack::cadence`).
 */
report_every: number, 
/**
 * Members whose loss has stopped improving stop (`attack::inversion::driver::EARLY_STOP`).
 */
early_stop: boolean, };

/**
 * What the client sends the server (SPEC §3).
 */
export type Protocol = { "kind": "fedsgd" } | { "kind": "fedavg" } & LocalTraining;

/**
 * A FedAvg client's local training.
 */
export type LocalTraining = { epochs: number, 
/**
 * Rows per local step.
 */
local_batch: number, 
/**
 * The optimiser's step size.
 */
lr: number, 
/**
 * The optimiser (plain SGD unless stated).
 */
optimizer: ClientOptimizer, 
/**
 * The order the client's rows come in, epoch after epoch.
 */
order: LocalOrder, };

/**
 * The order of a client's rows in its local epochs.
 */
export type LocalOrder = "given" | "shuffled";

/**
 * The client's optimiser and its settings (`torch.optim`'s names and defaults); the step size is
 * `LocalTraining::lr`. Fields the kind does not use are ignored (momentum for Adam, betas for SGD).
 */
export type ClientOptimizer = { kind: OptimizerKind, 
/**
 * SGD's momentum μ (0: none).
 */
momentum: number, dampening: number, nesterov: boolean, 
/**
 * SGD and Adam: wd·θ added to the gradient; AdamW: θ shrunk by lr·wd before the step.
 */
weight_decay: number, 
/**
 * Adam's β1, β2.
 */
betas: [number, number], 
/**
 * Adam's ε.
 */
eps: number, };

/**
 * Which `torch.optim` class.
 */
export type OptimizerKind = "sgd" | "adam" | "adamw";

/**
 * Adam fed the sign of the gradient, as the reference runs it.
 */
export type Optimiser = { lr: number, beta1: number, beta2: number, eps: number, sign: boolean, };

export type Defence = { 
/**
 * Clipping norm C; without it no clipping happens and noise is σ·N(0, I).
 */
clip: number | null, 
/**
 * Noise multiplier σ (the reference's "DP" knob: 0.001, 0.01, 0.1).
 */
noise: number, 
/**
 * CAFE's countermeasure: send a random Gaussian vector rearranged into the true update's
 * element order, the closest (in sorted values) of this many draws. None: off.
 */
fake_gradients: number | null, 
/**
 * The δ at which the report states the (ε, δ) of one release.
 */
delta: number, };

/**
 * The backend that really ran, and why: what the page's badge, the report and the CLI show.
 */
export type BackendInfo = { kind: BackendKind, engine: StepEngine, 
/**
 * The device or adapter, as the driver or the browser names it.
 */
adapter: string | null, 
/**
 * A software adapter (SwiftShader, lavapipe, …): correct, far slower than a GPU.
 */
software: boolean, 
/**
 * Why this backend runs rather than another, when there was a choice (auto) or a fallback.
 */
fallback_reason: string | null, 
/**
 * Workers the ensemble was split over (browsers; 1 natively, where threads share one process).
 */
workers: number, 
/**
 * CPU threads per worker.
 */
threads: number, 
/**
 * What `auto` measured before choosing (empty when nothing was timed).
 */
rates: Array<MeasuredRate>, 
/**
 * One line for people, e.g. "wgpu (CubeCL kernels; WebGPU: nvidia ampere)".
 */
label: string, };

/**
 * Where an attack runs.
 */
export type BackendKind = "cpu" | "wgpu" | "cuda";

/**
 * What computes the inversion's steps on that backend.
 */
export type StepEngine = "definition" | "cpu-kernel" | "cube-kernels";

/**
 * A measured rate of the attack's steps on one backend, for the problem at hand.
 */
export type MeasuredRate = { kind: BackendKind, adapter: string | null, 
/**
 * Steps of the whole ensemble per second (on the CPU: with the ensemble split over `workers`).
 */
steps_per_second: number, 
/**
 * Steps timed (after one warm-up step).
 */
steps: number, workers: number, 
/**
 * Why this backend could not be timed (its device failed), when it could not.
 */
error: string | null, };

/**
 * What an engine runs on: the backend(s) it holds, and for `auto` the candidates it times.
 */
export type EngineInfo = { 
/**
 * "cpu", "webgpu" or "auto".
 */
choice: string, 
/**
 * The backends this engine can run on, the CPU last.
 */
candidates: Array<BackendInfo>, 
/**
 * Why a candidate is missing (no WebGPU adapter, its device failed to start).
 */
fallback_reason: string | null, 
/**
 * One line for people.
 */
label: string, };

/**
 * The engine's limits, for a page to check input before handing it over.
 */
export type Limits = { 
/**
 * Largest CSV the engine reads, in bytes.
 */
maxCsvBytes: number, 
/**
 * Most workers one ensemble is split over.
 */
maxWorkers: number, 
/**
 * Most classes a label has without a warning (more looks like a wrong column).
 */
maxLabelClasses: number, };

/**
 * Which members of the ensemble one call inverts. A page splits the ensemble over several workers
 * (wasm has one thread each); every member starts from the same draw however it is split.
 */
export type MemberRange = { first: number, count: number, };

/**
 * How a page runs one attack: which backend, the measurements still to take, and the shares of a
 * split CPU run.
 */
export type RunPlan = { 
/**
 * None while `probe` has measurements to take.
 */
kind: BackendKind | null, 
/**
 * Time the GPU on the whole problem, and one CPU worker on `cpu_share`, then `decide`.
 */
probe: Probe | null, 
/**
 * The members each CPU worker inverts (one share: no split).
 */
shares: Array<MemberRange>, 
/**
 * Helper workers the run needs.
 */
helpers: number, };

export type Probe = { warmup: number, 
/**
 * Steps timed on one CPU worker's share (`PROBE_STEPS`)...
 */
steps: number, 
/**
 * ...and on the GPU (`PROBE_GPU_STEPS`).
 */
gpu_steps: number, 
/**
 * What the GPU times: the whole ensemble.
 */
whole: MemberRange, 
/**
 * The share one CPU worker times: what each of the workers would run.
 */
cpu_share: MemberRange, };

/**
 * What `auto` chose and why.
 */
export type Decision = { kind: BackendKind, reason: string, rates: Array<MeasuredRate>, };

/**
 * The grid of an audit. An empty list leaves its study out. Each study varies one thing from the
 * reference setting (FedSGD, a batch of `reference_batch` rows, one client, no defence, the
 * network at initialisation); everything else (the table's reading, the attack's steps, members
 * and network, the first seed) comes from `run`.
 */
export type AuditOptions = { run: RunOptions, attacks: Array<AttackKind>, 
/**
 * Batches per setting: batch k is drawn with seed `run.seed + k`, the same for every attack.
 */
batches: number, 
/**
 * The batch (FedSGD) or client's rows (FedAvg) the studies other than batch size hold fixed.
 */
referenceBatch: number, batchSizes: Array<number>, 
/**
 * Gaussian noise multipliers σ, each with clipping to `clip`.
 */
noiseScales: Array<number>, clip: number, 
/**
 * Clients averaged before the server sees the update (secure aggregation).
 */
clients: Array<number>, 
/**
 * FedAvg: local epochs × local batch sizes (client lr from `run.client_lr`).
 */
localEpochs: Array<number>, localBatches: Array<number>, 
/**
 * Epochs of training on the table before the attacked round.
 */
trainingEpochs: Array<number>, 
/**
 * FedAvg: the client's rows (its whole local dataset), each at every one of `client_epochs`
 * in local batches of `client_batch`, trained as `run` states (optimiser, order): at what
 * size the table stops leaking through this recipe. Sizes above the table's rows are left out.
 * Options that leave these out run no such study (a grid written before it keeps its
 * cells); the CLI's, the page's and Python's grids start from `default()`/`quick()`.
 */
clientRows: Array<number>, clientEpochs: Array<number>, clientBatch: number, 
/**
 * Rounds of training the noise study's ε is accounted over (`client::accountant`).
 */
rounds: number, 
/**
 * The chance that a client takes part in a round, for that account.
 */
sampleRate: number, 
/**
 * Canaries run through each noise setting's DP-FedAvg over those rounds, as many more held
 * out (`client::canary`): an ε measured beside the accountant's. 0 runs none.
 */
canaries?: number, };

/**
 * How an audit runs over `workers` workers: its cells, dearest first (so the last cell to finish
 * is a cheap one), and how many workers take part.
 */
export type AuditPlan = { cells: Array<PlannedCell>, workers: number, };

/**
 * One cell as a dispatcher sees it.
 */
export type PlannedCell = { index: number, 
/**
 * "B = 32 tableak, batch 2".
 */
label: string, attack: AttackKind, 
/**
 * Its share of the whole audit's work (the shares sum to 1).
 */
weight: number, steps: number, };

/**
 * A cell being run: its index and step.
 */
export type RunningCell = { index: number, step: number, 
/**
 * The steps of all the cell's attack's stages (its progress's `of`; the plan's steps where
 * absent).
 */
of?: number, };

/**
 * Where an audit is: cells done of the share, and the current cell's progress.
 */
export type AuditProgress = { done: number, cells: number, 
/**
 * The cell running: its setting and attack.
 */
current: string, step: number, steps: number, 
/**
 * The share of the whole work done, 0..1, weighting each cell by its cost.
 */
fraction: number, };

/**
 * What one cell measured (a report without its rows).
 */
export type CellResult = { index: number, accuracy: number, categorical: number | null, continuous: number | null, perFeature: Array<number>, 
/**
 * Mean ensemble entropy per feature (null without an ensemble).
 */
perFeatureEntropy: Array<number | null>, 
/**
 * Rows drawn from the marginals, scored on the same batch.
 */
randomAccuracy: number, 
/**
 * The table's guess on the same batch (`Report::table_baseline`), where the server holds
 * the table: what an attack whose every cell falls back scores there.
 */
tableAccuracy: number | null, epsilon: number | null, modelAccuracy: number | null, epochPrior: number | null, 
/**
 * Share of the cells moved that the update shows on its own (`report::shown::CellsShown`;
 * null where the check does not apply: FedSGD, noise, orders not known).
 */
cellsShown: number | null, seconds: number, 
/**
 * What ran it (shards may run on different machines).
 */
backend: string, };

/**
 * An audit with what a page shows of it: the table as Markdown and the plots.
 */
export type AuditReport = { audit: Audit, markdown: string, svgs: Array<NamedSvg>, };

/**
 * One plot of an audit.
 */
export type NamedSvg = { 
/**
 * The file stem the CLI writes it under ("batch-size", "noise", …, "features").
 */
name: string, svg: string, };

export type Audit = { options: AuditOptions, table: TableInfo, rows: Array<SummaryRow>, 
/**
 * The attack the verdict, the column table and the plots read (`AuditOptions::judged`):
 * none when only guessing ran.
 */
judged: AttackKind | null, 
/**
 * Columns by what the judged attack recovers beyond guessing at the reference batch, most first.
 */
features: Array<FeatureLeak>, verdict: Verdict, cells: Array<CellResult>, 
/**
 * Compute time summed over the cells.
 */
seconds: number, };

/**
 * The table an audit ran on, as far as merging shards needs to know it is the same.
 */
export type TableInfo = { rows: number, label: string, encodedWidth: number, features: Array<FeatureHeader>, 
/**
 * The network's parameters on this table (the canaries' dimension); 0 in shares written
 * before canaries.
 */
parameters: number, };

/**
 * One setting of one study.
 */
export type Point = { "study": "batchSize", batch: number, } | { "study": "noise", sigma: number, } | { "study": "clients", clients: number, } | { "study": "fedavg", epochs: number, local_batch: number, } | { "study": "training", epochs: number, } | { "study": "clientRows", rows: number, epochs: number, };

/**
 * The studies, in the order an audit reports them.
 */
export type Study = "batchSize" | "noise" | "clients" | "fedavg" | "training" | "clientRows";

/**
 * One setting × attack over the audit's batches.
 */
export type SummaryRow = { point: Point, attack: AttackKind, batches: number, accuracy: MeanStd, categorical: MeanStd | null, continuous: MeanStd | null, 
/**
 * The same batches' marginal guess.
 */
random: MeanStd, 
/**
 * The better per batch of that and the table's guess (`CellResult::table_accuracy`): the
 * verdict's "guessing". An attack that learnt nothing scores the latter where it is held.
 */
guessing: MeanStd, 
/**
 * Noise: ε of one release at the defence's δ.
 */
epsilon: number | null, 
/**
 * Noise: ε over the audit's rounds and sampling rate (RDP), and against the server.
 */
overRounds: OverRounds | null, 
/**
 * Noise, where the audit ran canaries: the ε they measure over the same rounds.
 */
canaries: CanaryAudit | null, 
/**
 * Training: the network's accuracy on the table.
 */
modelAccuracy: number | null, 
/**
 * FedAvg: the mean share of the cells moved that each batch's update shows on its own.
 */
cellsShown: number | null, };

/**
 * Mean and sample standard deviation.
 */
export type MeanStd = { mean: number, std: number, };

/**
 * How much one column leaks: TabLeak at the reference setting against guessing.
 */
export type FeatureLeak = { feature: FeatureHeader, accuracy: number, random: number, 
/**
 * accuracy − random: what the update gives away beyond the marginals.
 */
gain: number, entropy: number | null, };

/**
 * Per study, the first setting (in the study's order) at which TabLeak's mean accuracy is within
 * `SAFE_MARGIN` of guessing on the same batches (`SummaryRow::guessing`); null when none is.
 */
export type Threshold = { study: Study, point: Point | null, 
/**
 * The largest setting tried when none was safe, or the safe one.
 */
at: Point, tableak: number, 
/**
 * Guessing there (`SummaryRow::guessing`).
 */
random: number, };

export type Verdict = { thresholds: Array<Threshold>, 
/**
 * The verdict in plain words, a sentence per finding.
 */
sentences: Array<string>, };

