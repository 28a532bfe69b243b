//! What the property tests of the readers of outside input share (tests/prop_*.rs include it with
//! `#[path = "common/prop.rs"] mod support;`): a seeded configuration, edits that mutate real files,
//! and an allocator that measures the peak a reader allocates.
//!
//! CI runs a short pass with a fixed seed. A longer run, while developing:
//! `LEAKSCOPE_PROPTEST_CASES=200000 cargo test --test prop_table -- --test-threads 1`, with
//! `LEAKSCOPE_PROPTEST_SEED=n` for other inputs than CI's.
#![allow(dead_code)] // not every file uses every helper

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{RngAlgorithm, RngSeed};

/// The seed of CI's pass: the same inputs every run.
const CI_SEED: u64 = 0x1ea6_5c0e;

/// `cases` inputs per property (or `LEAKSCOPE_PROPTEST_CASES`), from a fixed seed (or
/// `LEAKSCOPE_PROPTEST_SEED`), nothing written to disk.
pub fn config(cases: u32) -> ProptestConfig {
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.trim().parse::<u64>().ok());
    ProptestConfig {
        cases: env("LEAKSCOPE_PROPTEST_CASES").map_or(cases, |c| c as u32),
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(env("LEAKSCOPE_PROPTEST_SEED").unwrap_or(CI_SEED)),
        failure_persistence: None,
        // A failure shrinks, but not for long.
        max_shrink_iters: 2048,
        ..ProptestConfig::default()
    }
}

// ---- Peak allocation ----

/// The system allocator, counting what each thread holds and the most it held.
pub struct Counting;

thread_local! {
    static HELD: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    let _ = HELD.try_with(|held| {
        let now = held.get() + delta;
        held.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every call goes straight to the system allocator; the counters only observe sizes, in
// thread-locals that need no allocation.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as isize));
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        p
    }
}

/// What `f` returns and the most it allocated at once on this thread, above what was held before.
pub fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = HELD.with(Cell::get);
    PEAK.with(|p| p.set(before));
    let out = f();
    let peak = PEAK.with(Cell::get) - before;
    (out, peak.max(0) as usize)
}

pub const MIB: usize = 1 << 20;

// ---- Mutations of real files ----

/// Tokens an edit splices in: what breaks numbers, quoting, lines and JSON.
pub fn tokens() -> &'static [String] {
    static TOKENS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    TOKENS.get_or_init(|| {
        let mut t: Vec<String> = SHORT_TOKENS.iter().map(|s| s.to_string()).collect();
        // A number with more decimals than an f64 has digits, and a long cell.
        t.push(format!("0.{}1", "0".repeat(330)));
        t.push(format!("1.{}", "5".repeat(400)));
        t.push("x".repeat(300));
        t
    })
}

const SHORT_TOKENS: &[&str] = &[
    "NaN",
    "nan",
    "inf",
    "-inf",
    "Infinity",
    "-Infinity",
    "1e309",
    "-1e309",
    "1e303",
    "-1e303",
    "1.7976931348623157e308",
    "4294967295",
    "400",
    "1e-400",
    "18446744073709551616",
    "18446744073709551615",
    "9007199254740993",
    "-1",
    "0",
    "1.5",
    "1,5",
    "1.234,5",
    "1 234.5",
    "0x10",
    "",
    " ",
    "\"",
    "\"\"",
    ",",
    ";",
    "\t",
    "|",
    "\n",
    "\r\n",
    "\r",
    "\0",
    "\u{feff}",
    "\u{fffd}",
    "é",
    "€",
    "null",
    "true",
    "[",
    "]",
    "{",
    "}",
    ":",
    "[[",
    "]]",
    "\\",
    "\\u0000",
    "\\ud800",
    "?",
    "NA",
    "<NA>",
    "PK\u{3}\u{4}",
    "%PDF-",
];

/// One change to a file's bytes; positions are fractions of the length, so one edit fits any file.
#[derive(Debug, Clone)]
pub enum Edit {
    /// XOR a byte with a non-zero mask.
    Flip(Index, u8),
    /// Overwrite a byte.
    Set(Index, u8),
    /// Insert random bytes.
    Insert(Index, Vec<u8>),
    /// Insert a token.
    Splice(Index, Index),
    /// Delete a run of bytes.
    Delete(Index, usize),
    /// Cut the file there.
    Truncate(Index),
    /// Repeat a line, up to `n` more times.
    DuplicateLine(Index, usize),
    DeleteLine(Index),
    /// Swap two lines.
    SwapLines(Index, Index),
    /// Replace the n-th number of the text by a token (NaN, ±∞, huge, a decimal comma…).
    ReplaceNumber(Index, Index),
}

