//! Flag names a newcomer brings from other tools for "how many times":
//! hidden, so that help, man page and completions show only `-n/--attempts`.
//!
//! Two of them count what `--attempts` counts, the first attempt included,
//! and are accepted as aliases: `--tries` (wget's `--tries`) and `--times`
//! (Debian's retry, minfrin/retry: "Total number of times to try the
//! command"). The others count retries after the first attempt (curl's
//! `--retry`, pip's `--retries`, many libraries' `max_retries`): read as
//! attempts they would be one short, and read as retries the same number
//! would mean two things here. They are refused (exit 125) with the
//! `--attempts` value that says what was meant.

use clap::error::ErrorKind;
use clap::{Arg, ArgAction, ArgGroup, ArgMatches, Command};

use crate::values::{self, AttemptLimit};

/// Aliases of `--attempts`: the same count, the first attempt included.
const ATTEMPT_ALIASES: [&str; 2] = ["tries", "times"];

/// Names that count retries, not attempts: refused with a tip.
const RETRY_COUNTS: [&str; 3] = ["retries", "max-retries", "retry"];

/// The parsed command line's definition with the hidden names added; one
/// count at most (`--tries 3 -n 4` is refused as a conflict).
pub(super) fn with_natural_names(mut command: Command) -> Command {
    for name in ATTEMPT_ALIASES {
        command = command.arg(
            Arg::new(name)
                .long(name)
                .hide(true)
                .value_name("N")
                .action(ArgAction::Set)
                .allow_hyphen_values(true)
                .value_parser(values::parse_attempts),
        );
    }
    for name in RETRY_COUNTS {
        command = command.arg(
            Arg::new(name)
                .long(name)
                .hide(true)
                .value_name("N")
                .action(ArgAction::Set)
                .allow_hyphen_values(true),
        );
    }
    command.group(
        ArgGroup::new("attempt_count")
            .args(["attempts", "tries", "times"])
            .multiple(false),
    )
}

/// The attempt limit given as `--tries` or `--times`, if one was.
pub(super) fn alias(matches: &ArgMatches) -> Option<AttemptLimit> {
    ATTEMPT_ALIASES
        .iter()
        .find_map(|name| matches.get_one::<AttemptLimit>(name).copied())
}

/// Refuse a retry count, saying how many attempts it means.
pub(super) fn refuse_retry_counts(
    command: &mut Command,
    matches: &ArgMatches,
) -> Result<(), clap::Error> {
    for name in RETRY_COUNTS {
        if let Some(value) = matches.get_one::<String>(name) {
            return Err(command.error(ErrorKind::UnknownArgument, retry_count_tip(name, value)));
        }
    }
    Ok(())
}

/// `--retries 3: retry counts attempts, the first one included: ...`.
fn retry_count_tip(name: &str, value: &str) -> String {
    let count = value.trim();
    let attempts = match count.parse::<u64>() {
        Ok(retries) => retries.checked_add(1).map(|n| n.to_string()),
        Err(_) => None,
    };
    let shown = crate::text::sanitize_line(value, 40);
    if is_unlimited(count) {
        return format!(
            "--{name} {shown}: retry counts attempts, the first one included, not retries \
             after it: for no limit say -n unlimited (--attempts unlimited)"
        );
    }
    match attempts {
        Some(attempts) => format!(
            "--{name} {shown}: retry counts attempts, the first one included, not retries \
             after it: {count} retries are -n {attempts} (--attempts {attempts})"
        ),
        None => format!(
            "--{name} {shown}: retry counts attempts, the first one included, not retries \
             after it: N retries are -n N+1 (--attempts N+1), and -n unlimited has no limit"
        ),
    }
}

/// The words other tools use for "no limit".
fn is_unlimited(count: &str) -> bool {
    ["unlimited", "inf", "infinite", "forever", "-1"]
        .iter()
        .any(|word| count.eq_ignore_ascii_case(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_count_is_told_as_the_attempts_it_means() {
        let tip = retry_count_tip("retries", "3");
        assert!(tip.starts_with("--retries 3: "), "{tip}");
        assert!(tip.contains("-n 4 (--attempts 4)"), "{tip}");
        assert!(retry_count_tip("retry", "0").contains("--attempts 1"));
        assert!(retry_count_tip("max-retries", "-1").contains("--attempts unlimited"));
        assert!(retry_count_tip("retries", "lots").contains("-n N+1"));
        let huge = retry_count_tip("retries", &u64::MAX.to_string());
        assert!(huge.contains("-n N+1"), "{huge}");
    }
}
