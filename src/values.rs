//! Parsers for the command line's value syntaxes: DURATION, CODES, attempt
//! limits, multipliers and jitter kinds.
//!
//! Each parser returns a typed value or a message that clap prints next to the
//! offending flag and value; [`human`] is the way back, for messages. Nothing
//! here knows about clap or does I/O.

use std::time::Duration;

/// Longest duration accepted anywhere: 100 years as humantime counts them
/// (365.25 days), so `100y` itself is accepted. Longer values are usage
/// errors rather than silently saturated, so a typo never means "forever".
pub const MAX_DURATION: Duration = Duration::from_secs(100 * 31_557_600);

/// Human form of a duration: `734ms`, `4.2s`, `2m 5s`.
pub fn human(duration: Duration) -> String {
    let ms = duration.as_millis();
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        let text = format!("{:.1}s", duration.as_secs_f64());
        text.replace(".0s", "s")
    } else if duration < Duration::from_secs(2 * 86_400) {
        humantime::format_duration(Duration::from_secs(duration.as_secs_f64().round() as u64))
            .to_string()
    } else if duration < Duration::from_secs(2 * 365 * 86_400) {
        format!("{} days", duration.as_secs() / 86_400)
    } else {
        format!("{} years", duration.as_secs() / (365 * 86_400))
    }
}

/// Parse a DURATION: humantime syntax (`250ms`, `1h 30m`, `1min`), decimals
/// with a unit (`1.5s`, `0.25m`) or a bare number of seconds (`0.5`, `3`).
/// Tiny positive values round up to 1ns so that they still count as non-zero.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("empty duration".into());
    }
    if trimmed.starts_with('-') {
        return Err("negative durations are not allowed".into());
    }
    let secs = if let Ok(secs) = trimmed.parse::<f64>() {
        secs
    } else if let Ok(duration) = humantime::parse_duration(trimmed) {
        return check_range(duration);
    } else {
        decimal_with_units(trimmed)?
    };
    if !secs.is_finite() {
        return Err("not a finite number".into());
    }
    // A positive number too small for an f64 (`1e-10000`) is still not
    // zero: the least duration, as for one that rounds below a nanosecond
    // (below), and as coreutils `timeout` reads it.
    if secs == 0.0 && positive_mantissa(trimmed) {
        return Ok(Duration::from_nanos(1));
    }
    if secs < 0.0 {
        return Err("negative durations are not allowed".into());
    }
    if secs > MAX_DURATION.as_secs_f64() {
        return Err("too long (the limit is 100 years)".into());
    }
    let duration = Duration::from_secs_f64(secs);
    if duration.is_zero() && secs > 0.0 {
        return Ok(Duration::from_nanos(1));
    }
    Ok(duration)
}

fn check_range(duration: Duration) -> Result<Duration, String> {
    if duration > MAX_DURATION {
        Err("too long (the limit is 100 years)".into())
    } else {
        Ok(duration)
    }
}

/// `1.5s`, `0.25m`, `1.5h 30s`: humantime rejects fractions, so split the
/// text into number-unit pairs and let humantime value each unit.
fn decimal_with_units(text: &str) -> Result<f64, String> {
    let invalid =
        || "expected a duration such as 250ms, 1.5s, 2m, 1h 30m or a number of seconds".to_string();
    let mut total = 0.0;
    let mut rest = text.trim_start();
    if rest.is_empty() {
        return Err(invalid());
    }
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..number_len].parse().map_err(|_| invalid())?;
        rest = rest[number_len..].trim_start();
        let unit_len = rest
            .find(|c: char| !c.is_alphabetic())
            .unwrap_or(rest.len());
        if unit_len == 0 {
            return Err(invalid());
        }
        let unit =
            humantime::parse_duration(&format!("1{}", &rest[..unit_len])).map_err(|_| invalid())?;
        total += number * unit.as_secs_f64();
        rest = rest[unit_len..].trim_start();
    }
    Ok(total)
}

/// A DURATION that must be greater than zero.
/// A number whose digits before the exponent are not all zero.
fn positive_mantissa(number: &str) -> bool {
    number
        .split(['e', 'E'])
        .next()
        .is_some_and(|mantissa| mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b)))
}

/// `--timeout` and `--max-time`: greater than zero. To coreutils `timeout`
/// 0 means no limit; here the flag left out means none, and a zero (often
/// a computed limit gone wrong) is refused, saying so.
pub fn parse_limit(text: &str) -> Result<Duration, String> {
    let duration = parse_duration(text)?;
    if duration.is_zero() {
        return Err(
            "must be greater than zero (for no limit, leave the flag out: 0 does not mean none here, as it does for timeout(1))"
                .into(),
        );
    }
    Ok(duration)
}

