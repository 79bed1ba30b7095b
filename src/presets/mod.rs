//! Presets: rules for the commands people retry (curl, git, apt-get, ...),
//! as data. The built-in ones are the TOML files of `presets/` compiled into
//! the binary; users add or replace presets in files of the same form.
//!
//! Layers, later winning: the built-ins, `/etc/retry/presets.toml`, then
//! `$RETRY_PRESETS` when set and not empty, else
//! `$XDG_CONFIG_HOME/retry/presets.toml` (else `~/.config/retry/presets.toml`).
//! A preset with an earlier one's name replaces it whole; a command name
//! claimed in two layers goes to the later one.
//!
//! Start-up stays cheap: a run with no `--preset` looks its command's file
//! name up in the built-in index ([`builtin::INDEX`]) and stats the user
//! files; TOML is parsed only for the one built-in file that holds the
//! preset in use, and for user files that exist (a malformed one is a usage
//! error whatever the command, as a broken `~/.gitconfig` is for git).
//!
//! This module owns choosing a preset and turning it into a [`RuleSet`];
//! the verdicts themselves stay in `classify`.

pub(crate) mod advice;
mod builtin;
mod for_run;
pub(crate) mod locale;
pub(crate) mod schema;
pub(crate) mod wrapped;

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::policy::rules::{ExitRule, OutputRule, PatternCompiler, RuleSet, RuleSource};
use crate::values::CodeSet;
pub(crate) use for_run::{ForRun, for_run};
use schema::{Kind, Origin, Preset, Strictness};

/// The most a user presets file may hold.
const USER_FILE_LIMIT: u64 = 1024 * 1024;

/// What the command line asks of presets for a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Request {
    /// No `--preset`: the command's file name chooses one, if any claims it.
    Auto,
    /// `--preset none`.
    Off,
    /// `--preset NAME`.
    Named(String),
}

/// Where the user layers are read from.
#[derive(Clone, Debug)]
pub(crate) struct Sources {
    /// `/etc/retry/presets.toml`.
    pub(crate) system: PathBuf,
    /// The user's own file, and whether `RETRY_PRESETS` named it (then it
    /// must exist).
    pub(crate) user: Option<(PathBuf, bool)>,
}

/// An environment variable, an empty one counting as unset.
fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
}

impl Sources {
    /// The files the environment names.
    pub(crate) fn from_env() -> Sources {
        let user = if let Some(path) = env_path("RETRY_PRESETS") {
            Some((path, true))
        } else if let Some(config) = env_path("XDG_CONFIG_HOME") {
            Some((config.join("retry/presets.toml"), false))
        } else {
            env_path("HOME").map(|home| (home.join(".config/retry/presets.toml"), false))
        };
        Sources {
            system: PathBuf::from("/etc/retry/presets.toml"),
            user,
        }
    }

    /// The user files in layer order, each with whether it must exist.
    fn files(&self) -> Vec<(&Path, bool)> {
        let mut files = vec![(self.system.as_path(), false)];
        if let Some((path, required)) = &self.user {
            files.push((path.as_path(), *required));
        }
        files
    }
}

/// One user file, read and checked.
struct Layer {
    presets: Vec<Preset>,
}

