//! Property tests of the CSV reader (issue 16): random bytes and mutated real tables never panic,
//! never allocate more than a small multiple of the file (and nothing past `max_bytes`), and either
//! read into a table that keeps the reader's promises or fail with an error that names the problem.
#[path = "common/prop.rs"]
mod support;

use leakscope::Error;
use leakscope::table::{
    Dataset, DatasetOptions, Encoding, FeatureKind, MAX_CSV_BYTES, RawTable, Value, dataset::MAX_ENCODED_WIDTH,
    parse_csv, summarize,
};
use proptest::prelude::*;
use proptest::sample::Index;

use support::{Edit, MIB, apply, config, edits, peak_of, specific};

#[global_allocator]
static ALLOCATOR: support::Counting = support::Counting;

/// The tables of tests/data/tables/ and the head of the Adult sample: CSVs as people export them.
fn fixtures() -> &'static [Vec<u8>] {
    static FIXTURES: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    FIXTURES.get_or_init(|| {
        let dir = format!("{}/tests/data/tables", env!("CARGO_MANIFEST_DIR"));
        let mut paths: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        paths.sort();
        let mut out: Vec<Vec<u8>> = paths.iter().map(|p| std::fs::read(p).unwrap()).collect();
        let adult = std::fs::read(format!("{}/data/adult-sample.csv", env!("CARGO_MANIFEST_DIR"))).unwrap();
        let head: Vec<&[u8]> = adult.split_inclusive(|&b| b == b'\n').take(40).collect();
        out.push(head.concat());
        out
    })
}

fn pick(which: &Index) -> &'static [u8] {
    &fixtures()[which.index(fixtures().len())]
}

/// Text re-encoded as exports do: UTF-16 with a byte-order mark, or Windows-1252.
fn transcode(bytes: &[u8], how: u8) -> Vec<u8> {
    let text = String::from_utf8_lossy(bytes);
    match how % 4 {
        0 => bytes.to_vec(),
        1 => {
            let mut out = vec![0xFF, 0xFE];
            out.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
            out
        }
        2 => {
            let mut out = vec![0xFE, 0xFF];
            out.extend(text.encode_utf16().flat_map(u16::to_be_bytes));
            out
        }
        _ => encoding_rs::WINDOWS_1252.encode(&text).0.into_owned(),
    }
}

/// The reader's allocation, bounded by the file: the cells as strings, a row per record, decoded
/// text (three bytes of UTF-8 a byte at most). Generous, but linear: never a multiple of a size
/// the file declares.
fn allowed(len: usize) -> usize {
    64 * len + MIB
}

/// Read `bytes` and check everything the reader promises.
fn check_csv(bytes: &[u8]) -> Result<(), TestCaseError> {
    let (read, peak) = peak_of(|| parse_csv(bytes, MAX_CSV_BYTES));
    prop_assert!(
        peak <= allowed(bytes.len()),
        "parse_csv allocated {peak} bytes for {} bytes",
        bytes.len()
    );
    match read {
        Ok(raw) => check_raw(&raw),
        Err(e) => {
            prop_assert!(specific(&e.to_string()), "vague error {e:?}");
            match &e {
                Error::EmptyFile | Error::NoRows => {}
                Error::BinaryFormat { format, hint } => prop_assert!(!format.is_empty() && !hint.is_empty()),
                Error::NotText(what) => prop_assert!(what.contains("looks like"), "{what}"),
                Error::Csv { message, .. } => prop_assert!(!message.is_empty()),
                Error::Ragged { line, expected, found } => prop_assert!(*line >= 2 && expected != found, "{e}"),
                Error::DuplicateHeader { name } => prop_assert!(!name.is_empty()),
                other => prop_assert!(false, "parse_csv failed with an unexpected error: {other:?}"),
            }
            Ok(())
        }
    }
}

