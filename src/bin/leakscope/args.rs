//! The command line's option groups, shared by the subcommands: the table, the engine, the attack
//! and the client. Each turns into the library's `RunOptions`; defaults left unset are the
//! library's.
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use leakscope::client::activation::Activation;
use leakscope::client::head::{Head, Task};
use leakscope::config::EpochPrior;
use leakscope::options::ProtocolKind;
use leakscope::table::{ColumnKind, StatedModel};
use leakscope::{AttackKind, BackendKind, LabelMode, RunOptions, Runtime};

/// A command's outcome: its error is the message the terminal shows.
pub type CliResult<T> = Result<T, String>;

/// Which table, and how to read it.
#[derive(Args)]
pub struct TableArgs {
    #[arg(long)]
    pub csv: PathBuf,
    #[arg(long)]
    pub label: String,
    /// Force a column's kind: NAME=categorical or NAME=continuous (repeatable).
    #[arg(long = "kind", value_parser = parse_kind)]
    pub kinds: Vec<(String, ColumnKind)>,
    /// Leave a column out (repeatable).
    #[arg(long)]
    pub ignore: Vec<String>,
    /// Use a column the reading leaves out by default: an identifier or pandas' index column
    /// (`leakscope inspect` lists them; repeatable).
    #[arg(long)]
    pub include: Vec<String>,
    /// What the label is: classification (its values are classes, the default) or regression (a
    /// number on every row, predicted by one linear output under the squared error; the server
    /// does not know it and reconstructs it with each row).
    #[arg(long, value_parser = parse_task, default_value = "classification")]
    pub task: Task,
}

