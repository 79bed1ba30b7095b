//! `--explain`'s list of the rules in force: the command line's, then a
//! preset's, in the order they are asked, each kind named (permanent,
//! throttled, transient), and what the response headers do.

use crate::policy::rules::{RuleSource, Rules};

/// The rules in force, in the order they are asked, and where each comes
/// from.
pub(super) fn rules_text(rules: &Rules) -> String {
    let mut out = String::from(
        "Rules, first match wins (a word in $RETRY_HINT_FILE comes before them all):\n",
    );
    for set in &rules.sets {
        let mut lines = Vec::new();
        let preset = matches!(set.source, RuleSource::Preset { .. });
        for (kind, rules_of_kind, flag) in [
            ("permanent", &set.stop_on_output, "--stop-on-output"),
            ("throttled", &set.throttle_on_output, ""),
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
                } else if rule.throttled {
                    "throttled"
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
        out.push_str(
            "  response headers in the scanned output set the next sleep (Retry-After, grpc-retry-pushback-ms, x-amz-retry-after, RateLimit r=0, X-RateLimit-Reset with X-RateLimit-Remaining: 0), and a transient failure whose response is HTTP 429, a 503 with a wait or a spent quota is throttled\n",
        );
    }
    if rules.stop_on_timeout {
        out.push_str("  a timed-out attempt: permanent (--stop-on-timeout)\n");
    }
    out.push_str(
        "  then: a command that cannot start is permanent; any other failure is transient\n",
    );
    out
}
