//! Untrusted inputs: what a child, the environment or another local user
//! puts where retry expects a small file or a plain value must not hang
//! retry, steer it, or forge its messages.
//!
//! "Another user" is simulated as root with `chown -h 65534:65534` on a
//! symlink; those tests skip with a message when not run as root.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::util::*;

/// Are we root (needed to make a file another user's)?
pub(crate) fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Say why a root-only test did nothing.
pub(crate) fn skip_unless_root(test: &str) -> bool {
    if is_root() {
        return false;
    }
    eprintln!("{test}: skipped, needs root to make files owned by another user");
    true
}

pub(crate) fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .args(["-m", "666"])
        .arg(path)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

/// A directory like /tmp: world-writable with the sticky bit.
pub(crate) fn sticky_dir(parent: &Path, name: &str) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    dir
}

/// Make the symlink at `path` belong to nobody (65534).
pub(crate) fn give_to_nobody(path: &Path) {
    let status = std::process::Command::new("chown")
        .args(["-h", "65534:65534"])
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(std::fs::symlink_metadata(path).unwrap().uid(), 65534);
}

/// A sticky shared directory in which another user (nobody) made `name` a
/// symlink to a directory of root's own: what a root job must not write
/// into. Returns (the symlink, the victim directory).
pub(crate) fn planted_directory_link(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let shared = sticky_dir(dir, "shared");
    let victim = dir.join("etc");
    std::fs::create_dir(&victim).unwrap();
    let link = shared.join(name);
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    give_to_nobody(&link);
    (link, victim)
}

/// `retry -n 2 -d 1ms -- sh -c BODY` under a time limit: output and time.
fn two_attempts(body: &str) -> (std::process::Output, Duration) {
    let started = Instant::now();
    let out = retry()
        .args(["-n", "2", "-d", "1ms", "--max-time", "30s", "--"])
        .args(["sh", "-c", body])
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    (out, started.elapsed())
}

// ---- The hint file (item 5) ----

#[test]
fn a_fifo_for_a_hint_gets_a_warning_not_a_hang() {
    // Nobody ever opens the FIFO for writing: a blocking open would hang.
    let (out, took) = two_attempts("mkfifo \"$RETRY_HINT_FILE\" || exit 99; exit 1");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr
            .matches("warning: hint file is a FIFO, ignored")
            .count(),
        2,
        "both attempts made a FIFO (so it was removed in between): {stderr}"
    );
    assert!(stderr.contains("attempt 2/2"), "{stderr}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn a_hint_tree_too_deep_to_remove_does_not_cost_the_next_attempt_its_hint() {
    // Removing a directory tree takes a descriptor per level: 200 levels
    // under a limit of 64 cannot be removed. The next attempt's
    // `permanent` must still be read (it was refused: "Is a directory").
    let body = "if [ $RETRY_ATTEMPT = 1 ]; then \
        mkdir \"$RETRY_HINT_FILE\" && cd \"$RETRY_HINT_FILE\" || exit 99; \
        i=0; while [ $i -lt 200 ]; do mkdir a && cd a || exit 98; i=$((i+1)); done; exit 1; \
      else echo permanent > \"$RETRY_HINT_FILE\"; exit 7; fi";
    let tmp = scratch();
    let out = std::process::Command::new("sh")
        .env("TMPDIR", tmp.path())
        .args(["-c", "ulimit -n 64 && exec \"$0\" \"$@\"", BIN])
        .args([
            "-n",
            "3",
            "-d",
            "1ms",
            "--max-time",
            "30s",
            "--",
            "sh",
            "-c",
            body,
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(7), "{stderr}");
    assert!(
        stderr.contains("hint file is a directory, ignored; it could not be removed, so the next attempt gets a new directory"),
        "{stderr}"
    );
    assert!(!stderr.contains("attempt 3/3"), "{stderr}");
}

#[test]
fn a_hint_linked_to_a_device_gets_a_warning() {
    let (out, took) = two_attempts("ln -s /dev/zero \"$RETRY_HINT_FILE\"; exit 1");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("warning: hint file is a symlink, ignored"),
        "{stderr}"
    );
    assert!(stderr.contains("attempt 2/2"), "{stderr}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn a_huge_hint_is_too_long_and_never_quoted() {
    // 1 MiB that starts like a hint: not read whole, not obeyed, not printed.
    let body = "{ echo retry-after=99y; head -c 1048576 /dev/zero | tr '\\0' x; } > \"$RETRY_HINT_FILE\"; exit 1";
    let (out, took) = two_attempts(body);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("warning: hint file is too long (more than 256 KiB), ignored"),
        "{stderr}"
    );
    assert!(!stderr.contains("xxxxxxxxxx"), "{stderr}");
    assert!(stderr.len() < 2000, "{} bytes of messages", stderr.len());
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn a_bad_hint_is_quoted_on_one_sanitised_line() {
    let body = "printf 'bogus\\nretry: forged\\033[2J%s' \"$(head -c 200 /dev/zero | tr '\\0' y)\" > \"$RETRY_HINT_FILE\"; exit 1";
    let (out, _) = two_attempts(body);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.lines().any(|l| l.starts_with("retry: forged")),
        "{stderr}"
    );
    assert!(!stderr.contains('\x1b'), "{stderr}");
    let warning = stderr
        .lines()
        .find(|l| l.starts_with("retry: warning: hint file:"))
        .unwrap_or_else(|| panic!("no warning: {stderr}"));
    assert!(
        warning.contains("'bogus\\nretry: forged\\e[2Jyyy"),
        "{warning}"
    );
    let quoted = warning.split('\'').nth(1).unwrap();
    assert!(quoted.chars().count() <= 60, "{warning}");
}

