//! The layout of the source itself: modules import one another in one
//! direction only (no loop between files), so each room can be read, tested
//! and changed from the bottom up; no file's non-test code is over 450
//! lines; and every `unsafe` is in `src/sys/`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module name -> the crate modules its non-test code names (`crate::x`).
fn import_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut pending = vec![src.clone()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            // A file belongs to the top-level module of its path.
            let relative = path.strip_prefix(&src).unwrap();
            let first = relative.components().next().unwrap();
            let module = Path::new(first.as_os_str())
                .file_stem()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if module == "lib" || module == "main" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let code = non_test_code(&text);
            let names = graph.entry(module.clone()).or_default();
            for name in crate_names(code) {
                if name != module {
                    names.insert(name);
                }
            }
        }
    }
    graph
}

/// The modules named after `crate::` (also inside `crate::{a, b::c}`).
pub(crate) fn crate_names(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for part in group.split(',') {
                let name = part.trim().split("::").next().unwrap_or("");
                if !name.is_empty() && name != "self" {
                    names.push(name.to_string());
                }
            }
        } else {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            names.push(rest[..end].to_string());
        }
    }
    names
}

/// A loop in `graph`, as the list of modules around it.
pub(crate) fn find_loop(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        module: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|m| m == module) {
            let mut cycle = path[start..].to_vec();
            cycle.push(module.to_string());
            return Some(cycle);
        }
        if done.contains(module) {
            return None;
        }
        path.push(module.to_string());
        for next in graph.get(module).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(module.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|module| visit(module, graph, &mut Vec::new(), &mut done))
}

#[test]
fn modules_import_each_other_in_one_direction_only() {
    let graph = import_graph();
    assert!(graph.len() > 10, "read the source tree: {graph:?}");
    assert!(graph["run"].contains("policy"), "{graph:?}");
    if let Some(cycle) = find_loop(&graph) {
        panic!(
            "modules import each other in a loop: {}",
            cycle.join(" -> ")
        );
    }
}

/// Every source file's module path (`src/cli/config/mod.rs` is
/// `cli::config`, `src/cli/early.rs` is `cli::early`) and its non-test
/// code with comments and strings blanked.
fn module_files() -> BTreeMap<String, String> {
    let mut modules = BTreeMap::new();
    for (path, code) in non_test_sources() {
        let mut parts: Vec<String> = path
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let last = parts.pop().unwrap();
        let stem = last.strip_suffix(".rs").unwrap().to_string();
        if stem != "mod" && stem != "lib" && stem != "main" {
            parts.push(stem);
        }
        modules.insert(parts.join("::"), blank(&code, true).into_iter().collect());
    }
    modules
}

/// The paths `code` (of module `module`) names: `crate::a::b`,
/// `super::b`, `self::b`, and its own child modules by name (`b::c`), with
/// the groups of a `use` (`crate::a::{b, c::d}`) one level deep. Each is a
/// list of segments from the crate root; what it names is left to the
/// caller.
fn paths_named(module: &str, code: &str, children: &BTreeSet<String>) -> Vec<Vec<String>> {
    let own: Vec<String> = module
        .split("::")
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    // `super` is the parent module, for a plain file as for a `mod.rs`.
    let here = own.clone();
    let parent = own[..own.len().saturating_sub(1)].to_vec();
    let word = regex::Regex::new(
        r"\b(crate|super|self|[a-z_][a-z0-9_]*)((?:::[A-Za-z_][A-Za-z0-9_]*)*)(::\{[^}]*\})?",
    )
    .unwrap();
    let mut found = Vec::new();
    for caps in word.captures_iter(code) {
        let head = &caps[1];
        // A bare word (`pub(super)`, `mod config;`) names no path.
        if caps[2].is_empty() && caps.get(3).is_none() {
            continue;
        }
        if let Some(m) = caps.get(0) {
            // Not the tail of a longer path (`x::crate`) nor a method.
            let before = &code[..m.start()];
            if before.ends_with("::") || before.ends_with('.') {
                continue;
            }
        }
        let mut base = match head {
            "crate" => Vec::new(),
            "super" => parent.clone(),
            "self" => here.clone(),
            child if children.contains(child) => {
                let mut path = here.clone();
                path.push(child.to_string());
                path
            }
            _ => continue,
        };
        let rest: Vec<String> = caps[2]
            .split("::")
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        // `super::super::x`: each further `super` goes one up.
        let mut rest = rest.as_slice();
        while let Some(("super", tail)) = rest.split_first().map(|(a, t)| (a.as_str(), t)) {
            base.pop();
            rest = tail;
        }
        base.extend(rest.iter().cloned());
        match caps.get(3) {
            Some(group) => {
                let inner = group
                    .as_str()
                    .trim_start_matches("::{")
                    .trim_end_matches('}');
                for part in inner.split(',') {
                    let mut path = base.clone();
                    path.extend(
                        part.trim()
                            .split("::")
                            .map(str::trim)
                            .filter(|s| !s.is_empty() && *s != "self")
                            .map(String::from),
                    );
                    found.push(path);
                }
            }
            None => found.push(base),
        }
    }
    found
}

