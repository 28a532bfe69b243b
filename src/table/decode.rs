//! Bytes → text, as tables are exported: UTF-8 with or without a byte-order mark, UTF-16 with one
//! (Excel's "Unicode text"), and Windows-1252 (Latin-1's superset, what older spreadsheets and
//! databases write in Western Europe) when the bytes are not UTF-8. Files that are not text at
//! all are named by their magic bytes (an Excel workbook, a gzip archive, an image), so that the
//! error says what the file is and what to do with it.
use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::error::{Error, Result};

/// How many leading bytes the checks for NUL bytes (text in UTF-16 without a byte-order mark, or
/// binary data) look at: enough for many lines, nothing for a large file.
const SNIFF_BYTES: usize = 64 * 1024;

/// How the file's bytes were read as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
pub enum TextEncoding {
    #[serde(rename = "utf-8")]
    Utf8,
    /// UTF-8 behind a byte-order mark (Excel's "CSV UTF-8").
    #[serde(rename = "utf-8-bom")]
    Utf8Bom,
    #[serde(rename = "utf-16le")]
    Utf16Le,
    #[serde(rename = "utf-16be")]
    Utf16Be,
    /// The bytes were not UTF-8: read as Windows-1252, with a warning.
    #[serde(rename = "windows-1252")]
    Windows1252,
}

impl TextEncoding {
    pub fn label(self) -> &'static str {
        match self {
            TextEncoding::Utf8 => "UTF-8",
            TextEncoding::Utf8Bom => "UTF-8 with a byte-order mark",
            TextEncoding::Utf16Le => "UTF-16 LE",
            TextEncoding::Utf16Be => "UTF-16 BE",
            TextEncoding::Windows1252 => "Windows-1252 (not UTF-8)",
        }
    }
}

/// A file's text and how it was read.
pub struct Decoded<'a> {
    /// Borrowed from the bytes for UTF-8 (no copy of a large file); owned when converted.
    pub text: Cow<'a, str>,
    pub encoding: TextEncoding,
    /// What the reading changed or guessed, for the user to check.
    pub warning: Option<String>,
}

/// Read a file's bytes as text, or say what the file is when it is not text.
pub fn decode(bytes: &[u8]) -> Result<Decoded<'_>> {
    if let Some((format, hint)) = binary_format(bytes) {
        return Err(Error::BinaryFormat {
            format: format.into(),
            hint: hint.into(),
        });
    }
    // UTF-32's byte-order marks first: FF FE 00 00 begins with UTF-16 LE's.
    if bytes.starts_with(&[0xFF, 0xFE, 0, 0]) || bytes.starts_with(&[0, 0, 0xFE, 0xFF]) {
        return Err(Error::BinaryFormat {
            format: "UTF-32 text".into(),
            hint: "save it as UTF-8 (in Excel: CSV UTF-8)".into(),
        });
    }
    if let Some((encoding, bom)) = encoding_rs::Encoding::for_bom(bytes) {
        let body = &bytes[bom..];
        if encoding == encoding_rs::UTF_8 {
            return Ok(match std::str::from_utf8(body) {
                Ok(text) => Decoded {
                    text: Cow::Borrowed(text),
                    encoding: TextEncoding::Utf8Bom,
                    warning: None,
                },
                // The mark says UTF-8: keep it, and show the bad bytes as such.
                Err(e) => Decoded {
                    warning: Some(format!(
                        "the file is marked as UTF-8 but line {} holds a byte that is not (0x{:02X}): bad bytes \
                         read as \u{FFFD}",
                        line_of(body, e.valid_up_to()),
                        body[e.valid_up_to()]
                    )),
                    text: Cow::Owned(String::from_utf8_lossy(body).into_owned()),
                    encoding: TextEncoding::Utf8Bom,
                },
            });
        }
        let big_endian = encoding == encoding_rs::UTF_16BE;
        let (text, had_errors) = decode_with(encoding, body, utf16_as_utf8_len(body, big_endian));
        let encoding = if big_endian {
            TextEncoding::Utf16Be
        } else {
            TextEncoding::Utf16Le
        };
        return Ok(Decoded {
            text: Cow::Owned(text),
            encoding,
            warning: had_errors.then(|| {
                format!(
                    "the file is {} text with invalid sequences: they read as \u{FFFD}",
                    encoding.label()
                )
            }),
        });
    }
    if let Some(what) = nul_bytes(&bytes[..bytes.len().min(SNIFF_BYTES)]) {
        return Err(Error::NotText(what));
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(Decoded {
            text: Cow::Borrowed(text),
            encoding: TextEncoding::Utf8,
            warning: None,
        }),
        Err(e) => {
            let at = e.valid_up_to();
            let line = line_of(bytes, at);
            // Valid multi-byte UTF-8 before the first bad byte: a UTF-8 file with a few bad bytes,
            // which Windows-1252 would garble everywhere else.
            if !bytes[..at].is_ascii() {
                return Ok(Decoded {
                    text: Cow::Owned(String::from_utf8_lossy(bytes).into_owned()),
                    encoding: TextEncoding::Utf8,
                    warning: Some(format!(
                        "the file is UTF-8 but line {line} holds a byte that is not (0x{:02X}): bad bytes read as \
                         \u{FFFD}",
                        bytes[at]
                    )),
                });
            }
            // Every byte above 0x7F becomes two or three bytes of UTF-8 (€ is three).
            let bound = bytes.len() + 2 * bytes.iter().filter(|b| !b.is_ascii()).count();
            let (text, _) = decode_with(encoding_rs::WINDOWS_1252, bytes, bound);
            Ok(Decoded {
                text: Cow::Owned(text),
                encoding: TextEncoding::Windows1252,
                warning: Some(format!(
                    "the file is not UTF-8 (line {line} holds byte 0x{:02X}): it was read as Windows-1252 \
                     (Latin-1); if accented letters look wrong, save it as UTF-8",
                    bytes[at]
                )),
            })
        }
    }
}

