//! Tables as people export them (issue 9): one fixture per way a file was misread, each with the
//! schema it must get and the warning that must say what was done. Files that are bytes rather
//! than text (other encodings, binary formats) are built here instead of committed.
use leakscope::Error;
use leakscope::table::inference::{MAX_LABEL_CLASSES, NUMERIC_SHARE};
use leakscope::table::{
    ColumnInfo, ColumnKind, Dataset, DatasetOptions, FeatureKind, RawTable, SchemaSummary, TextEncoding, Treatment,
    parse_csv, summarize,
};

fn fixture(file: &str) -> Vec<u8> {
    std::fs::read(format!("{}/tests/data/tables/{file}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn read(bytes: &[u8]) -> (RawTable, SchemaSummary) {
    let raw = parse_csv(bytes, usize::MAX).unwrap();
    let summary = summarize(&raw);
    (raw, summary)
}

fn column<'a>(s: &'a SchemaSummary, name: &str) -> &'a ColumnInfo {
    s.columns
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no column {name}"))
}

fn dataset(raw: &RawTable, label: &str, tweak: impl FnOnce(&mut DatasetOptions)) -> Dataset {
    let mut options = DatasetOptions {
        label: label.into(),
        ..Default::default()
    };
    tweak(&mut options);
    Dataset::from_raw(raw, &options).unwrap()
}

fn features(d: &Dataset) -> Vec<&str> {
    d.features.iter().map(|f| f.name.as_str()).collect()
}

fn has(warnings: &[String], part: &str) -> bool {
    warnings.iter().any(|w| w.contains(part))
}

fn range(d: &Dataset, name: &str) -> (f64, f64) {
    match d.features.iter().find(|f| f.name == name).unwrap().kind {
        FeatureKind::Continuous { min, max, .. } => (min, max),
        _ => panic!("{name} is not continuous"),
    }
}

#[test]
fn stray_words_in_a_numeric_column_are_missing_and_named() {
    let (raw, s) = read(&fixture("stray-words.csv"));
    let income = column(&s, "income");
    assert_eq!(
        (income.kind, income.treatment),
        (ColumnKind::Continuous, Treatment::Used)
    );
    let stray = income.non_numeric.as_ref().unwrap();
    assert_eq!(
        (stray.count, stray.values.clone()),
        (3, vec!["unknown".to_string(), "n/a".into()])
    );
    let warning = "column \"income\" is numeric but 3 of 80 values are not numbers (\"unknown\", \"n/a\")";
    assert!(has(&s.warnings, warning), "{:?}", s.warnings);
    assert_eq!(s.rows_with_missing, 3);
    let d = dataset(&raw, "churn", |_| {});
    assert_eq!(d.n(), 77);
    assert!(has(&d.warnings, warning), "{:?}", d.warnings);
    assert!(has(
        &d.warnings,
        "dropped 3 of 80 rows with missing values or words in a numeric column"
    ));
    // Asked for, the column is read as categories again: every value a category, nothing dropped.
    let d = dataset(&raw, "churn", |o| {
        o.kinds = vec![("income".into(), ColumnKind::Categorical)]
    });
    assert_eq!(d.n(), 80);
    assert!(
        d.features[1].is_categorical() && d.warnings.is_empty(),
        "{:?}",
        d.warnings
    );
    // Below the documented share, a column with words is categorical.
    let mut text = String::from("x,y\n");
    for i in 0..40 {
        let x = if i < 3 { "unknown".to_string() } else { i.to_string() };
        text += &format!("{x},{}\n", i % 2);
    }
    const { assert!(37.0 / 40.0 < NUMERIC_SHARE) };
    let (_, s) = read(text.as_bytes());
    assert_eq!(column(&s, "x").kind, ColumnKind::Categorical);
}

