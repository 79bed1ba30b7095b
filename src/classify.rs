//! How an attempt ended, and whether that calls for another one.
//!
//! Pure: the runner gathers an [`Observation`] (exit status, timeout, the
//! hint file's word, which output patterns matched) and [`classify`] applies
//! the contract's rules in order, first match wins:
//!
//! 0. a hint, 1. `--stop-on-output`, 2. `--retry-on-output`,
//! 3. `--stop-on-exit`, 4. `--retry-on-exit`, 5. not started (permanent),
//! 6. death by SIGINT, SIGQUIT or SIGPIPE (permanent: a user or a closed
//!    reader ended it), 7. anything else (transient).
//!
//! Rules 1-4 come in rule sets: the user's own first, then a preset's, so a
//! flag on the command line always overrides the preset.

use std::time::Duration;

use crate::values::CodeSet;

/// How the child process ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    Exited(i32),
    Signaled(i32),
    /// The command could not be started; `status` is 126 or 127.
    NotStarted {
        status: u8,
        message: String,
    },
}

/// The word an attempt wrote to `$RETRY_HINT_FILE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hint {
    Permanent,
    Transient,
    RetryAfter(Duration),
}

/// Which pattern of one rule set matched the scanned output, by its source.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OutputMatch {
    pub stop: Option<String>,
    pub retry: Option<String>,
}

/// Exit-code rules of one source (the command line, or a preset).
#[derive(Clone, Debug, Default)]
pub struct ExitRules {
    /// Shown in reasons: `--stop-on-exit` or `preset curl`.
    pub source: String,
    pub stop_on_exit: Option<CodeSet>,
    pub retry_on_exit: Option<CodeSet>,
}

#[derive(Clone, Debug)]
pub struct Observation {
    pub ending: Ending,
    pub timed_out: bool,
    pub hint: Option<Hint>,
    /// One entry per rule set, in the same order as the `ExitRules`.
    pub output: Vec<OutputMatch>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Success,
    Transient,
    Permanent,
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Success => "success",
            Class::Transient => "transient",
            Class::Permanent => "permanent",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub class: Class,
    pub reason: String,
}

fn verdict(class: Class, reason: impl Into<String>) -> Verdict {
    Verdict {
        class,
        reason: reason.into(),
    }
}

/// Describe how the child ended, for messages: `exit code 7`, `killed by SIGKILL`.
pub fn describe_ending(ending: &Ending, timed_out: bool) -> String {
    let base = match ending {
        Ending::Exited(code) => format!("exit code {code}"),
        Ending::Signaled(signal) => format!("killed by {}", signal_name(*signal)),
        Ending::NotStarted { message, .. } => message.clone(),
    };
    if timed_out {
        format!("timed out ({base})")
    } else {
        base
    }
}

pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        _ => return format!("signal {signal}"),
    };
    name.to_string()
}

pub fn classify(observation: &Observation, rules: &[ExitRules]) -> Verdict {
    let ending = &observation.ending;
    if *ending == Ending::Exited(0) && !observation.timed_out {
        return verdict(Class::Success, "exit code 0");
    }
    let what = describe_ending(ending, observation.timed_out);

    // 0. The attempt's own word wins over every other rule.
    match observation.hint {
        Some(Hint::Permanent) => {
            return verdict(
                Class::Permanent,
                format!("{what}; hint file said permanent"),
            );
        }
        Some(Hint::Transient) => {
            return verdict(
                Class::Transient,
                format!("{what}; hint file said transient"),
            );
        }
        Some(Hint::RetryAfter(_)) => {
            return verdict(
                Class::Transient,
                format!("{what}; hint file said retry-after"),
            );
        }
        None => {}
    }

    // 1-4, per rule set: the command line's first, then the preset's.
    for (index, set) in rules.iter().enumerate() {
        let output = observation.output.get(index).cloned().unwrap_or_default();
        if let Some(pattern) = output.stop {
            return verdict(
                Class::Permanent,
                output_reason(&what, set, &pattern, "--stop-on-output"),
            );
        }
        if let Some(pattern) = output.retry {
            return verdict(
                Class::Transient,
                output_reason(&what, set, &pattern, "--retry-on-output"),
            );
        }
        // A timed-out or signalled attempt has no exit code for 3 and 4.
        let Ending::Exited(code) = *ending else {
            continue;
        };
        if observation.timed_out {
            continue;
        }
        if set
            .stop_on_exit
            .as_ref()
            .is_some_and(|codes| codes.contains(code))
        {
            return verdict(
                Class::Permanent,
                format!("{what} is in {}", stop_exit_flag(set)),
            );
        }
        if let Some(codes) = &set.retry_on_exit {
            return if codes.contains(code) {
                verdict(
                    Class::Transient,
                    format!("{what} is in {}", retry_exit_flag(set)),
                )
            } else {
                verdict(
                    Class::Permanent,
                    format!("{what} is not in {}", retry_exit_flag(set)),
                )
            };
        }
    }

    // 5. Not found, not executable: deterministic, retrying cannot help.
    if let Ending::NotStarted { .. } = ending {
        return verdict(Class::Permanent, what);
    }
    // 6. A user at the terminal, or a reader that went away.
    if let Ending::Signaled(signal) = *ending
        && !observation.timed_out
        && matches!(signal, libc::SIGINT | libc::SIGQUIT | libc::SIGPIPE)
    {
        return verdict(Class::Permanent, what);
    }
    // 7.
    verdict(Class::Transient, what)
}

