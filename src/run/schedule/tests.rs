//! The schedule with a script of attempts, on a clock that moves only when
//! an attempt runs or the schedule sleeps: no process, no real wait.

use std::collections::VecDeque;

use rand::SeedableRng;

use super::*;
use crate::outcome::{Hint, ProcessEnd, RunOutcome};
use crate::policy::backoff::Policy;
use crate::policy::decision::End;
use crate::run::wiring::Outcome;
use crate::scan::{Response, ScanResult};
use crate::values::Jitter;

/// One scripted attempt: how it ends, how it is judged, how long it runs.
struct Scripted {
    process: ProcessEnd,
    class: Class,
    runs: Duration,
    hint: Option<Hint>,
    headers: Vec<&'static str>,
}

fn failing(code: i32) -> Scripted {
    Scripted {
        process: ProcessEnd::Exited(code),
        class: Class::Transient,
        runs: Duration::from_millis(10),
        hint: None,
        headers: Vec::new(),
    }
}

fn succeeding() -> Scripted {
    Scripted {
        class: Class::Success,
        ..failing(0)
    }
}

/// The world as the schedule sees it: a clock, a script, and what was
/// done, in words.
struct Fake {
    start: Instant,
    now: Instant,
    rng: SmallRng,
    script: VecDeque<Scripted>,
    /// A signal that arrives during the n-th sleep (from 1).
    signal_in_sleep: Option<(usize, i32)>,
    /// Sleeps take this much longer than asked (a stopped retry).
    oversleep: Duration,
    budget: Option<VecDeque<BudgetAnswer>>,
    hook: Option<ProcessEnd>,
    spool_broken: bool,
    sleeps: usize,
    log: Vec<String>,
}

impl Fake {
    fn new(script: Vec<Scripted>) -> Fake {
        let start = Instant::now();
        Fake {
            start,
            now: start,
            rng: SmallRng::seed_from_u64(1),
            script: script.into(),
            signal_in_sleep: None,
            oversleep: Duration::ZERO,
            budget: None,
            hook: None,
            spool_broken: false,
            sleeps: 0,
            log: Vec::new(),
        }
    }

    fn at(&self) -> u128 {
        (self.now - self.start).as_millis()
    }
}

impl Effects for Fake {
    fn now(&self) -> Instant {
        self.now
    }
    fn wall(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_119_200) + (self.now - self.start)
    }
    fn rng(&mut self) -> &mut SmallRng {
        &mut self.rng
    }
    fn pending_signal(&mut self) -> Option<i32> {
        None
    }
    fn sleep_until(&mut self, wake: Instant) -> Option<i32> {
        self.sleeps += 1;
        if let Some((n, signal)) = self.signal_in_sleep
            && n == self.sleeps
        {
            self.log.push(format!("signal {signal} at {}", self.at()));
            return Some(signal);
        }
        self.now = self.now.max(wake) + self.oversleep;
        None
    }
    fn deposit(&mut self) {
        if self.budget.is_some() {
            self.log.push("deposit".to_string());
        }
    }
    fn withdraw(&mut self) -> Option<(String, BudgetAnswer)> {
        let answer = self.budget.as_mut()?.pop_front()?;
        self.log.push(format!("withdraw: {answer:?}"));
        Some(("api".to_string(), answer))
    }
    fn attempt(&mut self, number: u64, _previous_exit: Option<i32>) -> Result<Judged> {
        let scripted = self.script.pop_front().expect("an attempt past the script");
        self.log.push(format!("attempt {number} at {}", self.at()));
        self.now += scripted.runs;
        let response = (!scripted.headers.is_empty())
            .then(|| Response::from_lines(scripted.headers.iter().map(|l| l.as_bytes())));
        Ok(Judged {
            outcome: Outcome {
                ending: Ending::not_started(scripted.process),
                scan: ScanResult::default(),
                downstream_closed: false,
                stderr_mid_line: false,
                duration: scripted.runs,
                stdin_error: None,
                lost: Vec::new(),
            },
            hint: scripted.hint,
            verdict: Verdict {
                class: scripted.class,
                reason: "scripted".to_string(),
            },
            response,
            copy: None,
        })
    }
    fn on_retry(&mut self, next: u64, _previous: &Ending) -> Option<HookRun> {
        let process = self.hook.clone()?;
        self.log.push(format!("on-retry before {next}"));
        let mut ending = Ending::not_started(process.clone());
        if let ProcessEnd::Signaled(signal) = process {
            ending.interrupted = Some(signal);
        }
        Some(HookRun {
            ending,
            duration: Duration::ZERO,
        })
    }
    fn report_on_retry(&mut self, _ran: &HookRun, run_ends: bool) {
        self.log.push(format!("on-retry ends the run: {run_ends}"));
    }
    fn spool_failure(&self) -> Option<String> {
        self.spool_broken.then(|| "the spool is broken".to_string())
    }
    fn report_attempt(&mut self, record: &AttemptRecord, next: Option<&SleepRecord>) {
        let sleep = next.map_or(String::new(), |s| {
            format!(", then {}ms ({})", s.delay.as_millis(), s.source.as_str())
        });
        self.log.push(format!(
            "attempt {} {}{sleep}",
            record.attempt,
            record.outcome.as_str()
        ));
    }
    fn report_sleep(&mut self, record: &SleepRecord) {
        self.log
            .push(format!("splay {}ms", record.delay.as_millis()));
    }
    fn warning(&mut self, kind: &str, message: &str) {
        self.log.push(format!("warning {kind}: {message}"));
    }
}

