//! Verdicts that do not depend on the locale. A preset's output patterns
//! are the tools' English messages; under `LANG=de_DE.UTF-8` git, wget,
//! apt and the C library's `strerror` speak German, and a refused
//! connection would read as nothing the preset knows. So when a preset's
//! output patterns are in force the command gets its messages in the C
//! locale, and only its messages: dates, numbers, sorting and the
//! character set stay the user's.
//!
//! How, by the rules of POSIX and gettext:
//! - the messages' locale is `LC_ALL`, else `LC_MESSAGES`, else `LANG` (an
//!   empty variable counts as unset); `LC_MESSAGES=C` makes it C unless
//!   `LC_ALL` is set, so a set `LC_ALL` is emptied and its value given to
//!   every other category variable instead (`LC_CTYPE`, `LC_TIME`, ...);
//! - GNU gettext ignores `LANGUAGE` when the messages' locale is C, but not
//!   every implementation does (Python's `gettext` module reads it first),
//!   so a set `LANGUAGE` is emptied too.
//!
//! Variables are emptied, not removed: the child's environment is retry's
//! with variables added or replaced, and an empty locale variable is unset
//! for every reader (POSIX: "defined and not null").

use std::ffi::{OsStr, OsString};

use crate::text::sanitize_line;

/// The categories `LC_ALL` stands for, but for `LC_MESSAGES` (glibc's
/// list; a system without one ignores its variable).
const OTHER_CATEGORIES: [&str; 11] = [
    "LC_CTYPE",
    "LC_NUMERIC",
    "LC_TIME",
    "LC_COLLATE",
    "LC_MONETARY",
    "LC_PAPER",
    "LC_NAME",
    "LC_ADDRESS",
    "LC_TELEPHONE",
    "LC_MEASUREMENT",
    "LC_IDENTIFICATION",
];

/// The variables that put the command's messages in the C locale, and
/// what `-v` and `--explain` say about them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MessagesInC {
    pub(crate) vars: Vec<(&'static str, OsString)>,
    pub(crate) said: String,
}

/// C, POSIX or C.UTF-8 (and the like): messages untranslated already.
fn is_c(locale: &str) -> bool {
    locale == "C" || locale == "POSIX" || locale.starts_with("C.")
}

/// What to set for a command whose output a preset's patterns read, given
/// retry's environment (`var` reads one variable). `None`: its messages
/// are in the C locale already.
pub(crate) fn messages_in_c(var: &dyn Fn(&str) -> Option<OsString>) -> Option<MessagesInC> {
    let set = |name: &str| var(name).filter(|value| !value.is_empty());
    let all = set("LC_ALL");
    let messages = all
        .clone()
        .or_else(|| set("LC_MESSAGES"))
        .or_else(|| set("LANG"));
    let language = set("LANGUAGE");
    let translated = messages
        .as_ref()
        .is_some_and(|locale| !is_c(&locale.to_string_lossy()));
    if !translated && language.is_none() {
        return None;
    }
    let mut vars = Vec::new();
    let mut changes = Vec::new();
    if translated {
        if let Some(all) = &all {
            vars.push(("LC_ALL", OsString::new()));
            vars.extend(OTHER_CATEGORIES.iter().map(|name| (*name, all.clone())));
            changes.push(format!(
                "LC_ALL={} is given as each other LC_* variable",
                shown(all)
            ));
        }
        vars.push(("LC_MESSAGES", OsString::from("C")));
        changes.insert(
            0,
            format!(
                "LC_MESSAGES=C (it was {})",
                shown(&messages.unwrap_or_default())
            ),
        );
    }
    if let Some(language) = language {
        vars.push(("LANGUAGE", OsString::new()));
        changes.push(format!("LANGUAGE={} is emptied", shown(&language)));
    }
    Some(MessagesInC {
        vars,
        said: format!(
            "the command's messages are in the C locale, as the preset's patterns are: {}",
            changes.join("; ")
        ),
    })
}

/// A variable's value in a message of retry's: on one short line, its
/// controls escaped (it is the caller's text).
fn shown(value: &OsStr) -> String {
    sanitize_line(&value.to_string_lossy(), 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(env: &[(&str, &str)]) -> Option<MessagesInC> {
        let env: Vec<(String, OsString)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        messages_in_c(&|name| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }

    fn vars(env: &[(&str, &str)]) -> Vec<(&'static str, String)> {
        with(env)
            .map(|m| m.vars)
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.to_string_lossy().into_owned()))
            .collect()
    }

    #[test]
    fn a_c_locale_or_none_changes_nothing() {
        assert_eq!(with(&[]), None);
        assert_eq!(with(&[("LANG", "C")]), None);
        assert_eq!(with(&[("LANG", "C.UTF-8"), ("LC_ALL", "")]), None);
        assert_eq!(with(&[("LC_ALL", "POSIX"), ("LANG", "de_DE.UTF-8")]), None);
        assert_eq!(with(&[("LC_MESSAGES", "C"), ("LANG", "ja_JP.UTF-8")]), None);
    }

    #[test]
    fn lang_or_lc_messages_gives_way_to_lc_messages_c() {
        assert_eq!(
            vars(&[("LANG", "de_DE.UTF-8")]),
            [("LC_MESSAGES", "C".to_string())]
        );
        assert_eq!(
            vars(&[("LANG", "C"), ("LC_MESSAGES", "fr_FR.UTF-8")]),
            [("LC_MESSAGES", "C".to_string())]
        );
        let said = with(&[("LANG", "de_DE.UTF-8")]).unwrap().said;
        assert!(
            said.contains("LC_MESSAGES=C (it was de_DE.UTF-8)"),
            "{said}"
        );
    }

    #[test]
    fn lc_all_is_spread_over_the_other_categories() {
        let got = vars(&[("LC_ALL", "ja_JP.UTF-8"), ("LANG", "C")]);
        assert_eq!(got[0], ("LC_ALL", String::new()));
        assert_eq!(got.last().unwrap(), &("LC_MESSAGES", "C".to_string()));
        assert_eq!(got.len(), 1 + OTHER_CATEGORIES.len() + 1);
        for name in OTHER_CATEGORIES {
            assert!(got.contains(&(name, "ja_JP.UTF-8".to_string())), "{name}");
        }
    }

    #[test]
    fn language_is_emptied_even_in_the_c_locale() {
        assert_eq!(
            vars(&[("LANGUAGE", "de:fr")]),
            [("LANGUAGE", String::new())]
        );
        assert_eq!(
            vars(&[("LANG", "fr_FR.UTF-8"), ("LANGUAGE", "fr")]),
            [
                ("LC_MESSAGES", "C".to_string()),
                ("LANGUAGE", String::new())
            ]
        );
    }

    #[test]
    fn what_is_said_quotes_the_environment_on_one_line() {
        // A locale variable is the caller's text: it cannot forge a line
        // of retry's, nor colour the terminal.
        let forged = "de_DE.UTF-8\nretry: attempt 1/1 succeeded\x1b[31m";
        for env in [
            [("LANG", forged), ("LANGUAGE", "")],
            [("LC_ALL", forged), ("LANGUAGE", "")],
            [("LANG", "C"), ("LANGUAGE", forged)],
        ] {
            let said = with(&env).unwrap().said;
            assert!(!said.contains(['\n', '\x1b']), "{said}");
            assert!(said.contains("de_DE.UTF-8\\n"), "{said}");
        }
    }
}
