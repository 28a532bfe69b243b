//! `Dataset`'s reading, encoding and their errors, on small tables made here.
use super::*;
use crate::table::csv_input::{MAX_CSV_BYTES, parse_csv};

fn build(text: &str, label: &str) -> Result<Dataset> {
    let raw = parse_csv(text.as_bytes(), MAX_CSV_BYTES)?;
    Dataset::from_raw(
        &raw,
        &DatasetOptions {
            label: label.into(),
            ..Default::default()
        },
    )
}

#[test]
fn encodes_standardises_and_decodes() {
    let d = build("age,colour,y\n20,red,a\n30,blue,b\n40.5,red,a\n?,red,b\n", "y").unwrap();
    assert_eq!(d.dropped, 1);
    assert_eq!(d.d(), 3);
    assert_eq!(d.classes, vec!["a", "b"]);
    assert_eq!(d.labels, vec![0, 1, 0]);
    let FeatureKind::Continuous {
        min,
        max,
        decimals,
        std,
    } = d.features[0].kind
    else {
        panic!()
    };
    assert_eq!((min, max, decimals), (20.0, 40.5, 1));
    assert!((std - 10.251_016_209_787_855).abs() < 1e-12);
    // Every encoded column has mean 0 and unit unbiased std over the table.
    for c in 0..d.d() {
        let col: Vec<f64> = d.rows.iter().map(|r| d.encode(r)[c]).collect();
        let (m, s) = mean_std(col.into_iter());
        assert!(m.abs() < 1e-12 && (s - 1.0).abs() < 1e-12, "column {c}: {m} {s}");
    }
    for row in &d.rows {
        let enc: Vec<f32> = d.encode(row).iter().map(|&v| v as f32).collect();
        assert_eq!(&d.decode(&enc), row);
    }
    // Out-of-range values clamp, and precision follows the column's text.
    let mut enc: Vec<f32> = d.encode(&d.rows[0]).iter().map(|&v| v as f32).collect();
    enc[0] = 100.0;
    assert_eq!(d.decode(&enc)[0], Value::Num(40.5));
    // Negative zero, or a value that rounds to zero from below, is written "0".
    assert_eq!(d.format(0, Value::Num(-0.0)), "0.0");
    assert_eq!(d.format(0, Value::Num(-0.04)), "0.0");
    assert_eq!(d.format(0, Value::Num(-0.06)), "-0.1");
    assert_eq!(d.format(1, Value::Cat(1)), "red");
}

#[test]
fn specific_errors() {
    assert!(matches!(build("a,y\n1,x\n2,x\n", "y"), Err(Error::SingleClass { .. })));
    assert!(matches!(
        build("a,y\n1,x\n2,z\n", "label"),
        Err(Error::UnknownColumn { .. })
    ));
    assert!(matches!(
        build("a,y\ninf,x\n2,z\n", "y"),
        Err(Error::NotFinite { line: 2, .. })
    ));
    assert!(matches!(
        build("a,y\n?,x\n2,z\n", "y"),
        Err(Error::TooFewRows { dropped: 1, .. })
    ));
    assert!(matches!(build("y\nx\nz\n", "y"), Err(Error::NoFeatures)));
    // Forced continuous on a column of words: refused, naming the first word.
    let raw = parse_csv(b"a,y\n1,x\nfoo,z\nbar,x\n", MAX_CSV_BYTES).unwrap();
    let opts = DatasetOptions {
        label: "y".into(),
        kinds: vec![("a".into(), ColumnKind::Continuous)],
        ..Default::default()
    };
    assert_eq!(
        Dataset::from_raw(&raw, &opts),
        Err(Error::NotNumeric {
            column: "a".into(),
            line: 3,
            value: "foo".into()
        })
    );
}

#[test]
fn numbers_too_large_to_standardise_are_refused_and_large_ones_decode() {
    // Found by tests/prop_table.rs: a column holding ±1e303 had an infinite std, and values of a
    // column with more decimals than a double has digits decoded to NaN.
    let err = build("a,y\n1e303,x\n-1e302,z\n5,x\n", "y").unwrap_err();
    assert!(
        err.to_string()
            .contains("column \"a\", line 2: 1e303 is too large: the column's mean or spread overflows"),
        "{err}"
    );
    // More decimals than a double has digits: decoded, not rounded to NaN or ∞.
    let cell = format!("0.{}1", "0".repeat(330));
    let d = build(&format!("a,y\n{cell},x\n1e150,z\n"), "y").unwrap();
    for row in &d.rows {
        let enc: Vec<f32> = d.encode(row).iter().map(|&v| v as f32).collect();
        let Value::Num(v) = d.decode(&enc)[0] else { panic!() };
        assert!(v.is_finite() && (v - row[0].num()).abs() <= 1e143, "{v}");
    }
}