/// A table read: rows as wide as the header, named lines in order, and every label choice either
/// a dataset that keeps its promises or a specific error.
fn check_raw(raw: &RawTable) -> Result<(), TestCaseError> {
    prop_assert!(!raw.headers.is_empty() && !raw.rows.is_empty());
    for (i, h) in raw.headers.iter().enumerate() {
        prop_assert!(!h.is_empty(), "an empty column name");
        prop_assert!(!raw.headers[..i].contains(h), "column {h:?} twice");
    }
    prop_assert_eq!(raw.rows.len(), raw.lines.len());
    for row in &raw.rows {
        prop_assert_eq!(row.len(), raw.headers.len());
    }
    prop_assert!(raw.lines[0] >= 2, "the first row is on line {}", raw.lines[0]);
    prop_assert!(
        raw.lines.windows(2).all(|w| w[0] < w[1]),
        "lines out of order: {:?}",
        raw.lines
    );
    let summary = summarize(raw);
    prop_assert_eq!(summary.columns.len(), raw.headers.len());
    // The first, the last and a middle column as the label.
    let n = raw.headers.len();
    let mut labels = vec![0, n - 1, n / 2];
    labels.dedup();
    for j in labels {
        let options = DatasetOptions {
            label: raw.headers[j].clone(),
            ..Default::default()
        };
        let (built, peak) = peak_of(|| Dataset::from_raw(raw, &options));
        let cells: usize = raw.rows.iter().flatten().map(String::len).sum();
        let held = raw.rows.len() * raw.headers.len();
        prop_assert!(
            peak <= 200 * (held + cells) + MIB,
            "from_raw allocated {peak} bytes for {held} cells"
        );
        match built {
            Ok(d) => check_dataset(&d)?,
            Err(e) => {
                prop_assert!(specific(&e.to_string()), "vague error {e:?}");
                let too_large =
                    matches!(&e, Error::Config(m) if m.contains("is too large: the column's mean or spread overflows"));
                prop_assert!(
                    too_large
                        || matches!(
                            e,
                            Error::NotNumeric { .. }
                                | Error::NotFinite { .. }
                                | Error::SingleClass { .. }
                                | Error::TooFewRows { .. }
                                | Error::NoFeatures
                                | Error::TooWide { .. }
                        ),
                    "from_raw failed with an unexpected error: {e:?}"
                );
            }
        }
    }
    Ok(())
}