/// Rooms whose files still name each other in a loop, being untangled by
/// their owners (none left: `sys/fd.rs` and `sys/handoff.rs` share
/// `sys/stall.rs` now).
const UNTANGLING: [&str; 0] = [];

/// Within a room, files import one another in one direction: `cli/checks.rs`
/// and `cli/config.rs` once named each other. A module's own file
/// (`mod.rs`) and the files of its children may name each other: it is
/// their facade.
#[test]
fn files_of_a_room_import_each_other_in_one_direction_only() {
    let modules = module_files();
    let names: BTreeSet<String> = modules.keys().cloned().collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, code) in &modules {
        let prefix = if module.is_empty() {
            String::new()
        } else {
            format!("{module}::")
        };
        let children: BTreeSet<String> = names
            .iter()
            .filter_map(|n| n.strip_prefix(&prefix))
            .filter(|rest| !rest.is_empty() && !rest.contains("::"))
            .map(String::from)
            .collect();
        let room = module.split("::").next().unwrap_or("");
        let edges = graph.entry(module.clone()).or_default();
        for path in paths_named(module, code, &children) {
            // The file of the longest prefix that is a module.
            let target = (0..=path.len())
                .rev()
                .map(|n| path[..n].join("::"))
                .find(|candidate| names.contains(candidate));
            // A module's own file and its children's may name each other
            // (the facade and its parts): only between files neither of
            // which holds the other is an import a direction.
            let holds = |outer: &str, inner: &str| inner.starts_with(&format!("{outer}::"));
            if let Some(target) = target
                && target.split("::").next() == Some(room)
                && !room.is_empty()
                && target != *module
                && !holds(&target, module)
                && !holds(module, &target)
            {
                edges.insert(target);
            }
        }
    }
    assert!(
        graph["cli::early"].contains("cli::config"),
        "read the source tree: {:?}",
        graph["cli::early"]
    );
    let mut loops = Vec::new();
    let rooms: BTreeSet<&str> = graph.keys().filter_map(|m| m.split("::").next()).collect();
    for room in rooms.into_iter().filter(|room| !UNTANGLING.contains(room)) {
        let of_room: BTreeMap<String, BTreeSet<String>> = graph
            .iter()
            .filter(|(m, _)| m.split("::").next() == Some(room))
            .map(|(m, e)| (m.clone(), e.clone()))
            .collect();
        if let Some(cycle) = find_loop(&of_room) {
            loops.push(cycle.join(" -> "));
        }
    }
    assert!(
        loops.is_empty(),
        "files of a room import each other in a loop: {}",
        loops.join("; ")
    );
}

#[test]
fn the_loop_finder_finds_loops() {
    let mut graph = BTreeMap::new();
    for (from, to) in [("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")] {
        graph
            .entry(from.to_string())
            .or_insert_with(BTreeSet::new)
            .insert(to.to_string());
    }
    let cycle = find_loop(&graph).expect("a loop");
    assert_eq!(cycle.first(), cycle.last());
    assert_eq!(cycle.len(), 4);
    graph.get_mut("c").unwrap().clear();
    assert_eq!(find_loop(&graph), None);
}

/// The longest a source file's non-test code may be (issue 23): a file
/// longer than this holds more than one job, and is split along its seams.
const MOST_LINES: usize = 450;

/// Every source file under `src/`, relative to it, with its text, sorted.
pub(crate) fn sources() -> Vec<(std::path::PathBuf, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut pending = vec![src.clone()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                files.push((path.strip_prefix(&src).unwrap().to_path_buf(), text));
            }
        }
    }
    files.sort();
    files
}

