//! Both ways to start a program against the same cases: each case runs with
//! every spawn the build has (`portable` always, `clone` on native Linux)
//! and names the spawn in what it asserts. A PATH to search is given as
//! the request's `PATH`, which both spawns search as `Command` does.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use rustix::process::{Pid, WaitOptions};

use super::{Request, portable};

type Start = fn(&Request<'_>) -> io::Result<Pid>;

/// Every spawn this build has, by name.
const SPAWNS: &[(&str, Start)] = &[
    #[cfg(all(target_os = "linux", not(retry_posix)))]
    ("clone", super::clone::start),
    ("portable", portable::start),
];

fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("retry-spawn-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        Scratch(dir)
    }

    fn file(&self, name: &str, text: &str, mode: u32) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Start `program` with `args` through `start`, PATH set to `path` when
/// given (else retry's), stdout into `out`; its exit code, or the spawn's
/// errno.
fn run(
    start: Start,
    program: &OsStr,
    args: &[&str],
    path: Option<&OsStr>,
    out: Option<&std::fs::File>,
) -> Result<i32, i32> {
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    let mut env = vec![("RETRY_SPAWN_TEST", OsString::from("set"))];
    if let Some(path) = path {
        env.push(("PATH", path.to_os_string()));
    }
    let request = Request {
        program,
        args: &args,
        env: &env,
        stdio: [None, out.map(AsFd::as_fd), None],
        own_group: true,
    };
    let pid = start(&request).map_err(|err| err.raw_os_error().unwrap())?;
    let (_, status) = rustix::process::waitpid(Some(pid), WaitOptions::empty())
        .unwrap()
        .unwrap();
    Ok(status.exit_status().unwrap())
}

/// Both spawns try the places `exec::candidates` lists, in its order.
mod exec_candidates {
    use super::os;
    use crate::sys::spawn::exec::candidates;

    fn strings(found: Vec<Vec<u8>>) -> Vec<String> {
        found
            .into_iter()
            .map(|c| String::from_utf8(c).unwrap())
            .collect()
    }

    #[test]
    fn a_name_is_looked_for_in_each_place_of_path_in_order() {
        assert_eq!(
            strings(candidates(os("cmd"), Some(os("/a:/b/::rel")))),
            ["/a/cmd", "/b/cmd", "cmd", "rel/cmd"]
        );
        assert_eq!(
            strings(candidates(os("cmd"), None)),
            ["/bin/cmd", "/usr/bin/cmd"]
        );
    }

    #[test]
    fn a_path_is_taken_as_it_is_and_an_empty_name_is_nowhere() {
        assert_eq!(
            strings(candidates(os("./x/cmd"), Some(os("/a")))),
            ["./x/cmd"]
        );
        assert!(candidates(os(""), Some(os("/a"))).is_empty());
    }
}

#[test]
fn exec_failures_come_back_as_their_errno() {
    let dir = Scratch::new("errno");
    let plain = dir.file("plain", "echo hi\n", 0o644);
    let missing = dir.0.join("missing");
    let bad = dir.file("bad", "#!/nonexistent/interp\n", 0o755);
    let long = "x".repeat(200_000);
    // An ELF header for a machine nobody runs (e_machine 0xfffe): never
    // handed to /bin/sh as if it were a script.
    let mut elf = b"\x7fELF\x02\x01\x01".to_vec();
    elf.resize(18, 0);
    elf.extend([0xfe, 0xff]);
    elf.resize(64, 0);
    let elf_path = dir.0.join("elf");
    std::fs::write(&elf_path, elf).unwrap();
    std::fs::set_permissions(&elf_path, std::fs::Permissions::from_mode(0o755)).unwrap();
    for &(name, start) in SPAWNS {
        let run = |program: &OsStr, args: &[&str], path: Option<&OsStr>| {
            run(start, program, args, path, None)
        };
        assert_eq!(
            run(missing.as_os_str(), &[], None),
            Err(libc::ENOENT),
            "{name}"
        );
        assert_eq!(
            run(plain.as_os_str(), &[], None),
            Err(libc::EACCES),
            "{name}"
        );
        assert_eq!(
            run(dir.0.as_os_str(), &[], None),
            Err(libc::EACCES),
            "{name}"
        );
        assert_eq!(
            run(os("no-such-command-here"), &[], Some(dir.0.as_os_str())),
            Err(libc::ENOENT),
            "{name}"
        );
        assert_eq!(run(os(""), &[], None), Err(libc::ENOENT), "{name}");
        assert_eq!(run(bad.as_os_str(), &[], None), Err(libc::ENOENT), "{name}");
        assert_eq!(
            run(elf_path.as_os_str(), &[], None),
            Err(libc::ENOEXEC),
            "{name}"
        );
        assert_eq!(
            run(os("/bin/true"), &[long.as_str(); 20], None),
            Err(libc::E2BIG),
            "{name}"
        );
    }
}

#[test]
fn the_path_search_takes_places_in_order_skipping_those_without_a_runnable_program() {
    let first = Scratch::new("first");
    let second = Scratch::new("second");
    let third = Scratch::new("third");
    // Present but not executable in the first place: execvp goes on.
    first.file("tool", "#!/bin/sh\nexit 3\n", 0o644);
    second.file("tool", "#!/bin/sh\nexit 4\n", 0o755);
    third.file("tool", "#!/bin/sh\nexit 5\n", 0o755);
    let (first, second, third) = (first.0.display(), second.0.display(), third.0.display());
    let two = format!("/nonexistent:{first}:{second}");
    let three = format!("/nonexistent:{first}:{second}:{third}");
    // Only the non-executable one: EACCES, not ENOENT.
    let denied = format!("/nonexistent:{first}");
    for &(name, start) in SPAWNS {
        let run = |path: &str| run(start, os("tool"), &[], Some(os(path)), None);
        assert_eq!(run(&two), Ok(4), "{name}");
        assert_eq!(run(&three), Ok(4), "{name}");
        assert_eq!(run(&denied), Err(libc::EACCES), "{name}");
    }
}

#[test]
fn a_script_without_a_shebang_runs_under_bin_sh_with_its_arguments_and_environment() {
    for &(name, start) in SPAWNS {
        let dir = Scratch::new(&format!("script-{name}"));
        dir.file(
            "plain",
            "echo \"$0|$#|$1|$RETRY_SPAWN_TEST\"\nexit 5\n",
            0o755,
        );
        let out_path = dir.0.join("out");
        let out = std::fs::File::create(&out_path).unwrap();
        let path = dir.0.as_os_str();
        let ran = run(start, os("plain"), &["one"], Some(path), Some(&out));
        assert_eq!(ran, Ok(5), "{name}");
        let expected = format!("{}|1|one|set\n", dir.0.join("plain").display());
        let text = std::fs::read_to_string(&out_path).unwrap();
        assert_eq!(text, expected, "{name}");
    }
}

#[test]
fn the_caller_keeps_its_descriptors() {
    let path = std::env::var_os("PATH");
    for &(name, start) in SPAWNS {
        let dir = Scratch::new(&format!("keep-{name}"));
        let out_path = dir.0.join("out");
        let mut out = std::fs::File::create(&out_path).unwrap();
        let ran = run(start, os("echo"), &["child"], path.as_deref(), Some(&out));
        assert_eq!(ran, Ok(0), "{name}");
        io::Write::write_all(&mut out, b"caller\n").unwrap();
        let text = std::fs::read_to_string(&out_path).unwrap();
        assert_eq!(text, "child\ncaller\n", "{name}");
    }
}

/// Make `set` this thread's signal mask; the previous mask (for the test
/// that reads masks in /proc: Linux).
#[cfg(target_os = "linux")]
fn set_mask(set: &libc::sigset_t) -> libc::sigset_t {
    // SAFETY: `pthread_sigmask` reads `set` and writes the previous mask
    // into `old`; SIG_SETMASK is a valid `how`.
    unsafe {
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_SETMASK, set, &raw mut old);
        old
    }
}

