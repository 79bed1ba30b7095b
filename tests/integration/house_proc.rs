//! The portable path names no `/proc`: FreeBSD and macOS have none (and
//! the macOS CI job runs the unit tests), so every `/proc` path in
//! `src/`, in its code or in its unit tests, stands in code that is only
//! compiled on Linux: an item under `#[cfg(target_os = "linux")]` (or an
//! `all(...)` holding it), or a file whose `mod` is declared so. Comments
//! may name it; the few other places that do are listed, each with its
//! reason.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::house::{blank, sources};

/// Files (under `src/`) allowed to name `/proc` outside Linux-only code,
/// and why.
const ALLOWED: [(&str, &str); 2] = [
    (
        "presets/advice.rs",
        "a path curl may be given (`-D /proc/self/fd/2`), compared as text; nothing is opened",
    ),
    (
        "cli/generate.rs",
        "the manual's words for how Linux finds an attempt's processes; nothing is opened",
    ),
];

/// Whether a `cfg` predicate holds only on Linux: `target_os = "linux"`,
/// or an `all(...)` with such a part.
fn linux_only(predicate: &str) -> bool {
    let predicate: String = predicate.chars().filter(|c| !c.is_whitespace()).collect();
    if predicate == "target_os=\"linux\"" {
        return true;
    }
    let Some(inner) = predicate
        .strip_prefix("all(")
        .and_then(|rest| rest.strip_suffix(')'))
    else {
        return false;
    };
    let (mut depth, mut from, mut parts) = (0, 0, Vec::new());
    for (at, c) in inner.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[from..at]);
                from = at + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[from..]);
    parts.into_iter().any(linux_only)
}

