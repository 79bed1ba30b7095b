//! How an attempt ended, and whether that calls for another one.
//!
//! Pure: the runner gathers an [`Observation`] (how the attempt ended, the
//! hint file's word, which output patterns matched) and [`classify`] decides.
//! First, before every rule: success (exit 0 in time); an attempt ended by
//! a time limit, judged only as timed out (transient, or permanent under
//! `--stop-on-timeout`); a death by SIGINT, SIGQUIT or SIGPIPE (permanent: a
//! user or a closed reader ended it). Then the first rule that matches wins:
//!
//! 0. a hint, 1. `--stop-on-output`, 2. `--retry-on-output`,
//! 3. `--stop-on-exit`, 4. `--retry-on-exit` (a death by signal N meets 3
//!    and 4 as code 128+N), 5. not started (permanent), 7. anything else
//!    (transient).
//!
//! Rules 1-4 come in rule sets: the user's own first, then a preset's, so a
//! flag on the command line always overrides the preset.

use crate::child::{Ending, ProcessEnd};
use crate::hint::Hint;
use crate::rules::{OutputRule, RuleSet, RuleSource, Rules};

/// What the runner saw of one attempt.
#[derive(Clone, Debug)]
pub(crate) struct Observation<'a> {
    pub(crate) ending: &'a Ending,
    pub(crate) hint: Option<Hint>,
    /// Per output pattern, by its slot: did a line of the output match?
    pub(crate) matched: &'a [bool],
    /// Per output pattern whose message quotes capture groups, by its slot:
    /// the first line it matched.
    pub(crate) lines: &'a [Option<Vec<u8>>],
    /// Say how a preset chosen from the command name came to apply (the
    /// run's first failure line does).
    pub(crate) name_the_choice: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    Success,
    Transient,
    Permanent,
}

impl Class {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Class::Success => "success",
            Class::Transient => "transient",
            Class::Permanent => "permanent",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub(crate) class: Class,
    pub(crate) reason: String,
}

fn verdict(class: Class, reason: impl Into<String>) -> Verdict {
    Verdict {
        class,
        reason: reason.into(),
    }
}

pub(crate) fn classify(observation: &Observation<'_>, rules: &Rules) -> Verdict {
    let (mut verdict, by_preset) = decide(observation, rules);
    // The first failure of a run says which preset the command's name chose.
    if observation.name_the_choice && verdict.class != Class::Success && !by_preset {
        for set in &rules.sets {
            if let RuleSource::Preset {
                name,
                automatic: true,
                ..
            } = &set.source
            {
                verdict.reason.push_str(&format!(
                    "; preset {name} applies (chosen from the command name)"
                ));
            }
        }
    }
    verdict
}

