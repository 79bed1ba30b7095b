//! The contract's tables against every place they are rendered: `--help`,
//! the man page, the guide's generated blocks; and the warning kinds
//! against the source that emits them.

use std::path::{Path, PathBuf};

use clap::CommandFactory;

use super::*;
use crate::cli::Cli;
use crate::cli::generate::{Kind, generate};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One roff paragraph as the man page writes it.
fn roff_text(text: &str) -> String {
    let mut roff = roff::Roff::new();
    roff.text([roff::roman(text)]);
    let preamble = roff::Roff::new().render().len();
    roff.render()[preamble..].trim_end().to_string()
}

#[test]
fn the_help_ends_with_the_contract_then_the_examples() {
    let after = Cli::command().get_after_help().unwrap().to_string();
    let epilogue = help_epilogue();
    assert!(after.starts_with(&epilogue), "{after}");
    assert!(after[epilogue.len()..].starts_with("\n\nExamples:\n"));
    for status in EXIT_STATUSES {
        if let Some(brief) = status.brief {
            let folded = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
            let line = format!("{} {}", status.code, plain(brief));
            assert!(folded(&epilogue).contains(&folded(&line)), "{line}");
        }
    }
    for variable in ENVIRONMENT {
        for name in names(variable) {
            assert!(epilogue.contains(name), "{name}");
        }
    }
    for line in epilogue.lines() {
        assert!(line.len() <= WIDTH, "{line}");
    }
}

#[test]
fn the_man_page_has_every_row_of_the_contract() {
    let mut page = Vec::new();
    generate(Kind::Man, Cli::command(), &mut std::io::empty(), &mut page).unwrap();
    let page = String::from_utf8(page).unwrap();
    let section = |name: &str| {
        let start = page.find(&format!(".SH {name}")).expect(name);
        let rest = &page[start + 4..];
        rest[..rest.find(".SH ").unwrap_or(rest.len())].to_string()
    };
    let statuses = section("\"EXIT STATUS\"");
    for status in EXIT_STATUSES {
        assert!(statuses.contains(&roff_text(&sentence(status.meaning))));
    }
    let environment = section("ENVIRONMENT");
    for variable in ENVIRONMENT {
        let text = roff_text(&variable_sentences(variable));
        assert!(environment.contains(&text), "{text}");
    }
    let warnings = section("WARNINGS");
    for warning in WARNING_KINDS {
        assert!(warnings.contains(&format!("\\fB{}\\fR", roff_text(warning.kind))));
        assert!(warnings.contains(&roff_text(&sentence(warning.meaning))));
    }
}

/// The Markdown files that may hold generated blocks: the README, and
/// the documents under docs/.
fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![repo().join("README.md")];
    if let Ok(entries) = std::fs::read_dir(repo().join("docs")) {
        let mut docs: Vec<PathBuf> = entries
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|e| e == "md"))
            .collect();
        docs.sort();
        files.extend(docs);
    }
    files
}

#[test]
fn the_generated_blocks_of_the_documentation_match_the_contract() {
    let mut found = Vec::new();
    for path in markdown_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let shown = path.strip_prefix(repo()).unwrap().display().to_string();
        let (rewritten, blocks) =
            rewrite_blocks(&text).unwrap_or_else(|err| panic!("{shown}: {err}"));
        assert!(
            rewritten == text,
            "{shown}: a generated block is out of date: run scripts/generate and commit the result"
        );
        found.extend(blocks);
    }
    for name in BLOCKS {
        assert!(
            found.iter().any(|f| f == name),
            "no generated block '{name}' in README.md or docs/*.md (<!-- generated: {name} --> ... {END})"
        );
    }
}

#[test]
fn the_documented_warning_kinds_are_the_table_s() {
    // The kinds the generated block documents, read back from its rows.
    let block = markdown_block("warning-kinds").unwrap();
    let documented: Vec<&str> = block
        .lines()
        .skip(2)
        .map(|row| row.split('`').nth(1).unwrap())
        .collect();
    let table: Vec<&str> = WARNING_KINDS.iter().map(|w| w.kind).collect();
    assert_eq!(documented, table);
}