/// The end of the item that starts at `from` in `code` (comments and
/// strings blanked): its first `;` outside brackets, or the bracket that
/// closes its first `{`, or the end of the block it stands in.
fn item_end(code: &[char], from: usize) -> usize {
    let mut depth = 0i32;
    for (at, &c) in code.iter().enumerate().skip(from) {
        match c {
            ';' if depth == 0 => return at + 1,
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth -= 1;
                if depth < 0 || (depth == 0 && c == '}') {
                    return at + 1;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// Where `pattern` stands in `chars`, from `from` on.
fn find(chars: &[char], pattern: &str, from: usize) -> Option<usize> {
    let pattern: Vec<char> = pattern.chars().collect();
    (from..chars.len()).find(|&at| chars[at..].starts_with(&pattern))
}

/// A file's Linux-only stretches (start, end, in characters), by its `cfg`
/// attributes, and the files its Linux-only `mod NAME;` declarations bring
/// in.
fn linux_only_code(path: &Path, text: &str) -> (Vec<(usize, usize)>, Vec<PathBuf>) {
    let original: Vec<char> = text.chars().collect();
    let code = blank(text, false);
    let words = |from: usize, to: usize| original[from..to].iter().collect::<String>();
    let (mut stretches, mut modules) = (Vec::new(), Vec::new());
    let mut from = 0;
    while let Some(start) = find(&code, "#[cfg(", from) {
        from = start + 1;
        let open = start + "#[cfg(".len();
        // Just past the `)` that closes the predicate; then `]`.
        let close = item_end(&code, open);
        let predicate = words(open, close - 1);
        if !linux_only(&predicate) {
            continue;
        }
        let end = item_end(&code, close + 1);
        stretches.push((start, end));
        // The item: `mod NAME;`, maybe with `#[path = "..."]` before it.
        let item = words(close + 1, end);
        let blanked: String = code[close + 1..end].iter().collect();
        let Some(name) = blanked
            .split_whitespace()
            .skip_while(|w| *w != "mod")
            .nth(1)
            .and_then(|n| n.strip_suffix(';'))
        else {
            continue;
        };
        let dir = path.parent().unwrap();
        let named = item
            .split("#[path = \"")
            .nth(1)
            .and_then(|rest| rest.split('"').next());
        let stem = path.file_stem().unwrap();
        let home = if ["mod", "lib", "main"].iter().any(|s| stem == *s) {
            dir.to_path_buf()
        } else {
            dir.join(stem)
        };
        if let Some(file) = named {
            modules.push(dir.join(file));
        } else {
            modules.push(home.join(format!("{name}.rs")));
            modules.push(home.join(name));
        }
    }
    let whole_file = text
        .lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix("#![cfg(")?.strip_suffix(")]"))
        .is_some_and(linux_only);
    if whole_file {
        stretches.push((0, code.len()));
    }
    (stretches, modules)
}

/// Every `/proc` path in `text`'s code (not its comments): their places.
fn proc_paths(text: &str) -> Vec<usize> {
    let view: String = blank(text, true).iter().collect();
    let chars: Vec<char> = view.chars().collect();
    let mut found = Vec::new();
    for (byte, _) in view.match_indices("/proc") {
        let at = view[..byte].chars().count();
        let after = chars.get(at + 5).copied();
        if !after.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-') {
            found.push(at);
        }
    }
    found
}

#[test]
fn outside_linux_only_code_no_source_names_a_proc_path() {
    let files = sources();
    let mut linux_files: BTreeSet<PathBuf> = BTreeSet::new();
    let mut stretches = Vec::new();
    for (path, text) in &files {
        let (own, modules) = linux_only_code(path, text);
        stretches.push(own);
        linux_files.extend(modules);
    }
    let mut found = Vec::new();
    for ((path, text), own) in files.iter().zip(&stretches) {
        let shown = path.display().to_string();
        if ALLOWED.iter().any(|(file, _)| *file == shown)
            || linux_files.iter().any(|dir| path.starts_with(dir))
        {
            continue;
        }
        for at in proc_paths(text) {
            if !own.iter().any(|&(start, end)| (start..end).contains(&at)) {
                let line = text.chars().take(at).filter(|&c| c == '\n').count() + 1;
                found.push(format!("src/{shown}:{line}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "/proc named in code FreeBSD and macOS compile (put it under #[cfg(target_os = \"linux\")], \
         or list the file in ALLOWED with its reason): {}",
        found.join(", ")
    );
    // The Linux process table is found as Linux-only by its `mod`.
    assert!(
        linux_files.contains(&PathBuf::from("sys/process/linux.rs")),
        "{linux_files:?}"
    );
}

#[test]
fn the_guard_reads_cfg_items_strings_and_comments() {
    let code = r##"
//! Not "/proc" in a comment.
#[cfg(target_os = "linux")]
fn a() -> String { format!("/proc/{}", 1) }
#[cfg(all(target_os = "linux", not(retry_posix)))]
/// A doc comment between.
return std::fs::read("/proc/self/stat");
#[cfg(any(target_os = "linux", target_os = "freebsd"))]
fn b() { let _ = "/proc/b"; }
#[cfg(not(target_os = "linux"))]
fn c() { let _ = r#"/proc/c"#; }
fn d() { let _ = "src/process/mod.rs"; let q = '"'; let _ = "/proc"; }
#[cfg(target_os = "linux")]
#[path = "process/linux.rs"]
mod imp;
#[cfg(target_os = "linux")]
mod keeper;
"##;
    let (stretches, modules) = linux_only_code(Path::new("sys/process.rs"), code);
    let outside: Vec<usize> = proc_paths(code)
        .into_iter()
        .filter(|at| !stretches.iter().any(|&(s, e)| (s..e).contains(at)))
        .map(|at| code.chars().take(at).filter(|&c| c == '\n').count() + 1)
        .collect();
    assert_eq!(outside, [9, 11, 12]);
    assert_eq!(
        modules,
        [
            PathBuf::from("sys/process/linux.rs"),
            PathBuf::from("sys/process/keeper.rs"),
            PathBuf::from("sys/process/keeper"),
        ]
    );
    assert!(linux_only("all(target_os = \"linux\", not(retry_posix))"));
    assert!(!linux_only(
        "any(target_os = \"linux\", target_os = \"freebsd\")"
    ));
    assert!(!linux_only("not(target_os = \"linux\")"));
    for (file, reason) in ALLOWED {
        assert!(!reason.is_empty(), "{file}");
    }
}
