//! Reading a CSV into trimmed string cells, with errors that name the line.
use super::decode::decode;
use super::dialect::{Dialect, sniff};
use crate::error::{Error, Result};

/// The largest CSV the engine reads: the whole table is held in memory as text cells (several
/// times its size), which a browser tab's 4 GiB of wasm memory bounds. The page reads this limit
/// from the engine (`limits()`), so it is stated here only.
#[cfg(target_arch = "wasm32")]
pub const MAX_CSV_BYTES: usize = 100 * 1024 * 1024;
#[cfg(not(target_arch = "wasm32"))]
pub const MAX_CSV_BYTES: usize = 256 * 1024 * 1024;

/// A parsed CSV: header names and rows of trimmed cells, each row remembering its 1-based file
/// line, with how the file was read and what the reading dropped or guessed.
#[derive(Debug, Clone, PartialEq)]
pub struct RawTable {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub lines: Vec<u64>,
    pub dialect: Dialect,
    /// Rows dropped, the encoding guessed: shown with the schema and in every report.
    pub warnings: Vec<String>,
}

/// Lines named in a warning before "… (n in all)".
const LINES_NAMED: usize = 10;

/// Parse CSV bytes in whatever encoding, delimiter and decimal mark they were exported with
/// (`decode`, `dialect`). Rejects empty, oversized, binary and ragged input, and duplicate
/// header names; a header row repeated further down (files joined together) is dropped with a
/// warning naming its lines, and a column without a name is called what pandas calls it
/// ("Unnamed: 0").
pub fn parse_csv(bytes: &[u8], max_bytes: usize) -> Result<RawTable> {
    if bytes.len() > max_bytes {
        return Err(Error::TooLarge {
            size: bytes.len(),
            limit: max_bytes,
        });
    }
    let decoded = decode(bytes)?;
    let text: &str = &decoded.text;
    if text.trim().is_empty() {
        return Err(Error::EmptyFile);
    }
    let (delimiter, decimal_comma) = sniff(text);
    let dialect = Dialect {
        delimiter: delimiter as char,
        decimal_comma,
        encoding: decoded.encoding,
    };
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .delimiter(delimiter)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let written: Vec<String> = reader
        .headers()
        .map_err(|e| csv_error(text, &e))?
        .iter()
        .map(str::to_string)
        .collect();
    let headers: Vec<String> = written
        .iter()
        .enumerate()
        .map(|(j, h)| {
            if h.is_empty() {
                format!("Unnamed: {j}")
            } else {
                h.clone()
            }
        })
        .collect();
    for (i, h) in headers.iter().enumerate() {
        if headers[..i].contains(h) {
            return Err(Error::DuplicateHeader { name: h.clone() });
        }
    }
    let mut rows = Vec::new();
    let mut lines = Vec::new();
    let mut repeated = Vec::new();
    let mut counter = LineCounter::new(text);
    // One record reused: no allocation per row beyond the cells kept.
    let mut record = csv::StringRecord::new();
    while reader.read_record(&mut record).map_err(|e| csv_error(text, &e))? {
        let line = record.position().map_or(0, |p| counter.line_of(p.byte()));
        // A blank line between records is not data.
        if record.len() == 1 && record[0].is_empty() {
            continue;
        }
        if record.len() == written.len() && record.iter().eq(written.iter().map(String::as_str)) {
            repeated.push(line);
            continue;
        }
        if record.len() != headers.len() {
            return Err(Error::Ragged {
                line,
                expected: headers.len(),
                found: record.len(),
            });
        }
        rows.push(record.iter().map(str::to_string).collect());
        lines.push(line);
    }
    if rows.is_empty() {
        return Err(Error::NoRows);
    }
    let mut warnings: Vec<String> = decoded.warning.into_iter().collect();
    if !repeated.is_empty() {
        warnings.push(format!(
            "dropped {} that {} the header ({}): the file looks like several exports joined together",
            if repeated.len() == 1 {
                "1 row".to_string()
            } else {
                format!("{} rows", repeated.len())
            },
            if repeated.len() == 1 { "repeats" } else { "repeat" },
            name_lines(&repeated)
        ));
    }
    Ok(RawTable {
        headers,
        rows,
        lines,
        dialect,
        warnings,
    })
}

/// "line 4", "lines 4, 9", "lines 4, 9, … (12 in all)".
fn name_lines(lines: &[u64]) -> String {
    let named: Vec<String> = lines.iter().take(LINES_NAMED).map(u64::to_string).collect();
    let word = if lines.len() == 1 { "line" } else { "lines" };
    if lines.len() > LINES_NAMED {
        format!("{word} {}, … ({} in all)", named.join(", "), lines.len())
    } else {
        format!("{word} {}", named.join(", "))
    }
}

/// 1-based line numbers of byte offsets, counted as an editor shows them: a line ends at "\n",
/// "\r\n" or a lone "\r" (old Mac exports), as the csv crate ends records at all three; its own
/// line count sees only "\n", so it put every row of a file with lone "\r"s on line 1. Offsets
/// come in increasing order, so the text is scanned once.
struct LineCounter<'a> {
    text: &'a [u8],
    at: usize,
    line: u64,
}

