//! How an attempt ended, and whether that calls for another one.
//!
//! Pure: the runner gathers an [`Observation`] (how the attempt ended, the
//! hint file's word, which output patterns matched) and [`classify`] decides.
//! First, before every rule: success (exit 0 or a `--success-on-exit` code,
//! in time, and with `--until-output` a matching line too; a success code
//! without one is "not ready yet", judged only by the hint and the output
//! rules, else transient); an attempt ended by a time limit, judged only as
//! timed out (transient, or permanent under `--stop-on-timeout`); a death by
//! SIGINT, SIGQUIT or SIGPIPE (permanent: a user or a closed reader ended
//! it). Then the first rule that matches wins:
//!
//! 0. a hint, 1. `--stop-on-output`, 2. `--retry-on-output`,
//! 3. `--stop-on-exit`, 4. `--retry-on-exit` (a death by signal N meets 3
//!    and 4 as code 128+N), 5. not started (permanent), 7. anything else
//!    (transient).
//!
//! Rules 1-4 come in rule sets: the user's own first, then a preset's, so a
//! flag on the command line always overrides the preset.

use crate::outcome::Hint;
use crate::outcome::{Ending, ProcessEnd};
use crate::policy::rules::{OutputRule, RuleSet, RuleSource, Rules};

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
    /// Why the HTTP response the attempt printed says the server is
    /// throttling (`HTTP 429`), when response headers are read: a transient
    /// verdict becomes throttled.
    pub(crate) throttling: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    Success,
    Transient,
    /// A transient failure known to be throttling (HTTP 429, a 503 with a
    /// wait, a rate-limit message): retried like any transient one, backing
    /// off from `--throttle-delay` instead of `--delay`.
    Throttled,
    Permanent,
}

