//! `--explain`: the schedule a policy produces, as a table, without running
//! anything. Per retry: the ceiling, the expected sleep, and the cumulative
//! worst case and mean; and where `--attempts` or `--max-time` cut it off.
//! Only sleeps are counted: the attempts' own run time comes on top. Above
//! the table, the conditions and hooks in force (what counts as success,
//! `--until-failure`, `--reset-after`, `--on-retry`, `--on-give-up`).

use std::fmt::Write;
use std::time::Duration;

use rand::SeedableRng;
use rand::rngs::SmallRng;

use crate::cli::config::Config;
use crate::cli::config::GIVE_UP_LIMIT;
use crate::cli::explain_rules;
use crate::policy::backoff::Policy;
use crate::text::{sanitize_line, shell_command, shell_word};
use crate::values::Jitter;
use crate::values::human;

/// Rows shown at most when nothing else ends the schedule.
const MAX_ROWS: u64 = 60;
/// Decorrelated jitter has no closed-form mean: simulate this many runs.
const SIMULATED_RUNS: u32 = 20_000;

struct Row {
    ceiling: Duration,
    mean: Duration,
    worst: Duration,
    least: Duration,
}

fn rows(policy: &Policy, count: u64) -> Vec<Row> {
    let simulated = (policy.jitter == Jitter::Decorrelated).then(|| simulated_means(policy, count));
    (0..count)
        .map(|n| Row {
            ceiling: if policy.jitter == Jitter::Decorrelated {
                policy.worst_sleep(n)
            } else {
                policy.ceiling(n)
            },
            mean: match &simulated {
                Some(means) => means[n as usize],
                None => policy.mean_sleep(n).unwrap_or_default(),
            },
            worst: policy.worst_sleep(n),
            least: policy.least_sleep(n),
        })
        .collect()
}

fn simulated_means(policy: &Policy, count: u64) -> Vec<Duration> {
    let mut rng = SmallRng::seed_from_u64(0x5eed);
    let mut totals = vec![0f64; count as usize];
    for _ in 0..SIMULATED_RUNS {
        let mut sleeps = policy.sleeps();
        for total in &mut totals {
            *total += sleeps.next(&mut rng).delay.as_secs_f64();
        }
    }
    totals
        .iter()
        .map(|t| Duration::from_secs_f64(t / f64::from(SIMULATED_RUNS)))
        .collect()
}

/// `1 attempt`, `5 attempts`, `unlimited attempts`.
fn attempts_text(attempts: Option<u64>) -> String {
    match attempts {
        Some(1) => "1 attempt".to_string(),
        Some(n) => format!("{n} attempts"),
        None => "unlimited attempts".to_string(),
    }
}

/// The policy in words: `5 attempts; delay 1s, x2 per retry, cap 30s, full
/// jitter` (`no jitter` for none).
fn policy_words(config: &Config) -> String {
    let policy = &config.policy;
    let jitter = match policy.jitter {
        Jitter::None => "no jitter".to_string(),
        jitter => format!("{jitter} jitter"),
    };
    let mut text = format!(
        "{}; delay {}, throttle-delay {}, x{} per retry, cap {}, {jitter}",
        attempts_text(config.attempts),
        human(policy.delay),
        human(config.throttle_delay),
        policy.multiplier,
        human(policy.cap),
    );
    if !config.splay.is_zero() {
        text.push_str(&format!("; splay {}", human(config.splay)));
    }
    text
}

/// `-v`: the policy in one line, at the start of a run.
pub(crate) fn policy_line(config: &Config) -> String {
    let mut text = format!("policy: {}", policy_words(config));
    if let Some(max_time) = config.max_time {
        text.push_str(&format!("; max-time {}", human(max_time)));
    }
    if let Some(timeout) = config.timeout {
        text.push_str(&format!("; timeout {}", human(timeout)));
    }
    if config.hooks.until_failure {
        text.push_str("; until the first failure");
    }
    text
}

/// `RETRY_DEADLINE`: how an outer run's deadline bounds this run (said
/// under `-v` and by `--explain`).
pub(crate) fn deadline_line(config: &Config) -> Option<String> {
    let outer = config.outer_deadline?;
    let left = human(outer.left);
    Some(match config.max_time {
        _ if outer.left.is_zero() => {
            "RETRY_DEADLINE: the outer run's deadline has passed: no attempt starts".to_string()
        }
        Some(own) if outer.left < own => format!(
            "RETRY_DEADLINE: the outer run's deadline comes in {left}: --max-time {} is cut to {left}",
            human(own)
        ),
        Some(own) => format!(
            "RETRY_DEADLINE: the outer run's deadline comes in {left}, after --max-time {}",
            human(own)
        ),
        None => format!(
            "RETRY_DEADLINE: the outer run's deadline comes in {left}: the run ends by then (--max-time {left})"
        ),
    })
}

