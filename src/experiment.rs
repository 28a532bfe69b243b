//! One attack end to end: draw a batch, simulate the client, invert its update, pool and score.
use burn::tensor::{Tensor, TensorData};
use rand::{SeedableRng, rngs::StdRng, seq::index::sample};
use serde::{Deserialize, Serialize};

use crate::assess::{matching::Rule, matching::match_rows, pooling::pool, scoring::score};
use crate::attack::baselines::random_rows;
use crate::attack::cpu_kernel::{self, HostProblem};
use crate::attack::inversion::{InversionConfig, Objective, Optimiser, Problem, Progress, invert, member_losses};
use crate::attack::labels::{labels_from_counts, restore_counts};
use crate::attack::relax::{Layout, Relaxation};
use crate::client::defence::{self, Defence};
use crate::client::gradient::{ParamGrads, param_grads};
use crate::client::network::{Net, Params};
use crate::error::{Error, Result};
use crate::report::{Report, build_report};
use crate::runtime::{BackendChoice, Runtime, read_f32};
use crate::table::{Dataset, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttackKind {
    /// Softmax-relaxed ensemble, matched, median-pooled, with entropies (Vero et al.).
    Tableak,
    /// Cosine loss, no relaxation, one member (Geiping et al.).
    Cosine,
    /// Squared-error loss, no relaxation, one member (Zhu et al.).
    Dlg,
    /// Rows drawn from the table's marginals: what an attacker knows without the update.
    Random,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LabelMode {
    Known,
    Restored,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AttackConfig {
    pub attack: AttackKind,
    pub batch_size: usize,
    pub ensemble: usize,
    pub iterations: usize,
    pub seed: u64,
    pub labels: LabelMode,
    pub hidden: Vec<usize>,
    pub defence: Option<Defence>,
    /// None: the attack's own default (`AttackKind::default_optimiser`).
    pub optimiser: Option<Optimiser>,
    /// Read the loss back (and report progress) every this many steps.
    pub report_every: usize,
}

impl Default for AttackConfig {
    fn default() -> Self {
        AttackConfig {
            attack: AttackKind::Tableak,
            batch_size: 32,
            ensemble: 30,
            iterations: 1500,
            seed: 0,
            labels: LabelMode::Known,
            hidden: vec![100, 100],
            defence: None,
            optimiser: None,
            report_every: 25,
        }
    }
}

impl std::fmt::Display for AttackKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AttackKind::Tableak => "TabLeak",
            AttackKind::Cosine => "Cosine",
            AttackKind::Dlg => "DLG",
            AttackKind::Random => "Random",
        })
    }
}

impl AttackKind {
    /// TabLeak runs sign-Adam at lr 0.1: on 10 Adult batches each this recovered 98.9 % (B = 8) and
    /// 86.0 % (B = 32) against 94.4 % and 83.5 % at the reference's 0.06, whose runs at B = 8 sometimes
    /// had not converged by step 1500 (docs/fidelity.md). The baselines keep the reference's 0.06 so
    /// that they stay comparable with the published numbers.
    pub fn default_optimiser(self) -> Optimiser {
        match self {
            AttackKind::Tableak => Optimiser {
                lr: 0.1,
                ..Optimiser::default()
            },
            _ => Optimiser::default(),
        }
    }
}

impl AttackConfig {
    /// The optimiser this run uses.
    pub fn optimiser(&self) -> Optimiser {
        self.optimiser.unwrap_or_else(|| self.attack.default_optimiser())
    }

