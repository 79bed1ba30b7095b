//! A record's name as its file names carry it, so that two names that
//! differ only in case (`API`, `api`) never share a file where the file
//! system ignores case (macOS's default APFS, Windows): there `API.json` and
//! `api.json` are one file, and two circuits would share their state and
//! their lock.

use std::borrow::Cow;

/// `name` as the files of its record carry it: as it is when it holds no
/// capital letter, so every existing lowercase name keeps its files; else
/// the name, `~`, and which of its characters are capitals, in
/// hexadecimal: the first digit for the first four characters (bit 0 for
/// the first), the next for the next four, and so on, with no zeros at the
/// end (`API` is `API~7`, `MyJob` is `MyJob~5`, `a.B` is `a.B~4`).
///
/// No two names share a file, even with case folded: a name never holds
/// `~` (`circuit::check_name`), so the part before it is the name folded,
/// and the digits (`0-9a-f`, lowercase) say the case of each letter. A file
/// an earlier retry wrote for a name with capitals (`API.json`) is no
/// longer read: that circuit or budget starts afresh, and the old file
/// stays (on a file system that tells case apart, rename it to keep it).
pub(super) fn in_file_names(name: &str) -> Cow<'_, str> {
    if !name.bytes().any(|b| b.is_ascii_uppercase()) {
        return Cow::Borrowed(name);
    }
    let mut digits: Vec<u8> = name
        .as_bytes()
        .chunks(4)
        .map(|four| {
            four.iter()
                .enumerate()
                .filter(|(_, b)| b.is_ascii_uppercase())
                .fold(0u8, |digit, (at, _)| digit | 1 << at)
        })
        .collect();
    while digits.last() == Some(&0) {
        digits.pop();
    }
    let hex: String = digits
        .iter()
        .map(|&digit| char::from_digit(u32::from(digit), 16).unwrap_or('0'))
        .collect();
    Cow::Owned(format!("{name}~{hex}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowercase_names_keep_their_files_and_capitals_are_marked() {
        for plain in ["api", "job-1", "a.b_c", "0"] {
            assert_eq!(in_file_names(plain), plain);
        }
        assert_eq!(in_file_names("API"), "API~7");
        assert_eq!(in_file_names("Api"), "Api~1");
        assert_eq!(in_file_names("MyJob"), "MyJob~5");
        assert_eq!(in_file_names("a.B"), "a.B~4");
        // The fifth character is the next digit's first.
        assert_eq!(in_file_names("abcdE"), "abcdE~01");
        assert_eq!(in_file_names("ABCDEFGH"), "ABCDEFGH~ff");
    }

    #[test]
    fn names_that_differ_in_case_differ_with_case_folded() {
        // Every casing of a name, as a case-insensitive file system sees
        // its file name: all different.
        let base = "ab-cd.e";
        let letters: Vec<usize> = base
            .char_indices()
            .filter(|(_, c)| c.is_ascii_alphabetic())
            .map(|(at, _)| at)
            .collect();
        let mut seen = std::collections::BTreeSet::new();
        for pick in 0..1u32 << letters.len() {
            let mut name = base.as_bytes().to_vec();
            for (bit, &at) in letters.iter().enumerate() {
                if pick & 1 << bit != 0 {
                    name[at] = name[at].to_ascii_uppercase();
                }
            }
            let name = String::from_utf8(name).unwrap();
            let folded = in_file_names(&name).to_ascii_lowercase();
            assert!(seen.insert(folded), "{name}");
        }
        assert_eq!(seen.len(), 1 << letters.len());
        // The longest name (128 characters) stays within a file name's
        // 255 bytes, with its prefix, suffix and temporary form.
        let longest = "Ab".repeat(64);
        let stem = format!("budget@{}", in_file_names(&longest));
        assert!(format!(".{stem}.XXXXXX.tmp").len() < 255);
    }
}