/// Read a user presets file: a regular file (a symlink to one is fine: it
/// is the user's own configuration), at most 1 MiB, UTF-8. `Ok(None)` when
/// nothing is there and nothing had to be.
///
/// A file at a default place (not named by `RETRY_PRESETS`) that is not
/// ours to use (unreadable to us, another user's, writable by others: a run
/// under another user's `HOME`) is ignored with a warning: another user can
/// neither decide how our runs judge failures nor make them fail.
fn read_user_file(path: &Path, required: bool) -> Result<UserFile, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let shown = path.display();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path);
    let mut file = match file {
        Ok(file) => file,
        Err(err)
            if !required && matches!(err.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) =>
        {
            return Ok(UserFile::Missing);
        }
        Err(err) if required => {
            return Err(format!("RETRY_PRESETS names {shown}: {err}"));
        }
        Err(err) if err.kind() == std::io::ErrorKind::PermissionDenied => {
            return Ok(UserFile::Ignored(format!(
                "presets file {shown} cannot be read ({err}): ignored"
            )));
        }
        Err(err) => return Err(format!("presets file {shown}: {err}")),
    };
    let meta = file
        .metadata()
        .map_err(|err| format!("presets file {shown}: {err}"))?;
    if !meta.file_type().is_file() {
        let kind = crate::safe_fs::Kind::of(meta.file_type());
        return Err(format!(
            "presets file {shown} is {}, not a regular file",
            kind.described()
        ));
    }
    if let Some(problem) = others_may_write(&meta) {
        let why = "or another user could decide how retry judges failures (as ssh refuses such a config file)";
        if required {
            return Err(format!(
                "presets file {shown} {problem}: refusing it, {why}"
            ));
        }
        return Ok(UserFile::Ignored(format!(
            "presets file {shown} {problem}: ignored, {why}"
        )));
    }
    let mut bytes = Vec::new();
    (&mut file)
        .take(USER_FILE_LIMIT + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| format!("presets file {shown}: {err}"))?;
    if bytes.len() as u64 > USER_FILE_LIMIT {
        return Err(format!("presets file {shown} is larger than 1 MiB"));
    }
    String::from_utf8(bytes).map(UserFile::Text).map_err(|err| {
        format!(
            "presets file {shown}: not UTF-8 (at byte {})",
            err.utf8_error().valid_up_to()
        )
    })
}