/// Decode with encoding_rs into a string sized for the text. Its one-call `decode` sizes (and
/// initialises) the buffer for the worst case, three bytes of UTF-8 a byte of Windows-1252: 300 MB
/// touched for a 100 MB file.
fn decode_with(encoding: &'static encoding_rs::Encoding, bytes: &[u8], bound: usize) -> (String, bool) {
    let mut decoder = encoding.new_decoder_without_bom_handling();
    let mut text = String::with_capacity(bound);
    let mut read = 0;
    let mut had_errors = false;
    loop {
        let (result, n, errors) = decoder.decode_to_string(&bytes[read..], &mut text, true);
        read += n;
        had_errors |= errors;
        match result {
            encoding_rs::CoderResult::InputEmpty => return (text, had_errors),
            // Only if the bound was short (a malformed tail's replacement character, say).
            encoding_rs::CoderResult::OutputFull => text.reserve(16 + (bytes.len() - read) * 3),
        }
    }
}

/// The UTF-8 length of UTF-16 text, counted unit by unit (a surrogate pair's four bytes as two
/// units of two; an odd last byte as a replacement character).
fn utf16_as_utf8_len(bytes: &[u8], big_endian: bool) -> usize {
    let units = bytes.chunks_exact(2).map(|u| {
        let unit = if big_endian {
            u16::from_be_bytes([u[0], u[1]])
        } else {
            u16::from_le_bytes([u[0], u[1]])
        };
        match unit {
            0..0x80 => 1,
            0x80..0x800 => 2,
            0xD800..0xE000 => 2,
            _ => 3,
        }
    });
    units.sum::<usize>() + 3 * (bytes.len() % 2)
}

/// The 1-based line of a byte offset.
fn line_of(bytes: &[u8], offset: usize) -> usize {
    1 + bytes[..offset].iter().filter(|&&b| b == b'\n').count()
}