/// `exit code 1; output matched --retry-on-output 'busy'`, or for a
/// preset, what its pattern means: `exit code 22; curl reported HTTP 503
/// ... (preset curl)`.
fn output_reason(what: &str, set: &ExitRules, pattern: &str, flag: &str) -> String {
    if set.source.is_empty() {
        format!("{what}; output matched {flag} '{pattern}'")
    } else {
        format!("{what}; {pattern} ({})", set.source)
    }
}

fn flag_or_preset(set: &ExitRules, flag: &str) -> String {
    if set.source.is_empty() {
        flag.to_string()
    } else {
        format!("{} ({flag})", set.source)
    }
}

fn stop_exit_flag(set: &ExitRules) -> String {
    flag_or_preset(set, "--stop-on-exit")
}
fn retry_exit_flag(set: &ExitRules) -> String {
    flag_or_preset(set, "--retry-on-exit")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::parse_codes;

    fn observe(ending: Ending) -> Observation {
        Observation {
            ending,
            timed_out: false,
            hint: None,
            output: vec![OutputMatch::default(), OutputMatch::default()],
        }
    }

    fn user(stop: Option<&str>, retry: Option<&str>) -> ExitRules {
        ExitRules {
            source: String::new(),
            stop_on_exit: stop.map(|c| parse_codes(c).unwrap()),
            retry_on_exit: retry.map(|c| parse_codes(c).unwrap()),
        }
    }

    fn class(observation: &Observation, rules: &[ExitRules]) -> Class {
        classify(observation, rules).class
    }

    #[test]
    fn exit_zero_succeeds_and_other_codes_are_transient_by_default() {
        let rules = [user(None, None)];
        assert_eq!(class(&observe(Ending::Exited(0)), &rules), Class::Success);
        assert_eq!(class(&observe(Ending::Exited(1)), &rules), Class::Transient);
        assert_eq!(
            class(&observe(Ending::Signaled(libc::SIGKILL)), &rules),
            Class::Transient
        );
    }

    #[test]
    fn a_timed_out_attempt_is_transient_even_if_it_exited_zero() {
        let mut observation = observe(Ending::Exited(0));
        observation.timed_out = true;
        assert_eq!(
            class(&observation, &[user(Some("0"), None)]),
            Class::Transient
        );
    }

    #[test]
    fn stop_on_exit_beats_retry_on_exit_and_retry_on_exit_makes_the_rest_permanent() {
        let rules = [user(Some("2"), Some("1-5"))];
        assert_eq!(class(&observe(Ending::Exited(2)), &rules), Class::Permanent);
        assert_eq!(class(&observe(Ending::Exited(3)), &rules), Class::Transient);
        assert_eq!(class(&observe(Ending::Exited(9)), &rules), Class::Permanent);
    }

    #[test]
    fn output_rules_come_before_exit_rules_and_stop_before_retry() {
        let rules = [user(None, Some("1"))];
        let mut observation = observe(Ending::Exited(1));
        observation.output[0].stop = Some("fatal".into());
        observation.output[0].retry = Some("busy".into());
        assert_eq!(class(&observation, &rules), Class::Permanent);
        observation.output[0].stop = None;
        observation.ending = Ending::Exited(9);
        assert_eq!(class(&observation, &rules), Class::Transient);
    }

    #[test]
    fn the_hint_wins_over_everything() {
        let rules = [user(Some("1"), None)];
        let mut observation = observe(Ending::Exited(1));
        observation.output[0].stop = Some("fatal".into());
        observation.hint = Some(Hint::Transient);
        assert_eq!(class(&observation, &rules), Class::Transient);
        observation.hint = Some(Hint::Permanent);
        observation.ending = Ending::Exited(3);
        assert_eq!(class(&observation, &[user(None, None)]), Class::Permanent);
    }

    #[test]
    fn the_users_rules_override_a_presets() {
        let preset = ExitRules {
            source: "preset curl".into(),
            stop_on_exit: None,
            retry_on_exit: Some(parse_codes("6,7,28").unwrap()),
        };
        let rules = [user(Some("7"), None), preset];
        assert_eq!(class(&observe(Ending::Exited(7)), &rules), Class::Permanent);
        assert_eq!(
            class(&observe(Ending::Exited(28)), &rules),
            Class::Transient
        );
        assert_eq!(
            class(&observe(Ending::Exited(22)), &rules),
            Class::Permanent
        );
        let mut observation = observe(Ending::Exited(22));
        observation.output[1].retry = Some("503".into());
        assert_eq!(class(&observation, &rules), Class::Transient);
    }

    #[test]
    fn commands_that_cannot_start_are_permanent() {
        let ending = Ending::NotStarted {
            status: 127,
            message: "not found".into(),
        };
        assert_eq!(
            class(&observe(ending), &[user(None, None)]),
            Class::Permanent
        );
    }

    #[test]
    fn deaths_by_interrupt_quit_and_broken_pipe_end_the_run() {
        let rules = [user(None, None)];
        for signal in [libc::SIGINT, libc::SIGQUIT, libc::SIGPIPE] {
            assert_eq!(
                class(&observe(Ending::Signaled(signal)), &rules),
                Class::Permanent
            );
        }
        assert_eq!(
            class(&observe(Ending::Signaled(libc::SIGTERM)), &rules),
            Class::Transient
        );
    }
}
