//! `--metrics-file`: a Prometheus text-format record of the run, for
//! `node_exporter`'s textfile collector (the usual way to watch cron jobs).
//!
//! Written once, at the end of the run, atomically: a temporary file in the
//! same directory, then a rename, so the collector never reads half a file.

use std::io::{self, Write};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, anyhow, bail};

use crate::outcome::RunOutcome;
use crate::outcome::RunSummary;
use crate::report::{Guard, InForce};
use crate::safe_fs;
use crate::sys::fd::AsFd;

/// Escape a label value: backslash, double quote and newline.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

pub(crate) fn render(name: &str, summary: &RunSummary, ended: SystemTime) -> String {
    let name = label(name);
    let ended = ended
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    let mut text = String::new();
    let mut gauge = |metric: &str, help: &str, samples: &[(String, String)]| {
        text.push_str(&format!("# HELP {metric} {help}\n# TYPE {metric} gauge\n"));
        for (labels, value) in samples {
            text.push_str(&format!("{metric}{{name=\"{name}\"{labels}}} {value}\n"));
        }
    };
    let one = |value: String| vec![(String::new(), value)];
    gauge(
        "retry_attempts",
        "Attempts the last run made, the first included.",
        &one(summary.attempts.to_string()),
    );
    gauge(
        "retry_retries",
        "Retries the last run made (attempts after the first).",
        &one(summary.attempts.saturating_sub(1).to_string()),
    );
    let outcomes: Vec<(String, String)> = RunOutcome::ALL
        .iter()
        .map(|o| {
            (
                format!(",outcome=\"{}\"", o.as_str()),
                u8::from(*o == summary.outcome).to_string(),
            )
        })
        .collect();
    gauge(
        "retry_outcome",
        "How the last run ended: 1 for its outcome, 0 for the others.",
        &outcomes,
    );
    let failures = summary.failures;
    let by_verdict: Vec<(String, String)> = [
        ("transient", failures.transient),
        ("throttled", failures.throttled),
        ("permanent", failures.permanent),
    ]
    .iter()
    .map(|(verdict, count)| (format!(",verdict=\"{verdict}\""), count.to_string()))
    .collect();
    gauge(
        "retry_failures",
        "Failed attempts of the last run by verdict (throttled: a transient failure known to be throttling).",
        &by_verdict,
    );
    gauge(
        "retry_hedges",
        "Copies of hedged attempts (--hedge-after) the last run started beyond the first, and how many of all its copies were superseded by another.",
        &[
            (
                ",copies=\"started\"".to_string(),
                failures.hedges.to_string(),
            ),
            (
                ",copies=\"superseded\"".to_string(),
                failures.superseded.to_string(),
            ),
        ],
    );
    gauge(
        "retry_success",
        "1 if the last run succeeded, else 0.",
        &one(u8::from(summary.outcome == RunOutcome::Success).to_string()),
    );
    gauge(
        "retry_exit_status",
        "Exit status of the last run (128+N for signal N).",
        &one(summary.status.as_number().to_string()),
    );
    gauge(
        "retry_duration_seconds",
        "How long the last run took, sleeps included.",
        &one(format!("{:.3}", summary.elapsed.as_secs_f64())),
    );
    gauge(
        "retry_last_run_end_timestamp_seconds",
        "When the last run ended, in seconds since the Unix epoch.",
        &one(format!("{ended:.3}")),
    );
    text
}