/// Every non-test source file under src/, relative to it, with its
/// non-test code (`non_test_code`). A file that is
/// test code as a whole is left out: one its parent declares under
/// `#[cfg(test)]` (`#[cfg(test)] mod fixtures;`), anything under such a
/// module's folder, and a file whose first item is under `#[cfg(test)]`.
pub(crate) fn non_test_sources() -> Vec<(std::path::PathBuf, String)> {
    let files = sources();
    // Where the modules declared under `#[cfg(test)]` live: NAME.rs, or
    // the folder NAME/ (NAME/mod.rs and NAME's own children).
    let mut test_only: Vec<std::path::PathBuf> = Vec::new();
    for (path, text) in &files {
        let stem = path.file_stem().unwrap();
        let parent = path.parent().unwrap();
        let children = if ["mod", "lib", "main"].iter().any(|s| stem == *s) {
            parent.to_path_buf()
        } else {
            parent.join(stem)
        };
        for name in test_modules(text) {
            test_only.push(children.join(format!("{name}.rs")));
            test_only.push(children.join(name));
        }
    }
    files
        .into_iter()
        .filter(|(path, text)| {
            !test_only.iter().any(|t| path.starts_with(t)) && !starts_with_test_item(text)
        })
        .map(|(path, text)| {
            let code = non_test_code(&text).to_string();
            (path, code)
        })
        .collect()
}

/// The names in `#[cfg(test)] mod NAME;` (other attributes between, and
/// any visibility, allowed).
fn test_modules(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let mut names = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        if *line != "#[cfg(test)]" {
            continue;
        }
        let Some(item) = lines[at + 1..]
            .iter()
            .find(|l| !(l.is_empty() || l.starts_with("#[") || l.starts_with("//")))
        else {
            continue;
        };
        let item = item.strip_prefix("pub ").unwrap_or(item);
        let item = match item.strip_prefix("pub(") {
            Some(rest) => rest.split_once(") ").map_or(item, |(_, rest)| rest),
            None => item,
        };
        if let Some(name) = item
            .strip_prefix("mod ")
            .and_then(|rest| rest.strip_suffix(';'))
        {
            names.push(name.trim().to_string());
        }
    }
    names
}

/// Whether the first item of a file (after its comments, docs and inner
/// attributes) is under `#[cfg(test)]`: the file is test code.
fn starts_with_test_item(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .find(|l| !(l.is_empty() || l.starts_with("//") || l.starts_with("#![")))
        .is_some_and(|l| l == "#[cfg(test)]")
}

#[test]
fn no_source_file_is_over_450_lines() {
    let sources = non_test_sources();
    assert!(sources.len() > 50, "read the source tree: {sources:?}");
    let names: Vec<String> = sources
        .iter()
        .map(|(path, _)| path.display().to_string())
        .collect();
    // Test-only files are not counted; their parents' non-test code is.
    for test_only in ["presets/tests.rs", "report/fixtures.rs"] {
        assert!(!names.iter().any(|n| n == test_only), "{names:?}");
    }
    assert!(names.iter().any(|n| n == "presets/mod.rs"), "{names:?}");
    let long: Vec<String> = sources
        .iter()
        .map(|(path, code)| (path, code.lines().count()))
        .filter(|(_, lines)| *lines > MOST_LINES)
        .map(|(path, lines)| format!("src/{}: {lines} lines", path.display()))
        .collect();
    assert!(
        long.is_empty(),
        "non-test code over {MOST_LINES} lines (split each file along its seams): {}",
        long.join(", ")
    );
}

