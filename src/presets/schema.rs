//! The presets file format (presets/README.md, "The schema"): the serde
//! types of the TOML document as read, and the checked [`Preset`]s they
//! become.
//!
//! - `check`: the validation of a document into presets (`parse`) and of a
//!   preset name (`check_name`).
//! - `problems`: the problems found, each named with its file and line, so
//!   that a malformed user file is a usage error the user can fix at once.
//!
//! Only syntax and consistency live here; what a preset does to a run is in
//! the parent module.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use crate::values::CodeSet;

mod check;
mod problems;

pub(crate) use check::{check_name, parse};
pub(crate) use problems::FileErrors;

/// Names a preset may not take: they are `--preset` modes.
pub(crate) const RESERVED: [&str; 4] = ["list", "show", "none", "check"];

/// Where a preset was defined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// A built-in file: `presets/http.toml` in the source tree.
    Builtin(&'static str),
    /// A user file (`/etc/retry/presets.toml`, `$RETRY_PRESETS`, ...).
    File(String),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Builtin(file) => write!(f, "built-in ({file})"),
            Origin::File(path) => f.write_str(path),
        }
    }
}

/// A rule's kind, or a preset's `other_exit` (transient or permanent only).
/// `Throttled` is a kind of transient: the server said to slow down, and the
/// retry backs off from `--throttle-delay` instead of `--delay`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Kind {
    Transient,
    Throttled,
    Permanent,
}

impl Kind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Transient => "transient",
            Kind::Throttled => "throttled",
            Kind::Permanent => "permanent",
        }
    }

    /// Transient or throttled: a failure worth another try.
    pub(crate) fn retries(self) -> bool {
        self != Kind::Permanent
    }
}

// ---- The document, as serde reads it ----

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    #[serde(default)]
    preset: BTreeMap<Spanned<String>, Spanned<PresetTable>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PresetTable {
    description: Spanned<String>,
    commands: Spanned<Vec<Spanned<String>>>,
    #[serde(default)]
    retry_after: bool,
    other_exit: Option<Kind>,
    notes: Option<String>,
    #[serde(default)]
    output: Vec<Spanned<OutputTable>>,
    #[serde(default)]
    exit: Vec<Spanned<ExitTable>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OutputTable {
    kind: Kind,
    pattern: Spanned<String>,
    means: Spanned<String>,
    source: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExitTable {
    kind: Kind,
    codes: Spanned<String>,
    means: Spanned<String>,
    source: Option<Spanned<String>>,
}

// ---- The validated form ----

/// One preset, checked.
#[derive(Clone, Debug)]
pub(crate) struct Preset {
    pub(crate) name: String,
    pub(crate) origin: Origin,
    pub(crate) description: String,
    pub(crate) commands: Vec<String>,
    pub(crate) retry_after: bool,
    pub(crate) other_exit: Kind,
    pub(crate) notes: Option<String>,
    pub(crate) output: Vec<OutputRuleDef>,
    pub(crate) exit: Vec<ExitRuleDef>,
}

/// An output rule as written.
#[derive(Clone, Debug)]
pub(crate) struct OutputRuleDef {
    pub(crate) kind: Kind,
    pub(crate) pattern: String,
    pub(crate) means: String,
    pub(crate) source: Option<String>,
    /// The pattern's line in its file, for messages.
    pub(crate) line: usize,
}

/// An exit-code rule as written, its codes parsed.
#[derive(Clone, Debug)]
pub(crate) struct ExitRuleDef {
    pub(crate) kind: Kind,
    pub(crate) codes_text: String,
    pub(crate) codes: CodeSet,
    pub(crate) means: String,
    pub(crate) source: Option<String>,
}

/// How strict the check is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Strictness {
    /// Built-in files: every rule cites its source, `other_exit` is said
    /// explicitly; patterns are compiled when a preset is used (a unit test
    /// compiles them all).
    Builtin,
    /// A user's file: sources optional; every pattern's syntax is checked
    /// now (parsed, not compiled: compiling a file's every pattern on every
    /// run would cost seconds), so that a bad one is reported whatever the
    /// command; the chosen preset's are compiled when it is used.
    User,
}