/// The time the run may take: `--max-time`, cut to what is left of an
/// outer run's deadline.
fn run_time(config: &Config) -> Option<Duration> {
    let outer = config.outer_deadline.map(|outer| outer.left);
    match (config.max_time, outer) {
        (Some(own), Some(outer)) => Some(own.min(outer)),
        (own, outer) => own.or(outer),
    }
}

/// `--successes N`: what readiness takes, and what room the attempt limit
/// leaves for failures.
fn successes_text(config: &Config) -> String {
    let n = config.hooks.successes;
    let delay = config.policy.delay.min(config.policy.cap);
    let room = match config.attempts {
        Some(limit) => format!(
            "--attempts {limit} counts every attempt: {} failed attempts at most leave room for them.",
            limit - n
        ),
        None => "attempts are unlimited.".to_string(),
    };
    format!(
        "--successes {n}: the run succeeds only after {n} successful attempts in a row, {} apart (--delay; {} of sleep at least); a failure starts the count over, and the schedule below too; {room}",
        human(delay),
        human(
            delay
                .checked_mul(u32::try_from(n - 1).unwrap_or(u32::MAX))
                .unwrap_or(Duration::MAX)
        )
    )
}

/// The conditions and hooks in force, one sentence each.
fn conditions(config: &Config) -> Vec<String> {
    let mut lines = Vec::new();
    let rules = &config.rules;
    let codes = match &rules.success_on_exit {
        Some(codes) => format!("exit 0 or {codes} (--success-on-exit)"),
        None => "exit 0".to_string(),
    };
    if !rules.until_output.is_empty() {
        let patterns: Vec<String> = rules
            .until_output
            .iter()
            .map(|rule| format!("'{}'", sanitize_line(&rule.shown, 60)))
            .collect();
        lines.push(format!(
            "Success: {codes} and a line of output (stdout or stderr) matching --until-output {}; without one an attempt is not ready yet, and retried.",
            patterns.join(" or ")
        ));
    } else if rules.success_on_exit.is_some() {
        lines.push(format!("Success: {codes}."));
    }
    let hooks = &config.hooks;
    if hooks.until_failure {
        lines.push(
            "--until-failure: the command runs again while it succeeds; its first failure ends the run with its status (0 when every run passed). The sleeps below come between runs."
                .to_string(),
        );
    }
    if let Some(limit) = hooks.reset_after {
        lines.push(format!(
            "--reset-after {}: an attempt that ran at least that long before failing starts the schedule over at retry 1.",
            human(limit)
        ));
    }
    if hooks.successes > 1 {
        lines.push(successes_text(config));
    }
    if let Some(code) = hooks.give_up_exit {
        lines.push(format!(
            "--give-up-exit {code}: a run that ends on a transient failure (attempts exhausted, --max-time, the budget refused, a circuit open) exits {code}; a permanent failure keeps the command's status, retry's own errors theirs."
        ));
    }
    // A hook is one shell command line: shown as one quoted word.
    let shown = |command: &std::ffi::OsString| sanitize_line(&shell_word(command), 80);
    if let Some(command) = &hooks.on_retry {
        let bound = match (config.timeout, config.max_time) {
            (Some(timeout), _) => format!("at most {} each", human(timeout)),
            (None, Some(_)) => "within --max-time".to_string(),
            (None, None) => "unbounded: no --timeout".to_string(),
        };
        lines.push(format!(
            "--on-retry: {} runs after each sleep, right before the retry ({bound}; its time comes on top).",
            shown(command)
        ));
    }
    if let Some(command) = &hooks.on_give_up {
        lines.push(format!(
            "--on-give-up: {} runs once if the run fails (at most {}).",
            shown(command),
            human(config.timeout.unwrap_or(GIVE_UP_LIMIT))
        ));
    }
    lines
}

/// How a throttled failure's backoff differs from the table's.
fn throttled_line(config: &Config) -> String {
    let base = config.policy.delay.max(config.throttle_delay);
    let throttled = Policy {
        delay: base,
        ..config.policy.clone()
    };
    let ceilings: Vec<String> = (0..3).map(|n| human(throttled.ceiling(n))).collect();
    let from = if config.throttle_delay > config.policy.delay {
        format!("--throttle-delay {}", human(config.throttle_delay))
    } else {
        format!(
            "--delay {} (--throttle-delay {} is only a floor)",
            human(config.policy.delay),
            human(config.throttle_delay)
        )
    };
    format!(
        "Throttled: after a failure judged throttled (HTTP 429, a 503 with a wait, a rate-limit message) the ceiling grows from the larger of --delay and --throttle-delay: {from} (first ceilings {}, ...); the table shows --delay's. A wait a server asks for longer than --max-retry-after {}, or past --max-time, ends the run at once.",
        ceilings.join(", "),
        human(config.max_retry_after)
    )
}

/// `--explain`: what the policy is, its schedule, and the rules.
pub(crate) fn render(config: &Config) -> String {
    let mut out = preamble(config);
    let _ = writeln!(out);
    out.push_str(&schedule(config));
    let _ = writeln!(out);
    out.push_str(&explain_rules::rules_text(&config.rules));
    // Why a wrapped command has no preset; the command's locale.
    for note in &config.preset_notes {
        let _ = writeln!(out, "  {note}");
    }
    out
}