/// Why a presets file is not ours alone to write, as OpenSSH's `StrictModes`
/// judges `~/.ssh/config`: it must belong to us or root, and no one else
/// may write it (a group that is our own may). `None`: it is ours alone.
fn others_may_write(meta: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let me = rustix::process::geteuid().as_raw();
    let mode = meta.mode() & 0o7777;
    if meta.uid() != me && meta.uid() != 0 {
        return Some(format!(
            "belongs to another user (uid {}), not to you or root",
            meta.uid()
        ));
    }
    let group_of_others = meta.gid() != rustix::process::getegid().as_raw();
    if mode & 0o002 != 0 || (mode & 0o020 != 0 && group_of_others) {
        return Some(format!(
            "is writable by others (mode {mode:04o}; chmod go-w)"
        ));
    }
    None
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
fn user_layers(sources: &Sources, notes: &mut Vec<String>) -> Result<Vec<Layer>, String> {
    let mut layers = Vec::new();
    for (path, required) in sources.files() {
        let text = match read_user_file(path, required)? {
            UserFile::Text(text) => text,
            UserFile::Missing => continue,
            UserFile::Ignored(why) => {
                notes.push(why);
                continue;
            }
        };
        let shown = path.display().to_string();
        let presets = schema::parse(
            &text,
            &shown,
            &Origin::File(shown.clone()),
            Strictness::User,
        )
        .map_err(|errors| format!("presets file {errors}"))?;
        layers.push(Layer { presets });
    }
    Ok(layers)
}

/// The built-in preset of `entry`, parsed from its file.
fn load_builtin(entry: &builtin::Entry) -> Preset {
    let file = &builtin::FILES[entry.file];
    parse_builtin(file)
        .into_iter()
        .find(|preset| preset.name == entry.name)
        .expect("the built-in index names a preset of its file (a unit test checks it)")
}

#[cfg(test)]
thread_local! {
    /// Built-in files parsed by this thread: start-up must parse none when
    /// no preset applies.
    static PARSED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn parse_builtin(file: &builtin::File) -> Vec<Preset> {
    #[cfg(test)]
    PARSED.with(|parsed| parsed.set(parsed.get() + 1));
    schema::parse(
        file.text,
        file.path,
        &Origin::Builtin(file.path),
        Strictness::Builtin,
    )
    .expect("built-in presets are valid (a unit test checks them)")
}

/// The built-in presets' names, for shell completion (nothing parsed).
pub(crate) fn builtin_names() -> impl Iterator<Item = &'static str> {
    builtin::INDEX.iter().map(|entry| entry.name)
}

/// Every built-in preset, in file order.
pub(crate) fn builtins() -> Vec<Preset> {
    builtin::FILES.iter().flat_map(parse_builtin).collect()
}

/// A preset in force for a run, and how it was chosen.
#[derive(Clone, Debug)]
pub(crate) struct Chosen {
    pub(crate) preset: Preset,
    /// By the command's file name, not by `--preset NAME`.
    pub(crate) automatic: bool,
    /// How the command was found when it is not the plain first word:
    /// `apt-get, run by sudo`, `pip3.11, read as pip`.
    pub(crate) through: Option<String>,
}

/// Every preset's name, for a message.
fn known_names(layers: &[Layer]) -> String {
    let mut names: Vec<&str> = builtin::INDEX.iter().map(|entry| entry.name).collect();
    for layer in layers {
        for preset in &layer.presets {
            if !names.contains(&preset.name.as_str()) {
                names.push(&preset.name);
            }
        }
    }
    names.sort_unstable();
    names.join(", ")
}

/// The preset for a run: the one `--preset NAME` names, or the one the
/// command's file name chooses (looking through wrappers: `sudo apt-get`).
/// Errors are usage errors (a malformed user file, an unknown name).
pub(crate) fn choose(
    request: &Request,
    command: &[OsString],
    sources: &Sources,
) -> Result<Option<Chosen>, String> {
    choose_noting(request, command, sources, &mut Vec::new())
}

/// [`choose`], saying in `notes` which user files were ignored.
pub(crate) fn choose_noting(
    request: &Request,
    command: &[OsString],
    sources: &Sources,
    notes: &mut Vec<String>,
) -> Result<Option<Chosen>, String> {
    if *request == Request::Off {
        return Ok(None);
    }
    let layers = user_layers(sources, notes)?;
    match request {
        Request::Off => Ok(None),
        Request::Named(name) => {
            let user = layers
                .iter()
                .rev()
                .flat_map(|layer| &layer.presets)
                .find(|preset| &preset.name == name);
            let preset = match user {
                Some(preset) => preset.clone(),
                None => match builtin::by_name(name) {
                    Some(entry) => load_builtin(entry),
                    None => {
                        return Err(format!(
                            "--preset: no preset named '{}' (known: {}; --preset list shows them)",
                            crate::text::sanitize_line(name, 64),
                            known_names(&layers)
                        ));
                    }
                },
            };
            Ok(Some(Chosen {
                preset,
                automatic: false,
                through: None,
            }))
        }
        Request::Auto => {
            let claimed = |name: &str| claims(&layers, name).is_some();
            let wrapped::Target::Command { start, via } = wrapped::target(command, &claimed) else {
                return Ok(None);
            };
            let Some(name) = command
                .get(start)
                .and_then(|program| Path::new(program).file_name())
                .and_then(OsStr::to_str)
            else {
                return Ok(None);
            };
            let unversioned = wrapped::unversioned(name);
            let mut through = (!via.is_empty()).then(|| wrapped::described(command, start, &via));
            let claim = if let Some(claim) = claims(&layers, name) {
                claim
            } else {
                let Some(claim) = claims(&layers, unversioned) else {
                    return Ok(None);
                };
                let text = through.get_or_insert_with(|| name.to_string());
                text.push_str(&format!(", read as {unversioned}"));
                claim
            };
            let preset = match claim {
                Claim::User(preset) => preset.clone(),
                Claim::Builtin(entry) => load_builtin(entry),
            };
            Ok(Some(Chosen {
                preset,
                automatic: true,
                through,
            }))
        }
    }
}

/// Who claims a command's file name.
enum Claim<'a> {
    User(&'a Preset),
    Builtin(&'static builtin::Entry),
}

/// The preset a command's file name chooses, found without parsing any
/// built-in file: a later layer's claim wins; a built-in that a user
/// preset of its name replaced claims nothing.
fn claims<'a>(layers: &'a [Layer], command: &str) -> Option<Claim<'a>> {
    if let Some(preset) = layers
        .iter()
        .rev()
        .flat_map(|layer| &layer.presets)
        .find(|preset| preset.commands.iter().any(|c| c == command))
    {
        return Some(Claim::User(preset));
    }
    let entry = builtin::by_command(command)?;
    let replaced = layers
        .iter()
        .flat_map(|layer| &layer.presets)
        .any(|preset| preset.name == entry.name);
    (!replaced).then_some(Claim::Builtin(entry))
}

