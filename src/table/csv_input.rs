//! Reading a CSV into trimmed string cells, with errors that name the line.
use crate::error::{Error, Result};

/// The largest CSV the engine reads: the whole table is held in memory as text cells (several
/// times its size), which a browser tab's 4 GiB of wasm memory bounds. The page reads this limit
/// from the engine (`limits()`), so it is stated here only.
#[cfg(target_arch = "wasm32")]
pub const MAX_CSV_BYTES: usize = 100 * 1024 * 1024;
#[cfg(not(target_arch = "wasm32"))]
pub const MAX_CSV_BYTES: usize = 256 * 1024 * 1024;

/// A parsed CSV: header names and rows of trimmed cells, each row remembering its 1-based file line.
#[derive(Debug, Clone, PartialEq)]
pub struct RawTable {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub lines: Vec<u64>,
}

/// Parse CSV bytes. Rejects empty, oversized, non-UTF-8 and ragged input, and bad headers.
pub fn parse_csv(bytes: &[u8], max_bytes: usize) -> Result<RawTable> {
    if bytes.len() > max_bytes {
        return Err(Error::TooLarge {
            size: bytes.len(),
            limit: max_bytes,
        });
    }
    let text = std::str::from_utf8(bytes).map_err(|e| Error::NotUtf8 {
        offset: e.valid_up_to(),
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err(Error::EmptyFile);
    }
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let headers: Vec<String> = reader
        .headers()
        .map_err(|e| csv_error(&e))?
        .iter()
        .map(str::to_string)
        .collect();
    for (i, h) in headers.iter().enumerate() {
        if h.is_empty() {
            return Err(Error::EmptyHeader { column: i + 1 });
        }
        if headers[..i].contains(h) {
            return Err(Error::DuplicateHeader { name: h.clone() });
        }
    }
    let mut rows = Vec::new();
    let mut lines = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| csv_error(&e))?;
        let line = record.position().map_or(0, |p| p.line());
        // A blank line between records is not data.
        if record.len() == 1 && record[0].is_empty() {
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
    Ok(RawTable { headers, rows, lines })
}

fn csv_error(e: &csv::Error) -> Error {
    let line = e.position().map_or(0, |p| p.line());
    Error::Csv {
        line,
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_trims() {
        let t = parse_csv(b"a, b\n1, x\n2,y \n", MAX_CSV_BYTES).unwrap();
        assert_eq!(t.headers, vec!["a", "b"]);
        assert_eq!(t.rows, vec![vec!["1", "x"], vec!["2", "y"]]);
        assert_eq!(t.lines, vec![2, 3]);
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(parse_csv(b"", 100), Err(Error::EmptyFile));
        assert_eq!(parse_csv(b"  \n", 100), Err(Error::EmptyFile));
        assert_eq!(parse_csv(b"a,b\n", 100), Err(Error::NoRows));
        assert_eq!(parse_csv(b"a,b\n1,2\n", 3), Err(Error::TooLarge { size: 8, limit: 3 }));
        assert_eq!(parse_csv(b"a,b\n1,\xff\n", 100), Err(Error::NotUtf8 { offset: 6 }));
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
        assert_eq!(parse_csv(b"a,\n1,2\n", 100), Err(Error::EmptyHeader { column: 2 }));
    }
}