/// The verdict, and whether a preset's rule decided it.
fn decide(observation: &Observation<'_>, rules: &Rules) -> (Verdict, bool) {
    let ending = observation.ending;
    if ending.succeeded() {
        return (verdict(Class::Success, ending.describe()), false);
    }
    let what = ending.describe();
    if ending.timed_out {
        return if rules.stop_on_timeout {
            (
                verdict(Class::Permanent, format!("{what}; --stop-on-timeout")),
                false,
            )
        } else {
            (verdict(Class::Transient, what), false)
        };
    }
    // 6. A user at the terminal, or a reader that went away.
    if let ProcessEnd::Signaled(signal) = ending.process
        && matches!(signal, libc::SIGINT | libc::SIGQUIT | libc::SIGPIPE)
    {
        return (verdict(Class::Permanent, what), false);
    }

    // 0. The attempt's own word wins over every other rule.
    let said = match observation.hint {
        Some(Hint::Permanent) => Some((Class::Permanent, "permanent")),
        Some(Hint::Transient) => Some((Class::Transient, "transient")),
        Some(Hint::RetryAfter(_)) => Some((Class::Transient, "retry-after")),
        None => None,
    };
    if let Some((class, word)) = said {
        return (
            verdict(class, format!("{what}; hint file said {word}")),
            false,
        );
    }

    // 1-4, per rule set: the command line's first, then the preset's.
    let matched = |rule: &&OutputRule| observation.matched.get(rule.slot) == Some(&true);
    for set in &rules.sets {
        let label = Label {
            set,
            name_the_choice: observation.name_the_choice,
        };
        let is_preset = matches!(set.source, RuleSource::Preset { .. });
        if let Some(rule) = set.stop_on_output.iter().find(matched) {
            let shown = rule.describe(line_of(observation, rule));
            return (
                verdict(
                    Class::Permanent,
                    label.output(&what, rule, &shown, "--stop-on-output"),
                ),
                is_preset,
            );
        }
        if let Some(rule) = set.retry_on_output.iter().find(matched) {
            let shown = rule.describe(line_of(observation, rule));
            return (
                verdict(
                    Class::Transient,
                    label.output(&what, rule, &shown, "--retry-on-output"),
                ),
                is_preset,
            );
        }
        // A death by signal N meets the lists as the shell shows it, 128+N.
        let code = match ending.process {
            ProcessEnd::Exited(code) => code,
            ProcessEnd::Signaled(signal) => 128 + signal,
            ProcessEnd::NotStarted { .. } => continue,
        };
        if set
            .stop_on_exit
            .as_ref()
            .is_some_and(|codes| codes.contains(code))
        {
            return (
                verdict(
                    Class::Permanent,
                    label.listed(&what, code, "--stop-on-exit"),
                ),
                is_preset,
            );
        }
        if let Some(codes) = &set.retry_on_exit {
            return if codes.contains(code) {
                (
                    verdict(
                        Class::Transient,
                        label.listed(&what, code, "--retry-on-exit"),
                    ),
                    is_preset,
                )
            } else {
                (verdict(Class::Permanent, label.unlisted(&what)), is_preset)
            };
        }
        // A preset whose other failures go to retry's defaults still names
        // the codes of its transient rules.
        if is_preset && set.exit_rule(code).is_some() {
            return (
                verdict(Class::Transient, label.listed(&what, code, "")),
                true,
            );
        }
    }

    // 5. Not found, not executable: deterministic, retrying cannot help.
    if let ProcessEnd::NotStarted { .. } = ending.process {
        return (verdict(Class::Permanent, what), false);
    }
    // 7.
    (verdict(Class::Transient, what), false)
}

fn line_of<'a>(observation: &'a Observation<'_>, rule: &OutputRule) -> Option<&'a [u8]> {
    observation.lines.get(rule.slot).and_then(Option::as_deref)
}

/// How a rule set's rules are named in a verdict's reason.
struct Label<'a> {
    set: &'a RuleSet,
    name_the_choice: bool,
}

