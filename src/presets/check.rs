//! `--preset check FILE`: a presets file checked by the very code that
//! loads one (`schema`, then each preset's rule set compiled as a run
//! would compile it), so that a file can be tried before it is put where
//! retry reads it. Every problem is named with the file and its line.

use std::path::Path;

use super::error::PresetError;
use super::schema::FileErrors;
use super::user_files::{Wanted, read_presets};
use super::{Chosen, rule_set};
use crate::policy::rules::PatternCompiler;

/// Check the presets file at `path`: what it holds, for stdout, or every
/// problem found ([`PresetError::Malformed`]) or why it cannot be read.
pub(crate) fn check_file(path: &Path) -> Result<String, PresetError> {
    let mut ignored = Vec::new();
    let presets =
        read_presets(path, Wanted::NamedBy("--preset check"), &mut ignored)?.unwrap_or_default();
    // The patterns were parsed; compiled, each preset's must also fit in
    // the size limit of one run, with nothing else beside them.
    let mut problems = Vec::new();
    for preset in &presets {
        let chosen = Chosen {
            preset: preset.clone(),
            automatic: false,
            through: None,
        };
        if let Err(PresetError::Pattern {
            preset,
            line,
            rule,
            problem,
            ..
        }) = rule_set(&chosen, &mut PatternCompiler::default())
        {
            problems.push((
                line,
                format!(
                    "preset {preset}: output rule {rule}: pattern does not compile: {}",
                    problem.replace('\n', " ")
                ),
            ));
        }
    }
    let shown = path.display().to_string();
    if !problems.is_empty() {
        return Err(PresetError::Malformed(FileErrors {
            file: shown,
            problems,
        }));
    }
    let names: Vec<&str> = presets.iter().map(|p| p.name.as_str()).collect();
    let (count, plural) = match names.len() {
        1 => ("1".to_string(), "preset"),
        n => (n.to_string(), "presets"),
    };
    let listed = if names.is_empty() {
        String::new()
    } else {
        format!(": {}", names.join(", "))
    };
    Ok(format!("{shown}: {count} {plural}{listed}; no problems\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::tests::RCLONE as GOOD;

    fn write(dir: &Path, text: &str) -> std::path::PathBuf {
        let path = dir.join("presets.toml");
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_good_file_is_summed_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), GOOD);
        let text = check_file(&path).unwrap();
        assert_eq!(
            text,
            format!("{}: 1 preset: rclone; no problems\n", path.display())
        );
        let empty = write(dir.path(), "# nothing yet\n");
        assert!(
            check_file(&empty)
                .unwrap()
                .contains(": 0 presets; no problems")
        );
    }

    #[test]
    fn every_problem_is_named_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let bad = GOOD
            .replace("codes = \"5\"", "codes = \"5-\"")
            .replace("commands = [\"rclone\"]", "commands = [\"/bin/rclone\"]");
        let path = write(dir.path(), &bad);
        let Err(PresetError::Malformed(errors)) = check_file(&path) else {
            panic!("not malformed");
        };
        assert_eq!(errors.file, path.display().to_string());
        let lines: Vec<usize> = errors.problems.iter().map(|(line, _)| *line).collect();
        assert_eq!(lines, [4, 9], "{errors:?}");
    }

    #[test]
    fn a_pattern_over_the_size_limit_is_a_problem_on_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "{GOOD}\n[[preset.rclone.output]]\nkind = \"transient\"\npattern = '{}'\nmeans = \"big\"\n",
            r"\w{1000}\w{1000}\w{1000}"
        );
        let path = write(dir.path(), &text);
        let Err(PresetError::Malformed(errors)) = check_file(&path) else {
            panic!("not malformed");
        };
        assert_eq!(errors.problems.len(), 1, "{errors:?}");
        assert_eq!(errors.problems[0].0, 14, "{errors:?}");
        assert!(
            errors.problems[0]
                .1
                .starts_with("preset rclone: output rule 1: pattern does not compile: "),
            "{errors:?}"
        );
    }

    #[test]
    fn a_missing_file_is_named() {
        let err = check_file(Path::new("/nonexistent/retry-test/presets.toml")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("--preset check names /nonexistent/retry-test/presets.toml: "),
            "{err}"
        );
    }
}