fn plan(max_attempts: Option<u64>, max_time: Option<Duration>, start: Instant) -> Plan {
    Plan {
        limits: Limits {
            max_attempts,
            deadline: max_time.map(|t| start + t),
            until_failure: false,
            successes: 1,
        },
        sleeps: SleepRules {
            delay: Duration::from_millis(100),
            cap: Duration::from_secs(30),
            throttle_delay: Duration::from_secs(1),
            max_retry_after: Duration::from_secs(300),
            successes: 1,
        },
        max_attempts,
        splay: Duration::ZERO,
        reset_after: None,
    }
}

const POLICY: Policy = Policy {
    delay: Duration::from_millis(100),
    multiplier: 2.0,
    cap: Duration::from_secs(30),
    jitter: Jitter::None,
};

/// Run `fake`'s script under `plan`: how it ended, and what was done.
fn scheduled(plan: &Plan, fake: &mut Fake) -> Ended {
    let mut backoff = POLICY.sleeps();
    run(plan, &mut backoff, fake).expect("the schedule failed")
}

#[test]
fn failures_are_retried_after_a_growing_backoff_until_one_succeeds() {
    let mut fake = Fake::new(vec![failing(1), failing(1), succeeding()]);
    let ended = scheduled(&plan(Some(5), None, fake.start), &mut fake);
    assert_eq!(ended.done.end, End::Success);
    assert_eq!((ended.attempts, ended.in_a_row), (3, 1));
    assert_eq!(
        fake.log,
        [
            "attempt 1 at 0",
            "attempt 1 transient, then 100ms (backoff)",
            "attempt 2 at 110",
            "attempt 2 transient, then 200ms (backoff)",
            "attempt 3 at 320",
            "attempt 3 success",
        ]
    );
}

#[test]
fn the_last_attempt_ends_the_run_with_its_own_status_and_no_sleep() {
    let mut fake = Fake::new(vec![failing(3), failing(7)]);
    let ended = scheduled(&plan(Some(2), None, fake.start), &mut fake);
    assert_eq!(ended.done.end.outcome(), Some(RunOutcome::Exhausted));
    assert_eq!(ended.done.end.exit_status(None).as_number(), 7);
    assert_eq!(fake.log.last().unwrap(), "attempt 2 transient");
    let permanent = Scripted {
        class: Class::Permanent,
        ..failing(2)
    };
    let mut fake = Fake::new(vec![permanent]);
    let ended = scheduled(&plan(Some(5), None, fake.start), &mut fake);
    assert_eq!(ended.done.end.outcome(), Some(RunOutcome::Permanent));
    assert_eq!(ended.attempts, 1);
}

