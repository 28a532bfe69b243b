//! `leakscope encoding` (a table's encoding as a file) and `leakscope attack-update` (attack an
//! update that came from elsewhere: safetensors, numpy archives or JSON, checked against that
//! encoding).
use std::path::{Path, PathBuf};

use clap::Args;
use leakscope::options::ProtocolKind;
use leakscope::received::ReceivedUpdate;
use leakscope::received::truth::{attack_received_against, truth_rows};
use leakscope::table::{Encoding, StatedModel};
use leakscope::{AttackKind, LabelMode, attack_received};

use crate::args::CliResult;
use crate::args::{AttackArg, AttackArgs, EngineArgs, LabelArg, ModelArgs, ProtocolArg, TableArgs, run_options};
use crate::io::{bar, load, write_atomically};

#[derive(Args)]
pub struct EncodingArgs {
    #[command(flatten)]
    pub table: TableArgs,
    /// Where to write the encoding (JSON).
    #[arg(long)]
    pub out: PathBuf,
    /// The client's model, written beside the encoding where given: an update attacked against
    /// it is checked against its widths and head and attacked with its activation (which the
    /// weights cannot show).
    #[command(flatten)]
    pub model: ModelArgs,
}

pub fn encoding(args: EncodingArgs) -> CliResult<()> {
    let dataset = load(&args.table)?;
    let stated = args.model.stated();
    dataset.task().head(stated.head).map_err(|e| e.to_string())?;
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
        "encoding of {} ({} features, {} inputs, {}) written to {}",
        args.table.csv.display(),
        enc.features.len(),
        dataset.d(),
        match &enc.target {
            Some(t) => format!(
                "a regression's label {:?} from {} to {}, standardised by mean {:.4} and std {:.4}",
                enc.label, t.min, t.max, t.mean, t.std
            ),
            None => format!("classes {}", enc.classes.join(", ")),
        },
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
    /// The rows the update was computed on, in order (a CSV with the encoding's columns): the
    /// client checking its own update scores the reconstruction against them.
    #[arg(long)]
    pub truth: Option<PathBuf>,
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
    let stated = StatedModel::merged(encoding.model.as_ref(), args.attack_args.model.stated())
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
        task: dataset.task(),
    };
    let mut options = run_options(&table, &args.attack_args, None);
    options.attack = AttackKind::from(args.attack);
    let labels = args.attack_args.labels.map(|l| match l {
        LabelArg::Known => LabelMode::Known,
        LabelArg::Restored => LabelMode::Restored,
    });
    let mut options = received
        .attack_options(&dataset, options, args.batch_size, labels, &stated)
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
    if let Some(csv) = &args.truth {
        let truth = truth_rows(&dataset, &crate::io::read_csv(csv)?).map_err(|e| format!("{}: {e}", csv.display()))?;
        let scored = pollster::block_on(attack_received_against(
            &rt, &dataset, &config, &received, &truth, &mut on,
        ))
        .map_err(|e| e.to_string())?;
        pb.finish_and_clear();
        print!("{}", scored.reconstruction.render_text(args.show));
        println!("{}", scored.recipe_check.sentence());
        let whose = match scored.recipe_check.failed() {
            true => "an attacker assuming the stated recipe, ",
            false => "",
        };
        println!(
            "{whose}against the {} rows of {}: {:.1} % of cells right ({:.1} % by guessing), {} rows proved, {} \
             consistent with the update but not proved",
            scored.rows,
            csv.display(),
            100.0 * scored.accuracy.total,
            100.0 * scored.random_baseline,
            scored.rows_proved,
            scored.rows_consistent
        );
        return write_json(args.json.as_deref(), &scored);
    }
    let report =
        pollster::block_on(attack_received(&rt, &dataset, &config, &received, &mut on)).map_err(|e| e.to_string())?;
    pb.finish_and_clear();
    print!("{}", report.render_text(args.show));
    write_json(args.json.as_deref(), &report)
}

fn write_json<T: serde::Serialize>(path: Option<&Path>, report: &T) -> CliResult<()> {
    if let Some(path) = path {
        write_atomically(path, &serde_json::to_string_pretty(report).unwrap())?;
        println!("report written to {}", path.display());
    }
    Ok(())
}