#[test]
fn the_hint_file_is_absolute_with_a_relative_tmpdir() {
    let dir = scratch();
    std::fs::create_dir(dir.path().join("rel")).unwrap();
    let seen = dir.path().join("seen");
    let body = format!("echo \"$RETRY_HINT_FILE\" > '{}'", seen.display());
    retry()
        .current_dir(dir.path())
        .env("TMPDIR", "rel")
        .args(["--", "sh", "-c", &body])
        .assert()
        .success();
    let hint = PathBuf::from(std::fs::read_to_string(&seen).unwrap().trim());
    assert!(hint.is_absolute(), "{}", hint.display());
    let run_dir = hint.parent().unwrap();
    assert_eq!(
        run_dir.parent().unwrap().canonicalize().unwrap(),
        dir.path().join("rel").canonicalize().unwrap()
    );
    assert!(!run_dir.exists(), "{} left behind", run_dir.display());
}

#[test]
fn the_run_directory_is_private_and_removed_at_the_end() {
    let dir = scratch();
    let seen = dir.path().join("seen");
    // The child leaves a hint and another file behind in the directory.
    let body = format!(
        "d=$(dirname \"$RETRY_HINT_FILE\"); stat -c '%a %u' \"$d\" > '{seen}'; echo \"$d\" >> '{seen}'; \
         touch \"$d/other\"; echo transient > \"$RETRY_HINT_FILE\"; exit 3",
        seen = seen.display()
    );
    retry()
        .env("TMPDIR", dir.path())
        .args(["-n", "1", "--", "sh", "-c", &body])
        .assert()
        .code(3);
    let text = std::fs::read_to_string(&seen).unwrap();
    let mut lines = text.lines();
    let (mode, owner) = lines.next().unwrap().split_once(' ').unwrap();
    assert_eq!(mode, "700", "{text}");
    assert_eq!(owner, rustix::process::geteuid().as_raw().to_string());
    let run_dir = PathBuf::from(lines.next().unwrap());
    assert!(run_dir.starts_with(dir.path()), "{}", run_dir.display());
    assert!(!run_dir.exists(), "{} left behind", run_dir.display());
}

#[test]
fn the_run_directory_is_removed_after_sigterm() {
    let dir = scratch();
    let seen = dir.path().join("seen");
    let started = dir.path().join("started");
    let mark = marker();
    let body = format!(
        "dirname \"$RETRY_HINT_FILE\" > '{}'; {}",
        seen.display(),
        sleeper(&started, &mark)
    );
    let mut child = retry_std()
        .env("TMPDIR", dir.path())
        .args(["-n", "3", "--", "sh", "-c", &body])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for_file(&started, Duration::from_secs(20));
    let run_dir = PathBuf::from(std::fs::read_to_string(&seen).unwrap().trim());
    assert!(run_dir.is_dir());
    send_signal(child.id(), "TERM");
    let status = child.wait().unwrap();
    assert_eq!(code_and_signal(status), (None, Some(15)));
    assert!(!run_dir.exists(), "{} left behind", run_dir.display());
    assert!(none_left(&mark, Duration::from_secs(10)));
}

/// Where the attempt was told its hint file is, with `env` set and the
/// variables named in `unset` removed.
fn hint_dir_with(env: &[(&str, &Path)], unset: &[&str], cwd: &Path) -> PathBuf {
    let seen = cwd.join("seen");
    let body = format!("dirname \"$RETRY_HINT_FILE\" > '{}'", seen.display());
    let mut command = retry();
    command.current_dir(cwd);
    for name in unset {
        command.env_remove(name);
    }
    for (name, value) in env {
        command.env(name, value);
    }
    command.args(["--", "sh", "-c", &body]).assert().success();
    PathBuf::from(std::fs::read_to_string(&seen).unwrap().trim())
}

#[test]
fn without_tmpdir_the_run_directory_is_in_the_users_runtime_directory() {
    let dir = scratch();
    let runtime = dir.path().join("runtime");
    std::fs::create_dir(&runtime).unwrap();
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    let run_dir = hint_dir_with(&[("XDG_RUNTIME_DIR", &runtime)], &["TMPDIR"], dir.path());
    assert_eq!(run_dir.parent().unwrap(), runtime);
    assert!(!run_dir.exists(), "{} left behind", run_dir.display());
    // TMPDIR, when set, still decides.
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let run_dir = hint_dir_with(
        &[("XDG_RUNTIME_DIR", &runtime), ("TMPDIR", &tmp)],
        &[],
        dir.path(),
    );
    assert_eq!(run_dir.parent().unwrap(), tmp);
}

#[test]
fn a_runtime_directory_others_can_enter_is_passed_over() {
    let dir = scratch();
    let runtime = dir.path().join("runtime");
    std::fs::create_dir(&runtime).unwrap();
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run_dir = hint_dir_with(&[("XDG_RUNTIME_DIR", &runtime)], &["TMPDIR"], dir.path());
    assert_ne!(run_dir.parent().unwrap(), runtime);
    let base = run_dir.parent().unwrap();
    assert!(
        base == Path::new("/dev/shm") || base == Path::new("/tmp"),
        "{}",
        run_dir.display()
    );
    // A relative one is no runtime directory either.
    let run_dir = hint_dir_with(
        &[("XDG_RUNTIME_DIR", Path::new("runtime"))],
        &["TMPDIR"],
        dir.path(),
    );
    assert!(!run_dir.starts_with(dir.path()), "{}", run_dir.display());
}

#[test]
fn a_relative_runtime_directory_is_passed_over() {
    // One that would pass every other check: the user's own, 0700.
    let dir = scratch();
    let runtime = dir.path().join("runtime");
    std::fs::create_dir(&runtime).unwrap();
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    let run_dir = hint_dir_with(
        &[("XDG_RUNTIME_DIR", Path::new("runtime"))],
        &["TMPDIR"],
        dir.path(),
    );
    assert!(run_dir.is_absolute(), "{}", run_dir.display());
    assert!(!run_dir.starts_with(dir.path()), "{}", run_dir.display());
}

#[test]
fn an_empty_tmpdir_counts_as_unset() {
    let dir = scratch();
    let run_dir = hint_dir_with(
        &[("TMPDIR", Path::new(""))],
        &["XDG_RUNTIME_DIR"],
        dir.path(),
    );
    assert!(run_dir.is_absolute(), "{}", run_dir.display());
    assert!(!run_dir.starts_with(dir.path()), "{}", run_dir.display());
}