    pub fn validate(&self, dataset: &Dataset) -> Result<()> {
        let fail = |m: String| Err(Error::Config(m));
        if self.batch_size == 0 || self.batch_size > dataset.n() {
            return fail(format!(
                "batch size {} must be between 1 and the {} rows of the table",
                self.batch_size,
                dataset.n()
            ));
        }
        if self.ensemble == 0 || self.ensemble > 1000 {
            return fail(format!("ensemble size {} must be between 1 and 1000", self.ensemble));
        }
        if self.iterations == 0 && self.attack != AttackKind::Random {
            return fail("iterations must be at least 1".into());
        }
        if self.hidden.contains(&0) {
            return fail("hidden layer sizes must be positive".into());
        }
        let need = self.working_set_bytes(dataset);
        if need > MAX_WORKING_SET_BYTES {
            return fail(format!(
                "an ensemble of {} × a batch of {} rows needs about {:.1} GiB of memory for the attack; \
                 this engine allows {:.0} GiB: use fewer members or a smaller batch",
                self.ensemble,
                self.batch_size,
                need as f64 / GIB,
                MAX_WORKING_SET_BYTES as f64 / GIB
            ));
        }
        let lr = self.optimiser().lr;
        if !(lr > 0.0 && lr.is_finite()) {
            return fail(format!("learning rate {lr} must be a positive number"));
        }
        if let Some(d) = &self.defence
            && (d.noise < 0.0 || !d.noise.is_finite() || d.clip.is_some_and(|c| c <= 0.0 || !c.is_finite()))
        {
            return fail("defence: noise must be ≥ 0 and the clipping norm > 0".into());
        }
        Ok(())
    }
}

const GIB: f64 = (1u64 << 30) as f64;
/// What the attack may hold at once: a wasm32 tab has a 4 GiB address space; natively, stay well
/// inside a workstation's memory rather than swap.
#[cfg(target_arch = "wasm32")]
const MAX_WORKING_SET_BYTES: u64 = 2 << 30;
#[cfg(not(target_arch = "wasm32"))]
const MAX_WORKING_SET_BYTES: u64 = 16 << 30;

impl AttackConfig {
    /// How many members this attack inverts: the ensemble for TabLeak, one run for the single-run
    /// baselines, none for random guessing.
    pub fn members(&self) -> usize {
        match self.attack {
            AttackKind::Tableak => self.ensemble,
            AttackKind::Cosine | AttackKind::Dlg => 1,
            AttackKind::Random => 0,
        }
    }

    /// Bytes the CPU kernel allocates for the inversion (cpu_kernel::Workspace, Adam's state, the
    /// final relaxation): per row, the relaxed input and its companions and every layer's activations
    /// and their derivatives; per member, a copy of the parameter gradient.
    pub fn working_set_bytes(&self, dataset: &Dataset) -> u64 {
        let d = dataset.d() as u64;
        let mut sizes = vec![d];
        sizes.extend(self.hidden.iter().map(|&h| h as u64));
        sizes.push(dataset.classes.len() as u64);
        let (ins, outs): (u64, u64) = sizes
            .windows(2)
            .map(|w| (w[0], w[1]))
            .fold((0, 0), |a, w| (a.0 + w.0, a.1 + w.1));
        let params: u64 = sizes.windows(2).map(|w| w[0] * w[1] + w[1]).sum();
        let members = self.members() as u64;
        let per_row = 10 * d + 3 * outs + ins;
        4 * members * (self.batch_size as u64 * per_row + params)
    }
}

/// Independent streams derived from one seed, so that changing one part keeps the others.
fn seed_for(seed: u64, stream: u64) -> u64 {
    seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(stream.wrapping_mul(0xBF58_476D_1CE4_E5B9))
}

/// The batch a client holds for a given seed: B distinct rows of the table.
pub fn draw_batch(dataset: &Dataset, batch_size: usize, seed: u64) -> Vec<usize> {
    let mut rng = StdRng::seed_from_u64(seed_for(seed, 1));
    let mut rows = sample(&mut rng, dataset.n(), batch_size).into_vec();
    rows.sort_unstable();
    rows
}

fn onehot(labels: &[usize], classes: usize) -> Vec<f32> {
    let mut out = vec![0f32; labels.len() * classes];
    for (i, &c) in labels.iter().enumerate() {
        out[i * classes + c] = 1.0;
    }
    out
}

/// Host copy of a one-member gradient, tensor by tensor (weights first, then biases).
async fn read_grads(g: &ParamGrads) -> Result<Vec<Vec<f32>>> {
    let mut out = Vec::new();
    for t in g.tensors() {
        out.push(read_f32(t.clone()).await?);
    }
    Ok(out)
}

