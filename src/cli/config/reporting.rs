//! Where and how retry's own messages go (`-q`, `-v`, `--log-format`,
//! `--log-file`, `--color`, the CI the environment names), and the
//! `--metrics-file` with its name label.
//!
//! The same [`ReportFlags`] come from a full parse ([`Cli`]) or, for a
//! usage error, from what clap parsed before the error (`cli::early`).

use std::path::{Path, PathBuf};

use crate::cli::Cli;
use crate::report::{CiSettings, ColorWhen, LogFormat, ReportSettings, Verbosity};

use crate::cli::Env;

/// The reporting flags as given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ReportFlags {
    pub(crate) quiet: bool,
    pub(crate) verbose: bool,
    pub(crate) log_format: Option<LogFormat>,
    pub(crate) log_file: Option<PathBuf>,
    pub(crate) color: ColorWhen,
}

impl ReportFlags {
    pub(crate) fn of(cli: &Cli) -> ReportFlags {
        ReportFlags {
            quiet: cli.quiet,
            verbose: cli.verbose,
            log_format: cli.log_format,
            log_file: cli.log_file.clone(),
            color: cli.color,
        }
    }

    /// Where retry's messages go. Flags beat the environment: an explicit
    /// `--log-format` wins over `GITHUB_ACTIONS` / `GITLAB_CI`. `ci` is
    /// what the environment says of CI steps and nesting (a run's), or
    /// nothing (a usage error's).
    pub(crate) fn settings(self, env: Env<'_>, ci: CiSettings) -> ReportSettings {
        let verbosity = if self.quiet {
            Verbosity::Quiet
        } else if self.verbose {
            Verbosity::Verbose
        } else {
            Verbosity::Normal
        };
        ReportSettings {
            verbosity,
            format: LogFormat::chosen(self.log_format, env),
            log_file: self.log_file,
            color: self.color,
            ci,
        }
    }
}

/// The run's report settings; `scanned`: the child's stderr goes through
/// retry (its line ends are known).
pub(super) fn report_settings(cli: &Cli, scanned: bool, env: Env<'_>) -> ReportSettings {
    ReportFlags::of(cli).settings(env, CiSettings::from_env(env, scanned))
}

/// `--metrics-file` and its name label: `--name`, else the command's file
/// name.
pub(super) fn metrics(cli: &Cli) -> Option<(PathBuf, String)> {
    let path = cli.metrics_file.clone()?;
    let name = cli.name.clone().unwrap_or_else(|| {
        cli.command
            .first()
            .map(|program| {
                Path::new(program)
                    .file_name()
                    .unwrap_or(program)
                    .to_string_lossy()
                    .into_owned()
            })
            .unwrap_or_default()
    });
    Some((path, name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::config::fixtures::{cli, env, no_env};

    #[test]
    fn the_format_is_the_flag_else_the_ci_of_the_environment() {
        let github = [("GITHUB_ACTIONS", "true")];
        let gitlab = [("GITLAB_CI", "true")];
        for (args, pairs, format) in [
            (&["true"][..], &[][..], LogFormat::Text),
            (&["true"], &github, LogFormat::Github),
            (&["true"], &gitlab, LogFormat::Gitlab),
            (&["--log-format", "json", "true"], &github, LogFormat::Json),
            (&["--log-format", "text", "true"], &gitlab, LogFormat::Text),
            (&["true"], &[("GITHUB_ACTIONS", "")], LogFormat::Text),
        ] {
            let settings = report_settings(&cli(args), false, &env(pairs));
            assert_eq!(settings.format, format, "{args:?} {pairs:?}");
        }
    }

    #[test]
    fn verbosity_log_file_and_colour_are_the_flags() {
        let settings = report_settings(
            &cli(&["-q", "--log-file", "x.log", "--color", "never", "true"]),
            true,
            &no_env,
        );
        assert_eq!(settings.verbosity, Verbosity::Quiet);
        assert_eq!(settings.log_file, Some(PathBuf::from("x.log")));
        assert_eq!(settings.color, ColorWhen::Never);
        assert!(settings.ci.stderr_tracked);
        let verbose = report_settings(&cli(&["-v", "true"]), false, &no_env);
        assert_eq!(verbose.verbosity, Verbosity::Verbose);
        let nested = report_settings(&cli(&["true"]), false, &env(&[("RETRY_ATTEMPT", "2")]));
        assert!(nested.ci.nested);
    }

    #[test]
    fn the_metrics_name_is_the_flag_else_the_command() {
        for (args, expected) in [
            (&["true"][..], None),
            (
                &["--metrics-file", "m.prom", "/usr/bin/backup", "x"],
                Some("backup"),
            ),
            (
                &["--metrics-file", "m.prom", "--name", "job", "backup"],
                Some("job"),
            ),
        ] {
            let found = metrics(&cli(args));
            assert_eq!(
                found.as_ref().map(|(_, name)| name.as_str()),
                expected,
                "{args:?}"
            );
        }
    }
}