#[test]
fn a_forced_continuous_column_drops_its_words_or_is_refused() {
    let (raw, _) = read(&fixture("stray-words.csv"));
    // Forcing a mostly-numeric column continuous is what inference does already.
    let d = dataset(&raw, "churn", |o| {
        o.kinds = vec![("income".into(), ColumnKind::Continuous)]
    });
    assert_eq!(d.n(), 77);
    // A column of words forced continuous is refused, the first word named.
    let err = Dataset::from_raw(
        &raw,
        &DatasetOptions {
            label: "churn".into(),
            kinds: vec![("plan".into(), ColumnKind::Continuous)],
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        err,
        Error::NotNumeric {
            column: "plan".into(),
            line: 2,
            value: "basic".into()
        }
    );
}

#[test]
fn thousands_separators_are_numbers() {
    let (raw, s) = read(&fixture("thousands.csv"));
    let amount = column(&s, "amount");
    assert_eq!((amount.kind, &amount.non_numeric), (ColumnKind::Continuous, &None));
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    let d = dataset(&raw, "paid", |_| {});
    assert_eq!(range(&d, "amount"), (1889.5, 1889.5 + 1013.25 * 121.0));
    assert_eq!(d.format(0, d.rows[0][0]), "1889.50");
}

#[test]
fn identifiers_and_e_mail_addresses_are_left_out_and_can_be_put_back() {
    let (raw, s) = read(&fixture("identifiers.csv"));
    let id = column(&s, "customer_id");
    assert_eq!(id.treatment, Treatment::Identifier);
    assert_eq!(
        id.notes,
        vec!["a distinct value on 25 of 25 rows: an identifier or free text"]
    );
    let email = column(&s, "email");
    assert_eq!(email.treatment, Treatment::Identifier);
    assert_eq!(email.notes, vec!["e-mail addresses on 25 of 25 rows"]);
    assert!(!s.label_candidates.contains(&"customer_id".to_string()));
    assert!(has(
        &s.warnings,
        "column \"customer_id\" is left out (a distinct value on 25 of 25 rows: an identifier or free text); \
         include it (--include customer_id) to use it"
    ));
    let d = dataset(&raw, "churn", |_| {});
    assert_eq!(features(&d), vec!["age", "plan"]);
    assert!(has(
        &d.warnings,
        "column \"email\" is left out (e-mail addresses on 25 of 25 rows)"
    ));
    let d = dataset(&raw, "churn", |o| o.include = vec!["customer_id".into()]);
    assert_eq!(features(&d), vec!["customer_id", "age", "plan"]);
    assert_eq!(d.features[0].width(), 25);
    // A kind given for it puts it back too.
    let d = dataset(&raw, "churn", |o| {
        o.kinds = vec![("email".into(), ColumnKind::Categorical)]
    });
    assert_eq!(features(&d), vec!["email", "age", "plan"]);
}

#[test]
fn uuids_are_identifiers_even_when_they_repeat() {
    let (raw, s) = read(&fixture("uuid.csv"));
    let user = column(&s, "user");
    assert_eq!((user.treatment, user.distinct), (Treatment::Identifier, 6));
    assert_eq!(user.notes, vec!["UUIDs on 30 of 30 rows"]);
    assert_eq!(features(&dataset(&raw, "converted", |_| {})), vec!["minutes", "device"]);
}

#[test]
fn numeric_identifiers_need_a_name_or_consecutive_values() {
    let mut text = String::from("row,order_id,weight,y\n");
    for i in 0..30u64 {
        // Distinct whole numbers: an id by its name; weight (fnlwgt-like) stays a feature.
        text += &format!("{},{},{},{}\n", i + 1, 9000 + i * i, 100_000 + (i * 7919) % 1000, i % 2);
    }
    let (_, s) = read(text.as_bytes());
    assert_eq!(column(&s, "row").treatment, Treatment::Identifier);
    assert_eq!(
        column(&s, "row").notes,
        vec!["consecutive whole numbers, one per row: a row number"]
    );
    assert_eq!(column(&s, "order_id").treatment, Treatment::Identifier);
    let weight = column(&s, "weight");
    assert_eq!(
        (weight.kind, weight.treatment),
        (ColumnKind::Continuous, Treatment::Used)
    );
}

#[test]
fn a_repeated_header_row_is_dropped_with_its_line() {
    let (raw, s) = read(&fixture("repeated-header.csv"));
    assert_eq!(s.rows, 20);
    for name in ["age", "hours"] {
        assert_eq!(column(&s, name).kind, ColumnKind::Continuous);
    }
    let warning =
        "dropped 1 row that repeats the header (line 12): the file looks like several exports joined together";
    assert_eq!(s.warnings, vec![warning]);
    let d = dataset(&raw, "salary", |_| {});
    assert_eq!(d.classes, vec!["<=50K", ">50K"]);
    assert_eq!(d.warnings, vec![warning]);
}

#[test]
fn an_empty_column_is_dropped_not_every_row() {
    let (raw, s) = read(&fixture("empty-column.csv"));
    let comment = column(&s, "comment");
    assert_eq!((comment.treatment, comment.missing), (Treatment::Empty, 10));
    assert_eq!(s.rows_with_missing, 0);
    let warning = "column \"comment\" is dropped: no value on any of the 10 rows";
    assert_eq!(s.warnings, vec![warning]);
    let d = dataset(&raw, "label", |_| {});
    assert_eq!((d.n(), features(&d)), (10, vec!["age", "colour"]));
    assert_eq!(d.warnings, vec![warning]);
}

#[test]
fn pandas_index_column_is_named_and_left_out() {
    let (raw, s) = read(&fixture("pandas-index.csv"));
    let index = &s.columns[0];
    assert_eq!((index.name.as_str(), index.treatment), ("Unnamed: 0", Treatment::Index));
    assert!(index.notes[0].contains("where pandas writes its row index"));
    assert!(has(&s.warnings, "column \"Unnamed: 0\" is left out"));
    assert!(has(&s.warnings, "include it (--include \"Unnamed: 0\") to use it"));
    let d = dataset(&raw, "label", |_| {});
    assert_eq!(features(&d), vec!["age", "colour"]);
    let d = dataset(&raw, "label", |o| o.include = vec!["Unnamed: 0".into()]);
    assert_eq!(features(&d), vec!["Unnamed: 0", "age", "colour"]);
}

#[test]
fn semicolons_and_a_decimal_comma() {
    let (raw, s) = read(&fixture("semicolon-decimal-comma.csv"));
    assert_eq!((s.dialect.delimiter, s.dialect.decimal_comma), (';', true));
    assert_eq!(s.columns.len(), 4);
    assert_eq!(column(&s, "Einkommen").kind, ColumnKind::Continuous);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    let d = dataset(&raw, "Kredit", |_| {});
    assert_eq!(range(&d, "Einkommen"), (1234.56, 8234.56));
}

#[test]
fn tab_and_pipe_separated() {
    let (raw, s) = read(&fixture("tab-separated.csv"));
    assert_eq!((s.dialect.delimiter, s.dialect.decimal_comma), ('\t', false));
    assert_eq!(column(&s, "age").kind, ColumnKind::Continuous);
    assert_eq!(column(&s, "colour").examples, vec!["light red", "dark blue"]);
    assert_eq!(range(&dataset(&raw, "label", |_| {}), "age"), (20.5, 25.5));
    let (_, s) = read(&fixture("pipe-separated.csv"));
    assert_eq!(s.dialect.delimiter, '|');
    assert_eq!(
        column(&s, "city, country").examples,
        vec!["Paris, France", "Lyon, France"]
    );
}

/// A small table with accents, as a spreadsheet saves it in several encodings.
const ACCENTS: &str = "name,ville,label\nRené,Besançon,a\nZoë,Orléans,b\nJosé,Besançon,a\n";

/// The text as UTF-16 behind its byte-order mark (U+FEFF), as Excel's "Unicode text" saves it.
fn utf16(text: &str, big_endian: bool) -> Vec<u8> {
    let units = std::iter::once(0xFEFF).chain(text.encode_utf16());
    units
        .flat_map(|u| if big_endian { u.to_be_bytes() } else { u.to_le_bytes() })
        .collect()
}

#[test]
fn utf16_with_a_byte_order_mark_and_utf8_with_one() {
    for (bytes, encoding) in [
        (utf16(ACCENTS, false), TextEncoding::Utf16Le),
        (utf16(&ACCENTS.replace(',', "\t"), true), TextEncoding::Utf16Be),
        (
            [&b"\xEF\xBB\xBF"[..], ACCENTS.as_bytes()].concat(),
            TextEncoding::Utf8Bom,
        ),
    ] {
        let (_, s) = read(&bytes);
        assert_eq!(s.dialect.encoding, encoding);
        assert_eq!(
            s.columns[0].name, "name",
            "{encoding:?}: no byte-order mark in the first name"
        );
        assert_eq!(column(&s, "ville").examples, vec!["Besançon", "Orléans"]);
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    }
}

#[test]
fn windows_1252_is_read_with_a_warning() {
    // "é" as Windows-1252 / Latin-1 writes it: one byte, 0xE9.
    let bytes: Vec<u8> = ACCENTS.chars().map(|c| u8::try_from(u32::from(c)).unwrap()).collect();
    let (raw, s) = read(&bytes);
    assert_eq!(s.dialect.encoding, TextEncoding::Windows1252);
    assert_eq!(column(&s, "name").examples, vec!["René", "Zoë", "José"]);
    let warning = "the file is not UTF-8 (line 2 holds byte 0xE9): it was read as Windows-1252 (Latin-1)";
    assert!(has(&s.warnings, warning), "{:?}", s.warnings);
    assert!(has(&dataset(&raw, "label", |_| {}).warnings, warning));
}

#[test]
fn binary_files_are_named_with_what_to_do() {
    let zip_with = |name: &str| {
        [
            &b"PK\x03\x04\x14\x00\x00\x00\x08\x00"[..],
            name.as_bytes(),
            b"\x00\x01\x02",
        ]
        .concat()
    };
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            vec![0x1F, 0x8B, 0x08, 0x00, 0x00, 0x00],
            "the file is a gzip-compressed file, not a CSV: decompress it first",
        ),
        (
            zip_with("[Content_Types].xml....xl/workbook.xml"),
            "the file is an Excel workbook (.xlsx), not a CSV: open it in Excel or another spreadsheet and save the sheet as CSV",
        ),
        (zip_with("table.csv"), "the file is a ZIP archive, not a CSV: unzip it"),
        (
            vec![0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1, 0, 0],
            "the file is a legacy Excel workbook (.xls)",
        ),
        (
            vec![0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0],
            "the file is a PNG image, not a CSV",
        ),
        (
            b"%PDF-1.4\n%\xE2\xE3\xCF\xD3\n".to_vec(),
            "the file is a PDF document, not a CSV",
        ),
        (
            b"PAR1\x15\x04\x15\x00PAR1".to_vec(),
            "the file is a Parquet file, not a CSV",
        ),
        (
            b"a\0,\0b\0\n\x001\0,\x002\0\n\0".to_vec(),
            "it looks like UTF-16 LE text without a byte-order mark",
        ),
    ];
    for (bytes, want) in cases {
        let err = parse_csv(&bytes, usize::MAX).unwrap_err().to_string();
        assert!(err.contains(want), "expected {want:?} in {err:?}");
    }
}