// It reads what the child's /proc entries say.
#[cfg(target_os = "linux")]
#[test]
fn the_child_gets_its_own_group_default_signals_and_an_empty_mask() {
    let path = std::env::var_os("PATH");
    let script = "[ \"$(cut -d' ' -f5 /proc/$$/stat)\" = $$ ] && echo own-group";
    let masks = ["-E", "^Sig(Blk|Ign)", "/proc/self/status"];
    for &(name, start) in SPAWNS {
        let dir = Scratch::new(&format!("status-{name}"));
        let out_path = dir.0.join("out");
        let out = std::fs::File::create(&out_path).unwrap();
        let ran = run(
            start,
            os("sh"),
            &["-c", script],
            path.as_deref(),
            Some(&out),
        );
        assert_eq!(ran, Ok(0), "{name}");
        let text = std::fs::read_to_string(&out_path).unwrap();
        assert!(text.contains("own-group"), "{name}: {text}");
        // The masks are read by the spawned program itself: a shell reading
        // its own /proc entry may catch itself blocking signals around a
        // fork of its own. The spawning thread blocks a signal of its own:
        // the child's mask is empty all the same.
        let out = std::fs::File::create(&out_path).unwrap();
        // SAFETY: the set is initialised by sigemptyset before a valid
        // signal is added to it.
        let usr2 = unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&raw mut set);
            libc::sigaddset(&raw mut set, libc::SIGUSR2);
            set
        };
        let before = set_mask(&usr2);
        let ran = run(start, os("grep"), &masks, path.as_deref(), Some(&out));
        set_mask(&before);
        assert_eq!(ran, Ok(0), "{name}");
        let text = std::fs::read_to_string(&out_path).unwrap();
        assert!(text.contains("SigBlk:\t0000000000000000"), "{name}: {text}");
        // PIPE (13) is not ignored, as the Rust runtime ignores it for us.
        let ignored = text.lines().find(|l| l.starts_with("SigIgn")).unwrap();
        let mask = u64::from_str_radix(ignored.split_whitespace().nth(1).unwrap(), 16).unwrap();
        assert_eq!(mask & (1 << (libc::SIGPIPE - 1)), 0, "{name}: {text}");
    }
}

