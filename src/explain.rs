//! `--explain`: the schedule a policy produces, as a table, without running
//! anything. Per retry: the ceiling, the expected sleep, and the cumulative
//! worst case and mean; and where `--attempts` or `--max-time` cut it off.
//! Only sleeps are counted: the attempts' own run time comes on top.

use std::fmt::Write;
use std::time::Duration;

use rand::SeedableRng;
use rand::rngs::SmallRng;

use crate::backoff::Policy;
use crate::config::Config;
use crate::rules::{RuleSource, Rules};
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

/// `-v`: the policy in one line, at the start of a run.
pub(crate) fn policy_line(config: &Config) -> String {
    let policy = &config.policy;
    let mut text = format!(
        "policy: {} attempts; delay {}, x{} per retry, cap {}, {} jitter",
        config
            .attempts
            .map_or("unlimited".to_string(), |n| n.to_string()),
        human(policy.delay),
        policy.multiplier,
        human(policy.cap),
        policy.jitter
    );
    if let Some(max_time) = config.max_time {
        text.push_str(&format!("; max-time {}", human(max_time)));
    }
    if let Some(timeout) = config.timeout {
        text.push_str(&format!("; timeout {}", human(timeout)));
    }
    text
}

/// The rules in force, in the order they are asked, and where each comes
/// from.
pub(crate) fn rules_text(rules: &Rules) -> String {
    let mut out = String::from(
        "Rules, first match wins (a word in $RETRY_HINT_FILE comes before them all):\n",
    );
    for set in &rules.sets {
        let mut lines = Vec::new();
        let preset = matches!(set.source, RuleSource::Preset { .. });
        for (kind, rules_of_kind, flag) in [
            ("permanent", &set.stop_on_output, "--stop-on-output"),
            ("transient", &set.retry_on_output, "--retry-on-output"),
        ] {
            for rule in rules_of_kind {
                lines.push(if preset {
                    format!("{kind}  output '{}': {}", rule.regex.as_str(), rule.shown)
                } else {
                    format!("{kind}  {flag} '{}'", rule.shown)
                });
            }
        }
        if preset {
            for rule in &set.exit_rules {
                let kind = if rule.permanent {
                    "permanent"
                } else {
                    "transient"
                };
                lines.push(format!("{kind}  exit {}: {}", rule.codes, rule.means));
            }
            lines.push(if set.retry_on_exit.is_some() {
                "any other failing code: permanent".to_string()
            } else {
                "any other failure: retry's defaults (transient)".to_string()
            });
        } else {
            if let Some(codes) = &set.stop_on_exit {
                lines.push(format!("permanent  --stop-on-exit {codes}"));
            }
            if let Some(codes) = &set.retry_on_exit {
                lines.push(format!(
                    "transient  --retry-on-exit {codes}; any other failing code: permanent"
                ));
            }
        }
        if lines.is_empty() {
            continue;
        }
        match set.source.preset_line() {
            Some(line) => out.push_str(&format!("  {line}:\n")),
            None => out.push_str("  from the command line:\n"),
        }
        for line in lines {
            out.push_str(&format!("    {line}\n"));
        }
    }
    if rules.retry_after {
        out.push_str("  Retry-After: header lines in the scanned output set the next sleep\n");
    }
    if rules.stop_on_timeout {
        out.push_str("  a timed-out attempt: permanent (--stop-on-timeout)\n");
    }
    out.push_str(
        "  then: a command that cannot start is permanent; any other failure is transient\n",
    );
    out
}

pub(crate) fn render(config: &Config) -> String {
    let policy = &config.policy;
    let mut out = String::new();
    let attempts = config
        .attempts
        .map_or("unlimited".to_string(), |n| n.to_string());
    let _ = writeln!(
        out,
        "Schedule: {attempts} attempts; delay {}, x{} per retry, cap {}, {} jitter{}",
        human(policy.delay),
        policy.multiplier,
        human(policy.cap),
        policy.jitter,
        config
            .max_time
            .map_or(String::new(), |t| format!("; max-time {}", human(t)))
    );
    let _ = writeln!(
        out,
        "Sleeps only; each attempt's own run time comes on top."
    );
    if policy.jitter == Jitter::Decorrelated {
        let _ = writeln!(
            out,
            "Decorrelated jitter: the ceiling is the largest possible draw; means are simulated ({SIMULATED_RUNS} runs)."
        );
    }
    let _ = writeln!(out);

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
        (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let mut ending = None;
    let mut warned_max_time = false;
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
        if let Some(max_time) = config.max_time {
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
        if let Some(max_time) = config.max_time
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
    let _ = writeln!(out);
    out.push_str(&rules_text(&config.rules));
    out
}
