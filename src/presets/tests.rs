//! The built-in presets against their fixtures (presets/fixtures: real
//! messages with the verdict they must get), through the real loader,
//! scanner and classifier; the index against the files; user layers.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::schema::Preset;
use super::show::to_toml;
use super::*;
use crate::outcome::{Ending, ProcessEnd};
use crate::policy::classify::{Class, Observation, classify};
use crate::policy::rules::Rules;
use crate::scan::Scanner;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FixtureFile {
    preset: Option<String>,
    #[serde(default)]
    case: Vec<Case>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Case {
    preset: Option<String>,
    command: Option<String>,
    exit: i32,
    stderr: Vec<String>,
    #[serde(default)]
    stdout: Vec<String>,
    verdict: String,
    means: Option<String>,
    source: String,
    note: Option<String>,
}

fn builtin_named(name: &str) -> Chosen {
    let entry = builtin::by_name(name).unwrap_or_else(|| panic!("no built-in preset {name}"));
    Chosen {
        preset: load_builtin(entry),
        automatic: false,
        through: None,
    }
}

/// `chosen` as the only rule set, compiled.
fn rules_of(chosen: &Chosen) -> Rules {
    let set = rule_set(chosen, &mut PatternCompiler::default()).unwrap();
    Rules::new(vec![set], Vec::new(), chosen.preset.retry_after)
}

/// Judge one failed attempt that exited `code` after printing `stderr`,
/// with `chosen` as the only rule set: the verdict and its reason.
fn judge(chosen: &Chosen, code: i32, stderr: &[String]) -> (Class, String) {
    judge_with(&rules_of(chosen), code, stderr)
}

fn judge_with(rules: &Rules, code: i32, stderr: &[String]) -> (Class, String) {
    let scan = match &rules.patterns {
        Some(patterns) => {
            let mut scanner = Scanner::new(patterns);
            for line in stderr {
                scanner.feed(line.as_bytes());
                scanner.feed(b"\n");
            }
            scanner.finish()
        }
        None => crate::scan::ScanResult::default(),
    };
    let ending = Ending::not_started(ProcessEnd::Exited(code));
    let verdict = classify(
        &Observation {
            ending: &ending,
            hint: None,
            matched: &scan.matched,
            lines: &scan.lines,
            name_the_choice: false,
            throttling: None,
        },
        rules,
    );
    (verdict.class, verdict.reason)
}

fn no_user_files() -> Sources {
    Sources {
        system: PathBuf::from("/nonexistent/retry-test/etc.toml"),
        user: None,
    }
}

/// One fixture: where it is (`curl.toml case 3`), its preset, the case.
struct Fixture {
    at: String,
    preset: String,
    case: Case,
}

/// Every case of presets/fixtures/*.toml, in file order.
fn fixtures() -> Vec<Fixture> {
    let dir = repo().join("presets/fixtures");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 13, "{files:?}");
    let mut all = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let fixtures: FixtureFile =
            toml::from_str(&text).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        for (index, case) in fixtures.case.into_iter().enumerate() {
            let preset = case
                .preset
                .clone()
                .or_else(|| fixtures.preset.clone())
                .unwrap_or_else(|| {
                    panic!("{}: case {} names no preset", path.display(), index + 1)
                });
            let at = format!(
                "{} case {} ({preset}, exit {})",
                path.file_name().unwrap().to_string_lossy(),
                index + 1,
                case.exit
            );
            all.push(Fixture { at, preset, case });
        }
    }
    all
}

/// A fixture's scanned lines: stderr, then stdout (judged as under
/// --scan-stdout).
fn lines_of(case: &Case) -> Vec<String> {
    case.stderr.iter().chain(&case.stdout).cloned().collect()
}

