//! What this invocation does, worked out once from the flags: run the
//! command, explain its schedule, or one of the modes that print something
//! and exit.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::cli::Cli;
use crate::cli::generate::Kind as GenerateKind;
use crate::cli::usage::UsageError;

/// What this invocation does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Run the command (behind the circuit, when one is named).
    Run,
    /// `--explain`: print the schedule.
    Explain,
    /// `--generate KIND`: print the man page or a completion script.
    Generate(GenerateKind),
    /// `--circuit-status`.
    CircuitStatus,
    /// `--circuit-reset`.
    CircuitReset,
    /// `--budget-status`.
    BudgetStatus,
    /// `--budget-reset`.
    BudgetReset,
    /// `--preset list`: print every preset.
    PresetList,
    /// `--preset show NAME`: print one, in a presets file's form.
    PresetShow(String),
    /// `--preset check FILE`: check a presets file.
    PresetCheck(PathBuf),
}

impl Mode {
    /// The mode the flags ask for; the first of `--generate`, the
    /// `--preset` modes, `--explain`, `--circuit-status`,
    /// `--circuit-reset`, `--budget-status` and `--budget-reset` given,
    /// else a run.
    pub(crate) fn of(cli: &Cli) -> Result<Mode, UsageError> {
        if let Some(kind) = cli.generate {
            return Ok(Mode::Generate(kind));
        }
        if let Some(mode) = preset_mode(cli.preset.as_deref(), &cli.command)? {
            return Ok(mode);
        }
        let mode = if cli.explain {
            Mode::Explain
        } else if cli.circuit_status {
            Mode::CircuitStatus
        } else if cli.circuit_reset {
            Mode::CircuitReset
        } else if cli.budget_status {
            Mode::BudgetStatus
        } else if cli.budget_reset {
            Mode::BudgetReset
        } else if cli.command.is_empty() {
            // clap lets `--preset NAME` alone through: it might have been
            // one of the words above.
            return Err(UsageError::NoCommand);
        } else {
            Mode::Run
        };
        Ok(mode)
    }

    /// Whether this invocation runs the command or explains how it would:
    /// then the presets are chosen and an outer deadline binds it.
    pub(crate) fn is_about_the_command(&self) -> bool {
        matches!(self, Mode::Run | Mode::Explain)
    }
}

/// `--preset list`, `--preset show NAME` and `--preset check FILE` (NAME
/// and FILE are the word after them).
fn preset_mode(preset: Option<&str>, command: &[OsString]) -> Result<Option<Mode>, UsageError> {
    match (preset, command) {
        (Some("list"), []) => Ok(Some(Mode::PresetList)),
        (Some("list"), _) => Err(UsageError::PresetListRunsNothing),
        (Some("show"), [name]) => Ok(Some(Mode::PresetShow(name.to_string_lossy().into_owned()))),
        (Some("show"), _) => Err(UsageError::PresetShowTakesOneName),
        (Some("check"), [file]) => Ok(Some(Mode::PresetCheck(PathBuf::from(file)))),
        (Some("check"), _) => Err(UsageError::PresetCheckTakesOneFile),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::config::fixtures::cli;

    #[test]
    fn the_mode_is_the_first_asked_for() {
        use Mode::*;
        for (args, expected) in [
            (&["true"][..], Run),
            (&["--explain"], Explain),
            (&["--explain", "--", "curl", "x"], Explain),
            (&["--generate", "man"], Generate(GenerateKind::Man)),
            (&["--circuit", "c", "--circuit-status"], CircuitStatus),
            (&["--circuit", "c", "--circuit-reset"], CircuitReset),
            (&["--budget", "b", "--budget-status"], BudgetStatus),
            (&["--budget", "b", "--budget-reset"], BudgetReset),
            (
                &["--explain", "--circuit", "c", "--circuit-status"],
                Explain,
            ),
            (&["--preset", "list"], PresetList),
            (&["--preset", "show", "curl"], PresetShow("curl".into())),
            (
                &["--preset", "check", "my.toml"],
                PresetCheck("my.toml".into()),
            ),
            (&["--preset", "list", "--explain"], PresetList),
        ] {
            assert_eq!(Mode::of(&cli(args)).unwrap(), expected, "{args:?}");
        }
    }

    #[test]
    fn a_mode_without_what_it_needs_is_refused() {
        for (args, expected) in [
            (
                &["--preset", "list", "true"][..],
                "--preset list runs nothing",
            ),
            (&["--preset", "show"], "--preset show takes one preset name"),
            (&["--preset", "show", "a", "b"], "--preset show takes one"),
            (
                &["--preset", "check"],
                "--preset check takes one presets file",
            ),
            (&["--preset", "curl"], "the following required arguments"),
        ] {
            let err = Mode::of(&cli(args)).unwrap_err().to_string();
            assert!(err.starts_with(expected), "{args:?}: {err}");
        }
    }

    #[test]
    fn only_a_run_and_its_explanation_are_about_the_command() {
        assert!(Mode::Run.is_about_the_command());
        assert!(Mode::Explain.is_about_the_command());
        assert!(!Mode::PresetList.is_about_the_command());
        assert!(!Mode::CircuitStatus.is_about_the_command());
    }
}
