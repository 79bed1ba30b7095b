//! What the presets give one run: the chosen preset's rule set, what `-v`
//! and `--explain` say about the choice (how a wrapped command was read,
//! why none applies, the command's locale), and the variables that put the
//! command's messages in the C locale while the preset's patterns read
//! them.

use std::ffi::OsString;

use super::{PresetError, Request, Sources, choose_noting, locale, rule_set, wrapped};
use crate::policy::rules::{PatternCompiler, RuleSet};

/// The presets' part of a run's configuration.
#[derive(Debug, Default)]
pub(crate) struct ForRun {
    /// The chosen preset's rules, below the command line's.
    pub(crate) set: Option<RuleSet>,
    /// The preset reads `Retry-After:` lines.
    pub(crate) retry_after: bool,
    /// Lines for `-v` and `--explain`.
    pub(crate) said: Vec<String>,
    /// Warnings of the run: user presets files that were ignored.
    pub(crate) warnings: Vec<String>,
    /// Set for the command (see `locale`).
    pub(crate) child_locale: Vec<(&'static str, OsString)>,
}

/// The presets for `command` as `request` asks, from the files the
/// environment names (`env` reads a variable); the patterns are charged
/// to `compiler`. Errors are usage errors.
pub(crate) fn for_run(
    request: &Request,
    command: &[OsString],
    compiler: &mut PatternCompiler,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<ForRun, PresetError> {
    let mut found = ForRun::default();
    let sources = Sources::from_env(env);
    let chosen = choose_noting(request, command, &sources, &mut found.warnings)?;
    if let Some(chosen) = chosen {
        found.set = Some(rule_set(&chosen, compiler)?);
        found.retry_after = chosen.preset.retry_after;
        if !chosen.preset.output.is_empty()
            && let Some(locale) = locale::messages_in_c(env)
        {
            found.child_locale = locale.vars;
            found.said.push(locale.said);
        }
    } else if *request == Request::Auto
        && let Some(why) = wrapped::why_none(command)
    {
        found.said.push(why);
    }
    Ok(found)
}
