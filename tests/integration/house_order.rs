//! The house's order, drawn from the code: the rooms import one another
//! only downwards, in the order `src/lib.rs` declares; the pure policy
//! knows nothing of processes, runs, the command line or the operating
//! system, and the reporting nothing of processes, runs or the command
//! line. (Inside a room, files import one another in one direction:
//! `house.rs`.)

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The rooms, level by level, as lib.rs declares them: the line of its
/// module doc that starts with `Rooms, from the bottom up:` and lists them
/// as `` `a`, `b` - `c` - ... `` (a comma between rooms of one level, a
/// dash between levels), up to the first full stop.
fn declared_levels() -> Vec<Vec<String>> {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let doc: String = lib
        .lines()
        .filter_map(|line| line.strip_prefix("//!"))
        .collect::<Vec<_>>()
        .join(" ");
    let start = doc
        .find("Rooms, from the bottom up:")
        .expect("lib.rs declares its rooms");
    let list = &doc[start + "Rooms, from the bottom up:".len()..];
    let list = &list[..list.find('.').unwrap_or(list.len())];
    list.split(" - ")
        .map(|level| {
            level
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect()
        })
        .collect()
}

/// Room -> the rooms its non-test code names (`crate::x`), as house.rs
/// reads them.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, code) in crate::house::non_test_sources() {
        let room = room_of(&path);
        if room == "lib" || room == "main" {
            continue;
        }
        for name in crate::house::crate_names(&code) {
            if name != room {
                graph.entry(room.clone()).or_default().insert(name);
            }
        }
    }
    graph
}

fn room_of(path: &Path) -> String {
    let first = path.components().next().unwrap();
    Path::new(first.as_os_str())
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

#[test]
fn every_room_imports_only_rooms_below_it_in_the_declared_order() {
    let levels = declared_levels();
    let level_of: BTreeMap<&str, usize> = levels
        .iter()
        .enumerate()
        .flat_map(|(level, rooms)| rooms.iter().map(move |room| (room.as_str(), level)))
        .collect();
    let graph = imports();
    let mut undeclared = Vec::new();
    let mut upward = Vec::new();
    for (room, names) in &graph {
        let Some(&mine) = level_of.get(room.as_str()) else {
            undeclared.push(room.clone());
            continue;
        };
        for name in names {
            match level_of.get(name.as_str()) {
                Some(&theirs) if theirs < mine => {}
                Some(_) => upward.push(format!("{room} -> {name}")),
                None => undeclared.push(name.clone()),
            }
        }
    }
    assert!(
        undeclared.is_empty(),
        "rooms lib.rs does not declare: {undeclared:?} ({levels:?})"
    );
    assert!(
        upward.is_empty(),
        "imports that go up or sideways in lib.rs's order: {}",
        upward.join(", ")
    );
}

#[test]
fn the_policy_and_the_reporting_know_nothing_of_processes_runs_or_the_command_line() {
    let graph = imports();
    for (room, forbidden) in [
        ("policy", &["process", "run", "cli", "sys"][..]),
        ("report", &["process", "run", "cli"][..]),
    ] {
        let found: Vec<&String> = graph[room]
            .iter()
            .filter(|name| forbidden.contains(&name.as_str()))
            .collect();
        assert!(found.is_empty(), "{room} imports {found:?}");
    }
}