/// Where the steps run, and how much the terminal is told.
#[derive(Args)]
pub struct EngineArgs {
    #[arg(long, value_enum, default_value = "cpu")]
    pub backend: BackendArg,
    /// What computes the steps: the backend's accelerator (the fused CPU kernel, the GPU kernels) or
    /// the definition itself as burn tensor ops (slower; what the accelerators are tested against).
    #[arg(long, value_enum, default_value = "accelerated")]
    pub engine: EngineArg,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// The client's model, as the attack's settings and `leakscope encoding` take it.
#[derive(Args)]
pub struct ModelArgs {
    /// Hidden layer sizes of the client's network (default 100,100); `none`: no hidden layer
    /// (logistic regression).
    #[arg(long, value_parser = parse_hidden)]
    pub hidden: Option<Hidden>,
    /// Between the client's layers: relu (default), leaky_relu (slope 0.01; leaky_relu=0.2 for
    /// another), gelu, tanh or sigmoid. Anything but relu runs the definition, with the second
    /// layer's certificate and without the first layer's proof (which reads ReLU's pattern).
    #[arg(long, value_parser = parse_activation)]
    pub activation: Option<Activation>,
    /// The client's output layer: softmax (one logit per class under cross-entropy, the default)
    /// or sigmoid (one logit under binary cross-entropy, for a two-class label: PyTorch's
    /// BCEWithLogitsLoss). The fused CPU kernel runs it; on a GPU the definition does.
    #[arg(long, value_parser = parse_head)]
    pub head: Option<Head>,
}

impl ModelArgs {
    /// The parts given.
    pub fn stated(&self) -> StatedModel {
        StatedModel {
            hidden: self.hidden.as_ref().map(|h| h.0.clone()),
            activation: self.activation,
            head: self.head,
        }
    }
}

/// The attacker's settings.
#[derive(Args)]
pub struct AttackArgs {
    /// TabLeak's members, all of them run (default: the engine's, up to 30 on FedSGD by the
    /// ensemble's stopping rule, 15 on FedAvg; docs/results/ensemble.md).
    #[arg(long)]
    pub ensemble: Option<usize>,
    /// Optimisation steps (default 1500).
    #[arg(long)]
    pub iterations: Option<usize>,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The labels the server uses: the true ones (known, the default), or restored from the
    /// gradient (FedSGD).
    #[arg(long, value_enum)]
    pub labels: Option<LabelArg>,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Adam learning rate (default: 0.1 for TabLeak, the reference's 0.06 for the baselines).
    #[arg(long)]
    pub lr: Option<f64>,
    /// TabLeak on FedAvg over rows reshuffled every epoch (`--local-order shuffled`; in the given
    /// order every epoch shares one copy of the rows): the epoch prior's weight λ (default 0.1), or `auto` to choose it among
    /// the reference's grid by how well each candidate's reconstruction fits the update (no ground
    /// truth; 7× the work).
    #[arg(long, value_parser = parse_prior)]
    pub epoch_prior: Option<EpochPrior>,
    /// FedAvg: the client's learning rate, its optimiser's step (default 0.01).
    #[arg(long)]
    pub client_lr: Option<f64>,
    #[command(flatten)]
    pub recipe: RecipeArgs,
    /// Plain TabLeak / Cosine: do not keep the dummy rows in the span of the first layer's
    /// gradient (the prior is on by default and switches itself off where the span says nothing).
    #[arg(long)]
    pub no_subspace: bool,
    /// TabLeak: do not certify rows by the second layer's span of activations (on by default on
    /// FedSGD; it switches itself off where the span leaves too few checks).
    #[arg(long)]
    pub no_second_layer: bool,
    /// TabLeak: keep every cell the ensemble gives, even where a shadow client the server simulates
    /// does not show it sure to beat the table's marginals (by default such cells fall back to the
    /// marginals' guess; rows the update proves or holds never do).
    #[arg(long)]
    pub no_prior_fallback: bool,
    /// TabLeak: keep the pooled rows as pooled (by default, on FedAvg, and on FedSGD where the
    /// pooled rows fit the update, a pooled row changes to a member's row, a member's cell or a
    /// span row where the client's simulated update then fits the observed one better, and the
    /// ensemble runs again from the rows chosen; on FedSGD, where the first layer's span holds
    /// more rows than the batch, the rows whose gradients' sum comes nearest the update are picked
    /// among them first and start the choice where they fit it); on FedSGD, also leave the rows
    /// no proof reached as pooled (by default the ensemble runs again on what the rows the update
    /// holds leave of it).
    #[arg(long)]
    pub no_update_choice: bool,
    /// Run every member for all its iterations (by default a member whose best loss has gained
    /// less than 0.5 % (or 3e-4) over 400 steps stops).
    #[arg(long)]
    pub no_early_stop: bool,
    /// The attribute attack: the sensitive (categorical) column the server reconstructs, knowing
    /// every other column of the client's rows and their labels.
    #[arg(long)]
    pub sensitive: Option<String>,
    /// The attribute attack: match the updates by squared error (the paper's L2 baseline).
    #[arg(long)]
    pub l2: bool,
    /// The attribute attack: whether the server knows which rows the client trained on, or holds
    /// them among as many others and infers which (a Gaussian mixture on last-layer gradients).
    #[arg(long, value_enum, default_value = "known")]
    pub membership: MembershipArg,
    /// CAFE: parties holding column groups of the rows (default 4).
    #[arg(long)]
    pub parties: Option<usize>,
    /// CAFE: rows the parties share, all recovered (default 800).
    #[arg(long)]
    pub rows: Option<usize>,
    /// CAFE: rounds the server observes, each on `--batch-size` indices (default 2000).
    #[arg(long)]
    pub rounds: Option<usize>,
}

/// How a FedAvg client trains, in torch.optim's terms (the learning rate is `--client-lr`).
#[derive(Args)]
pub struct RecipeArgs {
    /// FedAvg: the client's optimiser: sgd (the default), adam or adamw, as torch.optim defines them.
    #[arg(long, value_enum)]
    pub optimizer: Option<OptimizerArg>,
    /// FedAvg, SGD: momentum (default 0).
    #[arg(long)]
    pub momentum: Option<f64>,
    /// FedAvg, SGD: momentum's dampening (default 0).
    #[arg(long)]
    pub dampening: Option<f64>,
    /// FedAvg, SGD: Nesterov momentum.
    #[arg(long)]
    pub nesterov: bool,
    /// FedAvg: weight decay (SGD and Adam add wd·θ to the gradient; AdamW shrinks θ by lr·wd).
    #[arg(long)]
    pub weight_decay: Option<f64>,
    /// FedAvg, Adam/AdamW: β1,β2 (default 0.9,0.999).
    #[arg(long, value_parser = parse_betas)]
    pub betas: Option<[f64; 2]>,
    /// FedAvg, Adam/AdamW: ε (default 1e-8).
    #[arg(long)]
    pub adam_eps: Option<f64>,
    /// FedAvg: the client's rows come in the same order every epoch (given, the default) or are
    /// reshuffled every epoch in an order the server does not know (shuffled: DataLoader(shuffle=True)).
    #[arg(long, value_enum)]
    pub local_order: Option<LocalOrderArg>,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
pub enum OptimizerArg {
    Sgd,
    Adam,
    Adamw,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
pub enum LocalOrderArg {
    Given,
    Shuffled,
}

/// `0.9,0.999`.
fn parse_betas(text: &str) -> Result<[f64; 2], String> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    let [b1, b2] = parts[..] else {
        return Err(format!(
            "betas are two numbers, β1,β2 (such as 0.9,0.999); got {text:?}"
        ));
    };
    let number = |v: &str| v.parse::<f64>().map_err(|_| format!("betas: {v:?} is not a number"));
    Ok([number(b1)?, number(b2)?])
}

impl RecipeArgs {
    /// Write what is given into `o`; the rest keeps the engine's default.
    fn apply(&self, o: &mut RunOptions) {
        use leakscope::client::fedavg::LocalOrder;
        use leakscope::client::optimizer::OptimizerKind;
        if let Some(k) = self.optimizer {
            o.optimizer = match k {
                OptimizerArg::Sgd => OptimizerKind::Sgd,
                OptimizerArg::Adam => OptimizerKind::Adam,
                OptimizerArg::Adamw => OptimizerKind::Adamw,
            };
        }
        let set = |v: Option<f64>, to: &mut f64| {
            if let Some(v) = v {
                *to = v;
            }
        };
        set(self.momentum, &mut o.momentum);
        set(self.dampening, &mut o.dampening);
        set(self.weight_decay, &mut o.weight_decay);
        set(self.adam_eps, &mut o.adam_eps);
        o.nesterov |= self.nesterov;
        if let Some(b) = self.betas {
            o.betas = b;
        }
        if let Some(order) = self.local_order {
            o.local_order = match order {
                LocalOrderArg::Given => LocalOrder::Given,
                LocalOrderArg::Shuffled => LocalOrder::Shuffled,
            };
        }
    }
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
pub enum MembershipArg {
    Known,
    Unknown,
}

/// What the client does before the server sees its update.
#[derive(Args)]
pub struct ClientArgs {
    /// What the client sends: a gradient (fedsgd) or θ0 − θE after local training (fedavg, with
    /// `--batch-size` as its rows). Default fedsgd; fedavg for the attribute attack.
    #[arg(long, value_enum)]
    pub protocol: Option<ProtocolArg>,
    /// FedAvg: rows per local step (default 32).
    #[arg(long)]
    pub local_batch: Option<usize>,
    /// FedAvg: local epochs (default 1).
    #[arg(long)]
    pub local_epochs: Option<usize>,
    /// Defence: clip each client's update to this L2 norm.
    #[arg(long)]
    pub clip: Option<f64>,
    /// Defence: Gaussian noise multiplier σ (noise std σ·C, or σ without clipping).
    #[arg(long, default_value_t = 0.0)]
    pub noise: f64,
    /// Defence: CAFE's fake gradients, the closest of this many random draws.
    #[arg(long)]
    pub fake_gradients: Option<usize>,
    /// The δ at which the report states the (ε, δ) of one release (default 1e-5).
    #[arg(long)]
    pub delta: Option<f64>,
    /// Clients whose updates are averaged before the server sees them (secure aggregation):
    /// the attack faces clients × batch-size rows.
    #[arg(long, default_value_t = 1)]
    pub clients: usize,
    /// Train the network this many epochs on the table before the attacked round.
    #[arg(long, default_value_t = 0)]
    pub train_epochs: usize,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum AttackArg {
    Tableak,
    Cosine,
    Dlg,
    Random,
    Attribute,
    Cafe,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
pub enum ProtocolArg {
    Fedsgd,
    Fedavg,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum LabelArg {
    Known,
    Restored,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum BackendArg {
    /// The CPU: the fused kernel (burn's flex backend for the definition).
    Cpu,
    /// Another name for the CPU backend.
    #[value(alias = "flex")]
    Ndarray,
    /// burn's wgpu backend: Vulkan, Metal or DX12.
    Wgpu,
    /// burn's CUDA backend (a build with `--features cuda`).
    Cuda,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum EngineArg {
    Accelerated,
    Definition,
}

fn parse_prior(s: &str) -> Result<EpochPrior, String> {
    if s == "auto" {
        return Ok(EpochPrior::Auto);
    }
    s.parse::<f64>()
        .map(EpochPrior::Fixed)
        .map_err(|_| format!("{s:?} is neither a number nor auto"))
}

fn parse_kind(s: &str) -> Result<(String, ColumnKind), String> {
    let (name, kind) = s.rsplit_once('=').ok_or("expected NAME=categorical|continuous")?;
    let kind = match kind {
        "categorical" | "cat" => ColumnKind::Categorical,
        "continuous" | "cont" | "numeric" => ColumnKind::Continuous,
        other => return Err(format!("unknown kind {other:?}: use categorical or continuous")),
    };
    Ok((name.to_string(), kind))
}

impl From<AttackArg> for AttackKind {
    fn from(a: AttackArg) -> Self {
        match a {
            AttackArg::Tableak => AttackKind::Tableak,
            AttackArg::Cosine => AttackKind::Cosine,
            AttackArg::Dlg => AttackKind::Dlg,
            AttackArg::Random => AttackKind::Random,
            AttackArg::Attribute => AttackKind::Attribute,
            AttackArg::Cafe => AttackKind::Cafe,
        }
    }
}

impl EngineArgs {
    pub fn runtime(&self) -> CliResult<Runtime> {
        let kind = match self.backend {
            BackendArg::Cpu | BackendArg::Ndarray => BackendKind::Cpu,
            BackendArg::Wgpu => BackendKind::Wgpu,
            BackendArg::Cuda => BackendKind::Cuda,
        };
        let rt = pollster::block_on(Runtime::select(kind)).map_err(|e| e.to_string())?;
        Ok(match self.engine {
            EngineArg::Accelerated => rt,
            EngineArg::Definition => rt.definition(),
        })
    }
}

/// The options as the engine takes them: what is not given keeps the engine's default.
pub fn run_options(table: &TableArgs, attack: &AttackArgs, client: Option<&ClientArgs>) -> RunOptions {
    let mut o = RunOptions {
        label: table.label.clone(),
        kinds: table.kinds.iter().cloned().collect(),
        ignore: table.ignore.clone(),
        include: table.include.clone(),
        task: table.task,
        seed: attack.seed,
        ensemble: attack.ensemble,
        lr: attack.lr,
        subspace: !attack.no_subspace,
        second_layer: !attack.no_second_layer,
        prior_fallback: !attack.no_prior_fallback,
        update_choice: !attack.no_update_choice,
        early_stop: !attack.no_early_stop,
        sensitive: attack.sensitive.clone(),
        l2: attack.l2,
        membership: match attack.membership {
            MembershipArg::Known => leakscope::config::Membership::Known,
            MembershipArg::Unknown => leakscope::config::Membership::Unknown,
        },
        parties: attack.parties,
        cafe_rows: attack.rows,
        rounds: attack.rounds,
        ..RunOptions::default()
    };
    match attack.labels {
        Some(LabelArg::Known) => o.labels = LabelMode::Known,
        Some(LabelArg::Restored) => o.labels = LabelMode::Restored,
        None => {}
    }
    if let Some(v) = attack.iterations {
        o.iterations = v;
    }
    let model = attack.model.stated();
    if let Some(v) = model.hidden {
        o.hidden = v;
    }
    if let Some(a) = model.activation {
        o.activation = a;
    }
    if let Some(h) = model.head {
        o.head = h;
    }
    if let Some(v) = attack.epoch_prior {
        o.epoch_prior = v;
    }
    if let Some(v) = attack.client_lr {
        o.client_lr = v;
    }
    attack.recipe.apply(&mut o);
    if let Some(c) = client {
        o.protocol = match c.protocol {
            Some(ProtocolArg::Fedavg) => ProtocolKind::Fedavg,
            // The attribute attack (Lyu & Chen) faces FedAvg unless told otherwise.
            None if attack.sensitive.is_some() => ProtocolKind::Fedavg,
            _ => ProtocolKind::Fedsgd,
        };
        if let Some(v) = c.local_batch {
            o.local_batch = v;
        }
        if let Some(v) = c.local_epochs {
            o.local_epochs = v;
        }
        o.clip = c.clip;
        o.noise = c.noise;
        o.fake_gradients = c.fake_gradients;
        o.delta = c.delta;
        o.clients = c.clients;
        o.training_epochs = c.train_epochs;
    }
    o
}

/// `relu`, `gelu`, …, or `leaky_relu=0.2` (a slope other than PyTorch's 0.01).
fn parse_activation(text: &str) -> Result<Activation, String> {
    let (name, slope) = match text.split_once('=') {
        Some((name, slope)) => (
            name,
            Some(
                slope
                    .trim()
                    .parse::<f64>()
                    .map_err(|_| format!("{slope:?} is not a slope"))?,
            ),
        ),
        None => (text, None),
    };
    Activation::parse(name, slope).map_err(|e| e.to_string())
}

fn parse_head(text: &str) -> Result<Head, String> {
    Head::parse(text).map_err(|e| e.to_string())
}

fn parse_task(text: &str) -> Result<Task, String> {
    Task::parse(text).map_err(|e| e.to_string())
}

/// Hidden layer widths as `--hidden` takes them.
#[derive(Debug, Clone)]
pub struct Hidden(pub Vec<usize>);

/// `100,100`, or `none` for no hidden layer.
pub fn parse_hidden(text: &str) -> Result<Hidden, String> {
    if text.trim().eq_ignore_ascii_case("none") {
        return Ok(Hidden(Vec::new()));
    }
    text.split(',')
        .map(|w| {
            w.trim()
                .parse::<usize>()
                .map_err(|_| format!("{w:?} is not a layer width: give widths such as 100,100, or none"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Hidden)
}
