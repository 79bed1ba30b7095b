//! Text that others wrote (the child's files and output, the environment,
//! the command line) made fit for one of retry's own lines: a newline or a
//! carriage return in it must not start a line that looks like retry's, and
//! an escape sequence must not reach the terminal.
//!
//! The lowest room: it imports nothing from the crate.

/// `text` on one line of at most `max_chars` characters: control characters
/// (C0 and C1, DEL, and the Unicode line and paragraph separators and
/// direction overrides) become visible escapes (`\n`, `\r`, `\t`, `\e`,
/// `\x7f`, `\u{2028}`); a text cut short ends with `...`.
pub(crate) fn sanitize_line(text: &str, max_chars: usize) -> String {
    let pieces: Vec<(String, usize)> = text
        .chars()
        .map(|c| {
            let piece = escape(c);
            let len = piece.chars().count();
            (piece, len)
        })
        .collect();
    let total: usize = pieces.iter().map(|(_, len)| len).sum();
    if total <= max_chars {
        return pieces.into_iter().map(|(piece, _)| piece).collect();
    }
    // Whole pieces only, so no escape is ever cut in half.
    let room = max_chars.saturating_sub(3);
    let mut line = String::new();
    let mut used = 0;
    for (piece, len) in pieces {
        if used + len > room {
            break;
        }
        line.push_str(&piece);
        used += len;
    }
    line.push_str(&"..."[..max_chars.min(3)]);
    line
}

/// `text` with its control characters escaped, however long.
pub(crate) fn escape_controls(text: &str) -> String {
    sanitize_line(text, usize::MAX)
}

