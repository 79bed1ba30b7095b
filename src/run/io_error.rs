//! I/O errors named in words and by name (`No space left on device
//! (ENOSPC)`), so that messages say what went wrong and give the name a
//! user can search for.

use std::io;

/// An I/O error in words and by name: `No space left on device (ENOSPC)`.
pub(crate) fn error_text(err: &io::Error) -> String {
    let Some(code) = err.raw_os_error() else {
        return err.to_string();
    };
    let words = io::Error::from_raw_os_error(code).to_string();
    // "No space left on device (os error 28)" -> "No space left on device"
    let words = words
        .rsplit_once(" (os error")
        .map_or(words.as_str(), |(text, _)| text)
        .to_string();
    match crate::sys::fs::error_name(code) {
        Some(name) => format!("{words} ({name})"),
        None => format!("{words} ({} {code})", crate::sys::fs::ERROR_NUMBER),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn errors_are_named_in_words_and_by_errno() {
        let full = io::Error::from_raw_os_error(libc::ENOSPC);
        assert_eq!(error_text(&full), "No space left on device (ENOSPC)");
        let eio = io::Error::from_raw_os_error(libc::EIO);
        // The words are the C library's own.
        let words = if cfg!(target_env = "musl") {
            "I/O error"
        } else {
            "Input/output error"
        };
        assert_eq!(error_text(&eio), format!("{words} (EIO)"));
    }
}