/// `text` without its test module (the part after `#[cfg(test)]` on a
/// `mod`), as `tests/integration/house.rs` reads a file.
fn non_test_code(text: &str) -> &str {
    let mut from = 0;
    while let Some(at) = text[from..].find("#[cfg(test)]") {
        let start = from + at;
        let item = text[start + "#[cfg(test)]".len()..].trim_start();
        if item.starts_with("mod ") || item.starts_with("pub(crate) mod ") {
            return &text[..start];
        }
        from = start + 1;
    }
    text
}

fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

#[test]
fn every_warning_kind_emitted_is_one_of_the_table() {
    // A kind written as a literal (the constants of `contract::warning`
    // are the way to name one) must at least be in the table.
    let literal = regex::Regex::new(r#"warning\(\s*"([^"]*)""#).unwrap();
    let constant =
        regex::Regex::new(r"warning\(\s*(?:(?:crate::)?contract::)?warning::([A-Z_]+)\b").unwrap();
    let mut files = Vec::new();
    rust_files(&repo().join("src"), &mut files);
    let kinds: Vec<&str> = WARNING_KINDS.iter().map(|w| w.kind).collect();
    let mut seen = std::collections::BTreeSet::new();
    let mut unknown = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let code = non_test_code(&text);
        for found in literal.captures_iter(code) {
            let kind = found[1].to_string();
            if !kinds.contains(&kind.as_str()) {
                unknown.push(format!("{}: {kind}", path.display()));
            }
            seen.insert(kind);
        }
        for found in constant.captures_iter(code) {
            let name = &found[1];
            let kind = name.to_ascii_lowercase().replace('_', "-");
            assert!(kinds.contains(&kind.as_str()), "{}: {name}", path.display());
            seen.insert(kind);
        }
    }
    assert!(
        unknown.is_empty(),
        "warning kinds emitted but not in src/contract.rs's table: {unknown:?}"
    );
    // The guards' kinds are named by `Guard::as_str`.
    seen.extend(["circuit".to_string(), "budget".to_string()]);
    let unused: Vec<&&str> = kinds.iter().filter(|k| !seen.contains(**k)).collect();
    assert!(
        unused.is_empty(),
        "documented but never emitted: {unused:?}"
    );
}

#[test]
fn blocks_are_rewritten_in_place_and_bad_markers_are_named() {
    let text = "# T\n\n<!-- generated: warning-kinds -->\nold\n<!-- /generated -->\nafter\n";
    let (new, found) = rewrite_blocks(text).unwrap();
    assert_eq!(found, ["warning-kinds"]);
    assert!(new.starts_with("# T\n\n<!-- generated: warning-kinds -->\n| kind |"));
    assert!(new.ends_with("|\n<!-- /generated -->\nafter\n"), "{new}");
    assert_eq!(rewrite_blocks(&new).unwrap().0, new);
    assert_eq!(
        rewrite_blocks("<!-- generated: nosuch -->\n<!-- /generated -->\n").unwrap_err(),
        BlockError::Unknown {
            line: 1,
            name: "nosuch".into()
        }
    );
    assert_eq!(
        rewrite_blocks("x\n<!-- generated: environment -->\nrest\n").unwrap_err(),
        BlockError::Unclosed {
            line: 2,
            name: "environment".into()
        }
    );
    assert_eq!(
        rewrite_blocks("no blocks\n").unwrap().1,
        Vec::<String>::new()
    );
}

#[test]
fn help_text_is_wrapped_with_a_hanging_indent() {
    let text = wrap("aaa bbb ccc", 7, 2);
    assert_eq!(text, "aaa bbb\n  ccc");
    assert_eq!(listed(&["a".into(), "b".into(), "c".into()]), "a, b and c");
    assert_eq!(sentence("`--x` is it"), "--x is it.");
}