impl<'a> LineCounter<'a> {
    fn new(text: &'a str) -> Self {
        LineCounter {
            text: text.as_bytes(),
            at: 0,
            line: 1,
        }
    }

    /// The line of the record (or error) at `offset`. The csv crate may place a record after
    /// blank lines at the first of them: line breaks there are passed over, as no record begins
    /// with one.
    fn line_of(&mut self, offset: u64) -> u64 {
        let mut end = usize::try_from(offset).unwrap_or(usize::MAX).min(self.text.len());
        if end < self.at {
            (self.at, self.line) = (0, 1);
        }
        while end < self.text.len() && matches!(self.text[end], b'\r' | b'\n') {
            end += 1;
        }
        // "\r\n" counts at its "\r": the csv crate starts the next record at the "\n".
        for i in self.at..end {
            match self.text[i] {
                b'\r' => self.line += 1,
                b'\n' if i == 0 || self.text[i - 1] != b'\r' => self.line += 1,
                _ => {}
            }
        }
        self.at = end;
        self.line
    }
}

fn csv_error(text: &str, e: &csv::Error) -> Error {
    let line = e.position().map_or(0, |p| LineCounter::new(text).line_of(p.byte()));
    Error::Csv {
        line,
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::decode::TextEncoding;

    #[test]
    fn parses_and_trims() {
        let t = parse_csv(b"a, b\n1, x\n2,y \n", MAX_CSV_BYTES).unwrap();
        assert_eq!(t.headers, vec!["a", "b"]);
        assert_eq!(t.rows, vec![vec!["1", "x"], vec!["2", "y"]]);
        assert_eq!(t.lines, vec![2, 3]);
        assert_eq!(t.dialect, Dialect::default());
        assert!(t.warnings.is_empty());
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(parse_csv(b"", 100), Err(Error::EmptyFile));
        assert_eq!(parse_csv(b"  \n", 100), Err(Error::EmptyFile));
        assert_eq!(parse_csv(b"a,b\n", 100), Err(Error::NoRows));
        assert_eq!(parse_csv(b"a,b\n1,2\n", 3), Err(Error::TooLarge { size: 8, limit: 3 }));
        assert_eq!(
            parse_csv(b"a,b\n1,2\n3\n", 100),
            Err(Error::Ragged {
                line: 3,
                expected: 2,
                found: 1
            })
        );
        assert_eq!(
            parse_csv(b"a,a\n1,2\n", 100),
            Err(Error::DuplicateHeader { name: "a".into() })
        );
        assert!(matches!(
            parse_csv(b"\x1f\x8b\x08\x00", 100),
            Err(Error::BinaryFormat { .. })
        ));
    }

    #[test]
    fn reads_what_exports_hold() {
        // Not UTF-8: Windows-1252, with a warning.
        let t = parse_csv(b"a,b\n1,caf\xe9\n", 100).unwrap();
        assert_eq!(t.rows, vec![vec!["1", "café"]]);
        assert_eq!(t.dialect.encoding, TextEncoding::Windows1252);
        assert!(t.warnings[0].contains("read as Windows-1252"), "{:?}", t.warnings);
        // An unnamed column is named as pandas names it.
        let t = parse_csv(b",a,b\n0,1,x\n", 100).unwrap();
        assert_eq!(t.headers, vec!["Unnamed: 0", "a", "b"]);
        // Semicolons and a decimal comma.
        let t = parse_csv(b"a;b\n1,5;x\n", 100).unwrap();
        assert_eq!(t.rows, vec![vec!["1,5", "x"]]);
        assert_eq!((t.dialect.delimiter, t.dialect.decimal_comma), (';', true));
        // Header rows repeated by joined exports are dropped and their lines named.
        let t = parse_csv(b"a,b\n1,x\na,b\n2,y\n a , b\n", 100).unwrap();
        assert_eq!(t.rows, vec![vec!["1", "x"], vec!["2", "y"]]);
        assert_eq!(t.lines, vec![2, 4]);
        assert_eq!(
            t.warnings,
            vec![
                "dropped 2 rows that repeat the header (lines 3, 5): the file looks like several exports joined together"
            ]
        );
    }

    #[test]
    fn lines_end_at_a_lone_carriage_return_too() {
        // Found by tests/prop_table.rs: the csv crate ends records at a lone \r but counts lines
        // by \n only, so every row of an old Mac export was on line 1.
        let t = parse_csv(b"\x0e\r\x0f", 100).unwrap();
        assert_eq!(t.lines, vec![2]);
        let t = parse_csv(b"1e303\r\na", 100).unwrap();
        assert_eq!(t.lines, vec![2]);
        let t = parse_csv(b"a,b\r1,2\r\n3,4\n\r5,6\r", 100).unwrap();
        assert_eq!(t.lines, vec![2, 3, 5]);
        assert_eq!(
            parse_csv(b"a,b\r1,2\r3\r", 100),
            Err(Error::Ragged {
                line: 3,
                expected: 2,
                found: 1
            })
        );
    }

    #[test]
    fn many_lines_are_counted_not_listed() {
        assert_eq!(name_lines(&[4]), "line 4");
        let lines: Vec<u64> = (1..=12).collect();
        assert_eq!(name_lines(&lines), "lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, … (12 in all)");
    }
}
