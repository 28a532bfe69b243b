//! Files and the terminal: reading a CSV within the engine's limit, writing whole files only,
//! progress bars.
use std::path::Path;

use indicatif::{ProgressBar, ProgressStyle};
use leakscope::table::{Dataset, DatasetOptions, RawTable, parse_csv};

use crate::args::{CliResult, TableArgs};

/// Read a CSV, refusing one over the size limit before loading it into memory.
pub fn read_csv(csv: &Path) -> CliResult<RawTable> {
    let limit = leakscope::table::MAX_CSV_BYTES;
    let size = std::fs::metadata(csv)
        .map_err(|e| format!("cannot read {}: {e}", csv.display()))?
        .len();
    if size > limit as u64 {
        let e = leakscope::Error::TooLarge {
            size: size as usize,
            limit,
        };
        return Err(format!("{}: {e}", csv.display()));
    }
    let bytes = std::fs::read(csv).map_err(|e| format!("cannot read {}: {e}", csv.display()))?;
    parse_csv(&bytes, limit).map_err(|e| format!("{}: {e}", csv.display()))
}

pub fn load(table: &TableArgs) -> CliResult<Dataset> {
    let raw = read_csv(&table.csv)?;
    let options = DatasetOptions {
        label: table.label.clone(),
        kinds: table.kinds.clone(),
        ignore: table.ignore.clone(),
        include: table.include.clone(),
        task: table.task,
    };
    Dataset::from_raw(&raw, &options).map_err(|e| format!("{}: {e}", table.csv.display()))
}

/// Write a file whole or not at all: to a sibling temporary file, then rename.
pub fn write_atomically(path: &Path, text: &str) -> CliResult<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".partial");
    let tmp = std::path::PathBuf::from(tmp);
    std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

pub fn bar(quiet: bool, len: u64, prefix: String) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} steps, {msg} ({elapsed}, eta {eta})")
            .unwrap()
            .progress_chars("=> "),
    );
    pb.set_prefix(prefix);
    pb
}
