//! Where a usage error is reported, read from what clap itself parsed.
//!
//! A usage error honours `--log-format`, `--log-file` and `--color` given
//! before it, so a mistyped flag in a cron job or a CI step shows where the
//! job's messages go. Those settings are read by the same clap definition
//! that refused the command line, parsed again leniently (clap's
//! `ignore_errors`: what comes before the first error counts; values are
//! taken as they are, so that a bad one does not end the parse; flag
//! combinations are not judged). So retry's options end exactly where
//! clap says they do: at the first word of the command (`trailing_var_arg`)
//! or at `--`, and nothing after them is read as retry's: `retry sh -c true
//! --log-file app.log` passes `--log-file` to the command, and a usage error
//! of that line does not go into `app.log`.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::builder::OsStringValueParser;
use clap::{ArgMatches, CommandFactory, ValueEnum};

use super::config::ReportFlags;
use super::{Cli, Env};
use crate::report::{CiSettings, ColorWhen, LogFormat, ReportSettings};

/// The report settings of a usage error in `args` (argv, the program
/// first), in the environment `env`.
pub(crate) fn report_settings(args: &[OsString], env: Env<'_>) -> ReportSettings {
    flags(args).settings(env, CiSettings::default())
}

/// The reporting flags clap finds in `args` before anything it refuses.
fn flags(args: &[OsString]) -> ReportFlags {
    let command = super::natural::with_natural_names(Cli::command())
        .ignore_errors(true)
        // Given twice is an error of the real parse, not a reason to stop.
        .args_override_self(true)
        // `--help` and `--version` are answered by the real parse.
        .disable_help_flag(true)
        .disable_version_flag(true)
        .mut_args(|arg| {
            if arg.get_action().takes_values() {
                arg.value_parser(OsStringValueParser::new())
            } else {
                arg
            }
        });
    let matches = command
        .try_get_matches_from(args)
        .unwrap_or_else(|_| ArgMatches::default());
    let raw = |id: &str| -> Option<OsString> {
        matches.try_get_one::<OsString>(id).ok().flatten().cloned()
    };
    let flag = |id: &str| {
        matches
            .try_get_one::<bool>(id)
            .ok()
            .flatten()
            .copied()
            .unwrap_or(false)
    };
    // A value clap would refuse is no setting: the default stands.
    let word = |id: &str| raw(id).and_then(|value| value.into_string().ok());
    ReportFlags {
        quiet: flag("quiet"),
        verbose: flag("verbose"),
        log_format: word("log_format").and_then(|text| LogFormat::from_str(&text, false).ok()),
        log_file: raw("log_file").map(PathBuf::from),
        color: word("color")
            .and_then(|text| ColorWhen::from_str(&text, false).ok())
            .unwrap_or(ColorWhen::Auto),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(words: &[&str]) -> ReportFlags {
        let args: Vec<OsString> = std::iter::once("retry")
            .chain(words.iter().copied())
            .map(OsString::from)
            .collect();
        flags(&args)
    }

    fn log_file(args: &[&str]) -> Option<String> {
        read(args).log_file.map(|path| path.display().to_string())
    }

    #[test]
    fn only_options_before_the_command_are_retrys() {
        for (args, expected) in [
            // The reviewer's line: a typo, then the command's own flag.
            (
                &[
                    "--atempts",
                    "3",
                    "sh",
                    "-c",
                    "true",
                    "--log-file",
                    "app.log",
                ][..],
                None,
            ),
            (
                &["-n", "3", "sh", "-c", "true", "--log-file", "app.log"],
                None,
            ),
            (&["-n", "0", "sh", "--log-file", "app.log"], None),
            (&["--", "sh", "--log-file", "app.log"], None),
            // Before the command, also after a bad value or a conflict.
            (
                &["--log-file", "r.log", "--atempts", "3", "true"],
                Some("r.log"),
            ),
            (
                &["--log-file", "r.log", "-n", "0", "--", "true"],
                Some("r.log"),
            ),
            (
                &["-n", "0", "--log-file", "r.log", "--", "true"],
                Some("r.log"),
            ),
            (&["-q", "-v", "--log-file=r.log", "true"], Some("r.log")),
            (
                &["--retries", "3", "--log-file", "r.log", "true"],
                Some("r.log"),
            ),
            (
                &["--log-file", "a.log", "--log-file", "b.log", "true"],
                Some("b.log"),
            ),
            // Past an unknown flag, clap cannot tell a value from the
            // command: nothing after it is read.
            (&["--atempts", "3", "--log-file", "r.log", "true"], None),
            (&["--log-file"], None),
        ] {
            assert_eq!(log_file(args).as_deref(), expected, "{args:?}");
        }
    }

    #[test]
    fn the_format_and_colour_are_read_and_a_bad_one_is_no_setting() {
        let flags = read(&[
            "--log-format",
            "github",
            "--color",
            "never",
            "-n",
            "0",
            "true",
        ]);
        assert_eq!(flags.log_format, Some(LogFormat::Github));
        assert_eq!(flags.color, ColorWhen::Never);
        assert_eq!(
            read(&["--log-format=json", "x"]).log_format,
            Some(LogFormat::Json)
        );
        assert_eq!(read(&["--log-format", "jsn", "x"]).log_format, None);
        assert_eq!(read(&["--color", "sometimes", "x"]).color, ColorWhen::Auto);
        assert_eq!(read(&["x", "--log-format", "json"]).log_format, None);
        // --help is the real parse's to answer.
        assert_eq!(
            read(&["--log-format", "json", "--help"]).log_format,
            Some(LogFormat::Json)
        );
    }

    #[test]
    fn the_environment_names_the_ci_when_no_format_is_given() {
        let github = |name: &str| (name == "GITHUB_ACTIONS").then(|| OsString::from("true"));
        let argv: Vec<OsString> = ["retry", "--atempts", "3", "true"]
            .map(OsString::from)
            .into();
        assert_eq!(report_settings(&argv, &github).format, LogFormat::Github);
        let argv: Vec<OsString> = ["retry", "--log-format", "text", "--bad"]
            .map(OsString::from)
            .into();
        assert_eq!(report_settings(&argv, &github).format, LogFormat::Text);
    }
}
