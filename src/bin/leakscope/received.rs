//! `leakscope encoding` (a table's encoding as a file) and `leakscope attack-update` (attack an
//! update that came from elsewhere: safetensors, numpy archives or JSON, checked against that
//! encoding).
use std::path::{Path, PathBuf};

use clap::Args;
use leakscope::client::activation::Activation;
use leakscope::client::head::Head;
use leakscope::options::ProtocolKind;
use leakscope::received::ReceivedUpdate;
use leakscope::table::{Encoding, StatedModel};
use leakscope::{AttackKind, LabelMode, attack_received};

use crate::args::CliResult;
use crate::args::{
    AttackArg, AttackArgs, EngineArgs, Hidden, LabelArg, ProtocolArg, TableArgs, parse_activation, parse_head,
    parse_hidden, run_options,
};
use crate::io::{bar, load, write_atomically};

#[derive(Args)]
pub struct EncodingArgs {
    #[command(flatten)]
    pub table: TableArgs,
    /// Where to write the encoding (JSON).
    #[arg(long)]
    pub out: PathBuf,
    /// The client's hidden widths, written beside the encoding (`none`: logistic regression): an
    /// update attacked against it is checked against them.
    #[arg(long, value_parser = parse_hidden)]
    pub hidden: Option<Hidden>,
    /// The client's activation, written beside the encoding: the weights cannot show it, so an
    /// update attacked against the encoding is attacked as this (relu where nothing says).
    #[arg(long, value_parser = parse_activation)]
    pub activation: Option<Activation>,
    /// The client's head (softmax or sigmoid), written beside the encoding.
    #[arg(long, value_parser = parse_head)]
    pub head: Option<Head>,
}

pub fn encoding(args: EncodingArgs) -> CliResult<()> {
    let dataset = load(&args.table)?;
    let stated = StatedModel {
        hidden: args.hidden.map(|h| h.0),
        activation: args.activation,
        head: args.head,
    };
    if let Some(h) = stated.head {
        h.check_label(&dataset.classes).map_err(|e| e.to_string())?;
    }
    let enc = Encoding {
        model: (stated != StatedModel::default()).then_some(stated),
        ..Encoding::of(&dataset)
    };
    write_atomically(&args.out, &serde_json::to_string_pretty(&enc).unwrap())?;
    if let Some(m) = &enc.model {
        println!(
            "the client's model stated beside it: {}",
            serde_json::to_string(m).unwrap()
        );
    }
    println!(
        "encoding of {} ({} features, {} inputs, classes {}) written to {}",
        args.table.csv.display(),
        enc.features.len(),
        dataset.d(),
        enc.classes.join(", "),
        args.out.display()
    );
    Ok(())
}

#[derive(Args)]
pub struct AttackUpdateArgs {
    /// The table's encoding (`leakscope encoding` writes one).
    #[arg(long)]
    pub encoding: PathBuf,
    /// The update: a safetensors file or a numpy .npz archive (with --weights), or a
    /// leakscope-update/1 JSON file (which carries the weights); told apart by content.
    #[arg(long)]
    pub update: PathBuf,
    /// The network the server sent: its state dict as safetensors or .npz (numpy.savez, by name
    /// or as the list of arrays in state_dict order a Flower client holds).
    #[arg(long)]
    pub weights: Option<PathBuf>,
    /// Rows the client computed the update on, when the file does not say.
    #[arg(long)]
    pub batch_size: Option<usize>,
    #[arg(long, value_enum, default_value = "tableak")]
    pub attack: AttackArg,
    #[arg(long, value_enum, default_value = "fedsgd")]
    pub protocol: ProtocolArg,
    #[arg(long)]
    pub local_batch: Option<usize>,
    #[arg(long)]
    pub local_epochs: Option<usize>,
    #[command(flatten)]
    pub attack_args: AttackArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Rows to print (the JSON report holds them all).
    #[arg(long, default_value_t = 8)]
    pub show: usize,
    /// Write the report as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

fn read(path: &Path) -> CliResult<Vec<u8>> {
    std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

pub fn load_update(update: &Path, weights: Option<&Path>) -> CliResult<ReceivedUpdate> {
    let weights = weights.map(read).transpose()?;
    ReceivedUpdate::from_files(&read(update)?, weights.as_deref()).map_err(|e| match &weights {
        Some(_) => e.to_string(),
        None => format!("{}: {e}", update.display()),
    })
}

pub fn attack_update(args: AttackUpdateArgs) -> CliResult<()> {
    let text = String::from_utf8(read(&args.encoding)?)
        .map_err(|_| format!("{} is not UTF-8 text", args.encoding.display()))?;
    let encoding: Encoding =
        serde_json::from_str(&text).map_err(|e| format!("{}: not an encoding ({e})", args.encoding.display()))?;
    let caller = StatedModel {
        hidden: args.attack_args.hidden.as_ref().map(|h| h.0.clone()),
        activation: args.attack_args.activation,
        head: args.attack_args.head,
    };
    let stated = StatedModel::merged(encoding.model.as_ref(), caller)
        .map_err(|e| format!("{}: {e}", args.encoding.display()))?;
    let dataset = encoding
        .into_dataset()
        .map_err(|e| format!("{}: {e}", args.encoding.display()))?;
    let received = load_update(&args.update, args.weights.as_deref())?;
    let table = crate::args::TableArgs {
        csv: args.encoding.clone(),
        label: dataset.label.clone(),
        kinds: Vec::new(),
        ignore: Vec::new(),
        include: Vec::new(),
    };
    let mut options = run_options(&table, &args.attack_args, None);
    options.attack = AttackKind::from(args.attack);
    options.activation = stated.activation.unwrap_or_default();
    let labels = args.attack_args.labels.map(|l| match l {
        LabelArg::Known => LabelMode::Known,
        LabelArg::Restored => LabelMode::Restored,
    });
    let mut options = received
        .attack_options(
            &dataset,
            options,
            args.batch_size,
            labels,
            stated.hidden.as_deref(),
            stated.head,
        )
        .map_err(|e| e.to_string())?;
    if matches!(args.protocol, ProtocolArg::Fedavg) {
        options.protocol = ProtocolKind::Fedavg;
        if let Some(v) = args.local_batch {
            options.local_batch = v;
        }
        if let Some(v) = args.local_epochs {
            options.local_epochs = v;
        }
    }
    let config = options.attack_config().map_err(|e| e.to_string())?;
    let rt = args.engine.runtime()?;
    let pb = bar(args.engine.quiet, config.iterations as u64, "attack".into());
    let mut on = |p: &leakscope::attack::Progress| {
        pb.set_position(p.step as u64);
        true
    };
    let report =
        pollster::block_on(attack_received(&rt, &dataset, &config, &received, &mut on)).map_err(|e| e.to_string())?;
    pb.finish_and_clear();
    print!("{}", report.render_text(args.show));
    if let Some(path) = &args.json {
        write_atomically(path, &serde_json::to_string_pretty(&report).unwrap())?;
        println!("report written to {}", path.display());
    }
    Ok(())
}
