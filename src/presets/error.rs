//! What can go wrong with presets, as a caller tells it apart: a file that
//! cannot be used, one that is malformed (each problem on its line, which
//! `--preset check` lists one by one), a name that names no preset or is
//! no name, a pattern that does not compile when its preset is used. Each
//! is a usage error of the run (exit 125); its words are its `Display`.

use std::fmt;

use super::schema::FileErrors;

/// A preset name that is not one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum NameError {
    /// Not lower-case letters, digits, `.`, `_` and `-` (shown made safe).
    Malformed(String),
    /// One of the words `--preset` reserves.
    Reserved(String),
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NameError::Malformed(shown) => write!(
                f,
                "'{shown}' is not a preset name (lower-case letters, digits, '.', '_' and '-', starting with a letter or digit)"
            ),
            NameError::Reserved(name) => write!(
                f,
                "'{name}' is reserved ({})",
                super::schema::RESERVED.join(", ")
            ),
        }
    }
}

impl std::error::Error for NameError {}

/// Presets that cannot be used as asked.
#[derive(Debug)]
pub(crate) enum PresetError {
    /// A presets file that cannot be read or used: missing (when named by
    /// `RETRY_PRESETS`), unreadable, not a regular file, too large, not
    /// UTF-8, or writable by others; the message says which.
    File(anyhow::Error),
    /// A presets file that was read but is malformed.
    Malformed(FileErrors),
    /// `--preset NAME` names no preset; `known` lists those there are.
    Unknown { name: String, known: String },
    /// `--preset show NAME` with a NAME that is no preset name.
    ShowName(NameError),
    /// A pattern of the preset in use that does not compile.
    Pattern {
        preset: String,
        origin: String,
        line: usize,
        rule: usize,
        problem: String,
    },
}

impl fmt::Display for PresetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PresetError::File(err) => write!(f, "{err:#}"),
            PresetError::Malformed(errors) => write!(f, "presets file {errors}"),
            PresetError::Unknown { name, known } => write!(
                f,
                "--preset: no preset named '{}' (known: {known}; --preset list shows them)",
                crate::text::sanitize_line(name, 64)
            ),
            PresetError::ShowName(err) => write!(f, "--preset show: {err}"),
            PresetError::Pattern {
                preset,
                origin,
                line,
                rule,
                problem,
            } => write!(
                f,
                "preset {preset} ({origin}, line {line}): output rule {rule}: {problem}"
            ),
        }
    }
}

impl std::error::Error for PresetError {}
