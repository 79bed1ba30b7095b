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

pub(crate) const FILES: [File; 7] = [
    File {
        path: "presets/build.toml",
        text: include_str!("../../presets/build.toml"),
    },
    File {
        path: "presets/cloud.toml",
        text: include_str!("../../presets/cloud.toml"),
    },
    File {
        path: "presets/http.toml",
        text: include_str!("../../presets/http.toml"),
    },
    File {
        path: "presets/llm.toml",
        text: include_str!("../../presets/llm.toml"),
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
pub(crate) const INDEX: [Entry; 26] = [
    entry("cargo", 0, &["cargo"]),
    entry("go", 0, &["go"]),
    entry("gradle", 0, &["gradle", "gradlew"]),
    entry("mvn", 0, &["mvn", "mvnw"]),
    entry("docker", 1, &["docker", "podman"]),
    entry("kubectl", 1, &["kubectl"]),
    entry("aws", 1, &["aws"]),
    entry("terraform", 1, &["terraform"]),
    entry("registry", 1, &["skopeo", "crane"]),
    entry("helm", 1, &["helm"]),
    entry("gcloud", 1, &["gcloud", "gsutil"]),
    entry("az", 1, &["az"]),
    entry("curl", 2, &["curl"]),
    entry("wget", 2, &["wget"]),
    entry("llm", 3, &["claude", "codex", "gemini", "llm"]),
    entry("apt", 4, &["apt-get", "apt"]),
    entry("pip", 4, &["pip", "pip3"]),
    entry("npm", 4, &["npm"]),
    entry("uv", 4, &["uv", "uvx"]),
    entry("yarn", 4, &["yarn"]),
    entry("pnpm", 4, &["pnpm"]),
    entry("ssh", 5, &["ssh"]),
    entry("scp", 5, &["scp", "sftp"]),
    entry("rsync", 5, &["rsync"]),
    entry("git", 6, &["git"]),
    entry("gh", 6, &["gh"]),
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