fn upload_grads(host: &[Vec<f32>], like: &ParamGrads, runtime: &Runtime) -> ParamGrads {
    let up =
        |v: &Vec<f32>, t: &Tensor<3>| Tensor::<3>::from_data(TensorData::new(v.clone(), t.dims()), &runtime.device);
    let layers = like.weights.len();
    ParamGrads {
        weights: like.weights.iter().zip(host).map(|(t, v)| up(v, t)).collect(),
        biases: like.biases.iter().zip(&host[layers..]).map(|(t, v)| up(v, t)).collect(),
    }
}

fn encode_rows(dataset: &Dataset, rows: &[Vec<Value>]) -> Vec<f32> {
    rows.iter().flat_map(|r| dataset.encode(r)).map(|v| v as f32).collect()
}

/// What the attack produced before scoring.
struct Reconstruction {
    rows: Vec<Vec<Value>>,
    entropy: Option<Vec<Vec<Option<f64>>>>,
    loss_curve: Vec<(usize, f64)>,
}

/// Which members of the ensemble one call inverts. A page splits the ensemble over several workers
/// (wasm has one thread each); every member starts from the same draw however it is split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberRange {
    pub first: usize,
    pub count: usize,
}

/// The inverted members of one range: relaxed rows, softmax probabilities and the mean loss curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Members {
    pub range: MemberRange,
    pub x: Vec<f32>,
    pub probs: Vec<f32>,
    pub loss_curve: Vec<(usize, f64)>,
}

/// Everything the server has before it inverts: the simulated client's update, the labels it uses,
/// and the batch it is scored against. Deterministic in the seed, so every worker derives the same.
struct Setup<'a> {
    runtime: &'a Runtime,
    dataset: &'a Dataset,
    config: &'a AttackConfig,
    truth: Vec<Vec<Value>>,
    params: Params,
    observed: Vec<Vec<f32>>,
    target_norm: f64,
    labels: Vec<usize>,
    label_accuracy: f64,
    layout: Layout,
    rules: Vec<Rule>,
    /// Ensemble size of this attack (1 for the single-run baselines, 0 for random).
    members: usize,
    relaxed: bool,
    objective: Objective,
    net: Net,
    target: ParamGrads,
    relaxation: Relaxation,
}

impl<'a> Setup<'a> {
    async fn new(runtime: &'a Runtime, dataset: &'a Dataset, config: &'a AttackConfig) -> Result<Setup<'a>> {
        config.validate(dataset)?;
        let device = &runtime.device;
        let (b, d, classes) = (config.batch_size, dataset.d(), dataset.classes.len());
        let batch = draw_batch(dataset, b, config.seed);
        let truth: Vec<Vec<Value>> = batch.iter().map(|&i| dataset.rows[i].clone()).collect();
        let true_labels: Vec<usize> = batch.iter().map(|&i| dataset.labels[i]).collect();

        // The client: an untrained network and the gradient of its loss on the private batch.
        let mut sizes = vec![d];
        sizes.extend(&config.hidden);
        sizes.push(classes);
        let params = Params::init(&sizes, seed_for(config.seed, 2));
        let net = Net::new(&params, device);
        let x_true = Tensor::<3>::from_data(TensorData::new(encode_rows(dataset, &truth), [1, b, d]), device);
        let y_true = Tensor::<2>::from_data(TensorData::new(onehot(&true_labels, classes), [b, classes]), device);
        let (g_true, _) = param_grads(&net, &x_true, &y_true);
        let mut observed = read_grads(&g_true).await?;
        if let Some(defence) = &config.defence {
            defence::apply(&mut observed, defence, seed_for(config.seed, 3));
        }
        if observed.iter().flatten().any(|v| !v.is_finite()) {
            return Err(Error::NonFinite("the client's gradient holds NaN or infinity".into()));
        }
        let target_norm = defence::l2_norm(&observed);
        let target = upload_grads(&observed, &g_true, runtime);

        // The server's view of the labels.
        let labels = match config.labels {
            LabelMode::Known => {
                let mut l = true_labels.clone();
                l.sort_unstable();
                l
            }
            LabelMode::Restored => {
                let last = observed[params.layers() - 1].clone();
                labels_from_counts(&restore_counts(&params, &last, b, seed_for(config.seed, 4)))
            }
        };
        let label_accuracy = {
            let count = |ls: &[usize], c: usize| ls.iter().filter(|&&l| l == c).count();
            (0..classes)
                .map(|c| count(&labels, c).min(count(&true_labels, c)))
                .sum::<usize>() as f64
                / b as f64
        };
        let layout = Layout::of(dataset);
        let (relaxed, objective) = match config.attack {
            AttackKind::Tableak => (true, Objective::Cosine),
            AttackKind::Cosine | AttackKind::Random => (false, Objective::Cosine),
            AttackKind::Dlg => (false, Objective::SquaredError),
        };
        Ok(Setup {
            runtime,
            dataset,
            config,
            truth,
            target_norm,
            labels,
            label_accuracy,
            rules: Rule::of(&dataset.features),
            relaxation: Relaxation::new(&layout, device),
            layout,
            members: config.members(),
            relaxed,
            objective,
            net,
            target,
            params,
            observed,
        })
    }

    fn problem(&self) -> Problem<'_> {
        Problem {
            net: &self.net,
            target: &self.target,
            target_norm: self.target_norm,
            onehot: onehot(&self.labels, self.dataset.classes.len()),
            classes: self.dataset.classes.len(),
            relaxation: self.relaxed.then_some(&self.relaxation),
            objective: self.objective,
        }
    }

