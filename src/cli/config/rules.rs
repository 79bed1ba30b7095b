//! How an attempt is judged: the exit-code lists (checked against one
//! another), the output patterns (compiled under one limit for the run),
//! the success conditions, and the preset's rules below the flags'.

use std::ffi::OsString;

use crate::cli::Cli;
use crate::cli::usage::UsageError;
use crate::policy::rules::{OutputRule, PatternCompiler, RuleSet, RuleSource, Rules};
use crate::presets::{self, Request};
use crate::values::CodeSet;

use super::mode::Mode;
use crate::cli::Env;

/// The rules of a run and what the presets gave it besides.
#[derive(Debug)]
pub(super) struct Judging {
    pub(super) rules: Rules,
    /// Stdout is scanned too (`--scan-stdout`, or `--until-output`).
    pub(super) scan_stdout: bool,
    /// What the preset choice did, for `-v` and `--explain`.
    pub(super) preset_notes: Vec<String>,
    /// User presets files ignored; advice on the command line (a run only).
    pub(super) warnings: Vec<String>,
    /// Set for the command while a preset's patterns read its messages.
    pub(super) child_locale: Vec<(&'static str, OsString)>,
}

fn union(sets: &[CodeSet]) -> Option<CodeSet> {
    sets.iter().cloned().reduce(|a, b| a.union(&b))
}

/// The first code in both sets.
fn shared(a: &CodeSet, b: &CodeSet) -> Option<i32> {
    (0..256).find(|&code| a.contains(code) && b.contains(code))
}

/// `--success-on-exit` and the exit-code lists must not share a code: the
/// success would silently win over the list.
fn check_success_codes(
    success: Option<&CodeSet>,
    lists: [(&'static str, Option<&CodeSet>); 2],
) -> Result<(), UsageError> {
    let Some(success) = success else {
        return Ok(());
    };
    for (flag, list) in lists {
        if let Some(code) = list.and_then(|list| shared(success, list)) {
            return Err(UsageError::SuccessAlsoListed {
                success: Box::new(success.clone()),
                code,
                flag,
            });
        }
    }
    Ok(())
}

/// `--retry-on-exit` and `--stop-on-exit` must not share a code: the stop
/// list would silently win (it is asked first), and the other list says
/// the opposite.
fn check_exit_lists(retry: Option<&CodeSet>, stop: Option<&CodeSet>) -> Result<(), UsageError> {
    let (Some(retry), Some(stop)) = (retry, stop) else {
        return Ok(());
    };
    match shared(retry, stop) {
        Some(code) => Err(UsageError::ExitListsShare {
            retry: Box::new(retry.clone()),
            stop: Box::new(stop.clone()),
            code,
        }),
        None => Ok(()),
    }
}

/// The patterns of one output flag, compiled; a failure names the flag.
fn compile_flag(
    compiler: &mut PatternCompiler,
    flag: &'static str,
    patterns: &[String],
) -> Result<Vec<OutputRule>, UsageError> {
    patterns
        .iter()
        .map(|pattern| match compiler.compile(pattern) {
            Ok(regex) => Ok(OutputRule::new(regex, pattern.clone())),
            Err(problem) => Err(UsageError::Pattern {
                flag,
                pattern: pattern.clone(),
                problem,
            }),
        })
        .collect()
}

/// The rules of the command line, then the preset's (chosen for what runs
/// the command or explains it), under one pattern limit.
pub(super) fn judging(cli: &Cli, mode: &Mode, env: Env<'_>) -> Result<Judging, UsageError> {
    let success_on_exit = union(&cli.success_on_exit);
    let stop_on_exit = union(&cli.stop_on_exit);
    let retry_on_exit = union(&cli.retry_on_exit);
    check_success_codes(
        success_on_exit.as_ref(),
        [
            ("--stop-on-exit", stop_on_exit.as_ref()),
            ("--retry-on-exit", retry_on_exit.as_ref()),
        ],
    )?;
    check_exit_lists(retry_on_exit.as_ref(), stop_on_exit.as_ref())?;
    // The flags' patterns first, then the preset's, under one limit.
    let mut compiler = PatternCompiler::default();
    let stop_on_output = compile_flag(&mut compiler, "--stop-on-output", &cli.stop_on_output)?;
    let retry_on_output = compile_flag(&mut compiler, "--retry-on-output", &cli.retry_on_output)?;
    let until_output = compile_flag(&mut compiler, "--until-output", &cli.until_output)?;
    let mut sets = vec![RuleSet {
        stop_on_exit,
        retry_on_exit,
        stop_on_output,
        retry_on_output,
        ..RuleSet::empty(RuleSource::CommandLine)
    }];
    let mut found = presets::ForRun::default();
    if mode.is_about_the_command() {
        let request = match cli.preset.as_deref() {
            None => Request::Auto,
            Some("none") => Request::Off,
            Some(name) => Request::Named(name.to_string()),
        };
        found = presets::for_run(&request, &cli.command, &mut compiler, env)?;
        sets.extend(found.set.take());
    }
    let mut rules = Rules::new(sets, until_output, cli.retry_after || found.retry_after);
    rules.stop_on_timeout = cli.stop_on_timeout;
    rules.success_on_exit = success_on_exit;
    // User presets files ignored (not ours to use); curl without -f.
    let mut warnings = found.warnings;
    if *mode == Mode::Run {
        warnings.extend(presets::advice::at_start(&rules, &cli.command));
    }
    Ok(Judging {
        rules,
        // --until-output looks at stdout too.
        scan_stdout: cli.scan_stdout || !cli.until_output.is_empty(),
        preset_notes: found.said,
        warnings,
        child_locale: found.child_locale,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::config::fixtures::{cli, env, no_env};

    fn judged(args: &[&str]) -> Result<Judging, UsageError> {
        judging(&cli(args), &Mode::Run, &no_env)
    }

    #[test]
    fn exit_code_lists_that_contradict_each_other_are_refused() {
        for (args, refused) in [
            (
                &["--success-on-exit", "3", "--stop-on-exit", "3", "true"][..],
                true,
            ),
            (
                &["--success-on-exit", "2-4", "--retry-on-exit", "4", "true"],
                true,
            ),
            (
                &["--success-on-exit", "3", "--stop-on-exit", "4", "true"],
                false,
            ),
            (
                &["--retry-on-exit", "1,7", "--stop-on-exit", "7", "true"],
                true,
            ),
            (
                &["--retry-on-exit", "1", "--stop-on-exit", "2", "true"],
                false,
            ),
        ] {
            assert_eq!(judged(args).is_err(), refused, "{args:?}");
        }
        let err = judged(&["--success-on-exit", "3", "--stop-on-exit", "1-5", "true"]);
        assert!(matches!(
            err,
            Err(UsageError::SuccessAlsoListed {
                code: 3,
                flag: "--stop-on-exit",
                ..
            })
        ));
        let err = judged(&["--retry-on-exit", "1,7", "--stop-on-exit", "7-9", "true"]);
        assert_eq!(
            err.unwrap_err().to_string(),
            "--retry-on-exit 1,7 and --stop-on-exit 7-9 both list exit code 7 (a code is either worth retrying or permanent; --retry-on-exit alone already makes every code it does not list permanent)"
        );
    }

    #[test]
    fn a_pattern_over_the_limit_names_its_flag() {
        let err = judged(&["--until-output", r"\w{1000}\w{1000}", "true"]).unwrap_err();
        assert!(
            matches!(
                &err,
                UsageError::Pattern {
                    flag: "--until-output",
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(
            err.to_string()
                .starts_with(r"invalid value '\w{1000}\w{1000}' for '--until-output <REGEX>': "),
            "{err}"
        );
    }

    #[test]
    fn until_output_scans_stdout_and_flags_come_before_the_preset() {
        for (args, scan_stdout) in [
            (&["true"][..], false),
            (&["--scan-stdout", "true"], true),
            (&["--until-output", "ready", "true"], true),
        ] {
            assert_eq!(judged(args).unwrap().scan_stdout, scan_stdout, "{args:?}");
        }
        let curl = judged(&["--retry-on-exit", "9", "curl", "-f", "x"]).unwrap();
        assert_eq!(curl.rules.sets.len(), 2);
        assert_eq!(curl.rules.sets[0].source, RuleSource::CommandLine);
        assert!(curl.rules.retry_after, "the curl preset reads Retry-After");
        let none = judged(&["--preset", "none", "curl", "-f", "x"]).unwrap();
        assert_eq!(none.rules.sets.len(), 1);
    }

    #[test]
    fn presets_are_chosen_only_for_what_is_about_the_command() {
        let args = cli(&["--circuit", "c", "--circuit-status", "--", "curl", "x"]);
        let status = judging(&args, &Mode::CircuitStatus, &no_env).unwrap();
        assert_eq!(status.rules.sets.len(), 1);
        let explained = judging(&args, &Mode::Explain, &no_env).unwrap();
        assert_eq!(explained.rules.sets.len(), 2);
        // The advice about curl's command line is for a run only.
        let run = judging(&cli(&["curl", "x"]), &Mode::Run, &no_env).unwrap();
        assert!(!run.warnings.is_empty());
        let explain = judging(&cli(&["curl", "x"]), &Mode::Explain, &no_env).unwrap();
        assert!(explain.warnings.is_empty());
    }

    #[test]
    fn the_presets_files_come_from_the_environment_given() {
        let pairs = [("RETRY_PRESETS", "/nonexistent/retry-test/presets.toml")];
        let err = judging(&cli(&["true"]), &Mode::Run, &env(&pairs)).unwrap_err();
        assert!(matches!(err, UsageError::Presets(_)), "{err:?}");
        assert!(err.to_string().starts_with("RETRY_PRESETS names "), "{err}");
    }
}