#[test]
fn every_fixture_gets_its_verdict_and_message_from_the_real_classifier() {
    let mut failures = Vec::new();
    let mut judged = 0;
    let mut presets_seen = BTreeSet::new();
    let mut compiled: std::collections::HashMap<String, Rules> = std::collections::HashMap::new();
    for Fixture {
        at,
        preset: name,
        case,
    } in &fixtures()
    {
        presets_seen.insert(name.clone());
        // A failure's code, and lines as a scanner reads them.
        if !(1..=255).contains(&case.exit) {
            failures.push(format!("{at}: exit must be a failure code, 1-255"));
            continue;
        }
        if let Some(line) = lines_of(case).iter().find(|l| l.contains(['\n', '\r'])) {
            failures.push(format!(
                "{at}: stderr and stdout hold lines, one string each: {line:?}"
            ));
            continue;
        }
        let rules = compiled
            .entry(name.clone())
            .or_insert_with(|| rules_of(&builtin_named(name)));
        let (class, reason) = judge_with(rules, case.exit, &lines_of(case));
        judged += 1;
        if class.as_str() != case.verdict {
            failures.push(format!(
                "{at}: expected {}, got {} ({reason}); stderr {:?}",
                case.verdict,
                class.as_str(),
                case.stderr
            ));
            continue;
        }
        if let Some(means) = &case.means {
            let ok = if means == "retry's default (transient)" {
                reason == format!("exit {}", case.exit)
            } else if means.starts_with("exit code ") && means.ends_with("is in no transient rule")
            {
                reason == format!("exit {} is in no transient rule (preset {name})", case.exit)
            } else {
                reason == format!("exit {}; {means} (preset {name})", case.exit)
            };
            if !ok {
                failures.push(format!(
                    "{at}: expected the message {means:?}, got {reason:?}"
                ));
            }
        }
        if let Some(command) = &case.command {
            let chosen = choose(
                &Request::Auto,
                &[OsString::from(format!("/usr/bin/{command}"))],
                &no_user_files(),
            )
            .unwrap()
            .unwrap_or_else(|| panic!("{at}: command {command} chooses no preset"));
            if chosen.preset.name != *name || !chosen.automatic {
                failures.push(format!(
                    "{at}: command {command} chooses preset {}",
                    chosen.preset.name
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {judged} fixtures failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(judged >= 250, "only {judged} fixtures");
    let every: BTreeSet<String> = builtin::INDEX.iter().map(|e| e.name.to_string()).collect();
    assert_eq!(presets_seen, every, "every built-in preset has fixtures");
}

#[test]
fn every_output_rule_of_a_built_in_preset_decides_a_fixture() {
    // A rule decides a fixture when the fixture is judged otherwise
    // without it: the real classifier says, with no model of it here.
    // Only the fixtures with a line the rule's pattern matches can be.
    let fixtures = fixtures();
    let mut undecided = Vec::new();
    for preset in builtins() {
        let cases: Vec<&Fixture> = fixtures
            .iter()
            .filter(|f| f.preset == preset.name)
            .collect();
        let chosen = |preset: Preset| Chosen {
            preset,
            automatic: false,
            through: None,
        };
        let rules = rules_of(&chosen(preset.clone()));
        for index in 0..preset.output.len() {
            let mut without = preset.clone();
            let rule = without.output.remove(index);
            let regex = PatternCompiler::default().compile(&rule.pattern).unwrap();
            let matched: Vec<&&Fixture> = cases
                .iter()
                .filter(|f| {
                    lines_of(&f.case)
                        .iter()
                        .any(|l| regex.is_match(l.as_bytes()))
                })
                .collect();
            let decides = !matched.is_empty() && {
                let ablated = rules_of(&chosen(without));
                matched.iter().any(|f| {
                    let lines = lines_of(&f.case);
                    judge_with(&ablated, f.case.exit, &lines)
                        != judge_with(&rules, f.case.exit, &lines)
                })
            };
            if !decides {
                undecided.push(format!(
                    "preset {}: output rule {} ({:?}) decides no fixture",
                    preset.name,
                    index + 1,
                    rule.pattern
                ));
            }
        }
    }
    assert!(undecided.is_empty(), "{}", undecided.join("\n"));
}

#[test]
fn the_index_matches_the_built_in_files() {
    let mut from_files = Vec::new();
    for (index, file) in builtin::FILES.iter().enumerate() {
        for preset in parse_builtin(file) {
            from_files.push((preset.name, index, preset.commands));
        }
    }
    let indexed: Vec<(String, usize, Vec<String>)> = builtin::INDEX
        .iter()
        .map(|e| {
            (
                e.name.to_string(),
                e.file,
                e.commands.iter().map(ToString::to_string).collect(),
            )
        })
        .collect();
    assert_eq!(
        indexed, from_files,
        "src/presets/builtin.rs INDEX must list the presets of presets/*.toml in file order"
    );
    // Every file of presets/ is built in, and no command is claimed twice.
    let on_disk: BTreeSet<String> = std::fs::read_dir(repo().join("presets"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| format!("presets/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    let built_in: BTreeSet<String> = builtin::FILES.iter().map(|f| f.path.to_string()).collect();
    assert_eq!(on_disk, built_in);
    let mut commands = BTreeSet::new();
    let mut names = BTreeSet::new();
    for entry in &builtin::INDEX {
        assert!(
            names.insert(entry.name),
            "preset {} is defined twice",
            entry.name
        );
        for command in entry.commands {
            assert!(commands.insert(*command), "{command} is claimed twice");
        }
    }
}

#[test]
fn every_built_in_pattern_compiles_and_quotes_only_groups_it_has() {
    for preset in builtins() {
        // The preset as a whole fits in the total limit of a run.
        let mut compiler = PatternCompiler::default();
        for (index, rule) in preset.output.iter().enumerate() {
            let at = format!("preset {} output rule {}", preset.name, index + 1);
            let regex = compiler
                .compile(&rule.pattern)
                .unwrap_or_else(|e| panic!("{at}: {e}"));
            let kept = compiler
                .measure(&rule.pattern, crate::policy::rules::PATTERN_SIZE_LIMIT)
                .unwrap();
            assert!(
                kept < crate::policy::rules::BUILTIN_PATTERN_SIZE,
                "{at} keeps {kept} bytes, over what a built-in pattern is charged"
            );
            assert!(!regex.is_match(b""), "{at} matches an empty line");
            let groups = regex.captures_len() - 1;
            for piece in crate::policy::rules::template_pieces(&rule.means).unwrap() {
                if let crate::policy::rules::Piece::Group(n) = piece {
                    assert!(
                        (1..=groups).contains(&n),
                        "{at}: {{{n}}} of {groups} groups"
                    );
                }
            }
        }
        rule_set(
            &Chosen {
                preset,
                automatic: true,
                through: None,
            },
            &mut PatternCompiler::default(),
        )
        .unwrap();
    }
}

#[test]
fn show_prints_a_user_file_that_reads_back_as_the_same_preset() {
    for preset in builtins() {
        let text = to_toml(&preset);
        let back = schema::parse(
            &text,
            "shown",
            &Origin::File("shown".into()),
            Strictness::User,
        )
        .unwrap_or_else(|e| panic!("{}: {e}\n{text}", preset.name));
        assert_eq!(back.len(), 1);
        let back = &back[0];
        assert_eq!(back.name, preset.name);
        assert_eq!(back.description, preset.description);
        assert_eq!(back.commands, preset.commands);
        assert_eq!(back.retry_after, preset.retry_after);
        assert_eq!(back.other_exit, preset.other_exit);
        assert_eq!(back.notes, preset.notes);
        assert_eq!(back.output.len(), preset.output.len());
        for (a, b) in back.output.iter().zip(&preset.output) {
            assert_eq!(
                (&a.pattern, &a.means, &a.source, a.kind),
                (&b.pattern, &b.means, &b.source, b.kind)
            );
        }
        for (a, b) in back.exit.iter().zip(&preset.exit) {
            assert_eq!(
                (&a.codes_text, &a.means, &a.source, a.kind),
                (&b.codes_text, &b.means, &b.source, b.kind)
            );
        }
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// A user's preset (also `check`'s tests).
pub(super) const RCLONE: &str = r#"
[preset.rclone]
description = "rclone: retry temporary errors"
commands = ["rclone"]
other_exit = "permanent"

[[preset.rclone.exit]]
kind = "transient"
codes = "5"
means = "rclone reported a temporary error"
"#;

const MY_CURL: &str = r#"
[preset.curl]
description = "my curl"
commands = ["curl", "mycurl"]

[[preset.curl.exit]]
kind = "permanent"
codes = "22"
means = "any HTTP error stops"
"#;

fn auto(command: &str, sources: &Sources) -> Option<Chosen> {
    let words: Vec<OsString> = command.split(' ').map(OsString::from).collect();
    choose(&Request::Auto, &words, sources).unwrap()
}

#[test]
fn show_finds_the_preset_a_command_is_served_by() {
    let none = no_user_files();
    for (name, first, preset) in [
        ("claude", "# claude is served by the preset llm.\n", "llm"),
        (
            "pip3.11",
            "# pip3.11 is served by the preset pip (pip3.11, read as pip).\n",
            "pip",
        ),
        (
            "/usr/bin/curl",
            "# /usr/bin/curl is served by the preset curl.\n",
            "curl",
        ),
    ] {
        let text = show_text(name, &none).unwrap();
        assert!(text.starts_with(first), "{name}: {text}");
        assert!(text.contains(&format!("\n[preset.{preset}]\n")), "{text}");
    }
    // A preset's own name shows it as before, with no such line.
    let text = show_text("llm", &none).unwrap();
    assert!(text.starts_with("# Preset llm, from built-in"), "{text}");
    // A user preset claiming the command wins, as for a run.
    let dir = tempfile::tempdir().unwrap();
    let user = write(dir.path(), "user.toml", MY_CURL);
    let sources = Sources {
        system: PathBuf::from("/nonexistent/retry-test/etc.toml"),
        user: Some((user, true)),
    };
    let text = show_text("mycurl", &sources).unwrap();
    assert!(
        text.starts_with("# mycurl is served by the preset curl.\n"),
        "{text}"
    );
    assert!(text.contains("description = \"my curl\""), "{text}");
    // Neither a preset nor a command one serves: the error as before.
    for name in ["nosuch", "sudo", "list"] {
        assert!(show_text(name, &none).is_err(), "{name}");
    }
}

#[test]
fn user_layers_add_presets_replace_built_ins_and_claim_commands() {
    let dir = tempfile::tempdir().unwrap();
    let system = write(dir.path(), "etc.toml", RCLONE);
    let user = write(dir.path(), "user.toml", MY_CURL);
    let sources = Sources {
        system,
        user: Some((user.clone(), true)),
    };
    // Added by the system layer.
    let chosen = auto("/usr/bin/rclone", &sources).unwrap();
    assert_eq!(chosen.preset.name, "rclone");
    assert!(chosen.automatic);
    // Replaced by the user layer, and chosen for its own commands too.
    let chosen = auto("curl", &sources).unwrap();
    assert_eq!(chosen.preset.description, "my curl");
    assert_eq!(
        chosen.preset.origin,
        Origin::File(user.display().to_string())
    );
    assert_eq!(auto("mycurl", &sources).unwrap().preset.name, "curl");
    // Built-ins are still there, and no command means no preset.
    assert_eq!(auto("git", &sources).unwrap().preset.name, "git");
    assert!(auto("true", &sources).is_none());
    // --preset none reads nothing, --preset NAME finds every layer.
    assert!(
        choose(&Request::Off, &[OsString::from("curl")], &sources)
            .unwrap()
            .is_none()
    );
    let named = choose(
        &Request::Named("rclone".into()),
        &[OsString::from("x")],
        &sources,
    )
    .unwrap()
    .unwrap();
    assert!(!named.automatic);
    let unknown = choose(&Request::Named("nosuch".into()), &[], &sources)
        .unwrap_err()
        .to_string();
    assert!(
        unknown.contains("no preset named 'nosuch'") && unknown.contains("rclone"),
        "{unknown}"
    );

    // A user preset named like a built-in but claiming other commands takes
    // the built-in's commands away.
    let other = write(
        dir.path(),
        "other.toml",
        &MY_CURL.replace("[\"curl\", \"mycurl\"]", "[\"mycurl\"]"),
    );
    let sources = Sources {
        system: dir.path().join("none.toml"),
        user: Some((other, true)),
    };
    assert!(auto("curl", &sources).is_none());

    let listed = list_text(&Sources {
        system: dir.path().join("etc.toml"),
        user: Some((user, true)),
    })
    .unwrap();
    assert!(
        listed.contains("rclone: chosen for rclone; from "),
        "{listed}"
    );
    assert!(
        listed.contains("curl: chosen for curl, mycurl; from ")
            && listed.contains("replaces the built-in"),
        "{listed}"
    );
    assert!(
        listed.contains("git: chosen for git; from built-in (presets/vcs.toml)"),
        "{listed}"
    );
}

#[test]
fn a_malformed_or_unusable_user_file_is_an_error_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "bad.toml",
        &RCLONE.replace("codes = \"5\"", "codes = \"5-\""),
    );
    let sources = Sources {
        system: dir.path().join("none.toml"),
        user: Some((bad.clone(), false)),
    };
    let err = choose(&Request::Auto, &[OsString::from("ls")], &sources)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!(
            "{}:9: preset rclone: exit rule 1: codes '5-'",
            bad.display()
        )),
        "{err}"
    );

    let missing = Sources {
        system: dir.path().join("none.toml"),
        user: Some((dir.path().join("missing.toml"), true)),
    };
    let err = choose(&Request::Auto, &[OsString::from("ls")], &missing)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("RETRY_PRESETS names ") && err.contains("missing.toml"),
        "{err}"
    );
    // Not named by RETRY_PRESETS: a missing file is no error.
    let optional = Sources {
        system: dir.path().join("none.toml"),
        user: Some((dir.path().join("missing.toml"), false)),
    };
    assert!(
        choose(&Request::Auto, &[OsString::from("ls")], &optional)
            .unwrap()
            .is_none()
    );

    let err = choose(
        &Request::Auto,
        &[OsString::from("ls")],
        &Sources {
            system: dir.path().to_path_buf(),
            user: None,
        },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("is a directory, not a regular file"), "{err}");

    let big = write(dir.path(), "big.toml", &"#\n".repeat(600_000));
    let err = choose(
        &Request::Auto,
        &[OsString::from("ls")],
        &Sources {
            system: big,
            user: None,
        },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("larger than 1 MiB"), "{err}");
}

#[test]
fn a_preset_message_quotes_the_status_of_the_matched_line() {
    let curl = builtin_named("curl");
    let line = |status: &str| {
        vec![format!(
            "curl: (22) The requested URL returned error: {status}"
        )]
    };
    assert_eq!(
        judge(&curl, 22, &line("503")),
        (
            Class::Transient,
            "exit 22; curl reported HTTP 503 (preset curl)".to_string()
        )
    );
    assert_eq!(
        judge(&curl, 22, &line("404")),
        (
            Class::Permanent,
            "exit 22; curl reported HTTP 404, which a second try would get again (preset curl)"
                .to_string()
        )
    );
    // curl -s without -S printed nothing: exit 22 is transient by its rule.
    let (class, reason) = judge(&curl, 22, &[]);
    assert_eq!(class, Class::Transient);
    assert!(reason.contains("printed no status"), "{reason}");
    // Other codes are permanent: the preset has transient exit rules.
    assert_eq!(
        judge(&curl, 3, &[]),
        (
            Class::Permanent,
            "exit 3 is in no transient rule (preset curl)".to_string()
        )
    );
}

#[test]
fn a_command_no_preset_claims_parses_no_toml_and_a_claimed_one_parses_one_file() {
    let parsed = || PARSED.with(std::cell::Cell::get);
    let before = parsed();
    assert!(auto("/bin/true", &no_user_files()).is_none());
    assert!(auto("./build.sh", &no_user_files()).is_none());
    assert!(
        choose(&Request::Off, &[OsString::from("curl")], &no_user_files())
            .unwrap()
            .is_none()
    );
    assert_eq!(parsed(), before, "no built-in file parsed");
    assert_eq!(auto("curl", &no_user_files()).unwrap().preset.name, "curl");
    assert_eq!(parsed(), before + 1, "one built-in file parsed");
}

#[test]
fn a_wrapped_command_and_a_versioned_name_choose_the_preset_of_the_command() {
    let none = no_user_files();
    let parsed = || PARSED.with(std::cell::Cell::get);
    let before = parsed();
    assert!(auto("sudo ls -l", &none).is_none());
    assert!(auto("env -S curl", &none).is_none());
    assert_eq!(parsed(), before, "no built-in file parsed for sudo ls");
    for (command, preset, through) in [
        (
            "sudo apt-get install x",
            "apt",
            Some("apt-get, run by sudo"),
        ),
        ("env A=1 curl -f u", "curl", Some("curl, run by env")),
        ("nice git fetch", "git", Some("git, run by nice")),
        ("timeout 30 curl u", "curl", Some("curl, run by timeout")),
        ("stdbuf -oL wget u", "wget", Some("wget, run by stdbuf")),
        (
            "python3 -m pip install x",
            "pip",
            Some("pip, run as python3 -m pip"),
        ),
        (
            "/usr/bin/pip3.11 install x",
            "pip",
            Some("pip3.11, read as pip"),
        ),
        (
            "sudo python3.12 -m pip3 install",
            "pip",
            Some("pip3, run by sudo, run as python3.12 -m pip3"),
        ),
        ("git pull", "git", None),
    ] {
        let chosen = auto(command, &none).unwrap_or_else(|| panic!("{command}: no preset"));
        assert_eq!(chosen.preset.name, preset, "{command}");
        assert!(chosen.automatic);
        assert_eq!(chosen.through.as_deref(), through, "{command}");
    }
    let words = |text: &str| -> Vec<OsString> { text.split(' ').map(OsString::from).collect() };
    assert_eq!(wrapped::why_none(&words("ls -l")), None);
    assert_eq!(
        wrapped::why_none(&words("sudo ls -l")).unwrap(),
        "no preset: the command is ls, run by sudo, and no preset claims it"
    );
    let hidden = wrapped::why_none(&words("env -S curl")).unwrap();
    assert!(
        hidden.contains("env -S hides the command in a string"),
        "{hidden}"
    );
}

#[test]
fn a_preset_claiming_a_wrapper_is_chosen_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let user = write(
        dir.path(),
        "user.toml",
        "[preset.mysudo]\ndescription = \"sudo itself\"\ncommands = [\"sudo\"]\n",
    );
    let sources = Sources {
        system: PathBuf::from("/nonexistent/retry-test/etc.toml"),
        user: Some((user, true)),
    };
    let chosen = auto("sudo git pull", &sources).unwrap();
    assert_eq!(chosen.preset.name, "mysudo");
    assert_eq!(chosen.through, None);
}

const THROTTLING: &str = r#"
[preset.api]
description = "an API client: throttling, then other transient errors"
commands = ["api"]
other_exit = "permanent"

[[preset.api.output]]
kind = "transient"
pattern = 'HTTP (429|503)'
means = "HTTP {1}"

[[preset.api.output]]
kind = "throttled"
pattern = 'HTTP (429)|(SlowDown)'
means = "throttled: {1}{2}"

[[preset.api.exit]]
kind = "throttled"
codes = "75"
means = "the API client was throttled"

[[preset.api.exit]]
kind = "transient"
codes = "69"
means = "the API was unavailable"
"#;

#[test]
fn throttled_rules_judge_throttled_before_transient_ones() {
    let dir = tempfile::tempdir().unwrap();
    let sources = Sources {
        system: write(dir.path(), "etc.toml", THROTTLING),
        user: None,
    };
    let chosen = auto("api", &sources).unwrap();
    let line = |text: &str| vec![text.to_string()];
    // Both output rules match a 429: the throttled one decides.
    assert_eq!(
        judge(&chosen, 1, &line("HTTP 429 Too Many Requests")),
        (
            Class::Throttled,
            "exit 1; throttled: 429 (preset api)".into()
        )
    );
    assert_eq!(
        judge(&chosen, 1, &line("HTTP 503")),
        (Class::Transient, "exit 1; HTTP 503 (preset api)".into())
    );
    assert_eq!(
        judge(&chosen, 75, &[]),
        (
            Class::Throttled,
            "exit 75; the API client was throttled (preset api)".into()
        )
    );
    assert_eq!(judge(&chosen, 69, &[]).0, Class::Transient);
    assert_eq!(judge(&chosen, 2, &[]).0, Class::Permanent);
    // --preset show writes the kind back.
    let shown = to_toml(&chosen.preset);
    assert!(shown.contains("kind = \"throttled\""), "{shown}");
}

#[test]
fn other_exit_is_never_throttled() {
    let text = THROTTLING.replace("other_exit = \"permanent\"", "other_exit = \"throttled\"");
    let err = schema::parse(
        &text,
        "my.toml",
        &Origin::File("my.toml".into()),
        Strictness::User,
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("other_exit is \"permanent\" or \"transient\""),
        "{err}"
    );
}