/// `text` fit for retry's own lines, which may be several (clap's usage,
/// a regex error's caret line): every control character escaped as
/// [`sanitize_line`] does, but `\n`, which starts the next line of the
/// message. Every human message passes here on its way out
/// (`report::text`), so text a server, a command or a file wrote (a
/// `RateLimit` value, a reason, a path) never brings an escape sequence,
/// a carriage return or a bell to a terminal or a log file.
pub(crate) fn for_lines(text: &str) -> String {
    if !text.chars().any(|c| c != '\n' && needs_escape(c)) {
        return text.to_string();
    }
    text.split('\n')
        .map(escape_controls)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A command line as a shell would take it back: each word shell-quoted
/// (`sh -c 'echo a; exit 3'`), on one line. Not a crate's quoting: those
/// keep a newline or an escape sequence as it is, which would break the
/// line or reach the terminal; here such a word is written `$'a\nb'`
/// (bash, zsh, ksh and POSIX.1-2024 sh read it back), as are bytes that
/// are not UTF-8 (`\xff`).
pub(crate) fn shell_command<S: AsRef<std::ffi::OsStr>>(words: &[S]) -> String {
    words
        .iter()
        .map(|word| shell_word(word.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One word of [`shell_command`].
pub(crate) fn shell_word(word: &std::ffi::OsStr) -> String {
    let bytes = word.as_encoded_bytes();
    let plain = |b: &u8| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(b);
    if !bytes.is_empty() && bytes.iter().all(plain) {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    let printable = word
        .to_str()
        .is_some_and(|text| !text.chars().any(needs_escape));
    if printable {
        return format!(
            "'{}'",
            String::from_utf8_lossy(bytes).replace('\'', r"'\''")
        );
    }
    let mut quoted = String::from("$'");
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => quoted.push_str(r"\\"),
                '\'' => quoted.push_str(r"\'"),
                c if u32::from(c) < 0x80 && c.is_control() => quoted.push_str(&escape(c)),
                c if needs_escape(c) => quoted.push_str(&format!("\\u{:04x}", u32::from(c))),
                c => quoted.push(c),
            }
        }
        for byte in chunk.invalid() {
            quoted.push_str(&format!("\\x{byte:02x}"));
        }
    }
    quoted.push('\'');
    quoted
}

fn escape(c: char) -> String {
    match c {
        '\n' => "\\n".to_string(),
        '\r' => "\\r".to_string(),
        '\t' => "\\t".to_string(),
        '\x1b' => "\\e".to_string(),
        c if u32::from(c) < 0x80 && c.is_control() => format!("\\x{:02x}", u32::from(c)),
        c if needs_escape(c) => format!("\\u{{{:x}}}", u32::from(c)),
        c => c.to_string(),
    }
}

/// Non-ASCII characters that move or hide text: C1 controls, the line and
/// paragraph separators, and the bidirectional overrides and isolates.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_become_visible() {
        assert_eq!(sanitize_line("a\nretry: forged", 60), "a\\nretry: forged");
        assert_eq!(sanitize_line("x\r\ty", 60), "x\\r\\ty");
        assert_eq!(sanitize_line("\x1b[31mred", 60), "\\e[31mred");
        assert_eq!(sanitize_line("\0\x07\x7f", 60), "\\x00\\x07\\x7f");
        assert_eq!(
            sanitize_line("\u{85}\u{2028}\u{202e}", 60),
            "\\u{85}\\u{2028}\\u{202e}"
        );
        assert_eq!(sanitize_line("héllo wörld", 60), "héllo wörld");
    }

    #[test]
    fn a_message_keeps_its_lines_and_loses_every_other_control() {
        assert_eq!(for_lines("a\nb"), "a\nb");
        assert_eq!(
            for_lines("t=\x1b]0;x\x07\r\nz\u{9b}1m"),
            "t=\\e]0;x\\x07\\r\nz\\u{9b}1m"
        );
        let every: String = (0u32..=0x0010_ffff).filter_map(char::from_u32).collect();
        let safe = for_lines(&every);
        assert!(
            safe.chars().all(|c| c == '\n' || !needs_escape(c)),
            "a control character got through"
        );
    }

    #[test]
    fn a_command_line_is_shown_as_a_shell_would_read_it() {
        assert_eq!(
            shell_command(&["sh", "-c", "echo a; exit 3"]),
            "sh -c 'echo a; exit 3'"
        );
        assert_eq!(
            shell_command(&["curl", "-fsS", "https://x.example/a?b=1"]),
            "curl -fsS 'https://x.example/a?b=1'"
        );
        assert_eq!(
            shell_command(&["echo", "", "it's", "a b"]),
            r"echo '' 'it'\''s' 'a b'"
        );
        assert_eq!(
            shell_command(&["printf", "a\nb\x1b[1m", "\\'"]),
            r"printf $'a\nb\e[1m' '\'\'''"
        );
        assert_eq!(shell_command(&["x", "\u{2028}\\"]), r"x $'\u2028\\'");
        assert_eq!(
            shell_command(&["~/bin/x", "*", "$HOME"]),
            "'~/bin/x' '*' '$HOME'"
        );
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let word = std::ffi::OsStr::from_bytes(b"caf\xe9 \n");
            assert_eq!(shell_word(word), r"$'caf\xe9 \n'");
        }
    }

    #[test]
    fn long_text_is_cut_to_the_limit() {
        let long = "x".repeat(1000);
        let line = sanitize_line(&long, 60);
        assert_eq!(line.chars().count(), 60);
        assert!(line.ends_with("..."));
        assert_eq!(sanitize_line("short", 5), "short");
        assert_eq!(sanitize_line("shorts", 5), "sh...");
    }

    #[test]
    fn never_more_than_the_limit_and_never_half_an_escape() {
        let text = "ab\n\x01\u{2028}cd\\xyz\u{1b}\u{85}tail\\";
        let whole = escape_controls(text);
        for max in 0..=whole.chars().count() + 1 {
            let line = sanitize_line(text, max);
            assert!(line.chars().count() <= max, "{max}: {line:?}");
            assert!(!line.contains('\n') && !line.contains('\x1b'), "{line:?}");
            if line == whole {
                continue;
            }
            let body = line.strip_suffix(&"..."[..max.min(3)]).unwrap();
            // What is kept is a run of whole escapes from the start.
            let mut kept = String::new();
            for c in text.chars() {
                if kept == body {
                    break;
                }
                kept.push_str(&escape(c));
            }
            assert_eq!(kept, body, "{max}: {line:?} cuts an escape");
        }
    }
}
