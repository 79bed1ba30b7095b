//! The layout of the source itself: modules import one another in one
//! direction only (no loop between files), so each room can be read, tested
//! and changed from the bottom up.

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
            let code = text.split("#[cfg(test)]").next().unwrap();
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
fn crate_names(code: &str) -> Vec<String> {
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
fn find_loop(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
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