/// Formats a CSV is often confused with, by their first bytes: what the file is and what to do.
fn binary_format(bytes: &[u8]) -> Option<(&'static str, &'static str)> {
    let starts = |magic: &[u8]| bytes.starts_with(magic);
    let zip = starts(b"PK\x03\x04") || starts(b"PK\x05\x06");
    Some(if zip {
        // An Office document's entries are named near the start (the local headers) and again at
        // the end (the central directory).
        let head = &bytes[..bytes.len().min(SNIFF_BYTES)];
        let tail = &bytes[bytes.len().saturating_sub(SNIFF_BYTES)..];
        let holds = |name: &[u8]| contains(head, name) || contains(tail, name);
        if holds(b"xl/workbook") || holds(b"xl/worksheets/") {
            (
                "an Excel workbook (.xlsx)",
                "open it in Excel or another spreadsheet and save the sheet as CSV (File > Save As > CSV UTF-8)",
            )
        } else if holds(b"application/vnd.oasis.opendocument.spreadsheet") {
            (
                "an OpenDocument spreadsheet (.ods)",
                "open it in a spreadsheet and save the sheet as CSV",
            )
        } else {
            (
                "a ZIP archive",
                "unzip it and give the CSV inside; an Excel workbook (.xlsx) is a ZIP archive too: open it in a \
                 spreadsheet and save the sheet as CSV",
            )
        }
    } else if starts(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]) {
        (
            "a legacy Excel workbook (.xls) or another old Office document",
            "open it in Excel or another spreadsheet and save the sheet as CSV",
        )
    } else if starts(&[0x1F, 0x8B]) {
        (
            "a gzip-compressed file",
            "decompress it first (gunzip, or 7-Zip on Windows) and give the CSV inside",
        )
    } else if starts(b"BZh") && bytes.get(4..10) == Some(&b"1AY&SY"[..]) {
        (
            "a bzip2-compressed file",
            "decompress it first (bunzip2) and give the CSV inside",
        )
    } else if starts(&[0xFD, b'7', b'z', b'X', b'Z', 0]) {
        (
            "an xz-compressed file",
            "decompress it first (unxz) and give the CSV inside",
        )
    } else if starts(&[0x28, 0xB5, 0x2F, 0xFD]) {
        (
            "a zstd-compressed file",
            "decompress it first (unzstd) and give the CSV inside",
        )
    } else if starts(b"7z\xBC\xAF\x27\x1C") {
        ("a 7-Zip archive", "extract it first and give the CSV inside")
    } else if starts(b"PAR1") && bytes.ends_with(b"PAR1") {
        (
            "a Parquet file",
            "write it as CSV first (pandas: pd.read_parquet(path).to_csv(\"table.csv\", index=False))",
        )
    } else if starts(b"ARROW1") {
        (
            "an Arrow / Feather file",
            "write it as CSV first (pandas: pd.read_feather(path).to_csv(\"table.csv\", index=False))",
        )
    } else if starts(b"SQLite format 3\0") {
        (
            "an SQLite database",
            "export the table as CSV first (sqlite3 -header -csv file.db \"select * from t\" > table.csv)",
        )
    } else if starts(b"%PDF-") {
        (
            "a PDF document",
            "a table in a PDF cannot be read: export it from where it came from as CSV",
        )
    } else if starts(&[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A]) {
        ("a PNG image", "give the table itself, saved as CSV")
    } else if starts(&[0xFF, 0xD8, 0xFF]) {
        ("a JPEG image", "give the table itself, saved as CSV")
    } else if starts(b"GIF87a") || starts(b"GIF89a") {
        ("a GIF image", "give the table itself, saved as CSV")
    } else {
        return None;
    })
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// NUL bytes in a file without a byte-order mark: UTF-16 text (every other byte NUL in ASCII
/// text) or binary data. Neither is read, and the message says which it looks like.
fn nul_bytes(sample: &[u8]) -> Option<String> {
    if !sample.contains(&0) {
        return None;
    }
    let nul_at = |parity: usize| sample.iter().skip(parity).step_by(2).filter(|&&b| b == 0).count();
    let half = sample.len() / 2;
    // Mostly-ASCII UTF-16: the high byte of nearly every unit is NUL (the second byte in LE).
    let what = if nul_at(1) * 10 >= half * 9 && nul_at(0) * 10 < half {
        "it looks like UTF-16 LE text without a byte-order mark: save it as UTF-8 (or as UTF-16 with a byte-order mark)"
    } else if nul_at(0) * 10 >= half * 9 && nul_at(1) * 10 < half {
        "it looks like UTF-16 BE text without a byte-order mark: save it as UTF-8 (or as UTF-16 with a byte-order mark)"
    } else {
        "it looks like binary data, not text: export the table as CSV"
    };
    Some(what.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16(text: &str, big_endian: bool) -> Vec<u8> {
        let mut out = if big_endian { vec![0xFE, 0xFF] } else { vec![0xFF, 0xFE] };
        for unit in text.encode_utf16() {
            out.extend(if big_endian {
                unit.to_be_bytes()
            } else {
                unit.to_le_bytes()
            });
        }
        out
    }

    #[test]
    fn utf8_is_borrowed_and_other_encodings_converted() {
        let d = decode(b"a,b\n1,2\n").unwrap();
        assert!(matches!(d.text, Cow::Borrowed("a,b\n1,2\n")));
        assert_eq!((d.encoding, d.warning), (TextEncoding::Utf8, None));
        let d = decode(b"\xEF\xBB\xBFa\n").unwrap();
        assert_eq!((&*d.text, d.encoding), ("a\n", TextEncoding::Utf8Bom));
        for be in [false, true] {
            let bytes = utf16("café,b\n", be);
            let d = decode(&bytes).unwrap();
            assert_eq!(&*d.text, "café,b\n");
            assert_eq!(
                d.encoding,
                if be {
                    TextEncoding::Utf16Be
                } else {
                    TextEncoding::Utf16Le
                }
            );
        }
        // Beyond the BMP, and a lone surrogate (replaced, with a warning).
        let bytes = utf16("a😀é\n", false);
        assert_eq!(&*decode(&bytes).unwrap().text, "a😀é\n");
        let d = decode(&[0xFF, 0xFE, 0x00, 0xD8, b'a', 0, b'b']).unwrap();
        assert_eq!(&*d.text, "\u{FFFD}a\u{FFFD}");
        assert!(d.warning.unwrap().contains("UTF-16 LE text with invalid sequences"));
        let d = decode(b"a,b\ncaf\xE9,\x80\n").unwrap();
        assert_eq!((&*d.text, d.encoding), ("a,b\ncafé,€\n", TextEncoding::Windows1252));
        assert!(d.warning.unwrap().contains("line 2 holds byte 0xE9"));
        // UTF-8 with one bad byte stays UTF-8.
        let d = decode(b"\xC3\xA9,b\n\xFF,c\n").unwrap();
        assert_eq!((&*d.text, d.encoding), ("é,b\n\u{FFFD},c\n", TextEncoding::Utf8));
    }

    #[test]
    fn binary_files_are_named() {
        let name = |bytes: &[u8]| match decode(bytes) {
            Err(Error::BinaryFormat { format, .. }) => format,
            Err(Error::NotText(what)) => what,
            other => panic!("{:?}", other.map(|d| d.text.into_owned())),
        };
        assert!(name(&[0x1F, 0x8B, 8, 0, 0]).contains("gzip"));
        assert!(name(b"PK\x03\x04....[Content_Types].xml....xl/workbook.xml").contains("Excel workbook (.xlsx)"));
        assert!(name(b"PK\x03\x04....data.csv").contains("ZIP archive"));
        assert!(name(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1, 0]).contains(".xls"));
        assert!(name(b"%PDF-1.7\n").contains("PDF"));
        assert!(name(b"PAR1....PAR1").contains("Parquet"));
        assert!(name(&[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0]).contains("PNG"));
        assert!(name(b"a\0,\0b\0\n\0").contains("UTF-16 LE text without a byte-order mark"));
        assert!(name(b"\0a\0,\0b\0\n").contains("UTF-16 BE"));
        assert!(name(b"a,b\n\0\0\x01\x02\x03\x04").contains("binary data"));
        // "PAR1" as the start of a header is text.
        assert!(decode(b"PAR1,b\n1,2\n").is_ok());
    }
}