pub fn parse_positive_duration(text: &str) -> Result<Duration, String> {
    let duration = parse_duration(text)?;
    if duration.is_zero() {
        return Err("must be greater than zero".into());
    }
    Ok(duration)
}

/// `--budget-ratio`: a number in [0, 10], or a percentage (`20%`).
pub fn parse_ratio(text: &str) -> Result<f64, String> {
    let trimmed = text.trim();
    let (number, scale) = match trimmed.strip_suffix('%') {
        Some(number) => (number.trim(), 100.0),
        None => (trimmed, 1.0),
    };
    let value = number
        .parse::<f64>()
        .map_err(|_| "expected a number such as 0.2 or a percentage such as 20%".to_string())?
        / scale;
    if !value.is_finite() || !(0.0..=10.0).contains(&value) {
        return Err("must be between 0 and 10 (0% and 1000%)".into());
    }
    Ok(value)
}

/// `--budget-min`: a rate `N/UNIT` (`10/s`, `1/min`, `30/h`, `5/day`), as
/// tokens per millisecond.
pub fn parse_rate(text: &str) -> Result<f64, String> {
    let invalid = || "expected a rate N/UNIT such as 10/s, 1/min, 30/h or 0/s".to_string();
    let (count, unit) = text.trim().split_once('/').ok_or_else(invalid)?;
    let count: f64 = count.trim().parse().map_err(|_| invalid())?;
    if !count.is_finite() || count < 0.0 {
        return Err("the count must be a number >= 0".into());
    }
    let unit_ms = match unit.trim() {
        "ms" => 1.0,
        "s" | "sec" | "second" => 1000.0,
        "m" | "min" | "minute" => 60_000.0,
        "h" | "hour" => 3_600_000.0,
        "d" | "day" => 86_400_000.0,
        _ => return Err(invalid()),
    };
    let per_ms = count / unit_ms;
    if per_ms > 1e6 {
        return Err("too fast (more than a million per millisecond)".into());
    }
    Ok(per_ms)
}

/// The most attempts a run may make; `None` is unlimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttemptLimit(pub Option<u64>);

pub fn parse_attempts(text: &str) -> Result<AttemptLimit, String> {
    let trimmed = text.trim();
    if trimmed.eq_ignore_ascii_case("unlimited") {
        return Ok(AttemptLimit(None));
    }
    match trimmed.parse::<u64>() {
        Ok(0) => Err("must be at least 1 (the first attempt counts)".into()),
        Ok(n) => Ok(AttemptLimit(Some(n))),
        Err(err) if *err.kind() == std::num::IntErrorKind::PosOverflow => {
            Err("too large (the limit is 18446744073709551615; or say 'unlimited')".into())
        }
        Err(_) => Err("expected a whole number >= 1 or 'unlimited'".into()),
    }
}

pub fn parse_multiplier(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .trim()
        .parse()
        .map_err(|_| "expected a number >= 1".to_string())?;
    if !value.is_finite() {
        return Err("must be a finite number".into());
    }
    if value < 1.0 {
        return Err("must be >= 1 (delays never shrink)".into());
    }
    Ok(value)
}

/// How a sleep is drawn from its ceiling (see `backoff`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Jitter {
    None,
    Full,
    Equal,
    Decorrelated,
    /// The ceiling times uniform in [1-P, 1+P], P in (0, 1].
    Proportional(f64),
}

impl std::fmt::Display for Jitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Jitter::None => f.write_str("none"),
            Jitter::Full => f.write_str("full"),
            Jitter::Equal => f.write_str("equal"),
            Jitter::Decorrelated => f.write_str("decorrelated"),
            Jitter::Proportional(p) => write!(f, "+-{}%", p * 100.0),
        }
    }
}

pub fn parse_jitter(text: &str) -> Result<Jitter, String> {
    let trimmed = text.trim();
    match trimmed.to_ascii_lowercase().as_str() {
        "none" => return Ok(Jitter::None),
        "full" => return Ok(Jitter::Full),
        "equal" => return Ok(Jitter::Equal),
        "decorrelated" => return Ok(Jitter::Decorrelated),
        _ => {}
    }
    let invalid = || {
        "expected full, equal, decorrelated, none, or a proportion in (0,1] such as 0.2 or 20%"
            .to_string()
    };
    let proportion = match trimmed.strip_suffix('%') {
        Some(percent) => percent.trim().parse::<f64>().map_err(|_| invalid())? / 100.0,
        None => trimmed.parse::<f64>().map_err(|_| invalid())?,
    };
    if !(proportion > 0.0 && proportion <= 1.0) {
        return Err("a proportion must be in (0,1] (or 0% < P <= 100%)".into());
    }
    Ok(Jitter::Proportional(proportion))
}

