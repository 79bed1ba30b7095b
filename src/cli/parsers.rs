//! Value parsers of the command line's own flags: preset and state
//! names, and output patterns (their syntax checked, and one that is not
//! UTF-8 refused with the form that matches its bytes).
//!
//! Syntax only: a value that parses is still judged by `config` (patterns
//! are compiled there, under one size limit for the whole run).

use clap::error::ErrorKind;

/// A preset's name, or a word `--preset` reserves (`list`, `show`, `none`).
pub(super) fn parse_preset(text: &str) -> Result<String, String> {
    if crate::presets::schema::RESERVED.contains(&text) {
        return Ok(text.to_string());
    }
    crate::presets::schema::check_name(text)
        .map(|()| text.to_string())
        .map_err(|err| err.to_string())
}

/// A value parser that also names the values a shell should complete
/// (`--preset`, `--jitter`), without limiting the values it accepts: a
/// user preset, a jitter proportion.
#[derive(Clone, Copy)]
pub(super) struct Suggesting<T: 'static> {
    pub(super) parse: fn(&str) -> Result<T, String>,
    pub(super) values: fn() -> Vec<&'static str>,
}

impl<T: Clone + Send + Sync + 'static> clap::builder::TypedValueParser for Suggesting<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        self.parse.parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            (self.values)()
                .into_iter()
                .map(clap::builder::PossibleValue::new),
        ))
    }
}

/// `--preset`: the built-in presets and the reserved words.
pub(super) const PRESETS: Suggesting<String> = Suggesting {
    parse: parse_preset,
    values: || {
        let mut names: Vec<&str> = crate::presets::builtin_names().collect();
        names.extend(crate::presets::schema::RESERVED);
        names
    },
};

/// `--jitter`: the kinds by name (a proportion is typed).
pub(super) const JITTERS: Suggesting<crate::values::Jitter> = Suggesting {
    parse: crate::values::parse_jitter,
    values: || vec!["full", "equal", "decorrelated", "none"],
};

/// Circuit and budget names become file names and keys.
pub(super) fn parse_state_name(text: &str) -> Result<String, String> {
    crate::circuit::check_name(text).map(|()| text.to_string())
}

/// An output pattern: its syntax checked here, so that a typo is told like
/// any bad value; it is compiled with every other pattern of the run, under
/// one total size limit (`config`).
fn parse_pattern(text: &str) -> Result<String, String> {
    regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(text)
        .map(|_| text.to_string())
        .map_err(|err| err.to_string())
}

/// [`parse_pattern`] for a value taken as bytes, so that one that is not
/// UTF-8 is refused naming its flag and the form that matches raw bytes
/// (clap's own refusal names neither).
#[derive(Clone, Copy, Debug)]
pub(super) struct PatternParser;

impl clap::builder::TypedValueParser for PatternParser {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        if value.to_str().is_some() {
            return clap::builder::StringValueParser::new()
                .try_map(|text| parse_pattern(&text))
                .parse_ref(cmd, arg, value);
        }
        let bytes = value.as_encoded_bytes();
        let flag = arg.map_or_else(|| "REGEX".to_string(), ToString::to_string);
        let shown = escape_non_utf8(bytes, hex_escapes);
        // A group `(?-u:\xNN)` is a literal only outside a bracket class
        // (inside one it is the characters `(`, `?`, `-`...): with a class
        // anywhere, the whole pattern is suggested with `(?-u)` in front.
        let (form, suggested) = if bytes.contains(&b'[') {
            (
                "(?-u) in front and \\xNN (\\w, \\d and classes then match ASCII only)",
                format!("(?-u){}", escape_non_utf8(bytes, hex_escapes)),
            )
        } else {
            (
                "(?-u:\\xNN)",
                escape_non_utf8(bytes, |run| format!("(?-u:{})", hex_escapes(run))),
            )
        };
        Err(clap::Error::raw(
            ErrorKind::InvalidUtf8,
            format!(
                "invalid value '{shown}' for '{flag}': not UTF-8; to match bytes, \
                 write them as {form}: '{suggested}'\n"
            ),
        )
        .with_cmd(cmd))
    }
}

/// `\xNN` for each byte.
fn hex_escapes(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|byte| format!("\\x{byte:02x}"))
        .collect::<Vec<_>>()
        .concat()
}

/// `bytes` as text, each run of bytes that is not UTF-8 written by `escape`.
fn escape_non_utf8(bytes: &[u8], escape: impl Fn(&[u8]) -> String) -> String {
    let mut text = String::new();
    let mut invalid = Vec::new();
    for chunk in bytes.utf8_chunks() {
        if !chunk.valid().is_empty() && !invalid.is_empty() {
            text.push_str(&escape(&invalid));
            invalid.clear();
        }
        text.push_str(chunk.valid());
        invalid.extend_from_slice(chunk.invalid());
    }
    if !invalid.is_empty() {
        text.push_str(&escape(&invalid));
    }
    text
}

/// `--hedge-after`: `p95`, or a duration greater than zero.
pub(crate) fn parse_hedge_after(text: &str) -> Result<crate::policy::hedging::HedgeAfter, String> {
    use crate::policy::hedging::HedgeAfter;
    if text.trim().eq_ignore_ascii_case("p95") {
        return Ok(HedgeAfter::P95);
    }
    crate::values::parse_positive_duration(text)
        .map(HedgeAfter::Fixed)
        .map_err(|why| format!("{why} (a duration such as 2s, or p95)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_that_are_not_utf8_are_shown_as_escapes() {
        assert_eq!(hex_escapes(b"\xff\x00"), "\\xff\\x00");
        assert_eq!(
            escape_non_utf8(b"a\xffb\xfe\xfd", hex_escapes),
            "a\\xffb\\xfe\\xfd"
        );
        let grouped = escape_non_utf8(b"a\xff", |run| format!("(?-u:{})", hex_escapes(run)));
        assert_eq!(grouped, "a(?-u:\\xff)");
    }

    #[test]
    fn a_pattern_is_checked_for_syntax_only() {
        assert_eq!(parse_pattern("^ready$"), Ok("^ready$".to_string()));
        assert!(parse_pattern("a(b").is_err());
        assert_eq!(parse_preset("none"), Ok("none".to_string()));
    }
}
