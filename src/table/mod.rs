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
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/adult-sample.csv");
    let raw = parse_csv(&std::fs::read(path).unwrap(), usize::MAX).unwrap();
    let options = DatasetOptions {
        label: "salary".into(),
        ..Default::default()
    };
    Dataset::from_raw(&raw, &options).unwrap()
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