#[test]
fn an_empty_tmpdir_puts_the_spools_in_tmp_not_in_the_current_directory() {
    let dir = scratch();
    retry()
        .current_dir(dir.path())
        .env("TMPDIR", "")
        .args([
            "--stdin",
            "replay",
            "-n",
            "2",
            "-d",
            "0",
            "--",
            "sh",
            "-c",
            "cat; exit 1",
        ])
        .write_stdin("data\n")
        .assert()
        .code(1)
        .stdout("data\ndata\n");
    retry()
        .current_dir(dir.path())
        .env("TMPDIR", "")
        .args(["--buffer-stdout", "--", "echo", "held"])
        .assert()
        .success()
        .stdout("held\n");
}

#[test]
fn an_empty_tmpdir_makes_no_spool_in_the_current_directory() {
    // A spool made in the current directory would go unseen (it has no
    // name): with that directory removed, making one there fails.
    let dir = scratch();
    let gone = dir.path().join("gone");
    let replay = [
        "--stdin",
        "replay",
        "-n",
        "2",
        "-d",
        "0",
        "--",
        "sh",
        "-c",
        "cat; exit 1",
    ];
    let buffer = ["--buffer-stdout", "--", "echo", "held"];
    for (args, code, stdout) in [(&replay[..], 1, "data\ndata\n"), (&buffer[..], 0, "held\n")] {
        std::fs::create_dir(&gone).unwrap();
        let mut command = std::process::Command::new("sh");
        for (name, value) in retry_std().get_envs() {
            match value {
                Some(value) => command.env(name, value),
                None => command.env_remove(name),
            };
        }
        let out = assert_cmd::Command::from_std(command)
            .env("TMPDIR", "")
            .args([
                "-c",
                "cd \"$1\" && rmdir \"$1\" && shift && exec \"$@\"",
                "sh",
            ])
            .arg(&gone)
            .arg(BIN)
            .args(args)
            .write_stdin("data\n")
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), stdout, "{args:?}");
    }
}

#[test]
fn a_full_runtime_directory_is_passed_over() {
    // A file system in memory that is full still takes a directory (an
    // empty one needs no block), but not the child's hint.
    let Some(disk) = SmallDisk::mount("64k", "the full runtime directory test") else {
        return;
    };
    std::fs::set_permissions(&disk.path, std::fs::Permissions::from_mode(0o700)).unwrap();
    let filler = disk.path.join("filler");
    let _ = std::fs::write(&filler, vec![0_u8; 1 << 20]);
    assert!(
        std::fs::write(disk.path.join("probe"), "x").is_err(),
        "not full"
    );
    let run_dir = permanent_hint_run(&disk.path);
    assert!(!run_dir.starts_with(&disk.path), "{}", run_dir.display());
}

#[test]
fn a_runtime_directory_without_a_size_limit_is_used() {
    // A tmpfs mounted with size=0 has no limit, and counts no blocks.
    let Some(disk) = SmallDisk::mount("0", "the unlimited runtime directory test") else {
        return;
    };
    std::fs::set_permissions(&disk.path, std::fs::Permissions::from_mode(0o700)).unwrap();
    let run_dir = permanent_hint_run(&disk.path);
    assert_eq!(run_dir.parent().unwrap(), disk.path);
}

/// A run whose attempt writes `permanent` to its hint file, with
/// `XDG_RUNTIME_DIR` set to `runtime` and no TMPDIR: the hint is obeyed.
/// Returns the run's directory.
fn permanent_hint_run(runtime: &Path) -> PathBuf {
    let dir = scratch();
    let seen = dir.path().join("seen");
    let body = format!(
        "dirname \"$RETRY_HINT_FILE\" > '{}'; echo permanent > \"$RETRY_HINT_FILE\"; exit 1",
        seen.display()
    );
    let out = retry()
        .env_remove("TMPDIR")
        .env("XDG_RUNTIME_DIR", runtime)
        .args(["-n", "2", "-d", "0", "--", "sh", "-c", &body])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("hint file said permanent"), "{stderr}");
    assert!(!stderr.contains("attempt 2/2"), "{stderr}");
    let run_dir = PathBuf::from(std::fs::read_to_string(&seen).unwrap().trim());
    assert!(!run_dir.exists(), "{} left behind", run_dir.display());
    run_dir
}

/// `retry -n 3 -d 0` without `TMPDIR` or `XDG_RUNTIME_DIR` (so the run's
/// directory is in /dev/shm or /tmp), whose first attempt runs `first` (with
/// `$d` the run's directory) and whose later attempts write `permanent` to
/// the hint file. Returns the output and the directories the attempts saw.
fn run_dir_taken_away(first: &str, dir: &Path) -> (std::process::Output, Vec<PathBuf>) {
    let seen = dir.join("seen");
    let body = format!(
        "d=$(dirname \"$RETRY_HINT_FILE\"); echo \"$d\" >> '{seen}'; \
         if [ \"$RETRY_ATTEMPT\" = 1 ]; then {first}; exit 1; fi; \
         echo permanent > \"$RETRY_HINT_FILE\"; exit 2",
        seen = seen.display()
    );
    let out = retry()
        .env_remove("TMPDIR")
        .env_remove("XDG_RUNTIME_DIR")
        .args(["-n", "3", "-d", "0", "--", "sh", "-c", &body])
        .output()
        .unwrap();
    let seen = std::fs::read_to_string(&seen).unwrap();
    (out, seen.lines().map(PathBuf::from).collect())
}

#[test]
fn a_run_directory_removed_during_the_run_is_made_again() {
    // systemd-logind removes a user's files in /dev/shm (RemoveIPC) and
    // their XDG_RUNTIME_DIR when their last session ends, also under a run
    // that goes on (from cron, or a service running as that user).
    let dir = scratch();
    let (out, seen) = run_dir_taken_away("rm -rf \"$d\"", dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("hint file said permanent"), "{stderr}");
    assert!(!stderr.contains("attempt 3/3"), "{stderr}");
    assert_eq!(seen.len(), 2, "{seen:?}");
    for run_dir in &seen {
        assert!(!run_dir.exists(), "{} left behind", run_dir.display());
    }
}