#[test]
fn a_label_with_many_classes_or_numbers_gets_a_warning() {
    let (raw, _) = read(&fixture("label-many-classes.csv"));
    let d = dataset(&raw, "city", |_| {});
    assert_eq!(d.classes.len(), 25);
    const { assert!(25 > MAX_LABEL_CLASSES) };
    assert!(
        has(&d.warnings, "the label column \"city\" has 25 classes (more than 20)"),
        "{:?}",
        d.warnings
    );
    let (raw, _) = read(&fixture("numeric-label.csv"));
    let d = dataset(&raw, "price", |_| {});
    assert!(
        has(
            &d.warnings,
            "the label column \"price\" holds numbers (12 distinct values)"
        ),
        "{:?}",
        d.warnings
    );
    // Whole-number classes (0/1, 1..5) are classes.
    assert!(!has(&dataset(&raw, "rooms", |_| {}).warnings, "the label column"));
}

/// The bundled tables read exactly as before: every column used, with the kind that "all values
/// parse as numbers" gives, and no new warning.
#[test]
fn the_bundled_tables_read_as_before() {
    for (file, label, rows_with_missing) in [
        ("adult-sample.csv", "salary", 294),
        ("german-credit.csv", "credit_risk", 0),
    ] {
        let bytes = std::fs::read(format!("{}/data/{file}", env!("CARGO_MANIFEST_DIR"))).unwrap();
        let (raw, s) = read(&bytes);
        assert_eq!(s.dialect.encoding, TextEncoding::Utf8);
        assert_eq!((s.dialect.delimiter, s.dialect.decimal_comma), (',', false));
        assert!(s.warnings.is_empty(), "{file}: {:?}", s.warnings);
        assert_eq!(s.rows_with_missing, rows_with_missing);
        for (j, c) in s.columns.iter().enumerate() {
            let numeric = raw
                .rows
                .iter()
                .map(|r| r[j].as_str())
                .filter(|v| !leakscope::table::schema::is_missing(v))
                .all(|v| v.parse::<f64>().is_ok());
            let kind = if numeric {
                ColumnKind::Continuous
            } else {
                ColumnKind::Categorical
            };
            assert_eq!((c.kind, c.treatment), (kind, Treatment::Used), "{file}: {}", c.name);
            assert!(c.notes.is_empty() && c.non_numeric.is_none(), "{file}: {}", c.name);
        }
        let d = dataset(&raw, label, |_| {});
        assert_eq!(d.features.len(), s.columns.len() - 1);
        assert!(
            d.warnings.iter().all(|w| w.starts_with("dropped ")),
            "{file}: {:?}",
            d.warnings
        );
    }
}
