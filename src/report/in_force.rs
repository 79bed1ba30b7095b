//! Whether `--circuit` and `--budget` were in force for a run. A store
//! that cannot be used never stops the job: the run goes on as if there
//! were no circuit (or budget). That must never pass unseen, also under
//! `-q` (cron): the warning says so, and the `done` event and the metrics
//! file carry it, so that a monitor can alert on it. With
//! `--circuit-mode adaptive`, what the circuit counted when it decided.

use crate::contract::warning;

/// One of the two guards a run can be given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Guard {
    Circuit,
    Budget,
}

impl Guard {
    /// The word for it in JSON fields, metric names and warning kinds
    /// (the kinds of the contract's table are these same words).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Guard::Circuit => warning::CIRCUIT,
            Guard::Budget => warning::BUDGET,
        }
    }
}

/// A guard the run was given: its name, and whether it was in force the
/// whole run (false once its store could not be used).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Guarded {
    pub(crate) name: String,
    pub(crate) in_force: bool,
}

/// What an adaptive circuit (`--circuit-mode adaptive`) counted in its
/// window when it decided whether the run may go ahead.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Throttled {
    /// Attempts the runs wanted to make (those rejected locally included).
    pub(crate) requests: u64,
    /// Attempts the backend accepted.
    pub(crate) accepts: u64,
    /// The rejection probability: max(0, (requests - K x accepts) / (requests + 1)).
    pub(crate) probability: f64,
    /// This run was rejected locally.
    pub(crate) rejected: bool,
}

/// The run's guards; `None` for one not asked for.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct InForce {
    pub(crate) circuit: Option<Guarded>,
    pub(crate) budget: Option<Guarded>,
    /// The circuit is adaptive, and decided this.
    pub(crate) throttled: Option<Throttled>,
}

impl InForce {
    pub(crate) fn get(&self, guard: Guard) -> Option<&Guarded> {
        match guard {
            Guard::Circuit => self.circuit.as_ref(),
            Guard::Budget => self.budget.as_ref(),
        }
    }

    fn slot(&mut self, guard: Guard) -> &mut Option<Guarded> {
        match guard {
            Guard::Circuit => &mut self.circuit,
            Guard::Budget => &mut self.budget,
        }
    }

    /// The run was given `guard` named `name`: in force until said otherwise.
    pub(crate) fn given(&mut self, guard: Guard, name: &str) {
        *self.slot(guard) = Some(Guarded {
            name: name.to_string(),
            in_force: true,
        });
    }

    /// `guard`'s store could not be used: the run went on without it.
    pub(crate) fn lost(&mut self, guard: Guard) {
        if let Some(guarded) = self.slot(guard) {
            guarded.in_force = false;
        }
    }

    /// Some guard the run was given was not in force throughout.
    pub(crate) fn any_lost(&self) -> bool {
        [&self.circuit, &self.budget]
            .into_iter()
            .flatten()
            .any(|g| !g.in_force)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guard_is_in_force_until_its_store_fails() {
        let mut in_force = InForce::default();
        in_force.lost(Guard::Budget);
        assert_eq!(in_force, InForce::default());
        in_force.given(Guard::Circuit, "api");
        in_force.given(Guard::Budget, "api");
        assert!(!in_force.any_lost());
        in_force.lost(Guard::Budget);
        assert!(in_force.any_lost());
        assert!(in_force.get(Guard::Circuit).unwrap().in_force);
        assert!(!in_force.get(Guard::Budget).unwrap().in_force);
    }
}