/// `retry ARGS` as root in a mount namespace of its own where `/tmp` and
/// `/dev/shm` take nothing (read-only, 1 KiB), without `XDG_RUNTIME_DIR`,
/// with `TMPDIR` as given, and with an outer retry's `RETRY_HINT_FILE`;
/// `None` where no such namespace can be made.
fn in_a_root_without_tmp(tmpdir: Option<&str>, args: &[&str]) -> Option<std::process::Output> {
    // The binary is copied out first: the checkout itself may be under /tmp.
    let script = "mount -t tmpfs -o size=512m retry-bin /mnt && cp \"$1\" /mnt/retry && shift \
        && mount -t tmpfs -o ro,size=1k retry-test /tmp \
        && mount -t tmpfs -o ro,size=1k retry-test /dev/shm || exit 1; \
        echo namespaced; exec /mnt/retry \"$@\"";
    let mut command = std::process::Command::new("unshare");
    command
        .args([
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .arg(BIN)
        .args(args)
        .env_remove("XDG_RUNTIME_DIR")
        .env("RETRY_HINT_FILE", "/outer-retry/hint")
        .stdin(std::process::Stdio::null());
    match tmpdir {
        Some(value) => command.env("TMPDIR", value),
        None => command.env_remove("TMPDIR"),
    };
    let mut out = command.output().ok()?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let rest = stdout.strip_prefix("namespaced\n")?;
    out.stdout = rest.as_bytes().to_vec();
    Some(out)
}

#[test]
fn without_tmpdir_and_any_place_for_the_hint_file_the_command_still_runs() {
    if skip_unless_root("without_tmpdir_and_any_place_for_the_hint_file_the_command_still_runs") {
        return;
    }
    // An empty root (only the binary and a static /bin/sh) has no /tmp:
    // every run exited 125 before running anything.
    let body = "test -z \"$RETRY_HINT_FILE\" && echo ran";
    let Some(out) = in_a_root_without_tmp(None, &["-n", "2", "-d", "1ms", "--", "sh", "-c", body])
    else {
        eprintln!("skipped: no mount namespace (unshare)");
        return;
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ran\n", "{stderr}");
    let warning =
        "retry: warning: no place for the hint file (creating a private directory in /tmp: ";
    assert_eq!(stderr.matches(warning).count(), 1, "{stderr}");
    assert!(stderr.contains("): RETRY_HINT_FILE is empty"), "{stderr}");
    // Said once for the run, not once per attempt; nor is a hint file
    // made for a later attempt.
    let body = "test -z \"$RETRY_HINT_FILE\" && echo ran $RETRY_ATTEMPT && test $RETRY_ATTEMPT = 2";
    let out =
        in_a_root_without_tmp(None, &["-n", "2", "-d", "1ms", "--", "sh", "-c", body]).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "ran 1\nran 2\n",
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("no place for the hint file").count(),
        1,
        "{stderr}"
    );
    // A TMPDIR that is set decides, as before: unusable, nothing runs.
    let out = in_a_root_without_tmp(Some("/tmp"), &["--", "echo", "ran"]).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "", "{stderr}");
    assert!(
        stderr.contains("setting up the hint file: creating a private directory in /tmp ($TMPDIR)"),
        "{stderr}"
    );
}

#[test]
fn dev_shm_is_for_roots_runs_only() {
    if skip_unless_root("dev_shm_is_for_roots_runs_only") {
        return;
    }
    // For other users systemd-logind empties /dev/shm of their files when
    // their last session ends (RemoveIPC): a run going on then loses its
    // directory, whose name another user can take.
    let body = "dirname \"$RETRY_HINT_FILE\"";
    let as_root = retry_std()
        .env_remove("TMPDIR")
        .env_remove("XDG_RUNTIME_DIR")
        .args(["--", "sh", "-c", body])
        .output()
        .unwrap();
    let Ok(as_nobody) = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
        .env_remove("TMPDIR")
        .env_remove("XDG_RUNTIME_DIR")
        .args(["--", "sh", "-c", body])
        .output()
    else {
        eprintln!("skipped: no setpriv (util-linux)");
        return;
    };
    assert!(as_nobody.status.success(), "{as_nobody:?}");
    let base = |out: &std::process::Output| {
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
            .parent()
            .unwrap()
            .to_path_buf()
    };
    assert_eq!(base(&as_nobody), Path::new("/tmp"));
    if std::fs::metadata("/dev/shm").is_ok_and(|m| m.mode() & 0o1777 == 0o1777) {
        assert_eq!(base(&as_root), Path::new("/dev/shm"));
    }
}

#[test]
fn a_run_directory_another_user_took_over_is_not_read_nor_handed_on() {
    if skip_unless_root("a_run_directory_another_user_took_over_is_not_read_nor_handed_on") {
        return;
    }
    // Once removed under the run, its name (which anyone can list in
    // /dev/shm or /tmp) is free: another user makes a directory there, open
    // to all, with a forged hint in it.
    let dir = scratch();
    let take = "rm -rf \"$d\"; mkdir -m 777 \"$d\"; echo permanent > \"$d/hint\"; \
                chown -R 65534:65534 \"$d\"";
    let (out, seen) = run_dir_taken_away(take, dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let taken = &seen[0];
    let owner = std::fs::metadata(taken).map(|meta| meta.uid());
    let _ = std::fs::remove_dir_all(taken);
    // The forged hint was not obeyed: attempt 2 ran, and its hint was.
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("attempt 1/3 failed: exit 1 (transient)"),
        "{stderr}"
    );
    assert!(stderr.contains("hint file said permanent"), "{stderr}");
    assert_eq!(seen.len(), 2, "{seen:?}");
    // Attempt 2 was not sent into the other user's directory.
    assert_ne!(&seen[1], taken);
    // Nor did retry remove it.
    assert_eq!(owner.ok(), Some(65534));
}

// ---- Values from the environment and the child (item 17) ----

#[test]
fn retry_attempt_with_a_newline_cannot_forge_a_line() {
    let out = retry()
        .env("RETRY_ATTEMPT", "1\nretry: forged\x1b[2J")
        .env("RETRY_MAX_ATTEMPTS", "3")
        .args(["-n", "2", "--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stderr.lines().any(|l| l.starts_with("retry: forged")),
        "{stderr}"
    );
    assert!(!stderr.contains('\x1b'), "{stderr}");
    assert!(
        stderr.contains("its attempt '1\\nretry: forged\\e[2J'"),
        "{stderr}"
    );

    // A plain number is shown as the number.
    let out = retry()
        .env("RETRY_ATTEMPT", " 2 ")
        .args(["-n", "2", "--", "true"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("its attempt 2)"));
}

#[test]
fn the_command_shown_under_verbose_has_its_control_characters_escaped() {
    let out = retry()
        .args([
            "-v",
            "-n",
            "1",
            "--",
            "printf",
            "",
            "x\nretry: forged\r\x1b[1A",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stderr.lines().any(|l| l.starts_with("retry: forged")),
        "{stderr}"
    );
    assert!(
        !stderr.contains('\x1b') && !stderr.contains('\r'),
        "{stderr}"
    );
    assert!(stderr.contains("x\\nretry: forged\\r\\e[1A"), "{stderr}");
}

// ---- The retry budget's store: its waits are the run's waits ----

/// A state directory only we can use (the store refuses any other).
fn private_state() -> tempfile::TempDir {
    let dir = scratch();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

/// A child body that takes budget `name`'s lock in `state` for `seconds`
/// (util-linux `flock`, in a session of its own so the attempt's clean-up
/// leaves it holding), waits until it holds it, then exits 3: the retry
/// that follows has to wait for the store.
fn hold_budget_lock_then_fail(state: &Path, name: &str, seconds: u32) -> String {
    let lock = state.join(format!("budget@{name}.lock"));
    let held = state.join("held");
    format!(
        "setsid flock '{lock}' sh -c 'touch {held}; sleep {seconds}' </dev/null >/dev/null 2>&1 & \
         until [ -e '{held}' ]; do sleep 0.01; done; exit 3",
        lock = lock.display(),
        held = held.display()
    )
}

fn flock_available() -> bool {
    let found = std::process::Command::new("flock")
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        eprintln!("skipped: no flock command (util-linux)");
    }
    found
}

#[test]
fn a_held_budget_lock_never_holds_the_run_past_max_time() {
    if !flock_available() {
        return;
    }
    let state = private_state();
    let body = hold_budget_lock_then_fail(state.path(), "api", 15);
    let started = Instant::now();
    let out = retry()
        .args(["--budget", "api", "--state-timeout", "30s", "--state-dir"])
        .arg(state.path())
        .args([
            "-t", "1500ms", "-n", "3", "-d", "0", "--", "sh", "-c", &body,
        ])
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Before: the wait for the lock lasted --state-timeout (30 s), and an
    // attempt started past --max-time.
    assert!(took < Duration::from_secs(6), "took {took:?}: {stderr}");
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("--max-time ran out while asking retry budget api; exit 3"),
        "{stderr}"
    );
    assert!(!stderr.contains("attempt 2"), "{stderr}");
}

#[test]
fn a_signal_during_the_wait_for_a_budget_lock_ends_the_run_at_once() {
    if !flock_available() {
        return;
    }
    let state = private_state();
    let body = hold_budget_lock_then_fail(state.path(), "api", 15);
    let child = retry_std()
        .args(["--budget", "api", "--state-timeout", "30s", "--state-dir"])
        .arg(state.path())
        .args(["-n", "3", "-d", "0", "--", "sh", "-c", &body])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(&state.path().join("held"), Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(300));
    let signalled = Instant::now();
    send_signal(child.id(), "TERM");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Before: deaf to it until the lock's wait ran out (30 s here).
    assert!(
        signalled.elapsed() < Duration::from_secs(3),
        "{:?}: {stderr}",
        signalled.elapsed()
    );
    assert_eq!(code_and_signal(out.status), (None, Some(15)), "{stderr}");
    assert!(!stderr.contains("retrying as if"), "{stderr}");
}

#[test]
fn a_budget_lock_a_busy_neighbour_keeps_retaking_is_had_when_it_is_free() {
    // A neighbour takes the lock for 50 ms, lets it go for half a
    // millisecond, takes it again, for 4 s (as hundreds of runs started at
    // once do to each other). Before: retry tried again after sleeps of up
    // to 50 ms, nearly always while the lock was held, and gave up after
    // --state-timeout (1 s) with a warning, running as if no budget were
    // kept. Now it waits in the kernel's queue and gets it at a release.
    let state = private_state();
    let lock = state.path().join("budget@api.lock");
    let held = state.path().join("held");
    let neighbour = format!(
        "import fcntl, os, time\n\
         fd = os.open('{lock}', os.O_RDWR | os.O_CREAT, 0o600)\n\
         end = time.monotonic() + 4\n\
         while time.monotonic() < end:\n\
         \x20   fcntl.flock(fd, fcntl.LOCK_EX)\n\
         \x20   open('{held}', 'w').close()\n\
         \x20   time.sleep(0.05)\n\
         \x20   fcntl.flock(fd, fcntl.LOCK_UN)\n\
         \x20   time.sleep(0.0005)\n",
        lock = lock.display(),
        held = held.display()
    );
    let Ok(mut busy) = std::process::Command::new("python3")
        .args(["-c", &neighbour])
        .spawn()
    else {
        eprintln!("skipped: no python3");
        return;
    };
    wait_for_file(&held, Duration::from_secs(20));
    let started = Instant::now();
    let out = retry()
        .args(["--budget", "api", "--state-dir"])
        .arg(state.path())
        .args(["-n", "1", "--", "true"])
        .output()
        .unwrap();
    let took = started.elapsed();
    let _ = busy.kill();
    let _ = busy.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("could not lock"), "{took:?}: {stderr}");
    let record = std::fs::read_to_string(state.path().join("budget@api.json")).unwrap();
    assert!(record.contains("\"deposits\": 1"), "{record}");
}

/// A Redis stand-in on 127.0.0.1: the first `answered` connections get
/// answers as a real server gives them to retry's scripts (an empty key, a
/// write that succeeds); every later one is accepted and never answered.
/// Returns the port.
fn redis_that_stalls_after(answered: usize) -> u16 {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for (count, stream) in listener.incoming().enumerate() {
            let Ok(stream) = stream else { continue };
            if count >= answered {
                held.push(stream);
                continue;
            }
            std::thread::spawn(move || {
                let mut writer = stream.try_clone().unwrap();
                let mut reader = BufReader::new(stream);
                let mut line = String::new();
                loop {
                    line.clear();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let Some(count) = line.trim().strip_prefix('*') else {
                        return;
                    };
                    let mut words = Vec::new();
                    for _ in 0..count.parse::<usize>().unwrap() {
                        line.clear();
                        reader.read_line(&mut line).unwrap();
                        let len: usize = line.trim()[1..].parse().unwrap();
                        let mut word = vec![0; len + 2];
                        reader.read_exact(&mut word).unwrap();
                        words.push(String::from_utf8_lossy(&word[..len]).to_uppercase());
                    }
                    // The read script finds nothing; the compare-and-set
                    // script (the one that SETs) stores.
                    let reply: &[u8] = match words[0].as_str() {
                        "EVAL" if words[1].contains("'SET'") => b":1\r\n",
                        "EVAL" => b"*2\r\n:0\r\n$0\r\n\r\n",
                        _ => b"+OK\r\n",
                    };
                    if writer.write_all(reply).is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

#[test]
fn a_silent_redis_never_holds_a_budgeted_run_past_max_time_or_a_signal() {
    // The deposit is answered; the withdrawal before the retry never is.
    let port = redis_that_stalls_after(1);
    let url = format!("redis://127.0.0.1:{port}/0");
    let started = Instant::now();
    let out = retry()
        .args(["--budget", "api", "--state-url", &url])
        .args([
            "--state-timeout",
            "30s",
            "-t",
            "1500ms",
            "-n",
            "3",
            "-d",
            "0",
        ])
        .args(["--", "sh", "-c", "exit 3"])
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(took < Duration::from_secs(6), "took {took:?}: {stderr}");
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("--max-time ran out while asking retry budget api"),
        "{stderr}"
    );

    let port = redis_that_stalls_after(1);
    let url = format!("redis://127.0.0.1:{port}/0");
    let dir = scratch();
    let failed = dir.path().join("failed");
    let body = format!("touch '{}'; exit 3", failed.display());
    let child = retry_std()
        .args(["--budget", "api", "--state-url", &url])
        .args(["--state-timeout", "30s", "-n", "3", "-d", "0"])
        .args(["--", "sh", "-c", &body])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(&failed, Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(300));
    let signalled = Instant::now();
    send_signal(child.id(), "TERM");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        signalled.elapsed() < Duration::from_secs(3),
        "{:?}: {stderr}",
        signalled.elapsed()
    );
    assert_eq!(code_and_signal(out.status), (None, Some(15)), "{stderr}");
}

// ---- -o FILE where another user can put files ----

/// A file of nobody's (65534), writable by all: what another user plants
/// at a path a root job will write.
fn plant_as_nobody(path: &Path) {
    std::fs::write(path, "").unwrap();
    std::os::unix::fs::chown(path, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666)).unwrap();
}

#[test]
fn output_over_another_users_file_in_a_sticky_directory_is_refused() {
    if skip_unless_root("output_over_another_users_file_in_a_sticky_directory_is_refused") {
        return;
    }
    let dir = scratch();
    let shared = sticky_dir(dir.path(), "shared");
    let out = shared.join("out");
    let ran = dir.path().join("ran");

    // Planted before the run: refused before anything runs. Before, the
    // output went into it and stayed nobody's, mode 0666: the planter
    // decided who reads what root's job wrote.
    plant_as_nobody(&out);
    let result = retry()
        .arg("-o")
        .arg(&out)
        .args(["--", "sh", "-c"])
        .arg(format!("touch '{}'; echo secret", ran.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(125), "{stderr}");
    assert!(
        stderr.contains("owned by another user (uid 65534)"),
        "{stderr}"
    );
    assert!(!ran.exists(), "the command ran");
    assert_eq!(std::fs::read(&out).unwrap(), b"");

    // Planted while the command runs: not replaced either.
    std::fs::remove_file(&out).unwrap();
    let plant = format!(
        "touch '{out}' && chown 65534:65534 '{out}' && chmod 666 '{out}' && echo secret",
        out = out.display()
    );
    let result = retry()
        .arg("-o")
        .arg(&out)
        .args(["--", "sh", "-c", &plant])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(125), "{stderr}");
    assert!(
        stderr.contains("is now owned by another user (uid 65534)"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), b"");
    assert_eq!(std::fs::metadata(&out).unwrap().uid(), 65534);

    // Our own file there, and another user's file in a directory that is
    // not shared, are replaced as before (the latter keeps its owner).
    std::fs::remove_file(&out).unwrap();
    std::fs::write(&out, "old").unwrap();
    retry()
        .arg("-o")
        .arg(&out)
        .args(["--", "echo", "new"])
        .assert()
        .success();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "new\n");
    let private = dir.path().join("theirs");
    plant_as_nobody(&private);
    retry()
        .arg("-o")
        .arg(&private)
        .args(["--", "echo", "new"])
        .assert()
        .success();
    assert_eq!(std::fs::read_to_string(&private).unwrap(), "new\n");
    assert_eq!(std::fs::metadata(&private).unwrap().uid(), 65534);
}

// ---- Presets files another user can write ----

/// A presets file that makes `false` a permanent failure at once.
const STOP_FALSE: &str = r#"
[preset.planted]
description = "planted"
commands = ["false"]

[[preset.planted.exit]]
kind = "permanent"
codes = "1"
means = "the planted preset says stop"
"#;

#[test]
fn a_presets_file_others_can_write_decides_nothing() {
    let dir = scratch();
    let config = dir.path().join("config");
    std::fs::create_dir_all(config.join("retry")).unwrap();
    let file = config.join("retry/presets.toml");
    std::fs::write(&file, STOP_FALSE).unwrap();
    let run = || {
        retry()
            .env("XDG_CONFIG_HOME", &config)
            .args(["-n", "2", "-d", "0", "--", "false"])
            .output()
            .unwrap()
    };
    // Ours alone: obeyed.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = run();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the planted preset says stop"), "{stderr}");

    // Writable by anyone: before, obeyed all the same. Now ignored with a
    // warning (the run goes on with the built-ins), and refused when
    // RETRY_PRESETS names it.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = run();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("is writable by others (mode 0666; chmod go-w): ignored"),
        "{stderr}"
    );
    assert!(stderr.contains("attempt 2/2"), "{stderr}");
    assert!(!stderr.contains("says stop"), "{stderr}");
    let out = retry()
        .env("RETRY_PRESETS", &file)
        .args(["-n", "2", "-d", "0", "--", "false"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(stderr.contains("refusing it"), "{stderr}");

    if skip_unless_root("a_presets_file_others_can_write_decides_nothing (another owner)") {
        return;
    }
    // Another user's, even read-only to them: root running with their
    // HOME (sudo -E) takes no policy from them, and they cannot make its
    // runs fail either.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
    let out = run();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("belongs to another user (uid 65534)"),
        "{stderr}"
    );
    assert!(!stderr.contains("says stop"), "{stderr}");
    let out = retry()
        .env("XDG_CONFIG_HOME", &config)
        .args(["--preset", "list"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(stdout.contains("presets.toml (ignored)"), "{stdout}");
}

#[test]
fn a_presets_file_we_cannot_read_does_not_stop_the_run() {
    if skip_unless_root("a_presets_file_we_cannot_read_does_not_stop_the_run") {
        return;
    }
    // Root's configuration, and a job run as nobody with root's HOME (su
    // or sudo -u without a login): before, every run failed with 125.
    let dir = scratch();
    let config = dir.path().join("config");
    std::fs::create_dir_all(config.join("retry")).unwrap();
    std::fs::write(config.join("retry/presets.toml"), STOP_FALSE).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o700)).unwrap();
    let Ok(out) = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
        .args(["-n", "1", "--", "true"])
        .env("XDG_CONFIG_HOME", &config)
        .env_remove("RETRY_PRESETS")
        .output()
    else {
        eprintln!("skipped: no setpriv (util-linux)");
        return;
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("cannot be read (Permission denied"),
        "{stderr}"
    );
}

// ---- A reader of retry's output that takes nothing ----

/// Which of retry's outputs the stalled reader holds.
#[derive(Clone, Copy)]
enum Stalled {
    Stdout,
    Stderr,
}

/// Run `retry ARGS` with `stalled` going to a pipe nobody reads (the other
/// output to /dev/null), SIGTERM after `signal_after` if given; returns how
/// it ended and when, or fails after 30 s (a hang).
fn with_a_stalled_reader(
    stalled: Stalled,
    args: &[&str],
    signal_after: Option<Duration>,
) -> (std::process::ExitStatus, Duration) {
    use std::process::Stdio;
    let mut command = retry_std();
    command.args(args).stdin(Stdio::null());
    match stalled {
        Stalled::Stdout => command.stdout(Stdio::piped()).stderr(Stdio::null()),
        Stalled::Stderr => command.stdout(Stdio::null()).stderr(Stdio::piped()),
    };
    let started = Instant::now();
    let mut child = command.spawn().unwrap();
    // Held, never read: the pipe fills and stays full.
    let _reader = (child.stdout.take(), child.stderr.take());
    if let Some(after) = signal_after {
        std::thread::sleep(after);
        send_signal(child.id(), "TERM");
    }
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status, started.elapsed());
        }
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("retry {args:?} hung on a reader that takes nothing");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Three megabytes on stdout, more than any pipe holds.
const FLOOD: &str = "head -c 3000000 /dev/zero; sleep 1";

#[test]
fn a_stalled_stdout_holds_retry_neither_past_a_signal_nor_past_max_time() {
    let second = Some(Duration::from_secs(1));
    // --buffer-stdout: the delivery after the success. Before: blocked in
    // its write for as long as the reader stalled, deaf to SIGTERM and
    // --max-time.
    let buffered = ["--buffer-stdout", "--", "sh", "-c", FLOOD];
    let (status, took) = with_a_stalled_reader(Stalled::Stdout, &buffered, second);
    assert_eq!(code_and_signal(status), (None, Some(15)), "after {took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    let limited = ["-t", "3s", "--buffer-stdout", "--", "sh", "-c", FLOOD];
    let (status, took) = with_a_stalled_reader(Stalled::Stdout, &limited, None);
    assert_eq!(status.code(), Some(125), "after {took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");

    // Scanned stdout, passed through by a pump. Before: the attempt was
    // over, but retry waited for the pump stuck in its write.
    let scanned = ["--scan-stdout", "--retry-on-output", "zzz", "--"];
    let args: Vec<&str> = scanned.iter().copied().chain(["sh", "-c", FLOOD]).collect();
    let (status, took) = with_a_stalled_reader(Stalled::Stdout, &args, second);
    assert_eq!(code_and_signal(status), (None, Some(15)), "after {took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn a_stalled_stderr_holds_retry_neither_past_a_signal_nor_past_max_time() {
    let flood = "head -c 3000000 /dev/zero >&2; sleep 1";
    let args = [
        "-t",
        "3s",
        "--retry-on-output",
        "zzz",
        "--",
        "sh",
        "-c",
        flood,
    ];
    // Before: the pump stuck in its write held the run, and then retry's
    // own lines did.
    let (status, took) = with_a_stalled_reader(Stalled::Stderr, &args, None);
    assert_eq!(status.code(), Some(124), "after {took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    let args = ["--retry-on-output", "zzz", "--", "sh", "-c", flood];
    let (status, took) =
        with_a_stalled_reader(Stalled::Stderr, &args, Some(Duration::from_secs(1)));
    assert_eq!(code_and_signal(status), (None, Some(15)), "after {took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
}

// ---- CI step files ----

#[test]
fn step_files_through_another_users_symlink_in_a_sticky_directory_are_not_written() {
    if skip_unless_root("step_files_through_another_users_symlink_are_not_written") {
        return;
    }
    let dir = scratch();
    let shared = sticky_dir(dir.path(), "shared");
    // A file of root's that another user would like written to.
    let target = dir.path().join("roots-file");
    std::fs::write(&target, "root's\n").unwrap();
    let output = shared.join("output");
    let summary = shared.join("summary");
    for link in [&output, &summary] {
        std::os::unix::fs::symlink(&target, link).unwrap();
        give_to_nobody(link);
    }
    let out = retry()
        .env("GITHUB_OUTPUT", &output)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .args(["-n", "1", "--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Before: both were followed and root's file got the lines.
    assert!(out.status.success(), "{stderr}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "root's\n");
    assert_eq!(
        stderr
            .matches("a symlink owned by another user (uid 65534)")
            .count(),
        2,
        "{stderr}"
    );

    // Our own symlink there is followed, as before.
    std::fs::remove_file(&output).unwrap();
    std::os::unix::fs::symlink(&target, &output).unwrap();
    retry()
        .env("GITHUB_OUTPUT", &output)
        .args(["-n", "1", "--", "true"])
        .assert()
        .success();
    assert!(
        std::fs::read_to_string(&target)
            .unwrap()
            .contains("outcome=success")
    );
}

#[test]
fn step_files_through_another_users_directory_symlink_are_not_written() {
    if skip_unless_root("step_files_through_another_users_directory_symlink_are_not_written") {
        return;
    }
    let dir = scratch();
    let (runner, victim) = planted_directory_link(dir.path(), "runner");
    std::fs::write(victim.join("output"), "root's\n").unwrap();
    let out = retry()
        .env("GITHUB_OUTPUT", runner.join("output"))
        .args(["-n", "1", "--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Before: only a symlink at the end was judged; this one, on the way,
    // was followed (with fs.protected_symlinks=0) and root's file appended to.
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("is a symlink owned by another user (uid 65534)"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(victim.join("output")).unwrap(),
        "root's\n"
    );
}

#[test]
fn output_through_another_users_directory_symlink_is_refused() {
    if skip_unless_root("output_through_another_users_directory_symlink_is_refused") {
        return;
    }
    let dir = scratch();
    // Another user makes /tmp/shared/reports before root's job does, a link
    // to what root's job must never replace: a file in a directory of its own.
    let (reports, victim) = planted_directory_link(dir.path(), "reports");
    std::fs::write(victim.join("passwd"), "precious\n").unwrap();
    let shared = reports.parent().unwrap();
    let ran = dir.path().join("ran");
    let out = retry()
        .arg("-o")
        .arg(reports.join("passwd"))
        .args(["--", "sh", "-c"])
        .arg(format!("touch '{}'; echo pwned", ran.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Before: followed, and etc/passwd replaced by the job's output.
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(
        stderr.contains("is a symlink owned by another user (uid 65534)"),
        "{stderr}"
    );
    assert!(!ran.exists(), "the command ran");
    assert_eq!(
        std::fs::read_to_string(victim.join("passwd")).unwrap(),
        "precious\n"
    );

    // Our own symlink on the way (or one of root's) is followed.
    let ours = shared.join("ours");
    std::os::unix::fs::symlink(&victim, &ours).unwrap();
    retry()
        .arg("-o")
        .arg(ours.join("report"))
        .args(["--", "echo", "fine"])
        .assert()
        .success();
    assert_eq!(
        std::fs::read_to_string(victim.join("report")).unwrap(),
        "fine\n"
    );
}

// ---- Hooks ----

#[test]
fn a_hook_that_ignores_sigterm_past_max_time_ends_the_run_and_says_so() {
    let mark = marker();
    let hook = format!("trap '' TERM; sleep {mark}");
    let started = Instant::now();
    let out = retry()
        .args(["-n", "3", "-d", "0", "-t", "1s", "--kill-after", "300ms"])
        .args(["--on-retry", &hook, "--", "false"])
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(took < Duration::from_secs(5), "{took:?}: {stderr}");
    assert!(
        stderr.contains("--max-time ran out during --on-retry; exit 1"),
        "{stderr}"
    );
    // Before: "retrying anyway", and then no retry.
    assert!(!stderr.contains("retrying anyway"), "{stderr}");
    assert!(
        stderr.contains("no retry follows: the run ends"),
        "{stderr}"
    );
    assert!(none_left(&mark, Duration::from_secs(5)));
}

#[test]
fn step_files_through_our_symlink_into_another_users_are_not_written() {
    if skip_unless_root("step_files_through_our_symlink_into_another_users_are_not_written") {
        return;
    }
    let dir = scratch();
    let (runner, victim) = planted_directory_link(dir.path(), "runner");
    std::fs::write(victim.join("summary"), "root's\n").unwrap();
    // The step file is our own symlink; where it points, on the way, is
    // another user's.
    let summary = dir.path().join("summary");
    std::os::unix::fs::symlink(runner.join("summary"), &summary).unwrap();
    let out = retry()
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .args(["-n", "1", "--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("is a symlink owned by another user (uid 65534)"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(victim.join("summary")).unwrap(),
        "root's\n"
    );
}

#[test]
fn no_process_or_thread_left_to_start_is_retrys_failure_not_a_panic() {
    // RLIMIT_NPROC counts threads: at 2 for a user with nothing else
    // running, the child could start but the thread that reads its output
    // could not, and retry panicked (abort, 134). At 1, neither can.
    for limit in ["1", "2"] {
        let Ok(out) = std::process::Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "bash",
                "-c",
            ])
            .arg(format!("ulimit -u {limit} && exec \"$0\" \"$@\""))
            .args([BIN, "-n", "1", "--retry-on-output", "x", "--", "true"])
            .env("HOME", "/nonexistent")
            .stdin(std::process::Stdio::null())
            .output()
        else {
            eprintln!("skipped: no setpriv (util-linux)");
            return;
        };
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "limit {limit}: {stderr}");
        assert!(!stderr.contains("panicked"), "limit {limit}: {stderr}");
        assert!(
            stderr.contains("cannot start a thread") || stderr.contains("cannot start a process"),
            "limit {limit}: {stderr}"
        );
    }
}