/// A dataset: at most the engine's width, classes and categories in range, finite standardisation,
/// rows that encode to finite inputs and decode back into their columns' ranges, and an encoding
/// file that reads back.
fn check_dataset(d: &Dataset) -> Result<(), TestCaseError> {
    prop_assert!(d.classes.len() >= 2);
    prop_assert!(
        d.classes.windows(2).all(|w| w[0] < w[1]),
        "classes not sorted and distinct"
    );
    prop_assert!(!d.features.is_empty() && d.d() <= MAX_ENCODED_WIDTH);
    prop_assert!(d.n() >= 2 && d.labels.len() == d.n());
    prop_assert!(d.labels.iter().all(|&l| l < d.classes.len()));
    prop_assert!(d.mean.len() == d.d() && d.std.len() == d.d());
    prop_assert!(d.mean.iter().all(|m| m.is_finite()), "mean {:?}", d.mean);
    prop_assert!(d.std.iter().all(|s| *s > 0.0 && s.is_finite()), "std {:?}", d.std);
    let (lo, hi) = d.bounds();
    prop_assert!(lo.iter().chain(&hi).all(|v| v.is_finite()), "bounds {lo:?} {hi:?}");
    for row in d.rows.iter().take(20) {
        prop_assert_eq!(row.len(), d.features.len());
        for (f, v) in d.features.iter().zip(row) {
            match (&f.kind, v) {
                (FeatureKind::Categorical { categories }, Value::Cat(c)) => {
                    prop_assert!((*c as usize) < categories.len())
                }
                (FeatureKind::Continuous { min, max, .. }, Value::Num(x)) => {
                    prop_assert!(x.is_finite() && min <= x && x <= max, "{x} outside [{min}, {max}]")
                }
                (kind, v) => prop_assert!(false, "{v:?} in a {kind:?} column"),
            }
        }
        let encoded = d.encode(row);
        prop_assert!(encoded.iter().all(|v| v.is_finite()), "{row:?} encodes to {encoded:?}");
        let z: Vec<f32> = encoded.iter().map(|&v| v as f32).collect();
        let decoded = d.decode(&z);
        for (f, (v, back)) in d.features.iter().zip(row.iter().zip(&decoded)) {
            match (&f.kind, back) {
                (FeatureKind::Categorical { .. }, _) => prop_assert_eq!(v, back, "column {}", f.name),
                (FeatureKind::Continuous { min, max, .. }, Value::Num(x)) => prop_assert!(
                    x.is_finite() && *min <= *x && *x <= *max,
                    "column {}: {v:?} decodes to {x} outside [{min}, {max}]",
                    f.name
                ),
                (_, back) => prop_assert!(false, "{back:?} decoded in column {}", f.name),
            }
        }
    }
    // What `leakscope encoding` writes reads back as the same encoding.
    let text = serde_json::to_string(&Encoding::of(d)).unwrap();
    let enc: Encoding = serde_json::from_str(&text).unwrap();
    match enc.into_dataset() {
        Ok(back) => prop_assert_eq!((back.d(), &back.std), (d.d(), &d.std)),
        Err(e) => prop_assert!(false, "the encoding of a table does not read back: {e}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(10000))]

    /// Any bytes at all.
    #[test]
    fn random_bytes_read_or_fail_specifically(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        check_csv(&bytes)?;
    }

    /// Text made of what tables are made of: separators, quotes, line breaks, digits, words.
    #[test]
    fn table_like_text_reads_or_fails_specifically(text in "([a-c]{0,3}|[0-9]{1,4}(\\.[0-9]{1,3})?|-|\\?|NA|1e303|[,;\\t|\"]|\\r?\\n| ){0,80}") {
        check_csv(text.as_bytes())?;
    }

    /// Real tables with bytes flipped, cut short, lines repeated or lost, numbers replaced by NaN,
    /// ±∞, huge values or a decimal comma, in every encoding exports use.
    #[test]
    fn mutated_tables_read_or_fail_specifically(which in any::<Index>(), how in any::<u8>(), edits in edits(6)) {
        let original = pick(&which);
        let bytes = apply(&transcode(original, how), &edits);
        check_csv(&bytes)?;
    }

    /// Line-level edits alone keep most tables readable, so they reach the dataset's checks.
    #[test]
    fn tables_with_lines_moved_build_or_fail_specifically(which in any::<Index>(), edits in prop::collection::vec(
        prop_oneof![
            (any::<Index>(), 1usize..4).prop_map(|(i, n)| Edit::DuplicateLine(i, n)),
            any::<Index>().prop_map(Edit::DeleteLine),
            (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Edit::SwapLines(a, b)),
            (any::<Index>(), any::<Index>()).prop_map(|(i, t)| Edit::ReplaceNumber(i, t)),
        ],
        1..6,
    )) {
        let bytes = apply(pick(&which), &edits);
        check_csv(&bytes)?;
    }

    /// A file over the limit is refused by its length before anything is read or allocated.
    #[test]
    fn files_over_the_limit_are_refused_unread(which in any::<Index>(), limit in any::<Index>()) {
        let bytes = pick(&which);
        let max = limit.index(bytes.len());
        let (read, peak) = peak_of(|| parse_csv(&bytes, max));
        prop_assert_eq!(read, Err(Error::TooLarge { size: bytes.len(), limit: max }));
        prop_assert_eq!(peak, 0);
    }
}
