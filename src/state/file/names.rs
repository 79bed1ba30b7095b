//! The file names of one record in the state directory, and what a
//! failed replacement of it says: the same on every system.

use std::path::Path;

use super::Kind;
use super::case;
use crate::safe_fs::replace::{Step, Trouble};

/// The file names of one record.
pub(super) struct Names {
    /// `{prefix}NAME`: the stem of every name below (a name with capitals
    /// marked, `case`).
    pub(super) stem: String,
    pub(super) json: String,
    pub(super) lock: String,
    /// Sync every write to disk (the record's kind asks it).
    pub(super) durable: bool,
}

impl Names {
    pub(super) fn new(kind: &Kind, name: &str) -> Names {
        let stem = format!("{}{}", kind.file_prefix, case::in_file_names(name));
        Names {
            json: format!("{stem}.json"),
            lock: format!("{stem}.lock"),
            durable: kind.durable,
            stem,
        }
    }

    /// Whether `file` is one of this record's temporary names (and not,
    /// say, one of `STEM.other`'s).
    pub(super) fn is_temporary(&self, file: &[u8]) -> bool {
        let random = file
            .strip_prefix(b".")
            .and_then(|rest| rest.strip_prefix(self.stem.as_bytes()))
            .and_then(|rest| rest.strip_prefix(b"."))
            .and_then(|rest| rest.strip_suffix(b".tmp"));
        random.is_some_and(|r| r.len() == 6 && r.iter().all(u8::is_ascii_alphanumeric))
    }
}

/// A fresh temporary name of the record `stem`: `.STEM.XXXXXX.tmp`, six
/// letters or digits, as the `tempfile` crate (used before) makes them.
pub(super) fn temporary_name(stem: &str) -> String {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let random: String = (0..6)
        .map(|_| char::from(CHARS[rand::random_range(0..CHARS.len())]))
        .collect();
    format!(".{stem}.{random}.tmp")
}

/// A failed replacement of the record in `dir`, in words.
pub(super) fn trouble(dir: &Path, names: &Names, trouble: Trouble) -> anyhow::Error {
    let (step, err) = match trouble {
        Trouble::Failed(step, err) => (step, err),
        // Not asked for: the store's replacements are unguarded.
        Trouble::Refused(refusal) => {
            return anyhow::anyhow!("replacing {}: {refusal:?}", dir.join(&names.json).display());
        }
    };
    let what = match step {
        Step::Look | Step::Create => {
            format!("creating a temporary file in {}", dir.display())
        }
        Step::Mode => "setting the state's mode".to_string(),
        Step::Write => "writing the state".to_string(),
        Step::Sync => "syncing the state".to_string(),
        Step::Name | Step::Rename => {
            format!("replacing {}", dir.join(&names.json).display())
        }
        Step::SyncDir => format!("syncing {}", dir.display()),
    };
    anyhow::Error::new(err).context(what)
}