/// `code` with its comments blanked, and its string literals' insides too
/// when `strings` is false; every character keeps its place (a blank for
/// each), so that positions in one view are positions in the other.
pub(crate) fn blank(code: &str, strings: bool) -> Vec<char> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = chars.clone();
    let mut at = 0;
    let wipe = |out: &mut Vec<char>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != '\n' {
                *c = ' ';
            }
        }
    };
    while at < chars.len() {
        let next = chars.get(at + 1).copied();
        match chars[at] {
            '/' if next == Some('/') => {
                let end = (at..chars.len())
                    .find(|&i| chars[i] == '\n')
                    .unwrap_or(chars.len());
                wipe(&mut out, at, end);
                at = end;
            }
            '/' if next == Some('*') => {
                let (mut depth, start) = (0, at);
                while at < chars.len() {
                    if chars[at] == '/' && chars.get(at + 1) == Some(&'*') {
                        depth += 1;
                        at += 2;
                    } else if chars[at] == '*' && chars.get(at + 1) == Some(&'/') {
                        depth -= 1;
                        at += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        at += 1;
                    }
                }
                wipe(&mut out, start, at.min(chars.len()));
            }
            'r' if matches!(next, Some('"' | '#'))
                && !chars[..at]
                    .last()
                    .is_some_and(|c| c.is_alphanumeric() || *c == '_') =>
            {
                let hashes = chars[at + 1..].iter().take_while(|&&h| h == '#').count();
                if chars.get(at + 1 + hashes) != Some(&'"') {
                    at += 1;
                    continue;
                }
                let start = at + hashes + 2;
                let end: Vec<char> = std::iter::once('"')
                    .chain(std::iter::repeat_n('#', hashes))
                    .collect();
                let mut stop = start;
                while stop < chars.len() && !chars[stop..].starts_with(&end) {
                    stop += 1;
                }
                if !strings {
                    wipe(&mut out, start, stop);
                }
                at = stop + end.len();
            }
            '"' => {
                let start = at + 1;
                at = start;
                while at < chars.len() && chars[at] != '"' {
                    at += if chars[at] == '\\' { 2 } else { 1 };
                }
                if !strings {
                    wipe(&mut out, start, at.min(chars.len()));
                }
                at += 1;
            }
            '\'' if next == Some('\\') || chars.get(at + 2) == Some(&'\'') => {
                // A character literal ('x', '\n', '"'), not a lifetime.
                let start = at + 1;
                at = start;
                while at < chars.len() && chars[at] != '\'' {
                    at += if chars[at] == '\\' { 2 } else { 1 };
                }
                wipe(&mut out, start, at.min(chars.len()));
                at += 1;
            }
            _ => at += 1,
        }
    }
    out
}

/// The lines (from 1) of `code` where the keyword `unsafe` is written.
fn unsafe_lines(code: &str) -> Vec<usize> {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    blank(code, false)
        .iter()
        .collect::<String>()
        .lines()
        .enumerate()
        .filter(|(_, line)| {
            line.match_indices("unsafe").any(|(at, _)| {
                !line[..at].ends_with(is_word) && !line[at + "unsafe".len()..].starts_with(is_word)
            })
        })
        .map(|(index, _)| index + 1)
        .collect()
}

#[test]
fn the_unsafe_finder_reads_code_not_words() {
    let code = r##"
//! Every `unsafe` call lives in sys.
#![deny(unsafe_op_in_unsafe_fn)]
/* unsafe { } in a block comment */
let said = "an unsafe { } string";
let raw = r#"unsafe "quoted" too"#;
let quote = '"'; let life: &'static str = "";
let x = unsafe { f() }; // unsafe again
let not_unsafe_at_all = 1;
unsafe fn g() {}
"##;
    assert_eq!(unsafe_lines(code), [8, 10]);
}

#[test]
fn unsafe_lives_in_sys() {
    let mut found = Vec::new();
    for (path, code) in non_test_sources() {
        if path.starts_with("sys") {
            continue;
        }
        for line in unsafe_lines(&code) {
            found.push(format!("src/{}:{line}", path.display()));
        }
    }
    assert!(
        found.is_empty(),
        "`unsafe` outside src/sys/ (move it behind a safe function there): {}",
        found.join(", ")
    );
}

/// A file's code without its test module: the text before the first
/// `#[cfg(test)]` that stands on a `mod` (test-only items above it, such as a
/// counter under `#[cfg(test)]`, still count as the file's code).
fn non_test_code(text: &str) -> &str {
    let mut from = 0;
    while let Some(at) = text[from..].find("#[cfg(test)]") {
        let start = from + at;
        let mut item = text[start + "#[cfg(test)]".len()..].trim_start();
        // Other attributes on the same item: `#[allow(...)] // why`.
        while item.starts_with("#[") {
            item = item
                .split_once('\n')
                .map_or("", |(_, rest)| rest)
                .trim_start();
        }
        let item = item.strip_prefix("pub(crate) ").unwrap_or(item);
        if item.starts_with("mod ") {
            return &text[..start];
        }
        from = start + 1;
    }
    text
}
