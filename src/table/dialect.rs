//! The table's dialect, sniffed from its first lines: which of `,` `;` tab `|` separates the
//! fields, and whether numbers have a decimal comma (what spreadsheets export in much of Europe,
//! with `;` between the fields). Only the first 64 KiB are looked at, so a large file costs nothing
//! more.
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::decode::TextEncoding;
use super::number::parse_number;

/// The separators tried, in the order preferred on a tie.
pub const DELIMITERS: [u8; 4] = [b',', b';', b'\t', b'|'];
const SAMPLE_BYTES: usize = 64 * 1024;
/// Records looked at after the header.
const SAMPLE_RECORDS: usize = 50;

/// How the file was read: shown with the schema, so a misread is visible.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct Dialect {
    /// What separates the fields: ",", ";", "\t" or "|".
    pub delimiter: char,
    /// Numbers are written 1,5 and 1.234,5.
    pub decimal_comma: bool,
    pub encoding: TextEncoding,
}

impl Default for Dialect {
    fn default() -> Self {
        Dialect {
            delimiter: ',',
            decimal_comma: false,
            encoding: TextEncoding::Utf8,
        }
    }
}

impl Dialect {
    /// "UTF-8, semicolon-separated, decimal comma".
    pub fn describe(&self) -> String {
        let separated = match self.delimiter {
            ',' => "comma",
            ';' => "semicolon",
            '\t' => "tab",
            '|' => "pipe",
            _ => "other",
        };
        let decimal = if self.decimal_comma {
            "decimal comma"
        } else {
            "decimal point"
        };
        format!("{}, {separated}-separated, {decimal}", self.encoding.label())
    }
}

/// The delimiter and decimal mark of a table's text.
pub fn sniff(text: &str) -> (u8, bool) {
    let cut = text.len().min(SAMPLE_BYTES);
    let truncated = cut < text.len();
    let sample = &text.as_bytes()[..cut];
    let mut best: Option<((bool, f64, usize), u8)> = None;
    for &delimiter in &DELIMITERS {
        let counts: Vec<usize> = records(sample, delimiter, truncated).iter().map(Vec::len).collect();
        let Some((&header, rest)) = counts.split_first() else {
            continue;
        };
        if header < 2 {
            continue;
        }
        let agree = if rest.is_empty() {
            1.0
        } else {
            rest.iter().filter(|&&c| c == header).count() as f64 / rest.len() as f64
        };
        // Every record agreeing with the header first, then most agreeing, then most fields; the
        // earlier delimiter on a tie (a strict `>` keeps it).
        let score = (agree == 1.0, agree, header);
        if best.is_none_or(|(b, _)| score.partial_cmp(&b) == Some(std::cmp::Ordering::Greater)) {
            best = Some((score, delimiter));
        }
    }
    let delimiter = best.map_or(b',', |(_, d)| d);
    (delimiter, decimal_comma(sample, delimiter, truncated))
}

/// A decimal comma where the fields are not separated by commas and the sample's numbers say so:
/// more cells that only read as numbers with a decimal comma ("1,5", "1.234,5") than cells whose
/// point is plainly a decimal point ("12.75", "1,234.5"). Cells that read either way ("1,234") count
/// for a decimal comma only in a semicolon-separated table, the convention of decimal-comma
/// locales.
fn decimal_comma(sample: &[u8], delimiter: u8, truncated: bool) -> bool {
    if delimiter == b',' {
        return false;
    }
    let (mut comma, mut point, mut either) = (0, 0, 0);
    for record in records(sample, delimiter, truncated).iter().skip(1) {
        for field in record {
            let cell = std::str::from_utf8(field).unwrap_or("").trim().trim_matches('"');
            if !cell.contains([',', '.']) {
                continue;
            }
            match (parse_number(cell, false), parse_number(cell, true)) {
                (None, Some(_)) => comma += 1,
                (Some(_), None) => point += 1,
                (Some(a), Some(b)) if a != b => either += 1,
                (Some(_), Some(_)) if !cell.contains(',') => point += 1,
                _ => {}
            }
        }
    }
    comma > point || (delimiter == b';' && comma == 0 && point == 0 && either > 0)
}