impl Label<'_> {
    /// `(preset curl)`, or on the first failure of an automatic choice
    /// `(preset git, chosen from the command name)`.
    fn preset(&self) -> String {
        match &self.set.source {
            RuleSource::CommandLine => String::new(),
            RuleSource::Preset {
                name, automatic, ..
            } => {
                if *automatic && self.name_the_choice {
                    format!("(preset {name}, chosen from the command name)")
                } else {
                    format!("(preset {name})")
                }
            }
        }
    }

    /// `exit 1; output matched --retry-on-output 'busy'`, or for a preset,
    /// what its pattern means: `exit 22; curl reported HTTP 503 (preset curl)`.
    fn output(&self, what: &str, rule: &OutputRule, shown: &str, flag: &str) -> String {
        match &self.set.source {
            RuleSource::CommandLine => format!("{what}; output matched {flag} '{}'", rule.shown),
            RuleSource::Preset { .. } => format!("{what}; {shown} {}", self.preset()),
        }
    }

    /// The code is in a list: `exit 7 is in --stop-on-exit`, or what the
    /// preset's rule says: `exit 7; curl could not connect (preset curl)`.
    fn listed(&self, what: &str, code: i32, flag: &str) -> String {
        match (&self.set.source, self.set.exit_rule(code)) {
            (RuleSource::Preset { .. }, Some(rule)) => {
                format!("{what}; {} {}", rule.means, self.preset())
            }
            (RuleSource::Preset { .. }, None) => format!("{what} {}", self.preset()),
            (RuleSource::CommandLine, _) => format!("{what} is in {flag}"),
        }
    }

    /// The code is in no list of a set that makes the others permanent.
    fn unlisted(&self, what: &str) -> String {
        match &self.set.source {
            RuleSource::CommandLine => format!("{what} is not in --retry-on-exit"),
            RuleSource::Preset { .. } => {
                format!("{what} is in no transient rule {}", self.preset())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::parse_codes;

    fn ended(process: ProcessEnd) -> Ending {
        Ending::not_started(process)
    }

    fn user(stop: Option<&str>, retry: Option<&str>) -> RuleSet {
        RuleSet {
            stop_on_exit: stop.map(|c| parse_codes(c).unwrap()),
            retry_on_exit: retry.map(|c| parse_codes(c).unwrap()),
            ..RuleSet::empty(RuleSource::CommandLine)
        }
    }

    fn rule(slot: usize, pattern: &str) -> OutputRule {
        let mut rule = OutputRule::from_regex(regex::bytes::Regex::new(pattern).unwrap());
        rule.slot = slot;
        rule
    }

    fn all(sets: &[RuleSet]) -> Rules {
        Rules {
            sets: sets.to_vec(),
            retry_after: false,
            stop_on_timeout: false,
            patterns: None,
        }
    }

    fn class_with(
        ending: &Ending,
        hint: Option<Hint>,
        matched: &[bool],
        rules: &[RuleSet],
    ) -> Class {
        classify(
            &Observation {
                ending,
                hint,
                matched,
                lines: &[],
                name_the_choice: false,
            },
            &all(rules),
        )
        .class
    }

    fn class(ending: &Ending, rules: &[RuleSet]) -> Class {
        class_with(ending, None, &[], rules)
    }

    #[test]
    fn exit_zero_succeeds_and_other_codes_are_transient_by_default() {
        let rules = [user(None, None)];
        assert_eq!(class(&ended(ProcessEnd::Exited(0)), &rules), Class::Success);
        assert_eq!(
            class(&ended(ProcessEnd::Exited(1)), &rules),
            Class::Transient
        );
        assert_eq!(
            class(&ended(ProcessEnd::Signaled(libc::SIGKILL)), &rules),
            Class::Transient
        );
    }

    #[test]
    fn a_timed_out_attempt_is_transient_even_if_it_exited_zero() {
        let mut ending = ended(ProcessEnd::Exited(0));
        ending.timed_out = true;
        assert_eq!(class(&ending, &[user(Some("0"), None)]), Class::Transient);
    }

    #[test]
    fn stop_on_exit_beats_retry_on_exit_and_retry_on_exit_makes_the_rest_permanent() {
        let rules = [user(Some("2"), Some("1-5"))];
        assert_eq!(
            class(&ended(ProcessEnd::Exited(2)), &rules),
            Class::Permanent
        );
        assert_eq!(
            class(&ended(ProcessEnd::Exited(3)), &rules),
            Class::Transient
        );
        assert_eq!(
            class(&ended(ProcessEnd::Exited(9)), &rules),
            Class::Permanent
        );
    }

    #[test]
    fn output_rules_come_before_exit_rules_and_stop_before_retry() {
        let mut set = user(None, Some("1"));
        set.stop_on_output = vec![rule(0, "fatal")];
        set.retry_on_output = vec![rule(1, "busy")];
        let rules = [set];
        let failed = ended(ProcessEnd::Exited(1));
        assert_eq!(
            class_with(&failed, None, &[true, true], &rules),
            Class::Permanent
        );
        let other = ended(ProcessEnd::Exited(9));
        assert_eq!(
            class_with(&other, None, &[false, true], &rules),
            Class::Transient
        );
        assert_eq!(
            class_with(&other, None, &[false, false], &rules),
            Class::Permanent
        );
    }

    #[test]
    fn the_hint_wins_over_everything() {
        let mut set = user(Some("1"), None);
        set.stop_on_output = vec![rule(0, "fatal")];
        let rules = [set];
        let failed = ended(ProcessEnd::Exited(1));
        assert_eq!(
            class_with(&failed, Some(Hint::Transient), &[true], &rules),
            Class::Transient
        );
        assert_eq!(
            class_with(
                &ended(ProcessEnd::Exited(3)),
                Some(Hint::Permanent),
                &[],
                &[user(None, None)]
            ),
            Class::Permanent
        );
    }

    #[test]
    fn the_users_rules_override_a_presets() {
        let mut preset = RuleSet {
            retry_on_exit: Some(parse_codes("6,7,28").unwrap()),
            ..RuleSet::empty(RuleSource::preset("curl"))
        };
        preset.retry_on_output = vec![rule(0, "503")];
        let rules = [user(Some("7"), None), preset];
        assert_eq!(
            class(&ended(ProcessEnd::Exited(7)), &rules),
            Class::Permanent
        );
        assert_eq!(
            class(&ended(ProcessEnd::Exited(28)), &rules),
            Class::Transient
        );
        assert_eq!(
            class(&ended(ProcessEnd::Exited(22)), &rules),
            Class::Permanent
        );
        let verdict = classify(
            &Observation {
                ending: &ended(ProcessEnd::Exited(22)),
                hint: None,
                matched: &[true],
                lines: &[],
                name_the_choice: false,
            },
            &all(&rules),
        );
        assert_eq!(verdict.class, Class::Transient);
        assert_eq!(verdict.reason, "exit 22; 503 (preset curl)");
    }

    #[test]
    fn commands_that_cannot_start_are_permanent() {
        let ending = ended(ProcessEnd::NotStarted {
            status: 127,
            message: "x: command not found".into(),
        });
        let verdict = classify(
            &Observation {
                ending: &ending,
                hint: None,
                matched: &[],
                lines: &[],
                name_the_choice: false,
            },
            &all(&[user(None, None)]),
        );
        assert_eq!(verdict.class, Class::Permanent);
        assert_eq!(verdict.reason, "x: command not found (exit 127)");
    }

    #[test]
    fn deaths_by_interrupt_quit_and_broken_pipe_end_the_run() {
        let rules = [user(None, None)];
        for signal in [libc::SIGINT, libc::SIGQUIT, libc::SIGPIPE] {
            assert_eq!(
                class(&ended(ProcessEnd::Signaled(signal)), &rules),
                Class::Permanent
            );
        }
        assert_eq!(
            class(&ended(ProcessEnd::Signaled(libc::SIGTERM)), &rules),
            Class::Transient
        );
    }

    #[test]
    fn a_timed_out_attempt_is_judged_only_as_timed_out() {
        let mut ending = ended(ProcessEnd::Signaled(libc::SIGTERM));
        ending.timed_out = true;
        // Neither list sees it: 124 and 143 are not what happened.
        let rules = [user(Some("124,143"), Some("75"))];
        assert_eq!(class(&ending, &rules), Class::Transient);
        let mut strict = all(&rules);
        strict.stop_on_timeout = true;
        let observation = Observation {
            ending: &ending,
            hint: None,
            matched: &[],
            lines: &[],
            name_the_choice: false,
        };
        assert_eq!(classify(&observation, &strict).class, Class::Permanent);
    }

    #[test]
    fn a_death_by_signal_meets_the_lists_as_128_plus_n() {
        let killed = ended(ProcessEnd::Signaled(libc::SIGTERM));
        assert_eq!(class(&killed, &[user(None, Some("75"))]), Class::Permanent);
        assert_eq!(class(&killed, &[user(None, Some("143"))]), Class::Transient);
        assert_eq!(class(&killed, &[user(Some("143"), None)]), Class::Permanent);
        // SIGPIPE ends the run before any list is asked.
        let piped = ended(ProcessEnd::Signaled(libc::SIGPIPE));
        assert_eq!(class(&piped, &[user(None, Some("141"))]), Class::Permanent);
    }
}
