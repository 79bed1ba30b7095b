//! The problems found in one presets file: collected with the line each
//! is on ([`Checker`]), and shown in one message ([`FileErrors`]).

use std::ops::Range;

/// Problems found in one file, each with its line.
#[derive(Debug)]
pub(crate) struct FileErrors {
    pub(crate) file: String,
    /// `(line, message)`, in the order found.
    pub(crate) problems: Vec<(usize, String)>,
}

impl FileErrors {
    /// Every problem, each as `FILE:LINE: what`.
    pub(crate) fn each(&self) -> Vec<String> {
        self.problems
            .iter()
            .map(|(line, message)| format!("{}:{line}: {message}", self.file))
            .collect()
    }
}

impl std::fmt::Display for FileErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown: Vec<String> = self
            .problems
            .iter()
            .take(5)
            .map(|(line, message)| format!("{}:{line}: {message}", self.file))
            .collect();
        f.write_str(&shown.join("; "))?;
        if self.problems.len() > 5 {
            write!(f, "; and {} more", self.problems.len() - 5)?;
        }
        Ok(())
    }
}

/// The problems found so far, each with its line in `text`.
pub(super) struct Checker<'a> {
    pub(super) text: &'a str,
    pub(super) problems: Vec<(usize, String)>,
}

impl Checker<'_> {
    pub(super) fn line_of(&self, span: &Range<usize>) -> usize {
        let end = span.start.min(self.text.len());
        memchr::memchr_iter(b'\n', &self.text.as_bytes()[..end]).count() + 1
    }

    pub(super) fn add(&mut self, span: &Range<usize>, message: impl Into<String>) {
        let line = self.line_of(span);
        self.problems.push((line, message.into()));
    }
}