/// The rules of a chosen preset, patterns compiled, below the user's own.
/// Its patterns count against the run's total size limit, in `compiler`.
pub(crate) fn rule_set(chosen: &Chosen, compiler: &mut PatternCompiler) -> Result<RuleSet, String> {
    let preset = &chosen.preset;
    let mut set = RuleSet::empty(RuleSource::Preset {
        name: preset.name.clone(),
        origin: preset.origin.to_string(),
        automatic: chosen.automatic,
        through: chosen.through.clone(),
    });
    for (index, rule) in preset.output.iter().enumerate() {
        let regex = match preset.origin {
            Origin::Builtin(_) => compiler.compile_builtin(&rule.pattern),
            Origin::File(_) => compiler.compile(&rule.pattern),
        }
        .map_err(|err| {
            format!(
                "preset {} ({}, line {}): output rule {}: {err}",
                preset.name,
                preset.origin,
                rule.line,
                index + 1
            )
        })?;
        let rule_of_set = OutputRule::with_means(regex, &rule.means);
        match rule.kind {
            Kind::Permanent => set.stop_on_output.push(rule_of_set),
            Kind::Transient => set.retry_on_output.push(rule_of_set),
            Kind::Throttled => set.throttle_on_output.push(rule_of_set),
        }
    }
    let union = |retries: bool| {
        preset
            .exit
            .iter()
            .filter(|rule| rule.kind.retries() == retries)
            .fold(CodeSet::from_codes(&[]), |all, rule| all.union(&rule.codes))
    };
    if preset.exit.iter().any(|rule| rule.kind == Kind::Permanent) {
        set.stop_on_exit = Some(union(false));
    }
    // Rule 4: a transient list given makes every other code permanent.
    if preset.other_exit == Kind::Permanent {
        set.retry_on_exit = Some(union(true));
    }
    set.exit_rules = preset
        .exit
        .iter()
        .map(|rule| ExitRule {
            permanent: rule.kind == Kind::Permanent,
            throttled: rule.kind == Kind::Throttled,
            codes: rule.codes.clone(),
            means: rule.means.clone(),
        })
        .collect();
    Ok(set)
}

// ---- --preset list and --preset show ----

/// `--preset list`: every preset, where it comes from and what it does.
pub(crate) fn list_text(sources: &Sources) -> Result<String, String> {
    let mut ignored = Vec::new();
    let layers = user_layers(sources, &mut ignored)?;
    let mut all: Vec<(Preset, bool)> = builtins().into_iter().map(|p| (p, false)).collect();
    for layer in &layers {
        for preset in &layer.presets {
            // A command a later layer claims leaves the earlier presets.
            for (earlier, _) in &mut all {
                earlier.commands.retain(|c| !preset.commands.contains(c));
            }
            match all.iter_mut().find(|(p, _)| p.name == preset.name) {
                Some(slot) => *slot = (preset.clone(), true),
                None => all.push((preset.clone(), false)),
            }
        }
    }
    let mut text = String::new();
    for (path, _) in sources.files() {
        let named = format!("presets file {} ", path.display());
        let state = if ignored.iter().any(|why| why.starts_with(&named)) {
            "ignored"
        } else if path.exists() {
            "read"
        } else {
            "none"
        };
        text.push_str(&format!("# user presets: {} ({state})\n", path.display()));
    }
    for why in &ignored {
        text.push_str(&format!("# warning: {why}\n"));
    }
    text.push('\n');
    for (preset, replaces) in &all {
        let commands = if preset.commands.is_empty() {
            "only by --preset".to_string()
        } else {
            format!("chosen for {}", preset.commands.join(", "))
        };
        let replaced = if *replaces {
            ", replaces the built-in"
        } else {
            ""
        };
        text.push_str(&format!(
            "{}: {commands}; from {}{replaced}\n    {}\n",
            preset.name, preset.origin, preset.description
        ));
    }
    text.push_str(
        "\n--preset show NAME prints one, ready to copy into a presets file; --preset none turns automatic choice off.\n",
    );
    Ok(text)
}