impl Class {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Class::Success => "success",
            Class::Transient => "transient",
            Class::Throttled => "throttled",
            Class::Permanent => "permanent",
        }
    }

    /// Transient or throttled: worth another attempt.
    pub(crate) fn is_transient(self) -> bool {
        matches!(self, Class::Transient | Class::Throttled)
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

fn success_code(ending: &Ending, rules: &Rules) -> bool {
    match ending.process {
        _ if ending.timed_out => false,
        ProcessEnd::Exited(0) => true,
        ProcessEnd::Exited(code) => rules
            .success_on_exit
            .as_ref()
            .is_some_and(|codes| codes.contains(code)),
        _ => false,
    }
}

pub(crate) fn classify(observation: &Observation<'_>, rules: &Rules) -> Verdict {
    let (mut verdict, by) = decide(observation, rules);
    // The response's own word is better evidence than a preset's reading
    // of its status (GitHub answers a spent quota with 403); the user's
    // flags and the hint file still win.
    let throttled_may_override = verdict.class == Class::Transient
        || (verdict.class == Class::Permanent && by == By::Preset);
    if throttled_may_override && let Some(why) = &observation.throttling {
        verdict.class = Class::Throttled;
        verdict
            .reason
            .push_str(&format!("; the server is throttling ({why})"));
    }
    // The first failure of a run says which preset the command's name
    // chose, when it was decided by neither a flag nor the preset (a
    // verdict a flag decided names the flag alone).
    if observation.name_the_choice && verdict.class != Class::Success && by == By::Default {
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

/// What decided a verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum By {
    /// A rule of a preset.
    Preset,
    /// A flag, or the attempt's own word (the hint file).
    Flag,
    /// Retry's defaults (the order of rules, rules 5 to 7).
    Default,
}

impl By {
    fn set(is_preset: bool) -> By {
        if is_preset { By::Preset } else { By::Flag }
    }
}

/// The verdict, and what decided it.
#[allow(
    clippy::too_many_lines,
    reason = "the rules, in their order: one match that reads best whole"
)]
fn decide(observation: &Observation<'_>, rules: &Rules) -> (Verdict, By) {
    let ending = observation.ending;
    let what = ending.describe();
    let matched = |rule: &&OutputRule| observation.matched.get(rule.slot) == Some(&true);
    if success_code(ending, rules) {
        let what = if ending.succeeded() {
            what
        } else {
            format!("{what} is in --success-on-exit")
        };
        if rules.until_output.is_empty() {
            return (verdict(Class::Success, what), By::Flag);
        }
        if let Some(rule) = rules.until_output.iter().find(matched) {
            return (
                verdict(
                    Class::Success,
                    format!("{what}; output matched --until-output '{}'", rule.shown),
                ),
                By::Flag,
            );
        }
        // Not ready yet. Its code is a success code, so the exit-code lists
        // do not judge it; the attempt's own word and the output rules do.
        let what = format!("{what}; not ready yet (no line matched --until-output)");
        if let Some(verdict) = hint_verdict(observation.hint, &what) {
            return (verdict, By::Flag);
        }
        for set in &rules.sets {
            if let Some(found) = output_verdict(observation, set, &matched, &what) {
                return found;
            }
        }
        return (verdict(Class::Transient, what), By::Flag);
    }
    if ending.timed_out {
        return if rules.stop_on_timeout {
            (
                verdict(Class::Permanent, format!("{what}; --stop-on-timeout")),
                By::Flag,
            )
        } else {
            (verdict(Class::Transient, what), By::Default)
        };
    }
    // 6. A user at the terminal, or a reader that went away.
    if let ProcessEnd::Signaled(signal) = ending.process
        && matches!(
            signal,
            crate::outcome::signo::SIGINT
                | crate::outcome::signo::SIGQUIT
                | crate::outcome::signo::SIGPIPE
        )
    {
        return (verdict(Class::Permanent, what), By::Default);
    }

    // 0. The attempt's own word wins over every other rule.
    if let Some(verdict) = hint_verdict(observation.hint, &what) {
        return (verdict, By::Flag);
    }

    // 1-4, per rule set: the command line's first, then the preset's.
    for set in &rules.sets {
        if let Some(found) = output_verdict(observation, set, &matched, &what) {
            return found;
        }
        let label = Label {
            set,
            name_the_choice: observation.name_the_choice,
        };
        let is_preset = matches!(set.source, RuleSource::Preset { .. });
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
                By::set(is_preset),
            );
        }
        if let Some(codes) = &set.retry_on_exit {
            return if codes.contains(code) {
                (
                    verdict(
                        exit_class(set, code),
                        label.listed(&what, code, "--retry-on-exit"),
                    ),
                    By::set(is_preset),
                )
            } else {
                (
                    verdict(Class::Permanent, label.unlisted(&what)),
                    By::set(is_preset),
                )
            };
        }
        // A preset whose other failures go to retry's defaults still names
        // the codes of its transient rules.
        if is_preset && set.exit_rule(code).is_some() {
            return (
                verdict(exit_class(set, code), label.listed(&what, code, "")),
                By::Preset,
            );
        }
    }

    // 5. Not found, not executable: deterministic, retrying cannot help;
    // but a binary still being written (ETXTBSY) will be done, and a
    // process limit (EAGAIN) or memory pressure (ENOMEM) passes.
    if let ProcessEnd::NotStarted {
        transient: false, ..
    } = ending.process
    {
        return (verdict(Class::Permanent, what), By::Default);
    }
    // 7.
    (verdict(Class::Transient, what), By::Default)
}

/// A code a transient list holds: throttled when a preset's throttled exit
/// rule names it.
fn exit_class(set: &RuleSet, code: i32) -> Class {
    match set.exit_rule(code) {
        Some(rule) if rule.throttled => Class::Throttled,
        _ => Class::Transient,
    }
}

/// Rule 0: the hint file's word.
fn hint_verdict(hint: Option<Hint>, what: &str) -> Option<Verdict> {
    let (class, word) = match hint? {
        Hint::Permanent => (Class::Permanent, "permanent"),
        Hint::Transient => (Class::Transient, "transient"),
        Hint::Throttled => (Class::Throttled, "throttled"),
        Hint::RetryAfter(_) => (Class::Transient, "retry-after"),
    };
    Some(verdict(class, format!("{what}; hint file said {word}")))
}