#[test]
fn a_server_asking_for_longer_than_max_retry_after_ends_the_run_at_once() {
    let asks = |headers| Scripted {
        class: Class::Throttled,
        headers,
        ..failing(22)
    };
    let mut fake = Fake::new(vec![asks(vec!["HTTP/1.1 429", "Retry-After: 400"])]);
    let ended = scheduled(&plan(Some(5), None, fake.start), &mut fake);
    assert_eq!(ended.done.end.outcome(), Some(RunOutcome::Exhausted));
    assert_eq!(ended.done.end.exit_status(None).as_number(), 22);
    assert!(
        ended.done.detail.starts_with(
            "Retry-After asked for 6m 40s, longer than --max-retry-after 5m: not retrying (--max-retry-after 6m 40s would wait for it)"
        ),
        "{}",
        ended.done.detail
    );
    assert_eq!(fake.sleeps, 0, "never answered by a shorter sleep");
    // Within the limit it is obeyed to the millisecond, --cap or not.
    let mut fake = Fake::new(vec![
        asks(vec!["HTTP/1.1 429", "Retry-After: 120"]),
        succeeding(),
    ]);
    scheduled(&plan(Some(5), None, fake.start), &mut fake);
    assert_eq!(
        fake.log[1],
        "attempt 1 throttled, then 120000ms (retry-after)"
    );
    // One that would end past --max-time ends the run too, naming it.
    let mut fake = Fake::new(vec![asks(vec!["HTTP/1.1 503", "Retry-After: 60"])]);
    let ended = scheduled(
        &plan(Some(5), Some(Duration::from_secs(30)), fake.start),
        &mut fake,
    );
    assert_eq!(ended.done.end.outcome(), Some(RunOutcome::Exhausted));
    assert!(
        ended
            .done
            .detail
            .starts_with("Retry-After asked for 1m, which would end 30s")
            && ended.done.detail.contains("past --max-time: not retrying"),
        "{}",
        ended.done.detail
    );
}

#[test]
fn a_throttled_failure_backs_off_from_no_less_than_delay() {
    let throttled = || Scripted {
        class: Class::Throttled,
        ..failing(1)
    };
    let mut fake = Fake::new(vec![throttled(), succeeding()]);
    let mut slow = plan(Some(5), None, fake.start);
    slow.sleeps.delay = Duration::from_secs(5);
    let mut backoff = Policy {
        delay: Duration::from_secs(5),
        ..POLICY
    };
    backoff.cap = Duration::from_secs(60);
    run(&slow, &mut backoff.sleeps(), &mut fake).unwrap();
    assert_eq!(fake.log[1], "attempt 1 throttled, then 5000ms (backoff)");
}

#[test]
fn a_sleep_past_max_time_or_a_late_wake_ends_the_run_as_the_deadline() {
    let mut fake = Fake::new(vec![failing(1), failing(1)]);
    let ended = scheduled(
        &plan(Some(9), Some(Duration::from_millis(250)), fake.start),
        &mut fake,
    );
    assert_eq!(ended.done.end.outcome(), Some(RunOutcome::Deadline));
    assert!(
        ended
            .done
            .detail
            .contains("the next sleep (200ms) would end past it"),
        "{}",
        ended.done.detail
    );
    // Stopped during the sleep (Ctrl-Z), it wakes past --max-time.
    let mut fake = Fake::new(vec![failing(1), failing(1)]);
    fake.oversleep = Duration::from_secs(10);
    let ended = scheduled(
        &plan(Some(9), Some(Duration::from_secs(5)), fake.start),
        &mut fake,
    );
    assert_eq!(ended.done.end.outcome(), Some(RunOutcome::Deadline));
    assert!(
        ended.done.detail.contains("before attempt 2 could start"),
        "{}",
        ended.done.detail
    );
    assert_eq!(ended.attempts, 1);
}

#[test]
fn a_signal_during_the_backoff_ends_the_run_by_it() {
    let mut fake = Fake::new(vec![failing(1), failing(1)]);
    fake.signal_in_sleep = Some((1, crate::outcome::signo::SIGTERM));
    let ended = scheduled(&plan(Some(9), None, fake.start), &mut fake);
    assert_eq!(
        ended.done.end,
        End::Interrupted(crate::outcome::signo::SIGTERM)
    );
    assert_eq!(ended.attempts, 1);
}

