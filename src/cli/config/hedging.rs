//! Hedged attempts (`--hedge-after`, `--hedges`), checked against what
//! copies of an attempt cannot do: share a terminal (`--foreground`), hunt
//! a flaky failure (`--until-failure`, whose runs are not retries), or
//! learn a 95th percentile without a name to keep it under.

use crate::cli::Cli;
use crate::cli::usage::UsageError;
use crate::policy::hedging::HedgeAfter;

/// How a run hedges its attempts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Hedging {
    pub(crate) after: HedgeAfter,
    /// Copies beyond the first, at most.
    pub(crate) hedges: u64,
    /// Under which name `p95` learns (the circuit's, else the budget's).
    pub(crate) learn_as: Option<String>,
}

/// The hedging `cli` asks for, if any.
pub(super) fn hedging(cli: &Cli) -> Result<Option<Hedging>, UsageError> {
    let Some(after) = cli.hedge_after else {
        return Ok(None);
    };
    if cli.foreground {
        return Err(UsageError::Hedging(
            "--hedge-after with --foreground: copies of an attempt run at once and cannot share a terminal",
        ));
    }
    if cli.until_failure {
        return Err(UsageError::Hedging(
            "--hedge-after with --until-failure: a hunt's runs are not retries of one request",
        ));
    }
    let learn_as = cli.circuit.clone().or_else(|| cli.budget.clone());
    if after == HedgeAfter::P95 && learn_as.is_none() {
        return Err(UsageError::Hedging(
            "--hedge-after p95 learns from the earlier runs of a --circuit NAME or --budget NAME: give one, or a fixed duration (--hedge-after 2s)",
        ));
    }
    Ok(Some(Hedging {
        after,
        hedges: cli.hedges.unwrap_or(1),
        learn_as,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::config::fixtures::cli;

    /// A command line, and the hedges it allows or words of its error.
    type Case = (&'static [&'static str], Result<Option<u64>, &'static str>);

    #[test]
    fn hedging_is_refused_where_copies_cannot_run_at_once() {
        let table: [Case; 6] = [
            (&["true"], Ok(None)),
            (&["--hedge-after", "2s", "true"], Ok(Some(1))),
            (
                &["--hedge-after", "2s", "--hedges", "3", "true"],
                Ok(Some(3)),
            ),
            (
                &["--hedge-after", "2s", "--foreground", "true"],
                Err("--foreground"),
            ),
            (
                &["--hedge-after", "2s", "--until-failure", "true"],
                Err("--until-failure"),
            ),
            (
                &["--hedge-after", "p95", "true"],
                Err("--circuit NAME or --budget NAME"),
            ),
        ];
        for (args, expected) in table {
            let found = hedging(&cli(args)).map(|h| h.map(|h| h.hedges));
            match (found, expected) {
                (Ok(found), Ok(expected)) => assert_eq!(found, expected, "{args:?}"),
                (Err(err), Err(words)) => {
                    assert!(err.to_string().contains(words), "{args:?}: {err}");
                }
                (found, _) => panic!("{args:?}: {found:?}"),
            }
        }
        let learned = hedging(&cli(&["--hedge-after", "p95", "--circuit", "api", "true"]))
            .unwrap()
            .unwrap();
        assert_eq!(
            (learned.after, learned.learn_as.as_deref()),
            (HedgeAfter::P95, Some("api"))
        );
    }
}