/// A set of exit codes 0-255, from a list such as `1,7,28,52-56`.
#[derive(Clone, PartialEq, Eq)]
pub struct CodeSet([bool; 256]);

impl std::fmt::Debug for CodeSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let codes: Vec<usize> = (0..256).filter(|&c| self.0[c]).collect();
        write!(f, "CodeSet{codes:?}")
    }
}

/// As it is written on the command line: `1,7,28,52-56`.
impl std::fmt::Display for CodeSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut items = Vec::new();
        let mut code = 0;
        while code < 256 {
            if !self.0[code] {
                code += 1;
                continue;
            }
            let start = code;
            while code + 1 < 256 && self.0[code + 1] {
                code += 1;
            }
            items.push(if start == code {
                start.to_string()
            } else {
                format!("{start}-{code}")
            });
            code += 1;
        }
        f.write_str(&items.join(","))
    }
}

impl CodeSet {
    pub fn contains(&self, code: i32) -> bool {
        (0..256).contains(&code) && self.0[code as usize]
    }

    pub fn from_codes(codes: &[u8]) -> Self {
        let mut set = [false; 256];
        for &code in codes {
            set[code as usize] = true;
        }
        CodeSet(set)
    }

    /// Union of two sets (repeating a flag adds codes).
    #[must_use]
    pub fn union(&self, other: &CodeSet) -> CodeSet {
        let mut set = self.0;
        for (slot, extra) in set.iter_mut().zip(other.0.iter()) {
            *slot |= *extra;
        }
        CodeSet(set)
    }
}

pub fn parse_codes(text: &str) -> Result<CodeSet, String> {
    let mut set = [false; 256];
    for item in text.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err("empty item in the code list (expected e.g. 1,7,28,52-56)".into());
        }
        let (low, high) = if let Some((low, high)) = item.split_once('-') {
            if low.trim().is_empty() || high.trim().is_empty() {
                return Err(format!(
                    "range '{item}' needs both ends (e.g. 52-56): open ranges are not allowed"
                ));
            }
            (parse_code(low)?, parse_code(high)?)
        } else {
            let code = parse_code(item)?;
            (code, code)
        };
        if low > high {
            return Err(format!("range {item} runs backwards"));
        }
        for code in low..=high {
            set[code as usize] = true;
        }
    }
    Ok(CodeSet(set))
}