    /// On the CPU the fused kernel runs the same math without per-op allocation (see cpu_kernel).
    fn host(&self) -> Option<HostProblem> {
        (self.runtime.kind == BackendChoice::Cpu).then(|| {
            HostProblem::new(
                &self.params,
                &self.observed,
                onehot(&self.labels, self.dataset.classes.len()),
                self.relaxed.then_some(&self.layout),
                self.objective,
            )
        })
    }

    fn check_range(&self, range: MemberRange) -> Result<()> {
        if range.count == 0 || range.first + range.count > self.members {
            return Err(Error::Config(format!(
                "members {}..{} are not within the {} of this attack",
                range.first,
                range.first + range.count,
                self.members
            )));
        }
        Ok(())
    }

    async fn invert(&self, range: MemberRange, progress: &mut dyn FnMut(&Progress) -> bool) -> Result<Members> {
        self.check_range(range)?;
        let inv_config = InversionConfig {
            members: range.count,
            first_member: range.first,
            batch: self.config.batch_size,
            d: self.dataset.d(),
            iterations: self.config.iterations,
            optimiser: self.config.optimiser(),
            seed: seed_for(self.config.seed, 6),
            report_every: self.config.report_every,
        };
        let inversion = match self.host() {
            Some(h) => cpu_kernel::invert(&h, &inv_config, progress).await?,
            None => invert(&self.problem(), &inv_config, &self.runtime.device, progress).await?,
        };
        Ok(Members {
            range,
            x: inversion.x,
            probs: inversion.probs,
            loss_curve: inversion.loss_curve,
        })
    }

    /// Join the inverted ranges into the whole ensemble, in member order.
    fn join(&self, mut parts: Vec<Members>) -> Result<Members> {
        parts.sort_by_key(|p| p.range.first);
        let len = self.config.batch_size * self.dataset.d();
        let mut next = 0;
        for p in &parts {
            self.check_range(p.range)?;
            if p.range.first != next || p.x.len() != p.range.count * len {
                return Err(Error::Config(format!(
                    "the inverted members do not cover the ensemble of {} once, in order",
                    self.members
                )));
            }
            next += p.range.count;
        }
        if next != self.members {
            return Err(Error::Config(format!(
                "{next} of {} members were inverted",
                self.members
            )));
        }
        // The mean loss over the whole ensemble: each range's mean weighted by its size.
        let loss_curve = parts[0]
            .loss_curve
            .iter()
            .enumerate()
            .map(|(k, &(step, _))| {
                let total: f64 = parts
                    .iter()
                    .map(|p| p.loss_curve.get(k).map_or(f64::NAN, |&(_, l)| l) * p.range.count as f64)
                    .sum();
                (step, total / self.members as f64)
            })
            .collect();
        Ok(Members {
            range: MemberRange {
                first: 0,
                count: self.members,
            },
            x: parts.iter().flat_map(|p| p.x.iter().copied()).collect(),
            probs: parts.iter().flat_map(|p| p.probs.iter().copied()).collect(),
            loss_curve,
        })
    }