/// The sample's records as fields (raw bytes, quotes kept), quote-aware as the csv crate reads
/// them: a quote opens a quoted field only at the field's start, and a quoted field may hold
/// delimiters and line breaks. Blank lines are skipped; a record cut by the sample's end is not
/// returned.
fn records(sample: &[u8], delimiter: u8, truncated: bool) -> Vec<Vec<&[u8]>> {
    #[derive(PartialEq)]
    enum State {
        Start,
        Unquoted,
        Quoted,
        QuoteInQuoted,
    }
    let mut out = Vec::new();
    let mut fields = Vec::new();
    let mut start = 0;
    let mut state = State::Start;
    for (i, &b) in sample.iter().enumerate() {
        match state {
            State::Quoted => {
                if b == b'"' {
                    state = State::QuoteInQuoted;
                }
                continue;
            }
            State::Start if b == b'"' => {
                state = State::Quoted;
                continue;
            }
            State::QuoteInQuoted if b == b'"' => {
                state = State::Quoted;
                continue;
            }
            _ => {}
        }
        if b == delimiter {
            fields.push(&sample[start..i]);
            start = i + 1;
            state = State::Start;
        } else if b == b'\n' {
            let end = if i > start && sample[i - 1] == b'\r' { i - 1 } else { i };
            fields.push(&sample[start..end]);
            start = i + 1;
            state = State::Start;
            let blank = fields.len() == 1 && fields[0].iter().all(u8::is_ascii_whitespace);
            if !blank {
                out.push(std::mem::take(&mut fields));
                if out.len() > SAMPLE_RECORDS {
                    return out;
                }
            } else {
                fields.clear();
            }
        } else {
            state = State::Unquoted;
        }
    }
    // The last record, when the sample holds the file's end.
    if !truncated && state != State::Quoted && (start < sample.len() || !fields.is_empty()) {
        fields.push(&sample[start..]);
        if !(fields.len() == 1 && fields[0].iter().all(u8::is_ascii_whitespace)) {
            out.push(fields);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delimiters_and_decimal_marks() {
        assert_eq!(sniff("a,b,c\n1,2,3\n"), (b',', false));
        assert_eq!(sniff("a;b;c\n1,5;2;x\n3,25;4;y\n"), (b';', true));
        assert_eq!(sniff("a\tb\n1.5\tx\n2.5\ty\n"), (b'\t', false));
        assert_eq!(sniff("a\tb\n1,5\tx\n2,5\ty\n"), (b'\t', true));
        assert_eq!(sniff("a|b|c\n1|2|3"), (b'|', false));
        // Commas inside quotes do not separate.
        assert_eq!(sniff("name;note\nx;\"a, b, c\"\ny;\"d, e\"\n"), (b';', false));
        assert_eq!(sniff("name,note\nx,\"a; b; c\"\ny,\"d; e\"\n"), (b',', false));
        // A single column.
        assert_eq!(sniff("a\n1\n2\n"), (b',', false));
        // Thousands in a semicolon table with decimal points.
        assert_eq!(sniff("a;b\n\"1,234.5\";x\n12.5;y\n"), (b';', false));
        // Only ambiguous cells: a semicolon table's convention.
        assert_eq!(sniff("a;b\n1,234;x\n"), (b';', true));
    }

    #[test]
    fn records_are_quote_aware() {
        let r = records(b"a,\"b\nc\",d\r\n\n1,2,3", b',', false);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0], vec![&b"a"[..], &b"\"b\nc\""[..], &b"d"[..]]);
        assert_eq!(r[1].len(), 3);
        assert_eq!(records(b"a,b\n1,2", b',', true).len(), 1);
    }
}
