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
