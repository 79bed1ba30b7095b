//! User presets files: read only when ours alone to write (as OpenSSH's
//! `StrictModes` judges `~/.ssh/config`), bounded, and parsed into layers.

use std::io::Read;
use std::path::Path;

use anyhow::anyhow;

use super::Sources;
use super::error::PresetError;
use super::schema::{self, Origin, Preset, Strictness};

/// The most a user presets file may hold.
const USER_FILE_LIMIT: u64 = 1024 * 1024;

/// One user file, read and checked.
pub(super) struct Layer {
    pub(super) presets: Vec<Preset>,
}

/// Whether a presets file must be there: one at a default place need not;
/// one that `RETRY_PRESETS` (or `--preset check`) names must.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Wanted {
    IfThere,
    NamedBy(&'static str),
}

/// Read a user presets file: a regular file (a symlink to one is fine: it
/// is the user's own configuration), at most 1 MiB, UTF-8.
/// `UserFile::Missing` when nothing is there and nothing had to be.
///
/// A file at a default place (not named by `RETRY_PRESETS`) that is not
/// ours to use (unreadable to us, another user's, writable by others: a run
/// under another user's `HOME`) is ignored with a warning: another user can
/// neither decide how our runs judge failures nor make them fail.
fn read_user_file(path: &Path, wanted: Wanted) -> Result<UserFile, PresetError> {
    let fail = |message: String| PresetError::File(anyhow!(message));
    let required = wanted != Wanted::IfThere;
    let shown = path.display();
    let file = crate::sys::fs::open_without_waiting(path);
    let mut file = match file {
        Ok(file) => file,
        Err(err) if !required && crate::sys::fs::is_missing(&err) => {
            return Ok(UserFile::Missing);
        }
        Err(err) if required => {
            let who = match wanted {
                Wanted::NamedBy(who) => who,
                Wanted::IfThere => "presets file",
            };
            return Err(fail(format!("{who} names {shown}: {err}")));
        }
        Err(err) if err.kind() == std::io::ErrorKind::PermissionDenied => {
            return Ok(UserFile::Ignored(format!(
                "presets file {shown} cannot be read ({err}): ignored"
            )));
        }
        Err(err) => return Err(fail(format!("presets file {shown}: {err}"))),
    };
    let meta = file
        .metadata()
        .map_err(|err| fail(format!("presets file {shown}: {err}")))?;
    if !meta.file_type().is_file() {
        let kind = crate::safe_fs::Kind::of(meta.file_type());
        return Err(fail(format!(
            "presets file {shown} is {}, not a regular file",
            kind.described()
        )));
    }
    if let Some(problem) = crate::sys::user::others_may_write(&meta) {
        let why = "or another user could decide how retry judges failures (as ssh refuses such a config file)";
        if required {
            return Err(fail(format!(
                "presets file {shown} {problem}: refusing it, {why}"
            )));
        }
        return Ok(UserFile::Ignored(format!(
            "presets file {shown} {problem}: ignored, {why}"
        )));
    }
    let mut bytes = Vec::new();
    (&mut file)
        .take(USER_FILE_LIMIT + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| fail(format!("presets file {shown}: {err}")))?;
    if bytes.len() as u64 > USER_FILE_LIMIT {
        return Err(fail(format!("presets file {shown} is larger than 1 MiB")));
    }
    String::from_utf8(bytes).map(UserFile::Text).map_err(|err| {
        fail(format!(
            "presets file {shown}: not UTF-8 (at byte {})",
            err.utf8_error().valid_up_to()
        ))
    })
}

/// What a user presets file gave.
enum UserFile {
    Missing,
    Text(String),
    /// Not used, and why (a warning).
    Ignored(String),
}

/// The user layers that exist, in order; the files ignored are said in
/// `notes`.
pub(super) fn user_layers(
    sources: &Sources,
    notes: &mut Vec<String>,
) -> Result<Vec<Layer>, PresetError> {
    let mut layers = Vec::new();
    for (path, wanted) in sources.files() {
        let Some(presets) = read_presets(path, wanted, notes)? else {
            continue;
        };
        layers.push(Layer { presets });
    }
    Ok(layers)
}

/// The presets of the file at `path`, read and checked as a user file;
/// `None` when it is not there (and need not be) or is ignored (said in
/// `notes`).
pub(super) fn read_presets(
    path: &Path,
    wanted: Wanted,
    notes: &mut Vec<String>,
) -> Result<Option<Vec<Preset>>, PresetError> {
    let text = match read_user_file(path, wanted)? {
        UserFile::Text(text) => text,
        UserFile::Missing => return Ok(None),
        UserFile::Ignored(why) => {
            notes.push(why);
            return Ok(None);
        }
    };
    let shown = path.display().to_string();
    schema::parse(
        &text,
        &shown,
        &Origin::File(shown.clone()),
        Strictness::User,
    )
    .map(Some)
    .map_err(PresetError::Malformed)
}
