//! What became of the command's stdout: output the attempts' pumps could
//! not write on (warned once per stream), and at the end of the run the
//! delivery of a successful attempt's held stdout (`--buffer-stdout`,
//! `-o`), or what was dropped.

use std::time::Instant;

use super::Run;
use crate::contract::warning;
use crate::policy::decision::End;
use crate::process::signals;
use crate::report::Reporter;
use crate::run::deliver::HeldStdout;
use crate::run::error_text;
use crate::run::stdin::StdinSource;
use crate::run::wiring::{LostOutput, Stream};

/// Output the attempts could not write on.
#[derive(Default)]
pub(super) struct Lost {
    /// The last attempt's stdout could not all be written on (to our stdout
    /// or into the held file): what went wrong.
    stdout: Option<String>,
    /// Streams whose lost output was already warned about.
    warned: Vec<Stream>,
}

impl Lost {
    /// The attempt's stdout did not all reach its place (a hedged
    /// attempt's deciding copy): `what` went wrong. Delivering it after a
    /// success then fails.
    pub(super) fn stdout_lost(&mut self, what: String) {
        self.stdout = Some(what);
    }
}

impl Run<'_> {
    /// Output the attempt's pumps could not write on: warn once per
    /// stream, and remember what happened to stdout (delivering it after a
    /// success then fails).
    pub(super) fn note_lost_output(&mut self, lost: &[LostOutput], reporter: &mut Reporter) {
        let held = &self.files.held;
        let noted = &mut self.state.lost;
        noted.stdout = None;
        for LostOutput { stream, error } in lost {
            let what = match (stream, held) {
                (Stream::Stdout, Some(held)) => {
                    format!("holding the command's stdout in {}", held.describe())
                }
                (Stream::Stdout, None) => "writing the command's stdout".to_string(),
                (Stream::Stderr, _) => "writing the command's stderr".to_string(),
                (Stream::Both, _) => "writing the command's stdout and stderr".to_string(),
            };
            let what = format!("{what}: {}", error_text(error));
            if !noted.warned.contains(stream) {
                noted.warned.push(*stream);
                reporter.warning(warning::OUTPUT,
                    &format!("{what}; the rest of the attempt's output is lost (the command itself saw no error)"),
                );
            }
            if *stream != Stream::Stderr {
                noted.stdout = Some(what);
            }
        }
    }

    /// The stdin spool's failure, in words.
    pub(super) fn spool_problem(&self) -> String {
        spool_problem(&self.files.stdin)
    }

    /// The run is over: a successful run's held stdout goes to its place;
    /// otherwise it is dropped, and the number of bytes said. An error is
    /// the output that could not be delivered.
    pub(super) fn deliver(&mut self, end: End, reporter: &mut Reporter) -> Result<(), String> {
        let held = self.files.held.take();
        if end != End::Success {
            if let Some(message) = held.as_ref().and_then(HeldStdout::dropped) {
                reporter.warning(warning::OUTPUT, &message);
            }
            return Ok(());
        }
        if let Some(lost) = self.state.lost.stdout.take() {
            let consequence = match (&held, &self.setup.config.output) {
                (_, Some(path)) => format!(
                    "the successful attempt's output was not delivered, {} is left as it was",
                    path.display()
                ),
                (Some(_), None) => "the successful attempt's output was not delivered".to_string(),
                (None, None) => {
                    "the successful attempt's output did not all reach stdout".to_string()
                }
            };
            return Err(format!("{lost}; {consequence}"));
        }
        // The delivery is part of the run: a stdout that takes nothing
        // holds it neither past a signal nor past --max-time.
        let deadline = self.setup.limits.deadline;
        let give_up =
            || signals::terminating_arrived() || deadline.is_some_and(|d| Instant::now() >= d);
        match held {
            Some(held) => held.deliver(&give_up).map_err(|err| format!("{err:#}")),
            None => Ok(()),
        }
    }
}

fn spool_problem(stdin: &StdinSource) -> String {
    match stdin.spool_failure() {
        Some((dir, error)) => format!(
            "--stdin replay: the spool in {} could not hold the whole input: {}",
            crate::safe_fs::shown_temp_dir(dir),
            error_text(error)
        ),
        None => String::new(),
    }
}