fn parse_code(text: &str) -> Result<u8, String> {
    let text = text.trim();
    text.parse::<u8>().map_err(|_| {
        if text.bytes().all(|b| b.is_ascii_digit()) {
            format!("{text} is out of range: exit codes are 0-255")
        } else {
            format!("'{text}' is not an exit code 0-255")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_a_hundred_years_as_written() {
        for accepted in ["100y", "36525d", "876600h"] {
            assert_eq!(parse_duration(accepted), Ok(MAX_DURATION), "{accepted}");
        }
        for refused in ["101y", "36526d", "100y 1s"] {
            assert_eq!(
                parse_duration(refused),
                Err("too long (the limit is 100 years)".to_string()),
                "{refused}"
            );
        }
    }

    #[test]
    fn ratios_and_rates() {
        assert_eq!(parse_ratio("0.2"), Ok(0.2));
        assert_eq!(parse_ratio("20%"), Ok(0.2));
        assert_eq!(parse_ratio("0"), Ok(0.0));
        for bad in ["-0.1", "11", "x", "nan", "inf", "%"] {
            assert!(parse_ratio(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_rate("1/min"), Ok(1.0 / 60_000.0));
        assert_eq!(parse_rate("10/s"), Ok(0.01));
        assert_eq!(parse_rate("0/s"), Ok(0.0));
        assert_eq!(parse_rate("36/h"), Ok(0.00001));
        for bad in ["1", "1/", "/s", "-1/s", "1/week", "x/s", "inf/s"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn human_durations() {
        assert_eq!(human(Duration::from_millis(734)), "734ms");
        assert_eq!(human(Duration::from_millis(4210)), "4.2s");
        assert_eq!(human(Duration::from_secs(15)), "15s");
        assert_eq!(human(Duration::from_secs(125)), "2m 5s");
        assert_eq!(human(Duration::from_secs(5400)), "1h 30m");
        assert_eq!(human(Duration::from_secs(10 * 86_400 + 5)), "10 days");
        assert_eq!(
            human(Duration::from_secs(7972 * 365 * 86_400)),
            "7972 years"
        );
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn durations_in_every_documented_form() {
        assert_eq!(parse_duration("250ms"), Ok(ms(250)));
        assert_eq!(parse_duration("1s"), Ok(ms(1000)));
        assert_eq!(parse_duration("2m"), Ok(ms(120_000)));
        assert_eq!(parse_duration("1h 30m"), Ok(ms(5_400_000)));
        assert_eq!(parse_duration("1min"), Ok(ms(60_000)));
        assert_eq!(parse_duration("1.5s"), Ok(ms(1500)));
        assert_eq!(parse_duration("0.25m"), Ok(ms(15_000)));
        assert_eq!(parse_duration("1.5h 30s"), Ok(ms(5_430_000)));
        assert_eq!(parse_duration("0.5"), Ok(ms(500)));
        assert_eq!(parse_duration("3"), Ok(ms(3000)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("1e-12"), Ok(Duration::from_nanos(1)));
        // Too small for an f64, yet positive: as coreutils timeout reads it.
        assert_eq!(parse_duration("1e-10000"), Ok(Duration::from_nanos(1)));
        assert_eq!(parse_duration("0e-10000"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("0.000e5"), Ok(Duration::ZERO));
        assert!(parse_limit("0").unwrap_err().contains("leave the flag out"));
        assert_eq!(parse_limit("1e-10000"), Ok(Duration::from_nanos(1)));
    }

    #[test]
    fn malformed_and_out_of_range_durations_are_rejected() {
        for bad in [
            "",
            "xyz",
            "-1",
            "-1s",
            "nan",
            "NaN",
            "inf",
            "1e30",
            "200y",
            "5 parsecs",
            "1.2.3s",
            "s",
            "9223372036854775808d",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} should be rejected");
        }
        assert!(parse_positive_duration("0").is_err());
        assert!(parse_positive_duration("0s").is_err());
    }

    #[test]
    fn attempts_accept_numbers_and_unlimited() {
        assert_eq!(parse_attempts("5"), Ok(AttemptLimit(Some(5))));
        assert_eq!(parse_attempts("unlimited"), Ok(AttemptLimit(None)));
        assert!(parse_attempts("0").is_err());
        assert!(parse_attempts("-3").is_err());
        assert!(parse_attempts("many").is_err());
        assert!(
            parse_attempts("18446744073709551616")
                .unwrap_err()
                .contains("too large")
        );
    }

    #[test]
    fn multipliers_must_be_finite_and_at_least_one() {
        assert_eq!(parse_multiplier("1.6"), Ok(1.6));
        assert_eq!(parse_multiplier("1"), Ok(1.0));
        for bad in ["0.5", "inf", "nan", "x", "-2"] {
            assert!(parse_multiplier(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn jitter_kinds_and_proportions() {
        assert_eq!(parse_jitter("full"), Ok(Jitter::Full));
        assert_eq!(parse_jitter("Equal"), Ok(Jitter::Equal));
        assert_eq!(parse_jitter("decorrelated"), Ok(Jitter::Decorrelated));
        assert_eq!(parse_jitter("none"), Ok(Jitter::None));
        assert_eq!(parse_jitter("0.2"), Ok(Jitter::Proportional(0.2)));
        assert_eq!(parse_jitter("20%"), Ok(Jitter::Proportional(0.2)));
        assert_eq!(parse_jitter("1"), Ok(Jitter::Proportional(1.0)));
        for bad in ["0", "0%", "1.5", "150%", "nan", "random"] {
            assert!(parse_jitter(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn code_lists_with_ranges() {
        let set = parse_codes("1,7,28,52-56").unwrap();
        for code in [1, 7, 28, 52, 53, 54, 55, 56] {
            assert!(set.contains(code));
        }
        for code in [0, 2, 51, 57, 255, -1, 256] {
            assert!(!set.contains(code));
        }
        assert!(parse_codes("0-255").unwrap().contains(255));
        assert_eq!(set.to_string(), "1,7,28,52-56");
        assert_eq!(parse_codes("255,0").unwrap().to_string(), "0,255");
        for bad in ["", "1,,2", "256", "5-3", "a", "-1", "1-"] {
            assert!(parse_codes(bad).is_err(), "{bad}");
        }
        assert!(parse_codes("1-").unwrap_err().contains("needs both ends"));
        assert!(parse_codes("300").unwrap_err().contains("out of range"));
    }

    #[test]
    fn code_lists_print_as_written() {
        for text in ["1,7,28,52-56", "0", "0-255", "3,5-6,255"] {
            assert_eq!(parse_codes(text).unwrap().to_string(), text);
        }
        assert_eq!(parse_codes("7,1,2,3").unwrap().to_string(), "1-3,7");
    }
}
