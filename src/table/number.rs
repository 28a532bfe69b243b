//! Numbers as tables write them: plain (`1889.5`, `-3e4`), with thousands separators (`1,889.50`,
//! `1 889.50`, `1'889.50`) and, in a table whose dialect has one, with a decimal comma (`1889,5`,
//! `1.889,50`). Inference and encoding both read cells through here, so a cell that made a column
//! numeric is also the number the column holds.
use std::borrow::Cow;

/// Share of a continuous column's std within which a reconstructed value counts as right (SPEC §6).
pub const TOLERANCE_FACTOR: f64 = 0.319;

/// What a proved row claims of its continuous values: each within this many of its column's std
/// of the batch row's. Issue 43 counts a proof false beyond 0.05 std; half the scoring tolerance
/// (0.16 std), claimed before, let a row one unit off on an integer column (hours 55 for 56,
/// 0.08 std) pass as proved.
pub const PROVED_WITHIN: f64 = 0.05;

/// Most decimals a continuous column keeps: enough to write the smallest double (4.9e-324) to 17
/// significant digits. A report formats every value with its column's decimals, so an encoding
/// file stating billions would make formatting one value allocate gigabytes.
pub const MAX_DECIMALS: u32 = 340;

/// Mean and unbiased standard deviation.
pub fn mean_std(values: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let (n, sum) = values.clone().fold((0usize, 0.0), |(n, s), v| (n + 1, s + v));
    let mean = sum / n as f64;
    let ss: f64 = values.map(|v| (v - mean) * (v - mean)).sum();
    let std = if n > 1 { (ss / (n - 1) as f64).sqrt() } else { 0.0 };
    (mean, std)
}

/// A cell's value, when it is a number in the table's dialect.
#[inline]
pub fn parse_number(cell: &str, decimal_comma: bool) -> Option<f64> {
    read(cell, decimal_comma).map(|(v, _)| v)
}

/// A cell's value and its number of decimals (6 for an exponent), which decoding rounds to.
pub fn parse_number_with_decimals(cell: &str, decimal_comma: bool) -> Option<(f64, u32)> {
    read(cell, decimal_comma).map(|(v, text)| (v, decimals_of(&text)))
}

/// The value and the cell in Rust's float syntax: borrowed when the cell already is one (the
/// common case, which costs one `parse`).
#[inline]
fn read(cell: &str, decimal_comma: bool) -> Option<(f64, Cow<'_, str>)> {
    // With a decimal comma, "1.234" is a thousand and more: only cells without either mark are
    // plain there.
    if !(decimal_comma && cell.contains(['.', ',']))
        && let Ok(v) = cell.parse::<f64>()
    {
        return Some((v, Cow::Borrowed(cell)));
    }
    if let Some(text) = normalise(cell, decimal_comma) {
        return text.parse().ok().map(|v| (v, Cow::Owned(text)));
    }
    // A point decimal in a decimal-comma table ("1.5", not grouped like "1.500"): as written.
    if decimal_comma && !cell.contains(',') {
        return cell.parse().ok().map(|v| (v, Cow::Borrowed(cell)));
    }
    None
}

/// "1,889.50" → "1889.50"; with a decimal comma "1.889,50" → "1889.50". The integer part is plain
/// digits or groups of three after a first group of one to three (no leading zero), with one
/// separator throughout: the other mark than the decimal one, a space, a no-break space or an
/// apostrophe. Anything else is not a number.
fn normalise(cell: &str, decimal_comma: bool) -> Option<String> {
    let (decimal, group) = if decimal_comma { (',', '.') } else { ('.', ',') };
    let (sign, body) = match cell.as_bytes().first()? {
        b'-' => ("-", &cell[1..]),
        b'+' => ("", &cell[1..]),
        _ => ("", cell),
    };
    let (int, frac) = match body.split_once(decimal) {
        Some((i, f)) => (i, Some(f)),
        None => (body, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if frac.is_some_and(|f| !digits(f)) {
        return None;
    }
    // Checked before anything is built: most cells that get here are words.
    let separator = int.chars().find(|c| !c.is_ascii_digit());
    match separator {
        None if int.is_empty() && frac.is_none() => return None,
        None => {}
        Some(sep) => {
            if !(sep == group || matches!(sep, ' ' | '\u{a0}' | '\u{202f}' | '\'')) {
                return None;
            }
            let mut groups = int.split(sep);
            let first = groups.next()?;
            if !digits(first) || first.len() > 3 || first.starts_with('0') || !groups.all(|g| g.len() == 3 && digits(g))
            {
                return None;
            }
        }
    }
    let mut out = String::with_capacity(cell.len());
    out.push_str(sign);
    match separator {
        Some(sep) => out.extend(int.chars().filter(|&c| c != sep)),
        None => out.push_str(int),
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    Some(out)
}

fn decimals_of(text: &str) -> u32 {
    if text.contains(['e', 'E']) {
        return 6;
    }
    text.split_once('.').map_or(0, |(_, frac)| frac.len() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_grouped_and_decimal_comma_numbers() {
        for (cell, want) in [
            ("12", Some(12.0)),
            ("-3.5", Some(-3.5)),
            ("1e3", Some(1000.0)),
            ("1,889.50", Some(1889.5)),
            ("-1,234,567", Some(-1_234_567.0)),
            ("1 889.5", Some(1889.5)),
            ("1'889", Some(1889.0)),
            ("1,5", None),
            ("12,34.5", None),
            ("0,123", None),
            ("1.889,50", None),
            ("unknown", None),
            ("", None),
        ] {
            assert_eq!(parse_number(cell, false), want, "{cell:?} with a decimal point");
        }
        for (cell, want) in [
            ("12", Some(12.0)),
            ("1,5", Some(1.5)),
            ("-0,25", Some(-0.25)),
            ("1.889,50", Some(1889.5)),
            ("1 889,5", Some(1889.5)),
            ("1.500", Some(1500.0)),
            ("1.5", Some(1.5)),
            ("1,889.50", None),
            ("n/a", None),
        ] {
            assert_eq!(parse_number(cell, true), want, "{cell:?} with a decimal comma");
        }
    }

    #[test]
    fn decimals_follow_the_written_fraction() {
        assert_eq!(parse_number_with_decimals("1,889.50", false), Some((1889.5, 2)));
        assert_eq!(parse_number_with_decimals("3,25", true), Some((3.25, 2)));
        assert_eq!(parse_number_with_decimals("1.500", true), Some((1500.0, 0)));
        assert_eq!(parse_number_with_decimals("2e-3", false), Some((0.002, 6)));
    }
}