pub fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<Index>(), 1u8..=255).prop_map(|(i, m)| Edit::Flip(i, m)),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Edit::Set(i, b)),
        (any::<Index>(), prop::collection::vec(any::<u8>(), 1..8)).prop_map(|(i, b)| Edit::Insert(i, b)),
        (any::<Index>(), any::<Index>()).prop_map(|(i, t)| Edit::Splice(i, t)),
        (any::<Index>(), 1usize..64).prop_map(|(i, n)| Edit::Delete(i, n)),
        any::<Index>().prop_map(Edit::Truncate),
        (any::<Index>(), 1usize..4).prop_map(|(i, n)| Edit::DuplicateLine(i, n)),
        any::<Index>().prop_map(Edit::DeleteLine),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Edit::SwapLines(a, b)),
        (any::<Index>(), any::<Index>()).prop_map(|(i, t)| Edit::ReplaceNumber(i, t)),
    ]
}

/// One to `max` edits.
pub fn edits(max: usize) -> impl Strategy<Value = Vec<Edit>> {
    prop::collection::vec(edit(), 1..=max)
}

/// Byte ranges of the lines, each with its line break.
fn lines(bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\n' {
            out.push(start..i + 1);
            start = i + 1;
        }
    }
    if start < bytes.len() {
        out.push(start..bytes.len());
    }
    out
}

/// Byte ranges of the numbers (digits with signs, points, exponents).
fn numbers(bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() {
            let mut start = i;
            if start > 0 && bytes[start - 1] == b'-' {
                start -= 1;
            }
            while i < bytes.len() && (bytes[i].is_ascii_digit() || matches!(bytes[i], b'.' | b'e' | b'E' | b'-' | b'+'))
            {
                i += 1;
            }
            out.push(start..i);
        } else {
            i += 1;
        }
    }
    out
}

/// The file after the edits, in order.
pub fn apply(bytes: &[u8], edits: &[Edit]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    for e in edits {
        let at = |i: &Index, len: usize| if len == 0 { 0 } else { i.index(len) };
        match e {
            Edit::Flip(i, m) if !b.is_empty() => {
                let k = at(i, b.len());
                b[k] ^= m;
            }
            Edit::Set(i, v) if !b.is_empty() => {
                let k = at(i, b.len());
                b[k] = *v;
            }
            Edit::Insert(i, v) => {
                let k = at(i, b.len() + 1);
                b.splice(k..k, v.iter().copied());
            }
            Edit::Splice(i, t) => {
                let k = at(i, b.len() + 1);
                let token = tokens()[t.index(tokens().len())].as_bytes();
                b.splice(k..k, token.iter().copied());
            }
            Edit::Delete(i, n) if !b.is_empty() => {
                let k = at(i, b.len());
                let end = (k + n).min(b.len());
                b.drain(k..end);
            }
            Edit::Truncate(i) => {
                let k = at(i, b.len() + 1);
                b.truncate(k);
            }
            Edit::DuplicateLine(i, n) => {
                let ls = lines(&b);
                if !ls.is_empty() {
                    let r = ls[i.index(ls.len())].clone();
                    let line = b[r.clone()].to_vec();
                    for _ in 0..*n {
                        b.splice(r.end..r.end, line.iter().copied());
                    }
                }
            }
            Edit::DeleteLine(i) => {
                let ls = lines(&b);
                if !ls.is_empty() {
                    b.drain(ls[i.index(ls.len())].clone());
                }
            }
            Edit::SwapLines(x, y) => {
                let ls = lines(&b);
                if ls.len() >= 2 {
                    let (mut p, mut q) = (ls[x.index(ls.len())].clone(), ls[y.index(ls.len())].clone());
                    if p.start > q.start {
                        std::mem::swap(&mut p, &mut q);
                    }
                    if p.start != q.start {
                        let mut out = b[..p.start].to_vec();
                        out.extend_from_slice(&b[q.clone()]);
                        out.extend_from_slice(&b[p.end..q.start]);
                        out.extend_from_slice(&b[p.clone()]);
                        out.extend_from_slice(&b[q.end..]);
                        b = out;
                    }
                }
            }
            Edit::ReplaceNumber(i, t) => {
                let ns = numbers(&b);
                if !ns.is_empty() {
                    let r = ns[i.index(ns.len())].clone();
                    let token = tokens()[t.index(tokens().len())].as_bytes();
                    b.splice(r, token.iter().copied());
                }
            }
            _ => {}
        }
    }
    b
}