#[test]
fn rounding_never_leaves_the_range() {
    // Found by tests/prop_table.rs (a long run): 1e-308 rounded to 308 decimals is
    // 9.999999999999994e-309, below the column's minimum.
    let cell = format!("0.{}1", "0".repeat(307));
    let d = build(&format!("a,y\n{cell},x\n95,z\n"), "y").unwrap();
    // Below the range: clamped to 1e-308, which rounds to just below it.
    assert_eq!(d.decode(&vec![-100.0; d.d()])[0], Value::Num(1e-308));
}

#[test]
fn one_hot_statistics_match_the_encoded_columns() {
    let d = build("c,y\na,x\nb,z\na,x\na,z\nc,x\n", "y").unwrap();
    for c in 0..d.d() {
        let col: Vec<f64> = d.rows.iter().map(|r| d.one_hot(r)[c]).collect();
        let (m, s) = mean_std(col.into_iter());
        assert!(
            (d.mean[c] - m).abs() < 1e-15 && (d.std[c] - s).abs() < 1e-15,
            "column {c}"
        );
    }
}

#[test]
fn an_identifier_column_too_wide_to_encode_is_refused_by_name() {
    let mut text = String::from("id,age,y\n");
    for i in 0..(MAX_ENCODED_WIDTH + 5) {
        text += &format!("user{i},{},{}\n", i % 90, i % 2);
    }
    // Left out by default; put back, it is too wide.
    let d = build(&text, "y").unwrap();
    assert_eq!(d.d(), 1);
    assert!(
        d.warnings[0].starts_with("column \"id\" is left out"),
        "{:?}",
        d.warnings
    );
    let raw = parse_csv(text.as_bytes(), MAX_CSV_BYTES).unwrap();
    let options = DatasetOptions {
        label: "y".into(),
        include: vec!["id".into()],
        ..Default::default()
    };
    let err = Dataset::from_raw(&raw, &options).unwrap_err();
    assert_eq!(
        err,
        Error::TooWide {
            width: MAX_ENCODED_WIDTH + 6,
            limit: MAX_ENCODED_WIDTH,
            widest: format!("\"id\" ({} distinct values)", MAX_ENCODED_WIDTH + 5)
        }
    );
    assert!(err.to_string().contains("leave it out"), "{err}");
}

#[test]
fn constant_columns_are_kept_with_a_warning() {
    let d = build("a,b,y\n1,k,x\n1,k,z\n", "y").unwrap();
    assert_eq!(d.std, vec![1.0, 1.0]);
    assert_eq!(d.warnings.len(), 2);
}

/// A regression's label: a number on every row, standardised with the table's mean and std;
/// missing, non-numeric or constant labels are refused by name.
#[test]
fn a_regression_label_is_read_as_numbers_and_bad_ones_are_named() {
    let read = |text: &str| {
        let raw = parse_csv(text.as_bytes(), MAX_CSV_BYTES).unwrap();
        let options = DatasetOptions {
            label: "y".into(),
            task: Task::Regression,
            ..Default::default()
        };
        Dataset::from_raw(&raw, &options)
    };
    let d = read("a,y\nk,1.5\nm,2\nk,4.25\n").unwrap();
    assert_eq!(d.task(), Task::Regression);
    assert!(d.classes.is_empty());
    assert_eq!(d.values, vec![1.5, 2.0, 4.25]);
    let t = d.target.clone().unwrap();
    assert_eq!((t.min, t.max, t.decimals), (1.5, 4.25, 2));
    let (mean, std) = mean_std([1.5, 2.0, 4.25].into_iter());
    assert_eq!((t.mean, t.std), (mean, std));
    assert_eq!(
        d.targets(&[0, 2], Head::Linear),
        vec![t.standardise(1.5), t.standardise(4.25)]
    );
    assert_eq!(t.value(t.standardise(2.0) as f64), 2.0);
    assert_eq!(t.value(100.0), 4.25, "clamped to the label's range");
    let e = read("a,y\nk,1\nm,\nk,3\nm,?\n").unwrap_err().to_string();
    assert!(
        e.contains("the regression label \"y\" is missing on 2 rows (lines 3, 5)"),
        "{e}"
    );
    let e = read("a,y\nk,1\nm,lots\n").unwrap_err().to_string();
    assert!(e.contains("needs a number on every row; line 3 has \"lots\""), "{e}");
    let e = read("a,y\nk,7\nm,7\n").unwrap_err().to_string();
    assert!(e.contains("has one value on every row"), "{e}");
}
