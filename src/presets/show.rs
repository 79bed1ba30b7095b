//! `--preset list` and `--preset show`: the presets in force, and one in
//! the form of a user's presets file.

use std::ffi::OsString;

use super::error::PresetError;
use super::schema::{self, Preset};
use super::user_files::user_layers;
use super::{Request, Sources, builtins, choose};

/// `--preset list`: every preset, where it comes from and what it does.
pub(crate) fn list_text(sources: &Sources) -> Result<String, PresetError> {
    let mut ignored = Vec::new();
    let layers = user_layers(sources, &mut ignored)?;
    let mut all: Vec<(Preset, bool)> = builtins().into_iter().map(|p| (p, false)).collect();
    for layer in &layers {
        for preset in &layer.presets {
            // A command a later layer claims leaves the earlier presets.
            for (earlier, _) in &mut all {
                earlier.commands.retain(|c| !preset.commands.contains(c));
            }
            match all.iter_mut().find(|(p, _)| p.name == preset.name) {
                Some(slot) => *slot = (preset.clone(), true),
                None => all.push((preset.clone(), false)),
            }
        }
    }
    let mut text = String::new();
    for (path, _) in sources.files() {
        let named = format!("presets file {} ", path.display());
        let state = if ignored.iter().any(|why| why.starts_with(&named)) {
            "ignored"
        } else if path.exists() {
            "read"
        } else {
            "none"
        };
        text.push_str(&format!("# user presets: {} ({state})\n", path.display()));
    }
    for why in &ignored {
        text.push_str(&format!("# warning: {why}\n"));
    }
    text.push('\n');
    for (preset, replaces) in &all {
        let commands = if preset.commands.is_empty() {
            "only by --preset".to_string()
        } else {
            format!("chosen for {}", preset.commands.join(", "))
        };
        let replaced = if *replaces {
            ", replaces the built-in"
        } else {
            ""
        };
        text.push_str(&format!(
            "{}: {commands}; from {}{replaced}\n    {}\n",
            preset.name, preset.origin, preset.description
        ));
    }
    text.push_str(
        "\n--preset show NAME prints one, ready to copy into a presets file; --preset none turns automatic choice off.\n",
    );
    Ok(text)
}

/// `--preset show NAME`: the preset in a user file's form. A NAME that
/// names no preset but a command one serves (`claude`: llm; `pip3.11`:
/// pip; `/usr/bin/curl`: curl) shows that preset, its first line saying
/// so (a comment, so that the text stays a presets file).
pub(crate) fn show_text(name: &str, sources: &Sources) -> Result<String, PresetError> {
    let named = schema::check_name(name)
        .map_err(PresetError::ShowName)
        .and_then(|()| choose(&Request::Named(name.to_string()), &[], sources));
    let err = match named {
        Ok(chosen) => {
            let chosen = chosen.expect("a named preset is found or an error");
            return Ok(to_toml(&chosen.preset));
        }
        Err(err @ (PresetError::Unknown { .. } | PresetError::ShowName(_))) => err,
        Err(err) => return Err(err),
    };
    let Some(chosen) = choose(&Request::Auto, &[OsString::from(name)], sources)? else {
        return Err(err);
    };
    let through = chosen
        .through
        .map_or_else(String::new, |through| format!(" ({through})"));
    Ok(format!(
        "# {} is served by the preset {}{through}.\n{}",
        crate::text::sanitize_line(name, 64),
        chosen.preset.name,
        to_toml(&chosen.preset)
    ))
}

/// A TOML basic string: `"..."` with escapes.
fn basic(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A pattern as a literal string when it can be one, so that backslashes
/// read as written.
fn literal(text: &str) -> String {
    let plain = !text.chars().any(char::is_control);
    if plain && !text.contains('\'') {
        format!("'{text}'")
    } else if plain && !text.contains("'''") && !text.ends_with('\'') {
        format!("'''{text}'''")
    } else {
        basic(text)
    }
}

/// Several lines, as a multi-line basic string.
fn multi_line(text: &str) -> String {
    let mut body = String::new();
    for c in text.chars() {
        match c {
            '\\' => body.push_str("\\\\"),
            '"' => body.push_str("\\\""),
            '\n' => body.push('\n'),
            c if c.is_control() => body.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => body.push(c),
        }
    }
    format!("\"\"\"\n{body}\"\"\"")
}

/// A preset in the form of a user's presets file.
pub(super) fn to_toml(preset: &Preset) -> String {
    let name = &preset.name;
    let mut out = format!(
        "# Preset {name}, from {}. To change it, copy this into\n\
         # ~/.config/retry/presets.toml (or the file $RETRY_PRESETS names) and edit it:\n\
         # a preset there replaces the one of the same name. Schema: retry(1), PRESETS.\n\n",
        preset.origin
    );
    out.push_str(&format!("[preset.{name}]\n"));
    out.push_str(&format!("description = {}\n", basic(&preset.description)));
    let commands: Vec<String> = preset.commands.iter().map(|c| basic(c)).collect();
    out.push_str(&format!("commands = [{}]\n", commands.join(", ")));
    out.push_str(&format!("retry_after = {}\n", preset.retry_after));
    out.push_str(&format!(
        "other_exit = \"{}\"\n",
        preset.other_exit.as_str()
    ));
    if let Some(notes) = &preset.notes {
        out.push_str(&format!("notes = {}\n", multi_line(notes)));
    }
    for rule in &preset.output {
        out.push_str(&format!("\n[[preset.{name}.output]]\n"));
        out.push_str(&format!("kind = \"{}\"\n", rule.kind.as_str()));
        out.push_str(&format!("pattern = {}\n", literal(&rule.pattern)));
        out.push_str(&format!("means = {}\n", basic(&rule.means)));
        if let Some(source) = &rule.source {
            out.push_str(&format!("source = {}\n", basic(source)));
        }
    }
    for rule in &preset.exit {
        out.push_str(&format!("\n[[preset.{name}.exit]]\n"));
        out.push_str(&format!("kind = \"{}\"\n", rule.kind.as_str()));
        out.push_str(&format!("codes = {}\n", basic(&rule.codes_text)));
        out.push_str(&format!("means = {}\n", basic(&rule.means)));
        if let Some(source) = &rule.source {
            out.push_str(&format!("source = {}\n", basic(source)));
        }
    }
    out
}