/// The keeper: the command's pid comes back, then its wait status on the
/// report pipe; a command that cannot start comes back as its errno, the
/// keeper reaped.
#[cfg(all(target_os = "linux", not(retry_posix)))]
#[test]
fn a_kept_command_reports_its_status_and_a_failed_start_its_errno() {
    let request = |program| Request {
        program,
        args: &[],
        env: &[],
        stdio: [None, None, None],
        own_group: false,
    };
    let missing = super::start_kept(&request(os("/nonexistent/x"))).unwrap();
    assert_eq!(
        missing.err().and_then(|e| e.raw_os_error()),
        Some(libc::ENOENT)
    );

    let kept = super::start_kept(&request(os("/bin/false")))
        .unwrap()
        .unwrap();
    let mut word = [0u8; 4];
    assert_eq!(rustix::io::read(&kept.report, &mut word).unwrap(), 4);
    let status = i32::from_ne_bytes(word);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 1,
        "{status}"
    );
    // Nothing was left below it: the keeper has gone by itself.
    let (pid, _) = rustix::process::waitpid(Some(kept.keeper), WaitOptions::empty())
        .unwrap()
        .unwrap();
    assert_eq!(pid, kept.keeper);
    assert_ne!(kept.child, kept.keeper);
}

/// The child sets only the dispositions `execve` would not leave as the
/// command must get them: SIGPIPE, which this process ignores (the Rust
/// runtime does) and a command gets as the caller left it, is one.
#[test]
fn the_child_sets_only_what_execve_would_not_put_back() {
    let resets = super::child_resets();
    let pipe = super::command_action(libc::SIGPIPE);
    assert_eq!(
        resets.contains(&(libc::SIGPIPE, pipe)),
        pipe == libc::SIG_DFL,
        "{resets:?}"
    );
    for &(signal, action) in resets.iter() {
        let now = crate::sys::signal::handler_of(signal);
        let after_execve = if now == Some(libc::SIG_IGN) {
            libc::SIG_IGN
        } else {
            libc::SIG_DFL
        };
        assert!(
            after_execve != action || !matches!(now, Some(libc::SIG_IGN | libc::SIG_DFL)),
            "signal {signal}: {action} is what execve leaves anyway"
        );
    }
    assert!(resets.len() < 10, "{resets:?}");
}
