//! Table: CSV → schema → encoded dataset (SPEC §2).
pub mod batch;
pub mod cell;
pub mod csv_input;
pub mod dataset;
pub mod decode;
pub mod determined;
pub mod dialect;
pub mod encoding;
pub mod feature;
pub mod inference;
pub mod number;
pub mod pipeline;
pub mod schema;
pub mod target;

/// The bundled Adult sample, labelled by salary: the table the unit tests read.
#[cfg(test)]
pub(crate) fn adult_sample() -> Dataset {
    adult_sample_without(&[])
}

/// The same sample with `columns` left out.
#[cfg(test)]
pub(crate) fn adult_sample_without(columns: &[&str]) -> Dataset {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/adult-sample.csv");
    let raw = parse_csv(&std::fs::read(path).unwrap(), usize::MAX).unwrap();
    let options = DatasetOptions {
        label: "salary".into(),
        ignore: columns.iter().map(|c| c.to_string()).collect(),
        ..Default::default()
    };
    Dataset::from_raw(&raw, &options).unwrap()
}

/// A synthetic table of `columns` continuous columns (sums of three uniforms on ±1, two
/// decimals) and a coin-flip label `y` of classes `a` and `b`, `rows` rows from `seed`: a table
/// unlike Adult's for tests, where the first layer's span holds a batch in part of the space.
pub fn continuous_table(columns: usize, rows: usize, seed: u64) -> Dataset {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut text: String = (0..columns).map(|c| format!("c{c},")).collect::<String>() + "y\n";
    for _ in 0..rows {
        for _ in 0..columns {
            let v: f64 = (0..3).map(|_| rng.random::<f64>() * 2.0 - 1.0).sum();
            text += &format!("{v:.2},");
        }
        text += if rng.random::<bool>() { "a\n" } else { "b\n" };
    }
    let raw = parse_csv(text.as_bytes(), usize::MAX).expect("the table is well formed");
    let options = DatasetOptions {
        label: "y".into(),
        ..Default::default()
    };
    Dataset::from_raw(&raw, &options).expect("every column reads as a number")
}

pub use batch::{draw_batch, encode_rows};
pub use csv_input::{MAX_CSV_BYTES, RawTable, parse_csv};
pub use dataset::{Dataset, DatasetOptions, Feature, FeatureKind, Value};
pub use decode::TextEncoding;
pub use dialect::Dialect;
pub use encoding::{Encoding, StatedModel};
pub use inference::{NonNumeric, Treatment};
pub use pipeline::{Coding, EncodedFeature, Pipeline};
pub use schema::{ColumnInfo, ColumnKind, SchemaSummary, summarize};