// ---- Mutations of JSON documents, field by field ----

/// Values a JSON edit puts in a field's place: other types, edge numbers, long things.
pub fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::{Value, json};
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        // Finite floats only: JSON has no NaN (serde_json writes null for it).
        any::<f64>()
            .prop_filter("finite", |v| v.is_finite())
            .prop_map(Value::from),
        prop::sample::select(vec![
            json!(0),
            json!(-1),
            json!(1),
            json!(2),
            json!(0.5),
            json!(1e308),
            json!(-1e308),
            json!(1e-320),
            json!(u64::MAX),
            json!(usize::MAX as u64 / 2),
            json!(1u64 << 32),
            json!(1u64 << 53),
            json!(4294967295u64),
            json!(400),
            json!(1e303),
            json!(""),
            json!("NaN"),
            json!("inf"),
            json!("auto"),
            json!("fedavg"),
            json!("tableak"),
            json!("random"),
            json!("cafe"),
            json!("attribute"),
            json!("categorical"),
            json!("continuous"),
            json!("F16"),
            json!("I64"),
            json!("BF16"),
            json!({"fixed": 0.1}),
            json!({"Fixed": -1.0}),
        ]),
        "[a-z.0-9 ]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-zA-Z]{1,8}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// One change to a JSON document: a field (or element) removed, replaced, or a sibling added.
#[derive(Debug, Clone)]
pub enum JsonEdit {
    Remove(Index),
    Replace(Index, serde_json::Value),
    /// An array element repeated, or an object given a new field.
    Grow(Index, String, serde_json::Value),
}

pub fn json_edits(max: usize) -> impl Strategy<Value = Vec<JsonEdit>> {
    let one = prop_oneof![
        any::<Index>().prop_map(JsonEdit::Remove),
        (any::<Index>(), json_value()).prop_map(|(i, v)| JsonEdit::Replace(i, v)),
        (any::<Index>(), "[a-zA-Z]{1,10}", json_value()).prop_map(|(i, k, v)| JsonEdit::Grow(i, k, v)),
    ];
    prop::collection::vec(one, 1..=max)
}

/// JSON pointers of every value in the document, the root first.
fn pointers(v: &serde_json::Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match v {
        serde_json::Value::Array(items) => {
            for (k, item) in items.iter().enumerate() {
                pointers(item, format!("{at}/{k}"), out);
            }
        }
        serde_json::Value::Object(map) => {
            for (k, item) in map {
                pointers(item, format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), out);
            }
        }
        _ => {}
    }
}

/// The document after the edits, in order.
pub fn apply_json(doc: &serde_json::Value, edits: &[JsonEdit]) -> serde_json::Value {
    let mut doc = doc.clone();
    for e in edits {
        let mut ps = Vec::new();
        pointers(&doc, String::new(), &mut ps);
        let pick = |i: &Index| ps[i.index(ps.len())].clone();
        match e {
            JsonEdit::Remove(i) => {
                let p = pick(i);
                if let Some((parent, key)) = p.rsplit_once('/') {
                    let key = key.replace("~1", "/").replace("~0", "~");
                    match doc.pointer_mut(parent) {
                        Some(serde_json::Value::Object(m)) => {
                            m.remove(&key);
                        }
                        Some(serde_json::Value::Array(a)) => {
                            if let Ok(k) = key.parse::<usize>()
                                && k < a.len()
                            {
                                a.remove(k);
                            }
                        }
                        _ => {}
                    }
                }
            }
            JsonEdit::Replace(i, v) => {
                if let Some(slot) = doc.pointer_mut(&pick(i)) {
                    *slot = v.clone();
                }
            }
            JsonEdit::Grow(i, key, v) => match doc.pointer_mut(&pick(i)) {
                Some(serde_json::Value::Object(m)) => {
                    m.insert(key.clone(), v.clone());
                }
                Some(serde_json::Value::Array(a)) => {
                    let item = a.last().cloned().unwrap_or_else(|| v.clone());
                    a.push(item);
                }
                _ => {}
            },
        }
    }
    doc
}

/// An error message worth showing: not empty, and more than a word.
pub fn specific(message: &str) -> bool {
    message.trim().len() >= 8
}
