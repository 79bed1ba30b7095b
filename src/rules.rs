//! The rules that judge a failed attempt, as data: one [`RuleSet`] per
//! source (the command line's own flags first, then a preset's), each with
//! its exit-code lists and its output patterns. [`Rules`] holds them in
//! precedence order with every pattern compiled once, so a bad pattern is a
//! usage error before anything runs.

use regex::bytes::Regex;

use crate::output::PatternSet;
use crate::values::CodeSet;

/// Where a rule set comes from; messages name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RuleSource {
    CommandLine,
    Preset(String),
}

/// One output pattern and how messages name it.
#[derive(Clone, Debug)]
pub(crate) struct OutputRule {
    pub(crate) regex: Regex,
    /// The pattern as given, or what a preset's pattern means.
    pub(crate) shown: String,
    /// Its number in the compiled [`PatternSet`], given by [`Rules::new`].
    pub(crate) slot: usize,
}

impl OutputRule {
    pub(crate) fn new(regex: Regex, shown: impl Into<String>) -> OutputRule {
        OutputRule {
            regex,
            shown: shown.into(),
            slot: 0,
        }
    }

    /// A rule named by its own pattern.
    pub(crate) fn from_regex(regex: Regex) -> OutputRule {
        let shown = regex.as_str().to_string();
        OutputRule::new(regex, shown)
    }
}

/// The rules of one source.
#[derive(Clone, Debug)]
pub(crate) struct RuleSet {
    pub(crate) source: RuleSource,
    pub(crate) stop_on_exit: Option<CodeSet>,
    pub(crate) retry_on_exit: Option<CodeSet>,
    pub(crate) stop_on_output: Vec<OutputRule>,
    pub(crate) retry_on_output: Vec<OutputRule>,
}

impl RuleSet {
    /// A set with no rules from `source`.
    pub(crate) fn empty(source: RuleSource) -> RuleSet {
        RuleSet {
            source,
            stop_on_exit: None,
            retry_on_exit: None,
            stop_on_output: Vec::new(),
            retry_on_output: Vec::new(),
        }
    }

    fn output_rules_mut(&mut self) -> impl Iterator<Item = &mut OutputRule> {
        self.stop_on_output
            .iter_mut()
            .chain(self.retry_on_output.iter_mut())
    }
}

/// Every rule set of a run in precedence order, and the compiled scanner.
#[derive(Debug)]
pub(crate) struct Rules {
    pub(crate) sets: Vec<RuleSet>,
    /// Read `Retry-After:` header lines in the scanned output.
    pub(crate) retry_after: bool,
    /// `--stop-on-timeout`: an attempt ended by a time limit is permanent.
    pub(crate) stop_on_timeout: bool,
    /// `--success-on-exit`: exit codes that count as success, besides 0.
    pub(crate) success_on_exit: Option<CodeSet>,
    /// `--until-output`: success also needs a line matching one of these.
    /// Numbered after every rule set's patterns.
    pub(crate) until_output: Vec<OutputRule>,
    /// The patterns compiled once; `None` when nothing is scanned for.
    pub(crate) patterns: Option<PatternSet>,
}

impl Rules {
    /// Number every output pattern (the rule sets', then `--until-output`'s)
    /// and compile them all.
    pub(crate) fn new(
        mut sets: Vec<RuleSet>,
        mut until_output: Vec<OutputRule>,
        retry_after: bool,
    ) -> Result<Rules, String> {
        let mut regexes = Vec::new();
        let rules = sets
            .iter_mut()
            .flat_map(RuleSet::output_rules_mut)
            .chain(until_output.iter_mut());
        for rule in rules {
            rule.slot = regexes.len();
            regexes.push(rule.regex.clone());
        }
        let patterns = if regexes.is_empty() && !retry_after {
            None
        } else {
            Some(
                PatternSet::new(&regexes, retry_after)
                    .map_err(|err| format!("compiling the output patterns: {err}"))?,
            )
        };
        Ok(Rules {
            sets,
            retry_after,
            stop_on_timeout: false,
            success_on_exit: None,
            until_output,
            patterns,
        })
    }
}