/// Rules 1 and 2 of one rule set: a line matched `--stop-on-output` or
/// `--retry-on-output`; and whether the set is a preset's.
fn output_verdict(
    observation: &Observation<'_>,
    set: &RuleSet,
    matched: &impl Fn(&&OutputRule) -> bool,
    what: &str,
) -> Option<(Verdict, By)> {
    let label = Label {
        set,
        name_the_choice: observation.name_the_choice,
    };
    let is_preset = matches!(set.source, RuleSource::Preset { .. });
    let (class, rule, flag) = if let Some(rule) = set.stop_on_output.iter().find(matched) {
        (Class::Permanent, rule, "--stop-on-output")
    } else if let Some(rule) = set.throttle_on_output.iter().find(matched) {
        (Class::Throttled, rule, "--retry-on-output")
    } else {
        let rule = set.retry_on_output.iter().find(matched)?;
        (Class::Transient, rule, "--retry-on-output")
    };
    let shown = rule.describe(line_of(observation, rule));
    Some((
        verdict(class, label.output(what, rule, &shown, flag)),
        By::set(is_preset),
    ))
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
            success_on_exit: None,
            until_output: Vec::new(),
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
                throttling: None,
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
            class(
                &ended(ProcessEnd::Signaled(crate::outcome::signo::SIGKILL)),
                &rules
            ),
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
                throttling: None,
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
            transient: false,
        });
        let verdict = classify(
            &Observation {
                ending: &ending,
                hint: None,
                matched: &[],
                lines: &[],
                name_the_choice: false,
                throttling: None,
            },
            &all(&[user(None, None)]),
        );
        assert_eq!(verdict.class, Class::Permanent);
        assert_eq!(verdict.reason, "x: command not found (exit 127)");
        let busy = ended(ProcessEnd::NotStarted {
            status: 126,
            message: "x: cannot execute (text file busy: still being written)".into(),
            transient: true,
        });
        assert_eq!(class(&busy, &[user(None, None)]), Class::Transient);
    }

    #[test]
    fn deaths_by_interrupt_quit_and_broken_pipe_end_the_run() {
        let rules = [user(None, None)];
        for signal in [
            crate::outcome::signo::SIGINT,
            crate::outcome::signo::SIGQUIT,
            crate::outcome::signo::SIGPIPE,
        ] {
            assert_eq!(
                class(&ended(ProcessEnd::Signaled(signal)), &rules),
                Class::Permanent
            );
        }
        assert_eq!(
            class(
                &ended(ProcessEnd::Signaled(crate::outcome::signo::SIGTERM)),
                &rules
            ),
            Class::Transient
        );
    }

    #[test]
    fn a_timed_out_attempt_is_judged_only_as_timed_out() {
        let mut ending = ended(ProcessEnd::Signaled(crate::outcome::signo::SIGTERM));
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
            throttling: None,
        };
        assert_eq!(classify(&observation, &strict).class, Class::Permanent);
    }

    #[test]
    fn a_death_by_signal_meets_the_lists_as_128_plus_n() {
        let killed = ended(ProcessEnd::Signaled(crate::outcome::signo::SIGTERM));
        assert_eq!(class(&killed, &[user(None, Some("75"))]), Class::Permanent);
        assert_eq!(class(&killed, &[user(None, Some("143"))]), Class::Transient);
        assert_eq!(class(&killed, &[user(Some("143"), None)]), Class::Permanent);
        // SIGPIPE ends the run before any list is asked.
        let piped = ended(ProcessEnd::Signaled(crate::outcome::signo::SIGPIPE));
        assert_eq!(class(&piped, &[user(None, Some("141"))]), Class::Permanent);
    }

    fn with_conditions(sets: &[RuleSet], success: Option<&str>, until: &[&str]) -> Rules {
        let mut rules = all(sets);
        rules.success_on_exit = success.map(|c| parse_codes(c).unwrap());
        let first = sets
            .iter()
            .map(|s| s.stop_on_output.len() + s.retry_on_output.len())
            .sum::<usize>();
        rules.until_output = until
            .iter()
            .enumerate()
            .map(|(n, pattern)| rule(first + n, pattern))
            .collect();
        rules
    }

    fn judged(ending: &Ending, hint: Option<Hint>, matched: &[bool], rules: &Rules) -> Verdict {
        classify(
            &Observation {
                ending,
                hint,
                matched,
                lines: &[],
                name_the_choice: false,
                throttling: None,
            },
            rules,
        )
    }

    #[test]
    fn success_codes_succeed_before_every_rule_but_signals_never_do() {
        let rules = with_conditions(&[user(None, Some("1-255"))], Some("3,7"), &[]);
        let verdict = judged(&ended(ProcessEnd::Exited(3)), None, &[], &rules);
        assert_eq!(verdict.class, Class::Success);
        assert_eq!(verdict.reason, "exit 3 is in --success-on-exit");
        assert_eq!(
            judged(&ended(ProcessEnd::Exited(0)), None, &[], &rules).class,
            Class::Success
        );
        assert_eq!(
            judged(&ended(ProcessEnd::Exited(4)), None, &[], &rules).class,
            Class::Transient
        );
        // 128+3 is not "exit 3", and a death by signal 3 is not success.
        let rules = with_conditions(&[user(None, None)], Some("131"), &[]);
        assert_eq!(
            judged(&ended(ProcessEnd::Signaled(3)), None, &[], &rules).class,
            Class::Permanent
        );
        // A success code that timed out is judged as timed out.
        let mut late = ended(ProcessEnd::Exited(3));
        late.timed_out = true;
        assert_eq!(judged(&late, None, &[], &rules).class, Class::Transient);
    }

    #[test]
    fn until_output_needs_a_success_code_and_a_matching_line() {
        let rules = with_conditions(&[user(None, None)], Some("3"), &["ready"]);
        let ok = judged(&ended(ProcessEnd::Exited(0)), None, &[true], &rules);
        assert_eq!(ok.class, Class::Success);
        assert_eq!(ok.reason, "exit 0; output matched --until-output 'ready'");
        assert_eq!(
            judged(&ended(ProcessEnd::Exited(3)), None, &[true], &rules).class,
            Class::Success
        );
        let not_ready = judged(&ended(ProcessEnd::Exited(0)), None, &[false], &rules);
        assert_eq!(not_ready.class, Class::Transient);
        assert_eq!(
            not_ready.reason,
            "exit 0; not ready yet (no line matched --until-output)"
        );
        // A failing code is judged by the rules, whatever the output.
        let failed = judged(&ended(ProcessEnd::Exited(1)), None, &[true], &rules);
        assert_eq!(failed.class, Class::Transient);
        assert_eq!(failed.reason, "exit 1");
    }

    #[test]
    fn not_ready_is_judged_by_the_hint_and_output_rules_but_not_the_code_lists() {
        let mut set = user(Some("0"), Some("75"));
        set.stop_on_output = vec![rule(0, "CrashLoop")];
        let rules = with_conditions(&[set], None, &["Running"]);
        let exit0 = ended(ProcessEnd::Exited(0));
        // --retry-on-exit 75 would make exit 0 permanent; not for a success code.
        assert_eq!(
            judged(&exit0, None, &[false, false], &rules).class,
            Class::Transient
        );
        let crashed = judged(&exit0, None, &[true, false], &rules);
        assert_eq!(crashed.class, Class::Permanent);
        assert!(
            crashed
                .reason
                .ends_with("output matched --stop-on-output 'CrashLoop'"),
            "{}",
            crashed.reason
        );
        assert_eq!(
            judged(&exit0, Some(Hint::Permanent), &[false, false], &rules).class,
            Class::Permanent
        );
    }
}
