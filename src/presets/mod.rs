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
mod check;
mod error;
mod for_run;
pub(crate) mod locale;
pub(crate) mod schema;
mod show;
mod slips;
mod user_files;
pub(crate) mod wrapped;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::policy::rules::{ExitRule, OutputRule, PatternCompiler, RuleSet, RuleSource};
use crate::values::CodeSet;
pub(crate) use check::check_file;
pub(crate) use error::PresetError;
pub(crate) use for_run::{ForRun, for_run};
use schema::{Kind, Origin, Preset, Strictness};
pub(crate) use show::{list_text, show_text};
use user_files::{Layer, Wanted, user_layers};

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

impl Sources {
    /// The files the environment names (`env` reads a variable).
    pub(crate) fn from_env(env: &dyn Fn(&str) -> Option<OsString>) -> Sources {
        // An empty variable counts as unset.
        let env_path = |name: &str| {
            env(name)
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
        };
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
    fn files(&self) -> Vec<(&Path, Wanted)> {
        let mut files = vec![(self.system.as_path(), Wanted::IfThere)];
        if let Some((path, required)) = &self.user {
            let wanted = if *required {
                Wanted::NamedBy("RETRY_PRESETS")
            } else {
                Wanted::IfThere
            };
            files.push((path.as_path(), wanted));
        }
        files
    }
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
) -> Result<Option<Chosen>, PresetError> {
    choose_noting(request, command, sources, &mut Vec::new())
}

/// [`choose`], saying in `notes` which user files were ignored.
pub(crate) fn choose_noting(
    request: &Request,
    command: &[OsString],
    sources: &Sources,
    notes: &mut Vec<String>,
) -> Result<Option<Chosen>, PresetError> {
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
                        return Err(PresetError::Unknown {
                            name: name.clone(),
                            known: known_names(&layers),
                        });
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
pub(crate) fn rule_set(
    chosen: &Chosen,
    compiler: &mut PatternCompiler,
) -> Result<RuleSet, PresetError> {
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
        .map_err(|err| PresetError::Pattern {
            preset: preset.name.clone(),
            origin: preset.origin.to_string(),
            line: rule.line,
            rule: index + 1,
            problem: err,
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

#[cfg(test)]
mod tests;
