//! The packaging recipes of `packaging/` (packaging/README.md): a Homebrew
//! formula, an Alpine APKBUILD and a Nix derivation. Each must name this
//! version, Cargo.toml's licence, home page and repository, the package
//! `retry-runner` and the command `retry`, the release tag's source with a
//! checksum (the placeholder or a real one), and files that exist; and each
//! must parse with its language's own tool: `ruby -c` and a stand-in for
//! Homebrew's `Formula` that records the formula's declarations, the
//! APKBUILD sourced by `sh` and checked by shellcheck, `nix-instantiate
//! --parse`. None is built by its own system here (no Homebrew, abuild or
//! nixpkgs): packaging/README.md says so.
//!
//! Needs ruby, shellcheck and nix-instantiate (nix-bin), which `scripts/test`
//! installs; without them those checks are skipped with a message, except
//! under `CI=true`, where they fail. The field checks always run.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::release::tool;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const VERSION: &str = env!("CARGO_PKG_VERSION");

fn read(path: &str) -> String {
    fs::read_to_string(Path::new(ROOT).join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Cargo.toml's `key` of `[package]`.
fn package(key: &str) -> String {
    let manifest: toml::Table = toml::from_str(&read("Cargo.toml")).unwrap();
    manifest["package"][key]
        .as_str()
        .unwrap_or_else(|| panic!("no package.{key} in Cargo.toml"))
        .to_string()
}

/// The release tag's source tarball, as GitHub serves it.
fn tag_tarball() -> String {
    format!(
        "{}/archive/refs/tags/v{VERSION}.tar.gz",
        package("repository")
    )
}

/// The files a recipe installs from the tree.
const INSTALLED: &[&str] = &[
    "man/retry.1",
    "completions/retry.bash",
    "completions/_retry",
    "completions/retry.fish",
    "LICENSE-MIT",
    "LICENSE-APACHE",
];

fn installs_what_exists(recipe: &str, name: &str) {
    for file in INSTALLED {
        if recipe.contains(file) {
            assert!(
                Path::new(ROOT).join(file).is_file(),
                "{name} installs {file}, which is missing"
            );
        }
    }
    for file in &INSTALLED[..4] {
        assert!(recipe.contains(file), "{name} does not install {file}");
    }
}

fn is_hex(text: &str, length: usize) -> bool {
    text.len() == length && text.bytes().all(|b| b.is_ascii_hexdigit())
}

#[test]
fn the_cargo_manifest_names_the_repository_the_recipes_use() {
    assert_eq!(
        package("repository"),
        "https://github.com/retry-runner/retry"
    );
    assert_eq!(package("homepage"), package("repository"));
    assert_eq!(package("license"), "MIT OR Apache-2.0");
}

/// The class-level declarations, loaded with a stand-in for Homebrew's
/// Formula that records each one (the install and test blocks are
/// methods: defined, not run).
const STAND_IN: &str = r#"
require "json"
class Formula
  @@declared = Hash.new { |h, k| h[k] = [] }
  def self.method_missing(name, *args, **options, &block)
    @@declared[name.to_s] << (args + (options.empty? ? [] : [options.transform_keys(&:to_s)]))
  end
  def self.respond_to_missing?(*) = true
  # Kernel#test would take `test do ... end` for itself.
  def self.test(*args, &block) = @@declared["test"] << [block_given?]
  def self.declared = @@declared
end
load ARGV[0]
print JSON.generate(Formula.declared)
"#;

#[test]
fn the_homebrew_formula_is_retry_runner_at_this_version() {
    let name = "packaging/homebrew/retry-runner.rb";
    let formula = read(name);
    for line in [
        "class RetryRunner < Formula".to_string(),
        format!("  homepage \"{}\"", package("homepage")),
        format!("  url \"{}\"", tag_tarball()),
        "  license any_of: [\"MIT\", \"Apache-2.0\"]".to_string(),
        "  conflicts_with \"retry\", because: \"both install a `retry` binary\"".to_string(),
        "  depends_on \"rust\" => :build".to_string(),
        "    system \"cargo\", \"install\", *std_cargo_args".to_string(),
    ] {
        assert!(
            formula.lines().any(|l| l == line),
            "{name} lacks the line {line:?}"
        );
    }
    installs_what_exists(&formula, name);
    assert!(
        formula.contains("assert_match \"retry #{version}\""),
        "{name}: no version test"
    );

    if !tool("ruby", "the Homebrew formula") {
        return;
    }
    let path = Path::new(ROOT).join(name);
    let out = Command::new("ruby").arg("-c").arg(&path).output().unwrap();
    assert!(
        out.status.success(),
        "ruby -c {name}: {}",
        text(&out.stderr)
    );

    let out = Command::new("ruby")
        .args(["-e", STAND_IN])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{name} under the stand-in: {}",
        text(&out.stderr)
    );
    let declared: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let one = |key: &str| declared[key][0][0].clone();
    assert_eq!(one("url"), tag_tarball());
    assert_eq!(one("homepage"), package("homepage"));
    assert_eq!(one("desc").as_str().map(str::is_empty), Some(false));
    let sha = one("sha256");
    assert!(is_hex(sha.as_str().unwrap(), 64), "{name}: sha256 {sha}");
    assert_eq!(
        declared["license"][0][0]["any_of"],
        serde_json::json!(["MIT", "Apache-2.0"])
    );
    assert_eq!(one("conflicts_with"), "retry");
    assert_eq!(
        declared["depends_on"][0][0],
        serde_json::json!({"rust": "build"})
    );
    assert_eq!(
        declared["test"],
        serde_json::json!([[true]]),
        "{name}: no test block"
    );
}

#[test]
fn the_alpine_apkbuild_is_retry_runner_at_this_version() {
    let name = "packaging/alpine/APKBUILD";
    let apkbuild = read(name);
    installs_what_exists(&apkbuild, name);
    assert!(
        apkbuild.contains("install -Dm755 target/release/retry -t \"$pkgdir\"/usr/bin/"),
        "{name} does not install the command as /usr/bin/retry"
    );

    // Its variables, as abuild reads them: the file sourced by sh.
    let out = Command::new("sh")
        .arg("-c")
        .arg(r#". ./APKBUILD && printf '%s\n' "$pkgname" "$pkgver" "$license" "$url" "$source" "$builddir" && printf '%s\n' "$sha512sums""#)
        .current_dir(Path::new(ROOT).join("packaging/alpine"))
        .env("srcdir", "/src")
        .output()
        .unwrap();
    assert!(out.status.success(), "sh . {name}: {}", text(&out.stderr));
    let values = text(&out.stdout);
    let lines: Vec<&str> = values.lines().collect();
    assert_eq!(lines[0], "retry-runner");
    assert_eq!(lines[1], VERSION);
    assert_eq!(lines[2], package("license"));
    assert_eq!(lines[3], package("homepage"));
    assert_eq!(
        lines[4],
        format!("retry-runner-{VERSION}.tar.gz::{}", tag_tarball())
    );
    assert_eq!(
        lines[5],
        format!("/src/retry-{VERSION}"),
        "the tag tarball's top directory"
    );
    let sums: Vec<&str> = lines[6..]
        .iter()
        .copied()
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(sums.len(), 1, "{sums:?}");
    let (sum, file) = sums[0].split_once("  ").unwrap();
    assert!(is_hex(sum, 128), "{name}: sha512sums {sum}");
    assert_eq!(file, format!("retry-runner-{VERSION}.tar.gz"));

    if !tool("shellcheck", "the Alpine APKBUILD") {
        return;
    }
    // abuild sets srcdir, pkgdir and CTARGET, and reads the variables
    // (SC2034: assigned, not used here; SC2154: used, not assigned here).
    let out = Command::new("shellcheck")
        .args(["--shell=sh", "--exclude=SC2034,SC2154", name])
        .current_dir(ROOT)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "shellcheck {name}:\n{}",
        text(&out.stdout)
    );
}

#[test]
fn the_nix_derivation_is_retry_runner_at_this_version() {
    let name = "packaging/nix/package.nix";
    let nix = read(name);
    for line in [
        "  pname = \"retry-runner\";".to_string(),
        format!("  version = \"{VERSION}\";"),
        format!("    homepage = \"{}\";", package("homepage")),
        "    mainProgram = \"retry\";".to_string(),
        "  cargoLock.lockFile = ../../Cargo.lock;".to_string(),
    ] {
        assert!(
            nix.lines().any(|l| l == line),
            "{name} lacks the line {line:?}"
        );
    }
    // MIT OR Apache-2.0: nixpkgs lists both.
    let licence = nix
        .split("license = ")
        .nth(1)
        .unwrap()
        .split(']')
        .next()
        .unwrap();
    assert!(
        licence.contains("mit") && licence.contains("asl20"),
        "{name}: license {licence}"
    );
    installs_what_exists(&nix, name);
    assert!(read("packaging/nix/default.nix").contains("callPackage ./package.nix"));

    if !tool("nix-instantiate", "the Nix derivation") {
        return;
    }
    for file in [name, "packaging/nix/default.nix"] {
        let out = Command::new("nix-instantiate")
            .args(["--parse", file])
            .current_dir(ROOT)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "nix-instantiate --parse {file}: {}",
            text(&out.stderr)
        );
    }
}
