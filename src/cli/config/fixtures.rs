//! Command lines and environments for the tests of the configuration's
//! parts.

use std::ffi::OsString;

use crate::cli::Cli;
pub(crate) use crate::report::fixtures::env;

/// `retry ARGS`, parsed as the front door parses it; a test's arguments
/// must parse.
pub(crate) fn cli(args: &[&str]) -> Cli {
    Cli::parse_from_os(
        std::iter::once("retry")
            .chain(args.iter().copied())
            .map(OsString::from),
    )
    .unwrap_or_else(|err| panic!("{args:?}: {err}"))
}

/// An empty environment.
pub(crate) fn no_env(_: &str) -> Option<OsString> {
    None
}