#[test]
fn the_budget_is_asked_before_each_retry_and_its_refusal_ends_the_run() {
    let mut fake = Fake::new(vec![failing(1), failing(4), succeeding()]);
    fake.budget = Some(VecDeque::from([
        BudgetAnswer::Taken { left: 1.0 },
        BudgetAnswer::Refused { tokens: 0.5 },
    ]));
    let ended = scheduled(&plan(Some(9), None, fake.start), &mut fake);
    assert_eq!(ended.done.end.outcome(), Some(RunOutcome::BudgetExhausted));
    assert_eq!(ended.done.end.exit_status(None).as_number(), 4);
    assert!(
        ended
            .done
            .detail
            .starts_with("retry budget api exhausted (0.5 tokens)")
    );
    assert_eq!(fake.log[0], "deposit");
    // A signal that cut the store's wait short ends it by the signal.
    let mut fake = Fake::new(vec![failing(1), succeeding()]);
    fake.budget = Some(VecDeque::from([BudgetAnswer::Interrupted(
        crate::outcome::signo::SIGINT,
    )]));
    let ended = scheduled(&plan(Some(9), None, fake.start), &mut fake);
    assert_eq!(
        ended.done.end,
        End::Interrupted(crate::outcome::signo::SIGINT)
    );
    // A store that cannot be used: retries go ahead.
    let mut fake = Fake::new(vec![failing(1), succeeding()]);
    fake.budget = Some(VecDeque::from([BudgetAnswer::Unusable]));
    assert_eq!(
        scheduled(&plan(Some(9), None, fake.start), &mut fake)
            .done
            .end,
        End::Success
    );
}

#[test]
fn on_retry_runs_before_each_retry_and_only_a_signal_in_it_ends_the_run() {
    let mut fake = Fake::new(vec![failing(1), succeeding()]);
    fake.hook = Some(ProcessEnd::Exited(3));
    let ended = scheduled(&plan(Some(9), None, fake.start), &mut fake);
    assert_eq!(ended.done.end, End::Success);
    assert!(
        fake.log
            .contains(&"on-retry ends the run: false".to_string()),
        "{:?}",
        fake.log
    );
    let mut fake = Fake::new(vec![failing(1), succeeding()]);
    fake.hook = Some(ProcessEnd::Signaled(crate::outcome::signo::SIGINT));
    let ended = scheduled(&plan(Some(9), None, fake.start), &mut fake);
    assert_eq!(
        ended.done.end,
        End::Interrupted(crate::outcome::signo::SIGINT)
    );
    assert_eq!(ended.attempts, 1);
}

#[test]
fn a_broken_replay_spool_stops_the_run_before_a_retry_and_warns_after_the_last() {
    let mut fake = Fake::new(vec![failing(1), failing(1)]);
    fake.spool_broken = true;
    let err = run(
        &plan(Some(9), None, fake.start),
        &mut POLICY.sleeps(),
        &mut fake,
    )
    .err()
    .expect("a retry without the whole input");
    assert!(
        err.to_string()
            .contains("attempt 2 cannot be given the whole input"),
        "{err}"
    );
    let mut fake = Fake::new(vec![failing(1)]);
    fake.spool_broken = true;
    scheduled(&plan(Some(1), None, fake.start), &mut fake);
    assert!(
        fake.log
            .last()
            .unwrap()
            .starts_with("warning stdin: the spool is broken;")
    );
}

#[test]
fn the_hint_files_retry_after_sets_the_sleep_and_reset_after_starts_the_backoff_over() {
    let hinted = Scripted {
        hint: Some(Hint::RetryAfter(Duration::from_millis(1234))),
        ..failing(1)
    };
    let long = Scripted {
        runs: Duration::from_secs(60),
        ..failing(1)
    };
    let mut fake = Fake::new(vec![hinted, failing(1), long, succeeding()]);
    let mut with_reset = plan(Some(9), None, fake.start);
    with_reset.reset_after = Some(Duration::from_secs(30));
    scheduled(&with_reset, &mut fake);
    let sleeps: Vec<&String> = fake.log.iter().filter(|l| l.contains(", then ")).collect();
    assert_eq!(
        sleeps,
        [
            "attempt 1 transient, then 1234ms (retry-after)",
            "attempt 2 transient, then 100ms (backoff)",
            // Attempt 3 ran for a minute: the backoff starts over.
            "attempt 3 transient, then 100ms (backoff)",
        ]
    );
}