/// The lines that say whether `--circuit` and `--budget` were in force
/// (a store that cannot be used lets the run go on without them), for the
/// guards the run was given: `retry_circuit_in_force{name="job",circuit="api"} 1`.
/// Appended to [`render`]'s text.
pub(crate) fn render_in_force(name: &str, in_force: &InForce) -> String {
    let name = label(name);
    let mut text = String::new();
    for guard in [Guard::Circuit, Guard::Budget] {
        let Some(guarded) = in_force.get(guard) else {
            continue;
        };
        let word = guard.as_str();
        let metric = format!("retry_{word}_in_force");
        text.push_str(&format!(
            "# HELP {metric} 1 if the last run's --{word} was in force throughout; 0 if its store could not be used and the run went on without it.\n# TYPE {metric} gauge\n"
        ));
        text.push_str(&format!(
            "{metric}{{name=\"{name}\",{word}=\"{}\"}} {}\n",
            label(&guarded.name),
            u8::from(guarded.in_force)
        ));
    }
    if let (Some(throttled), Some(circuit)) = (&in_force.throttled, &in_force.circuit) {
        let labels = format!("name=\"{name}\",circuit=\"{}\"", label(&circuit.name));
        for (metric, help, value) in [
            (
                "retry_circuit_requests",
                "Requests in the adaptive circuit's window when the last run asked (attempts the runs wanted to make, those rejected locally included).",
                throttled.requests.to_string(),
            ),
            (
                "retry_circuit_accepts",
                "Attempts the backend accepted in the adaptive circuit's window when the last run asked.",
                throttled.accepts.to_string(),
            ),
            (
                "retry_circuit_reject_probability",
                "The adaptive circuit's rejection probability when the last run asked: max(0, (requests - K x accepts) / (requests + 1)).",
                format!("{:.4}", throttled.probability),
            ),
            (
                "retry_circuit_throttled",
                "1 if the adaptive circuit rejected the last run locally (nothing ran), else 0.",
                u8::from(throttled.rejected).to_string(),
            ),
        ] {
            text.push_str(&format!(
                "# HELP {metric} {help}\n# TYPE {metric} gauge\n{metric}{{{labels}}} {value}\n"
            ));
        }
    }
    text
}

/// `--metrics-file PATH: cannot create a file in DIR: ERROR`.
fn cannot_create(path: &Path, dir: &Path, err: &io::Error) -> anyhow::Error {
    anyhow!(
        "--metrics-file {}: cannot create a file in {}: {err}",
        path.display(),
        dir.display()
    )
}

/// Before anything runs, as for `-o` and `--log-file`: a file can be made
/// in the directory of `path`, so a mistyped path is a usage error, not
/// news after the job. What stands at the name is judged by the write at
/// the end (it may change meanwhile, and then the job's status stands).
pub(crate) fn check(path: &Path) -> Result<()> {
    let Some((dir_path, _)) = safe_fs::split_file_path(path) else {
        bail!("--metrics-file {}: not a file name", path.display());
    };
    let dir =
        safe_fs::open_directory(dir_path).map_err(|err| cannot_create(path, dir_path, &err))?;
    safe_fs::try_create_in(dir.as_fd(), ".retry-metrics-")
        .map_err(|err| cannot_create(path, dir_path, &err))
}

