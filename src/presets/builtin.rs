//! The built-in presets: the TOML files of `presets/`, compiled into the
//! binary as text, and a small index of which preset each file holds and
//! which command names choose it. The index lets a run find its preset (or
//! learn that there is none: `retry -- ls`) without parsing any TOML; a
//! file is parsed only when one of its presets is used. A unit test checks
//! the index against the files, so it cannot drift from them.

/// One built-in file: its path in the source tree and its text.
pub(crate) struct File {
    pub(crate) path: &'static str,
    pub(crate) text: &'static str,
}

pub(crate) const FILES: [File; 5] = [
    File {
        path: "presets/cloud.toml",
        text: include_str!("../../presets/cloud.toml"),
    },
    File {
        path: "presets/http.toml",
        text: include_str!("../../presets/http.toml"),
    },
    File {
        path: "presets/packages.toml",
        text: include_str!("../../presets/packages.toml"),
    },
    File {
        path: "presets/remote.toml",
        text: include_str!("../../presets/remote.toml"),
    },
    File {
        path: "presets/vcs.toml",
        text: include_str!("../../presets/vcs.toml"),
    },
];

/// One entry of the index.
pub(crate) struct Entry {
    pub(crate) name: &'static str,
    /// Index into [`FILES`].
    pub(crate) file: usize,
    pub(crate) commands: &'static [&'static str],
}

/// Every built-in preset, in file order.
pub(crate) const INDEX: [Entry; 13] = [
    entry("docker", 0, &["docker", "podman"]),
    entry("kubectl", 0, &["kubectl"]),
    entry("aws", 0, &["aws"]),
    entry("terraform", 0, &["terraform"]),
    entry("curl", 1, &["curl"]),
    entry("wget", 1, &["wget"]),
    entry("apt", 2, &["apt-get", "apt"]),
    entry("pip", 2, &["pip", "pip3"]),
    entry("npm", 2, &["npm"]),
    entry("ssh", 3, &["ssh"]),
    entry("scp", 3, &["scp", "sftp"]),
    entry("rsync", 3, &["rsync"]),
    entry("git", 4, &["git"]),
];

const fn entry(name: &'static str, file: usize, commands: &'static [&'static str]) -> Entry {
    Entry {
        name,
        file,
        commands,
    }
}

/// The built-in preset named `name`.
pub(crate) fn by_name(name: &str) -> Option<&'static Entry> {
    INDEX.iter().find(|entry| entry.name == name)
}

/// The built-in preset a command's file name chooses.
pub(crate) fn by_command(command: &str) -> Option<&'static Entry> {
    INDEX.iter().find(|entry| entry.commands.contains(&command))
}
