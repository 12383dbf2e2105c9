//! Errors are values: every failure a user can cause (a bad file, an unsupported model, text
//! we cannot process) is one of these, with a message fit to show them.

use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// A model file is missing, truncated, corrupt or inconsistent with its config.
    InvalidModel(String),
    /// The files are fine but describe a model family we do not run.
    UnsupportedArchitecture(String),
    /// The request (text, layer, head, kind) cannot be served.
    InvalidInput(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidModel(m) => write!(f, "invalid model file: {m}"),
            Error::UnsupportedArchitecture(m) => write!(f, "unsupported architecture: {m}"),
            Error::InvalidInput(m) => write!(f, "invalid input: {m}"),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn invalid_model(msg: impl Into<String>) -> Error {
    Error::InvalidModel(msg.into())
}