/// Replace `path` with `content` atomically, readable by a collector
/// (0644), through `safe_fs::replace`, as `-o` and the state store do.
///
/// Only nothing or a regular file no other user planted is replaced: a
/// symlink (which could steer the write elsewhere), a FIFO, a device or a
/// directory at `path` is an error that names it, and so is a file
/// another user put in a sticky directory others can write (as
/// `fs.protected_regular` would refuse to open it). The directory is
/// reached without following a symlink another user planted on the way
/// (`safe_fs::open_directory`). The new file's mode is set on its
/// descriptor (never by path, which a symlink could redirect); a rename
/// replaces a name and never writes through a symlink swapped in meanwhile.
pub(crate) fn write_atomically(path: &Path, content: &str) -> Result<()> {
    use crate::safe_fs::replace::{NewMode, Options, Refusal, Replacement, Step, Trouble};

    let shown = path.display();
    let Some((dir_path, name)) = safe_fs::split_file_path(path) else {
        bail!("--metrics-file {shown}: not a file name");
    };
    let cannot_create = |err: io::Error| cannot_create(path, dir_path, &err);
    // No symlink another user planted on the way is followed.
    let dir = safe_fs::open_directory(dir_path).map_err(cannot_create)?;
    let options = Options {
        mode: NewMode::Exactly(0o644),
        durable: true,
        guard: true,
        unnamed: true,
    };
    let fresh_name = || std::ffi::OsString::from(safe_fs::random_name(".retry-metrics-"));
    let written = Replacement::new(dir, name, options, Box::new(fresh_name)).and_then(|new| {
        let mut file = new.file();
        file.write_all(content.as_bytes())
            .map_err(|err| Trouble::Failed(Step::Write, err))?;
        new.commit()
    });
    match written {
        // The rename happened; a directory that cannot be synced is no
        // reason to call the metrics unwritten.
        Ok(()) | Err(Trouble::Failed(Step::SyncDir, _)) => Ok(()),
        Err(Trouble::Refused(Refusal::NotRegular(mode))) => bail!(
            "--metrics-file {shown}: {} stands there, not a regular file: left as it is",
            safe_fs::Kind::of_mode(mode).described()
        ),
        Err(Trouble::Refused(Refusal::Planted { owner })) => bail!(
            "--metrics-file {shown}: a file owned by another user (uid {owner}) stands there, in a sticky directory others can write: left as it is (as fs.protected_regular would refuse to open it), so that no one else decides who reads the metrics"
        ),
        Err(Trouble::Failed(Step::Look, err)) => {
            Err(err).context(format!("--metrics-file {shown}: cannot look at it"))
        }
        Err(Trouble::Failed(Step::Create | Step::Mode, err)) => Err(cannot_create(err)),
        Err(Trouble::Failed(Step::Write | Step::Sync, err)) => {
            Err(err).context(format!("--metrics-file {shown}: cannot write"))
        }
        Err(Trouble::Failed(Step::Name | Step::Rename, err)) => {
            Err(err).context(format!("--metrics-file {shown}: cannot rename into place"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::ExitStatus;
    use crate::outcome::Failures;
    use std::time::Duration;

    #[test]
    fn renders_prometheus_text_with_escaped_labels() {
        let summary = RunSummary {
            status: ExitStatus::Code(7),
            outcome: RunOutcome::Exhausted,
            attempts: 5,
            elapsed: Duration::from_millis(14_900),
            failures: Failures::default(),
        };
        let text = render(
            "nightly \"db\"",
            &summary,
            UNIX_EPOCH + Duration::from_secs(1_700_000_000),
        );
        assert!(text.contains("retry_attempts{name=\"nightly \\\"db\\\"\"} 5\n"));
        assert!(text.contains("retry_retries{name=\"nightly \\\"db\\\"\"} 4\n"));
        assert!(text.contains("outcome=\"exhausted\"} 1\n"));
        assert!(text.contains("outcome=\"success\"} 0\n"));
        assert!(text.contains("retry_exit_status{name=\"nightly \\\"db\\\"\"} 7\n"));
        assert!(text.contains("retry_duration_seconds{name=\"nightly \\\"db\\\"\"} 14.900\n"));
        assert!(text.contains(
            "retry_last_run_end_timestamp_seconds{name=\"nightly \\\"db\\\"\"} 1700000000.000\n"
        ));
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (series, value) = line.rsplit_once(' ').unwrap();
            assert!(series.ends_with('}'));
            value.parse::<f64>().unwrap();
        }
    }

    #[test]
    fn renders_every_metric_with_its_help_and_type() {
        let summary = RunSummary {
            status: ExitStatus::Code(0),
            outcome: RunOutcome::Success,
            attempts: 1,
            elapsed: Duration::from_millis(250),
            failures: Failures {
                throttled: 2,
                ..Failures::default()
            },
        };
        let text = render("job", &summary, UNIX_EPOCH + Duration::from_millis(1_500));
        let mut expected = String::from(
            "# HELP retry_attempts Attempts the last run made, the first included.\n\
             # TYPE retry_attempts gauge\n\
             retry_attempts{name=\"job\"} 1\n\
             # HELP retry_retries Retries the last run made (attempts after the first).\n\
             # TYPE retry_retries gauge\n\
             retry_retries{name=\"job\"} 0\n\
             # HELP retry_outcome How the last run ended: 1 for its outcome, 0 for the others.\n\
             # TYPE retry_outcome gauge\n",
        );
        for outcome in RunOutcome::ALL {
            let value = u8::from(outcome == RunOutcome::Success);
            expected.push_str(&format!(
                "retry_outcome{{name=\"job\",outcome=\"{}\"}} {value}\n",
                outcome.as_str()
            ));
        }
        expected.push_str(
            "# HELP retry_failures Failed attempts of the last run by verdict (throttled: a transient failure known to be throttling).\n\
             # TYPE retry_failures gauge\n\
             retry_failures{name=\"job\",verdict=\"transient\"} 0\n\
             retry_failures{name=\"job\",verdict=\"throttled\"} 2\n\
             retry_failures{name=\"job\",verdict=\"permanent\"} 0\n\
             # HELP retry_hedges Copies of hedged attempts (--hedge-after) the last run started beyond the first, and how many of all its copies were superseded by another.\n\
             # TYPE retry_hedges gauge\n\
             retry_hedges{name=\"job\",copies=\"started\"} 0\n\
             retry_hedges{name=\"job\",copies=\"superseded\"} 0\n\
             # HELP retry_success 1 if the last run succeeded, else 0.\n\
             # TYPE retry_success gauge\n\
             retry_success{name=\"job\"} 1\n\
             # HELP retry_exit_status Exit status of the last run (128+N for signal N).\n\
             # TYPE retry_exit_status gauge\n\
             retry_exit_status{name=\"job\"} 0\n\
             # HELP retry_duration_seconds How long the last run took, sleeps included.\n\
             # TYPE retry_duration_seconds gauge\n\
             retry_duration_seconds{name=\"job\"} 0.250\n\
             # HELP retry_last_run_end_timestamp_seconds When the last run ended, in seconds since the Unix epoch.\n\
             # TYPE retry_last_run_end_timestamp_seconds gauge\n\
             retry_last_run_end_timestamp_seconds{name=\"job\"} 1.500\n",
        );
        assert_eq!(text, expected);
    }

    #[test]
    fn a_run_that_never_started_has_no_retries_and_a_signal_shows_as_128_plus_n() {
        let summary = RunSummary {
            status: ExitStatus::Signal(15),
            outcome: RunOutcome::CircuitOpen,
            attempts: 0,
            elapsed: Duration::ZERO,
            failures: Failures::default(),
        };
        let text = render("a\\b\nc", &summary, UNIX_EPOCH);
        assert!(
            text.contains("retry_attempts{name=\"a\\\\b\\nc\"} 0\n"),
            "{text}"
        );
        assert!(
            text.contains("retry_retries{name=\"a\\\\b\\nc\"} 0\n"),
            "{text}"
        );
        assert!(text.contains("outcome=\"circuit-open\"} 1\n"), "{text}");
        assert!(
            text.contains("retry_success{name=\"a\\\\b\\nc\"} 0\n"),
            "{text}"
        );
        assert!(
            text.contains("retry_exit_status{name=\"a\\\\b\\nc\"} 143\n"),
            "{text}"
        );
        assert_eq!(
            text.lines().filter(|l| l.contains("outcome=")).count(),
            RunOutcome::ALL.len()
        );
    }

    #[test]
    fn the_check_before_the_run_names_a_directory_where_no_file_can_be_made() {
        let dir = tempfile::tempdir().unwrap();
        check(&dir.path().join("job.prom")).unwrap();
        // The check leaves nothing behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let missing = dir.path().join("missing/job.prom");
        let err = check(&missing).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!(
                "--metrics-file {}: cannot create a file in ",
                missing.display()
            )),
            "{err}"
        );
    }

    #[test]
    fn guards_not_in_force_are_metrics_too() {
        assert_eq!(render_in_force("job", &InForce::default()), "");
        let mut in_force = InForce::default();
        in_force.given(Guard::Circuit, "api");
        in_force.given(Guard::Budget, "b\"x");
        in_force.lost(Guard::Budget);
        let text = render_in_force("job", &in_force);
        let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            samples,
            [
                r#"retry_circuit_in_force{name="job",circuit="api"} 1"#,
                r#"retry_budget_in_force{name="job",budget="b\"x"} 0"#,
            ]
        );
        assert!(text.contains("# TYPE retry_budget_in_force gauge\n"));
    }

    #[test]
    fn an_adaptive_circuit_says_what_it_counted() {
        let mut in_force = InForce::default();
        in_force.given(Guard::Circuit, "api");
        in_force.throttled = Some(crate::report::Throttled {
            requests: 120,
            accepts: 10,
            probability: 100.0 / 121.0,
            rejected: true,
        });
        let text = render_in_force("job", &in_force);
        let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            samples,
            [
                r#"retry_circuit_in_force{name="job",circuit="api"} 1"#,
                r#"retry_circuit_requests{name="job",circuit="api"} 120"#,
                r#"retry_circuit_accepts{name="job",circuit="api"} 10"#,
                r#"retry_circuit_reject_probability{name="job",circuit="api"} 0.8264"#,
                r#"retry_circuit_throttled{name="job",circuit="api"} 1"#,
            ]
        );
        assert!(text.contains("# TYPE retry_circuit_throttled gauge\n"));
    }
}