/// `--preset show NAME`: the preset in a user file's form.
pub(crate) fn show_text(name: &str, sources: &Sources) -> Result<String, String> {
    schema::check_name(name).map_err(|problem| format!("--preset show: {problem}"))?;
    let chosen = choose(&Request::Named(name.to_string()), &[], sources)?
        .expect("a named preset is found or an error");
    Ok(to_toml(&chosen.preset))
}

/// A TOML basic string: `"..."` with escapes.
fn basic(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A pattern as a literal string when it can be one, so that backslashes
/// read as written.
fn literal(text: &str) -> String {
    let plain = !text.chars().any(char::is_control);
    if plain && !text.contains('\'') {
        format!("'{text}'")
    } else if plain && !text.contains("'''") && !text.ends_with('\'') {
        format!("'''{text}'''")
    } else {
        basic(text)
    }
}

/// Several lines, as a multi-line basic string.
fn multi_line(text: &str) -> String {
    let mut body = String::new();
    for c in text.chars() {
        match c {
            '\\' => body.push_str("\\\\"),
            '"' => body.push_str("\\\""),
            '\n' => body.push('\n'),
            c if c.is_control() => body.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => body.push(c),
        }
    }
    format!("\"\"\"\n{body}\"\"\"")
}

/// A preset in the form of a user's presets file.
pub(crate) fn to_toml(preset: &Preset) -> String {
    let name = &preset.name;
    let mut out = format!(
        "# Preset {name}, from {}. To change it, copy this into\n\
         # ~/.config/retry/presets.toml (or the file $RETRY_PRESETS names) and edit it:\n\
         # a preset there replaces the one of the same name. Schema: retry(1), PRESETS.\n\n",
        preset.origin
    );
    out.push_str(&format!("[preset.{name}]\n"));
    out.push_str(&format!("description = {}\n", basic(&preset.description)));
    let commands: Vec<String> = preset.commands.iter().map(|c| basic(c)).collect();
    out.push_str(&format!("commands = [{}]\n", commands.join(", ")));
    out.push_str(&format!("retry_after = {}\n", preset.retry_after));
    out.push_str(&format!(
        "other_exit = \"{}\"\n",
        preset.other_exit.as_str()
    ));
    if let Some(notes) = &preset.notes {
        out.push_str(&format!("notes = {}\n", multi_line(notes)));
    }
    for rule in &preset.output {
        out.push_str(&format!("\n[[preset.{name}.output]]\n"));
        out.push_str(&format!("kind = \"{}\"\n", rule.kind.as_str()));
        out.push_str(&format!("pattern = {}\n", literal(&rule.pattern)));
        out.push_str(&format!("means = {}\n", basic(&rule.means)));
        if let Some(source) = &rule.source {
            out.push_str(&format!("source = {}\n", basic(source)));
        }
    }
    for rule in &preset.exit {
        out.push_str(&format!("\n[[preset.{name}.exit]]\n"));
        out.push_str(&format!("kind = \"{}\"\n", rule.kind.as_str()));
        out.push_str(&format!("codes = {}\n", basic(&rule.codes_text)));
        out.push_str(&format!("means = {}\n", basic(&rule.means)));
        if let Some(source) = &rule.source {
            out.push_str(&format!("source = {}\n", basic(source)));
        }
    }
    out
}

#[cfg(test)]
mod tests;
