//! One error type for the whole engine: every variant says what was wrong and where.
use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum Error {
    #[error("the file is empty")]
    EmptyFile,
    #[error("the file is {size} bytes, more than the limit of {limit} bytes")]
    TooLarge { size: usize, limit: usize },
    /// A file that is not text, named by its first bytes (an Excel workbook, a gzip archive).
    #[error("the file is {format}, not a CSV: {hint}")]
    BinaryFormat { format: String, hint: String },
    /// NUL bytes in a file without a byte-order mark: UTF-16 without one, or binary data.
    #[error("the file holds NUL bytes: {0}")]
    NotText(String),
    #[error("CSV error at line {line}: {message}")]
    Csv { line: u64, message: String },
    #[error("line {line} has {found} fields but the header has {expected}")]
    Ragged { line: u64, expected: usize, found: usize },
    #[error("column name {name:?} appears twice in the header")]
    DuplicateHeader { name: String },
    #[error("the table has a header but no data rows")]
    NoRows,
    #[error("no column is named {name:?}; columns are: {available}")]
    UnknownColumn { name: String, available: String },
    #[error("column {column:?} was marked continuous but row {line} holds {value:?}, which is not a number")]
    NotNumeric { column: String, line: u64, value: String },
    #[error("column {column:?}, line {line}: {value:?} is not a finite number")]
    NotFinite { column: String, line: u64, value: String },
    #[error("the label column {column:?} has a single class ({class:?}); an attack needs at least two")]
    SingleClass { column: String, class: String },
    #[error("after dropping {dropped} rows with missing values, {left} rows are left; at least {needed} are needed")]
    TooFewRows { dropped: usize, left: usize, needed: usize },
    #[error("the table has no feature columns besides the label")]
    NoFeatures,
    #[error(
        "one-hot encoding makes each row {width} values wide, more than the {limit} the engine takes; \
         the widest columns are {widest}: leave it out (an identifier or free text leaks nothing a \
         reconstruction could score) or mark it continuous if it holds numbers"
    )]
    TooWide { width: usize, limit: usize, widest: String },
    #[error("invalid setting: {0}")]
    Config(String),
    #[error("the compute device failed: {0}")]
    Device(String),
    #[error("cancelled")]
    Cancelled,
    #[error("the attack diverged: {0}")]
    NonFinite(String),
}

pub type Result<T> = std::result::Result<T, Error>;