    /// Match, pool and score the ensemble (None: the random baseline) into the report.
    async fn assess(&self, inverted: Option<Members>, seconds: f64) -> Result<Report> {
        let (dataset, config) = (self.dataset, self.config);
        let (b, d, members) = (config.batch_size, dataset.d(), self.members);
        // The random baseline: what an attacker knows without the update, scored on the same batch.
        let random_guess = random_rows(dataset, b, seed_for(config.seed, 5));
        let recon = match inverted {
            None => Reconstruction {
                rows: random_guess.clone(),
                entropy: None,
                loss_curve: Vec::new(),
            },
            Some(inversion) => {
                let decoded: Vec<Vec<Vec<Value>>> = (0..members)
                    .map(|m| {
                        (0..b)
                            .map(|i| dataset.decode(&inversion.x[(m * b + i) * d..(m * b + i + 1) * d]))
                            .collect()
                    })
                    .collect();
                if members == 1 {
                    Reconstruction {
                        rows: decoded.into_iter().next().unwrap(),
                        entropy: None,
                        loss_curve: inversion.loss_curve,
                    }
                } else {
                    // Anchor: the member whose projected (decoded and re-encoded) rows fit the update best.
                    let projected: Vec<f32> = decoded.iter().flat_map(|rows| encode_rows(dataset, rows)).collect();
                    let scores = match self.host() {
                        Some(h) => cpu_kernel::member_losses(&h, &projected),
                        None => member_losses(&self.problem(), projected, members, &self.runtime.device).await?,
                    };
                    let anchor = (0..members).min_by(|&a, &b| scores[a].total_cmp(&scores[b])).unwrap();
                    let perm: Vec<Vec<usize>> = decoded
                        .iter()
                        .map(|rows| match_rows(&self.rules, &decoded[anchor], rows))
                        .collect();
                    let pooled = pool(&self.layout, &inversion.x, &inversion.probs, members, b, &perm);
                    Reconstruction {
                        rows: pooled.rows.iter().map(|r| dataset.decode(r)).collect(),
                        entropy: Some(pooled.entropy),
                        loss_curve: inversion.loss_curve,
                    }
                }
            }
        };
        let scored = score(&self.rules, &self.truth, &recon.rows);
        let random = score(&self.rules, &self.truth, &random_guess);
        Ok(build_report(
            dataset,
            config,
            &self.runtime.backend,
            &self.truth,
            &recon.rows,
            recon.entropy.as_deref(),
            &scored,
            random.accuracy,
            self.label_accuracy,
            recon.loss_curve,
            seconds,
        ))
    }
}

/// Run one attack on one batch. `progress` is called now and then; returning false cancels.
pub async fn run_attack(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Report> {
    let start = web_time::Instant::now();
    let setup = Setup::new(runtime, dataset, config).await?;
    let inverted = match setup.members {
        0 => None,
        count => Some(setup.invert(MemberRange { first: 0, count }, progress).await?),
    };
    setup.assess(inverted, start.elapsed().as_secs_f64()).await
}

/// Invert a share of the ensemble only (see `MemberRange`); `assess_members` joins the shares.
pub async fn invert_members(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    range: MemberRange,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Members> {
    let setup = Setup::new(runtime, dataset, config).await?;
    setup.invert(range, progress).await
}

/// The report of an ensemble inverted in shares: the same as `run_attack` on one worker would give.
/// `seconds` is the wall time the caller measured across its workers.
pub async fn assess_members(
    runtime: &Runtime,
    dataset: &Dataset,
    config: &AttackConfig,
    parts: Vec<Members>,
    seconds: f64,
) -> Result<Report> {
    let setup = Setup::new(runtime, dataset, config).await?;
    let shares = parts.len();
    let joined = setup.join(parts)?;
    let mut report = setup.assess(Some(joined), seconds).await?;
    report.backend = format!("{}; ensemble split over {shares} workers", report.backend);
    Ok(report)
}