/// What the schedule is made of: the policy, the command, what was said
/// about the flags, the conditions, the circuit, the budget, the splay.
fn preamble(config: &Config) -> String {
    let policy = &config.policy;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Schedule: {}{}",
        policy_words(config),
        run_time(config).map_or(String::new(), |t| format!("; max-time {}", human(t)))
    );
    let _ = writeln!(
        out,
        "Sleeps only; each attempt's own run time comes on top."
    );
    if !config.command.is_empty() {
        let _ = writeln!(
            out,
            "Command: {}",
            sanitize_line(&shell_command(&config.command), 200)
        );
    }
    for warning in &config.warnings {
        let _ = writeln!(out, "Note: {warning}.");
    }
    if let Some(line) = deadline_line(config) {
        let _ = writeln!(out, "{line}.");
    }
    for line in conditions(config) {
        let _ = writeln!(out, "{line}");
    }
    if let Some(circuit) = &config.circuit {
        let _ = writeln!(out, "{}", crate::circuit::explain(circuit));
    }
    if let Some(budget) = &config.budget {
        let _ = writeln!(
            out,
            "{}",
            crate::budget::explain(&budget.name, &budget.settings)
        );
    }
    let _ = writeln!(out, "{}", throttled_line(config));
    if let Some(hedging) = &config.hedging {
        let line = crate::policy::hedging::explain(
            hedging.after,
            hedging.hedges,
            hedging.learn_as.as_deref(),
            (config.budget.is_some(), config.circuit.is_some()),
        );
        let _ = writeln!(out, "{line}");
    }
    if !config.splay.is_zero() {
        let _ = writeln!(
            out,
            "Splay: a random sleep under {} before the first attempt (mean {}), counted in the totals.",
            human(config.splay),
            human(config.splay / 2)
        );
    }
    if policy.jitter == Jitter::Decorrelated {
        let _ = writeln!(
            out,
            "Decorrelated jitter: the ceiling is the largest possible draw; means are simulated ({SIMULATED_RUNS} runs)."
        );
    }
    out
}

/// The table of retries, and where the limits end it.
fn schedule(config: &Config) -> String {
    let policy = &config.policy;
    let mut out = String::new();
    let retries = match config.attempts {
        Some(n) => n.saturating_sub(1).min(MAX_ROWS),
        None => MAX_ROWS,
    };
    let table = rows(policy, retries);
    let _ = writeln!(
        out,
        "{:>5}  {:>13}  {:>10}  {:>14}  {:>12}  {:>12}",
        "retry", "after attempt", "ceiling", "expected sleep", "worst total", "mean total"
    );
    let (mut worst_total, mut mean_total, mut least_total) =
        (config.splay, config.splay / 2, Duration::ZERO);
    let mut ending = None;
    let mut warned_max_time = false;
    let max_time = run_time(config);
    for (index, row) in table.iter().enumerate() {
        let retry = index as u64 + 1;
        worst_total = worst_total.saturating_add(row.worst);
        mean_total = mean_total.saturating_add(row.mean);
        least_total = least_total.saturating_add(row.least);
        let mut line = format!(
            "{:>5}  {:>13}  {:>10}  {:>14}  {:>12}  {:>12}",
            retry,
            retry,
            human(row.ceiling),
            human(row.mean),
            human(worst_total),
            human(mean_total)
        );
        if let Some(max_time) = max_time {
            if least_total >= max_time {
                ending = Some(format!(
                    "--max-time {} ends the run before retry {retry}: even the shortest sleeps add up to {}.",
                    human(max_time),
                    human(least_total)
                ));
                break;
            }
            if config.attempts.is_none() && mean_total >= max_time {
                let _ = writeln!(out, "{line}");
                ending = Some(format!(
                    "--max-time {} ends the run around here on average (mean total {}); attempts are unlimited.",
                    human(max_time),
                    human(mean_total)
                ));
                break;
            }
        }
        if let Some(max_time) = max_time
            && worst_total >= max_time
            && !warned_max_time
        {
            warned_max_time = true;
            line.push_str(&format!("  <- may pass --max-time {}", human(max_time)));
        }
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(out);
    match (ending, config.attempts) {
        (Some(text), _) => {
            let _ = writeln!(out, "{text}");
        }
        (None, Some(n)) if n - 1 > MAX_ROWS => {
            let _ = writeln!(
                out,
                "... and so on: every later retry sleeps under the cap of {} (--attempts {n}).",
                human(policy.cap)
            );
        }
        (None, Some(n)) => {
            let _ = writeln!(
                out,
                "--attempts {n} ends the run after attempt {n}: worst case {} of sleep, mean {}.",
                human(worst_total),
                human(mean_total)
            );
        }
        (None, None) => {
            let _ = writeln!(
                out,
                "... unlimited: every later retry sleeps under the cap of {}.",
                human(policy.cap)
            );
        }
    }
    out
}
