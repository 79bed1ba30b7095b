//! Flags that mean something only with a circuit or a budget named,
//! refused on their own: they would be ignored silently.

use clap::ArgMatches;
use clap::error::ErrorKind;
use clap::parser::ValueSource;

/// Flags that only a circuit (or a budget) reads, and what must be named
/// for them to mean anything; without it they would be ignored silently.
const NEEDS_A_STORE: [(&str, &str, &[&str]); 10] = [
    ("circuit_mode", "a circuit", &["circuit"]),
    ("circuit_threshold", "a circuit", &["circuit"]),
    ("circuit_cooldown", "a circuit", &["circuit"]),
    ("circuit_max_cooldown", "a circuit", &["circuit"]),
    ("circuit_k", "a circuit", &["circuit"]),
    ("circuit_window", "a circuit", &["circuit"]),
    ("state_dir", "a circuit or a budget", &["circuit", "budget"]),
    ("state_url", "a circuit or a budget", &["circuit", "budget"]),
    ("state_ca", "a circuit or a budget", &["circuit", "budget"]),
    (
        "state_timeout",
        "a circuit or a budget",
        &["circuit", "budget"],
    ),
];

/// Refuse a flag of [`NEEDS_A_STORE`] given on the command line without
/// its circuit or budget. (Not clap's `requires`: it would count a value
/// from the environment, were one of these flags ever read from one, and
/// its message names only what is missing.)
pub(super) fn check(command: &mut clap::Command, matches: &ArgMatches) -> Result<(), clap::Error> {
    for (id, what, needed) in NEEDS_A_STORE {
        if matches.value_source(id) != Some(ValueSource::CommandLine)
            || needed
                .iter()
                .any(|need| matches.value_source(need).is_some())
        {
            continue;
        }
        let value = matches
            .get_raw(id)
            .and_then(Iterator::last)
            .map(|value| value.to_string_lossy().into_owned())
            .unwrap_or_default();
        let flags: Vec<String> = needed
            .iter()
            .map(|need| format!("--{} NAME", need.replace('_', "-")))
            .collect();
        return Err(command.error(
            ErrorKind::MissingRequiredArgument,
            format!(
                "--{} {value}: only {what} uses it, and none is named ({})",
                id.replace('_', "-"),
                flags.join(" or ")
            ),
        ));
    }
    Ok(())
}
