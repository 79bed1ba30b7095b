//! The install script (`scripts/install`, which the GitHub Action runs)
//! installs only what it verified, and gives up on a mirror that stalls,
//! trickles or never ends: each case against a local server on 127.0.0.1
//! (started by the test on a free port, stopped when dropped), with curl
//! and again with wget alone (curl hidden from PATH).
//!
//! A good release installs (over a symlink in the directory without
//! following it). Refused, with exit 1, a message naming what was wrong,
//! nothing in `--dir` and nothing left in TMPDIR: a wrong or missing
//! checksum, a tarball holding a symlink or a hard link (to the binary, or
//! as its directory), a binary that is not an ELF for the target's machine
//! or has an absurd size, a SHA256SUMS or a tarball over its size limit
//! (also streamed without end), a tarball that unpacks too large, and a
//! mirror that never answers or sends a byte a second. An installed
//! `retry` that a bare `retry` will not find (the directory is not on PATH,
//! or another `retry` comes first) is warned about, on stderr.
//!
//! Tarballs are made with python3's tarfile (exact member types, links
//! included). Needs python3, curl and wget, and strip (binutils: the debug
//! build is over the 64 MiB the script takes, as a release's is not);
//! without them the tests are skipped with a message, except under
//! `CI=true`, where they fail.

use std::collections::HashMap;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::release::tool;
use crate::util::*;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const VERSION: &str = env!("CARGO_PKG_VERSION");
const TARGET: &str = "x86_64-unknown-linux-musl";
const MIB: u64 = 1024 * 1024;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `retry-VERSION-TARGET`: the tarball's top directory.
fn top() -> String {
    format!("retry-{VERSION}-{TARGET}")
}

/// The path a file of this release is served at.
fn served(file: &str) -> String {
    format!("/v{VERSION}/{file}")
}

/// What the mirror answers for a path (any other path: 404).
#[derive(Clone)]
enum Reply {
    /// 200, with its Content-Length.
    File(Vec<u8>),
    /// 200 with no length, and a body that never ends.
    Endless,
    /// Reads the request and never answers.
    Silent,
    /// The whole response, status line first, one byte a second.
    Trickle(Vec<u8>),
}

/// A hostile mirror: an HTTP server on 127.0.0.1 (a free port), a thread
/// per connection, answering each path as `routes` says; stopped (every
/// connection closed) when dropped.
struct Mirror {
    port: u16,
    stop: Arc<AtomicBool>,
    /// Bytes of endless bodies the kernel took.
    sent: Arc<AtomicU64>,
    accepter: Option<JoinHandle<()>>,
}

impl Mirror {
    fn start(routes: HashMap<String, Reply>) -> Mirror {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let routes = Arc::new(routes);
        let (stopped, counted) = (stop.clone(), sent.clone());
        let accepter = thread::spawn(move || {
            let mut connections = Vec::new();
            while !stopped.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let (routes, stop, sent) =
                            (routes.clone(), stopped.clone(), counted.clone());
                        connections.push(thread::spawn(move || {
                            answer(stream, &routes, &stop, &sent);
                        }));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(10)),
                }
            }
            for connection in connections {
                let _ = connection.join();
            }
        });
        Mirror {
            port,
            stop,
            sent,
            accepter: Some(accepter),
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn sent(&self) -> u64 {
        self.sent.load(Ordering::SeqCst)
    }
}

impl Drop for Mirror {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(accepter) = self.accepter.take() {
            let _ = accepter.join();
        }
    }
}

/// Sleeps `time` unless the mirror is stopped first: false if it was.
fn pause(stop: &AtomicBool, time: Duration) -> bool {
    let until = Instant::now() + time;
    while Instant::now() < until {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        thread::sleep(Duration::from_millis(20));
    }
    !stop.load(Ordering::SeqCst)
}

fn answer(stream: TcpStream, routes: &HashMap<String, Reply>, stop: &AtomicBool, sent: &AtomicU64) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
    let mut request = String::new();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
        if line == "\r\n" || line == "\n" {
            break;
        }
        if request.is_empty() {
            request.clone_from(&line);
        }
        line.clear();
    }
    let path = request.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut stream = stream;
    match routes.get(&path) {
        None => {
            let _ = stream.write_all(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 10\r\nConnection: close\r\n\r\nnot found\n",
            );
        }
        Some(Reply::File(body)) => {
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(body);
        }
        Some(Reply::Endless) => {
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
            // Lines as SHA256SUMS has them, for ever.
            let line = format!("{}  {}.tar.gz\n", "0".repeat(64), top());
            let chunk = line.repeat(64 * 1024 / line.len());
            while !stop.load(Ordering::SeqCst) && stream.write_all(chunk.as_bytes()).is_ok() {
                sent.fetch_add(chunk.len() as u64, Ordering::SeqCst);
            }
            return;
        }
        Some(Reply::Silent) => {
            while pause(stop, Duration::from_secs(1)) {}
            return;
        }
        Some(Reply::Trickle(response)) => {
            for byte in response {
                if stream.write_all(&[*byte]).is_err() || !pause(stop, Duration::from_secs(1)) {
                    break;
                }
            }
            return;
        }
    }
    // Closed without resetting under what the client still sends.
    let _ = stream.shutdown(Shutdown::Write);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let _ = std::io::copy(&mut stream, &mut std::io::sink());
}

/// This build's binary, stripped as a release's is (the debug build is
/// over the 64 MiB the script takes): made once per test run.
fn binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
        fs::create_dir_all(dir).unwrap();
        let partial = dir.join(format!("install-retry.{}", std::process::id()));
        let out = Command::new("strip")
            .arg("-o")
            .arg(&partial)
            .arg(BIN)
            .output()
            .expect("strip (binutils) is needed");
        assert!(out.status.success(), "strip: {}", text(&out.stderr));
        let stripped = dir.join("install-retry");
        fs::rename(&partial, &stripped).unwrap();
        stripped
    })
}

/// A gzipped tarball at `path` holding `members`, each `[kind, name, what]`:
/// `dir`, `file` (what: the file whose bytes it holds), `zeros` (what: how
/// many), `symlink` and `hardlink` (what: the link's target). Returns its
/// SHA-256.
fn tarball(path: &Path, members: &[[&str; 3]]) -> String {
    const MAKE: &str = r#"
import hashlib, io, sys, tarfile
out, args = sys.argv[1], sys.argv[2:]
with tarfile.open(out, "w:gz", compresslevel=1, format=tarfile.GNU_FORMAT) as tar:
    for i in range(0, len(args), 3):
        kind, name, what = args[i:i + 3]
        member = tarfile.TarInfo(name)
        member.mode = 0o755
        data = None
        if kind == "dir":
            member.type = tarfile.DIRTYPE
        elif kind == "file":
            data = open(what, "rb").read()
        elif kind == "zeros":
            data = bytes(int(what))
        elif kind == "symlink":
            member.type, member.linkname = tarfile.SYMTYPE, what
        elif kind == "hardlink":
            member.type, member.linkname = tarfile.LNKTYPE, what
        else:
            sys.exit("unknown member kind " + kind)
        if data is not None:
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
        else:
            tar.addfile(member)
print(hashlib.sha256(open(out, "rb").read()).hexdigest())
"#;
    let out = Command::new("python3")
        .args(["-c", MAKE])
        .arg(path)
        .args(members.iter().flatten())
        .output()
        .expect("python3 is needed to make the tarballs");
    assert!(out.status.success(), "python3: {}", text(&out.stderr));
    text(&out.stdout).trim().to_string()
}

/// A release of `members` for the mirror: the tarball and a SHA256SUMS
/// that lists it rightly (and another file first).
fn release(dir: &Path, members: &[[&str; 3]]) -> HashMap<String, Reply> {
    let file = format!("{}.tar.gz", top());
    let path = dir.join(&file);
    let hash = tarball(&path, members);
    let sums = format!(
        "{}  retry-{VERSION}-x.deb\n{hash}  {file}\n",
        "1".repeat(64)
    );
    HashMap::from([
        (served(&file), Reply::File(fs::read(&path).unwrap())),
        (served("SHA256SUMS"), Reply::File(sums.into_bytes())),
    ])
}

/// The members of a good release, with `retry` holding the file `binary`.
fn members_with(binary: &Path) -> Vec<[String; 3]> {
    let top = top();
    vec![
        ["dir".into(), top.clone(), String::new()],
        [
            "file".into(),
            format!("{top}/retry"),
            binary.display().to_string(),
        ],
        [
            "file".into(),
            format!("{top}/README.md"),
            format!("{ROOT}/README.md"),
        ],
    ]
}

fn borrowed(members: &[[String; 3]]) -> Vec<[&str; 3]> {
    members
        .iter()
        .map(|[a, b, c]| [a.as_str(), b.as_str(), c.as_str()])
        .collect()
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Downloader {
    Curl,
    Wget,
}

/// Both downloaders, or (and a skip message) none where a tool is missing.
fn downloaders() -> Vec<Downloader> {
    let ready = tool("python3", "the install script (its tarballs)")
        && tool("strip", "the install script (a release-sized binary)")
        && tool("curl", "the install script with curl")
        && tool("wget", "the install script with wget");
    if ready {
        vec![Downloader::Curl, Downloader::Wget]
    } else {
        Vec::new()
    }
}

/// A directory of links to everything on PATH but curl: the script then
/// downloads with wget.
fn path_without_curl(dir: &Path) -> PathBuf {
    let bin = dir.join("path-without-curl");
    fs::create_dir_all(&bin).unwrap();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let entries = std::env::split_paths(&path)
        .filter_map(|d| fs::read_dir(d).ok())
        .flatten()
        .flatten();
    for entry in entries {
        let name = entry.file_name();
        if name != "curl" && !bin.join(&name).exists() {
            let _ = std::os::unix::fs::symlink(entry.path(), bin.join(&name));
        }
    }
    assert!(!bin.join("curl").exists() && bin.join("wget").exists());
    bin
}

/// A scratch directory with `bin` (the install directory, not made) and
/// `tmp` (the script's TMPDIR).
struct Setup {
    scratch: tempfile::TempDir,
    into: PathBuf,
    tmp: PathBuf,
    without_curl: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let scratch = scratch();
        let into = scratch.path().join("bin");
        let tmp = scratch.path().join("tmp");
        fs::create_dir(&tmp).unwrap();
        let without_curl = path_without_curl(scratch.path());
        Setup {
            scratch,
            into,
            tmp,
            without_curl,
        }
    }

    fn path(&self) -> &Path {
        self.scratch.path()
    }

    /// scripts/install for `version` from `mirror` into `bin`, with no
    /// RETRY_* from outside but `env`.
    fn command(&self, by: Downloader, mirror: &Mirror, version: &str) -> Command {
        let mut command = Command::new(Path::new(ROOT).join("scripts/install"));
        command
            .args(["--base-url", &mirror.url(), "--version", version])
            .args(["--target", TARGET])
            .arg("--dir")
            .arg(&self.into)
            .env("TMPDIR", &self.tmp)
            .env_remove("CI");
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("RETRY_") {
                command.env_remove(key);
            }
        }
        if by == Downloader::Wget {
            command.env("PATH", &self.without_curl);
        }
        command
    }

    fn install(&self, by: Downloader, mirror: &Mirror, env: &[(&str, &str)]) -> Output {
        let mut command = self.command(by, mirror, VERSION);
        command.envs(env.iter().copied());
        command.output().unwrap()
    }

    /// Exit 1, a message saying each of `says` and that nothing was
    /// installed, nothing on stdout, nothing in `bin` or TMPDIR.
    fn refused(&self, by: Downloader, out: &Output, says: &[&str]) {
        let (stdout, stderr) = texts(out);
        assert_eq!(out.status.code(), Some(1), "{by:?}: {stderr}");
        for words in says.iter().chain(&["nothing installed"]) {
            assert!(stderr.contains(words), "{by:?}: no {words:?} in:\n{stderr}");
        }
        assert!(stdout.is_empty(), "{by:?}: {stdout}");
        let left = fs::read_dir(&self.into).map_or_else(|_| Vec::new(), |_| listing(&self.into));
        assert!(left.is_empty(), "{by:?}: left in --dir: {left:?}");
        assert!(
            listing(&self.tmp).is_empty(),
            "{by:?}: left in TMPDIR: {:?}",
            listing(&self.tmp)
        );
    }
}

#[test]
fn the_install_script_downloads_verifies_and_installs_a_release() {
    for by in downloaders() {
        let setup = Setup::new();
        let mirror = Mirror::start(release(setup.path(), &borrowed(&members_with(binary()))));
        let out = setup
            .command(by, &mirror, &format!("v{VERSION}"))
            .output()
            .unwrap();
        let (stdout, stderr) = texts(&out);
        assert!(out.status.success(), "{by:?}: {stdout}{stderr}");
        let installed = setup.into.join("retry");
        assert_eq!(stdout.lines().last(), Some(installed.to_str().unwrap()));
        assert!(stderr.contains("checksum OK"), "{by:?}: {stderr}");
        let mode = fs::metadata(&installed).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
        assert_eq!(listing(&setup.into), ["retry"]);
        assert!(listing(&setup.tmp).is_empty());
        let version = Command::new(&installed).arg("--version").output().unwrap();
        assert_eq!(text(&version.stdout).trim(), format!("retry {VERSION}"));

        // Again over a symlink to a file elsewhere: the link is replaced,
        // the file it named is not written.
        let elsewhere = setup.path().join("elsewhere");
        fs::write(&elsewhere, "not to be overwritten\n").unwrap();
        fs::remove_file(&installed).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &installed).unwrap();
        let again = setup.install(by, &mirror, &[]);
        assert!(again.status.success(), "{by:?}: {}", text(&again.stderr));
        assert_eq!(listing(&setup.into), ["retry"]);
        assert!(!fs::symlink_metadata(&installed).unwrap().is_symlink());
        assert_eq!(fs::read(&installed).unwrap(), fs::read(binary()).unwrap());
        assert_eq!(
            fs::read_to_string(&elsewhere).unwrap(),
            "not to be overwritten\n"
        );
    }
}

#[test]
fn the_install_script_refuses_a_tarball_whose_checksum_is_wrong_or_missing() {
    for by in downloaders() {
        let setup = Setup::new();
        let mut routes = release(setup.path(), &borrowed(&members_with(binary())));
        let sums = served("SHA256SUMS");
        let Some(Reply::File(right)) = routes.get(&sums).cloned() else {
            unreachable!()
        };
        let right = text(&right);
        // The right length, one digit changed.
        let line = right.lines().nth(1).unwrap();
        let wrong = if line.starts_with('0') { "1" } else { "0" };
        routes.insert(
            sums.clone(),
            Reply::File(format!("{wrong}{}\n", &line[1..]).into_bytes()),
        );
        let mirror = Mirror::start(routes.clone());
        let out = setup.install(by, &mirror, &[]);
        setup.refused(by, &out, &["checksum mismatch"]);
        drop(mirror);

        // Listed for another target only.
        let other = line.replace(TARGET, "riscv64gc-unknown-linux-musl");
        routes.insert(sums, Reply::File(format!("{other}\n").into_bytes()));
        let mirror = Mirror::start(routes);
        let out = setup.install(by, &mirror, &[]);
        setup.refused(by, &out, &["not listed in SHA256SUMS"]);
    }
}

#[test]
fn the_install_script_says_so_when_a_release_is_not_there() {
    for by in downloaders() {
        let setup = Setup::new();
        let mirror = Mirror::start(release(setup.path(), &borrowed(&members_with(binary()))));
        let out = setup.command(by, &mirror, "9.9.9").output().unwrap();
        setup.refused(by, &out, &["could not download", "/v9.9.9/SHA256SUMS"]);

        // And a machine with no prebuilt binary is sent to cargo install.
        let mut command = Command::new(Path::new(ROOT).join("scripts/install"));
        let out = command
            .args(["--base-url", &mirror.url(), "--version", VERSION])
            .args(["--dir", "/nonexistent"])
            .env("PATH", fake_uname(setup.path(), &setup.without_curl, by))
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains("no prebuilt retry for Darwin/arm64")
                && stderr.contains("cargo install retry-runner"),
            "{stderr}"
        );
    }
}

/// A PATH whose `uname` says macOS on Apple silicon, before the rest.
fn fake_uname(dir: &Path, without_curl: &Path, by: Downloader) -> String {
    let bin = dir.join("fake-bin");
    fs::create_dir_all(&bin).unwrap();
    script(
        &bin,
        "uname",
        "#!/bin/sh\ncase \"$1\" in -s) echo Darwin ;; -m) echo arm64 ;; esac\n",
    );
    let rest = match by {
        Downloader::Curl => std::env::var("PATH").unwrap_or_default(),
        Downloader::Wget => without_curl.display().to_string(),
    };
    format!("{}:{rest}", bin.display())
}

#[test]
fn the_install_script_refuses_a_tarball_whose_binary_is_a_symlink() {
    // The link names a real retry outside the tarball (which would pass
    // every other check) or a file that is not one (/etc/shadow's stand-in).
    for by in downloaders() {
        let setup = Setup::new();
        let outside = setup.path().join("outside-retry");
        fs::copy(binary(), &outside).unwrap();
        let secret = setup.path().join("secret");
        fs::write(&secret, "root:$6$not-a-binary:19000:0:99999:7:::\n").unwrap();
        for target in [&outside, &secret] {
            let top = top();
            let link = format!("{top}/retry");
            let members = [
                ["dir", &top, ""],
                ["symlink", &link, target.to_str().unwrap()],
                [
                    "file",
                    &format!("{top}/README.md"),
                    &format!("{ROOT}/README.md"),
                ],
            ];
            let mirror = Mirror::start(release(setup.path(), &members));
            let out = setup.install(by, &mirror, &[]);
            setup.refused(by, &out, &["holds a link", &link, "refusing"]);
        }
    }
}

#[test]
fn the_install_script_refuses_a_tarball_whose_directory_is_a_symlink() {
    // The top directory is a link to a directory holding a real retry; and
    // again with a file in the tarball under the link (which unpacking would
    // write through it).
    for by in downloaders() {
        let setup = Setup::new();
        let outside = setup.path().join("outside");
        fs::create_dir(&outside).unwrap();
        fs::write(outside.join("retry"), "untouched\n").unwrap();
        let top = top();
        let retry = format!("{top}/retry");
        let binary = binary().to_str().unwrap();
        let alone = [["symlink", top.as_str(), outside.to_str().unwrap()]];
        let through = [alone[0], ["file", &retry, binary]];
        for members in [&alone[..], &through[..]] {
            let mirror = Mirror::start(release(setup.path(), members));
            let out = setup.install(by, &mirror, &[]);
            setup.refused(by, &out, &["holds a link", &top]);
            assert_eq!(
                fs::read_to_string(outside.join("retry")).unwrap(),
                "untouched\n"
            );
            assert_eq!(listing(&outside), ["retry"]);
        }
    }
}

#[test]
fn the_install_script_refuses_a_tarball_with_a_hard_link() {
    // The binary as a hard link to a file outside (by its absolute path),
    // or to a real retry inside the tarball: any link member is refused.
    for by in downloaders() {
        let setup = Setup::new();
        let outside = setup.path().join("outside-retry");
        fs::copy(binary(), &outside).unwrap();
        let top = top();
        let retry = format!("{top}/retry");
        let inside = format!("{top}/retry.real");
        let binary = binary().to_str().unwrap();
        let to_outside = [
            ["dir", top.as_str(), ""],
            ["hardlink", &retry, outside.to_str().unwrap()],
        ];
        let to_inside = [
            ["dir", top.as_str(), ""],
            ["file", &inside, binary],
            ["hardlink", &retry, &inside],
        ];
        for members in [&to_outside[..], &to_inside[..]] {
            let mirror = Mirror::start(release(setup.path(), members));
            let out = setup.install(by, &mirror, &[]);
            setup.refused(by, &out, &["holds a link", &retry]);
        }
    }
}

#[test]
fn the_install_script_refuses_a_binary_that_is_not_an_elf_for_this_machine() {
    let Some(by) = downloaders().first().copied() else {
        return;
    };
    let setup = Setup::new();
    let dir = setup.path();
    let elf = fs::read(binary()).unwrap();
    // A shell script of a release binary's size.
    let script = dir.join("script");
    fs::write(
        &script,
        format!("#!/bin/sh\n{}", "# padding\n".repeat(20_000)),
    )
    .unwrap();
    // An aarch64 ELF (e_machine 0xB7) for the x86_64 target.
    let arm = dir.join("arm");
    let mut bytes = elf.clone();
    bytes[18..20].copy_from_slice(&[0xb7, 0]);
    fs::write(&arm, bytes).unwrap();
    // A 32-bit ELF (class 1).
    let narrow = dir.join("narrow");
    let mut bytes = elf.clone();
    bytes[4] = 1;
    fs::write(&narrow, bytes).unwrap();
    // An ELF header alone: 64 bytes.
    let tiny = dir.join("tiny");
    fs::write(&tiny, &elf[..64]).unwrap();
    // Over 64 MiB.
    let huge = dir.join("huge");
    let mut bytes = elf;
    bytes.resize(65 * MIB as usize, 0);
    fs::write(&huge, bytes).unwrap();
    for (file, says) in [
        (&script, "not an ELF executable"),
        (&arm, "not built for x86_64 (its ELF machine is 0x00b7)"),
        (&narrow, "not a 64-bit little-endian ELF"),
        (&tiny, "is 64 bytes, not between 102400 and 67108864"),
        (&huge, "is 68157440 bytes, not between"),
    ] {
        let mirror = Mirror::start(release(dir, &borrowed(&members_with(file))));
        let out = setup.install(by, &mirror, &[]);
        setup.refused(by, &out, &[says]);
    }
}

#[test]
fn the_install_script_refuses_a_tarball_that_unpacks_too_large() {
    // 129 MiB of zeros gzip to under 1 MiB.
    let Some(by) = downloaders().first().copied() else {
        return;
    };
    let setup = Setup::new();
    let top = top();
    let size = (129 * MIB).to_string();
    let members = [
        ["dir", top.as_str(), ""],
        ["zeros", &format!("{top}/retry"), &size],
    ];
    let mirror = Mirror::start(release(setup.path(), &members));
    let out = setup.install(by, &mirror, &[]);
    setup.refused(by, &out, &["unpacks to more than 134217728 bytes"]);
}

#[test]
fn the_install_script_refuses_an_oversized_sha256sums_before_reading_it() {
    // 1 MiB with its length announced, then one that never ends: each cut
    // at 64 KiB, unread.
    for by in downloaders() {
        let setup = Setup::new();
        let mut routes = release(setup.path(), &borrowed(&members_with(binary())));
        let sums = served("SHA256SUMS");
        for reply in [Reply::File(vec![b'0'; MIB as usize]), Reply::Endless] {
            routes.insert(sums.clone(), reply);
            let mirror = Mirror::start(routes.clone());
            let started = Instant::now();
            let out = setup.install(by, &mirror, &[]);
            setup.refused(by, &out, &["SHA256SUMS is larger than 65536 bytes"]);
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "{by:?}: {:?}",
                started.elapsed()
            );
            assert!(mirror.sent() < 32 * MIB, "{by:?}: sent {}", mirror.sent());
        }
    }
}

#[test]
fn the_install_script_stops_an_endless_tarball_at_the_size_limit() {
    // With the default limit (64 MiB), and with a lower one.
    for by in downloaders() {
        let setup = Setup::new();
        let mut routes = release(setup.path(), &borrowed(&members_with(binary())));
        routes.insert(served(&format!("{}.tar.gz", top())), Reply::Endless);
        for (limit, env) in [(64 * MIB, None), (MIB, Some(MIB.to_string()))] {
            let mirror = Mirror::start(routes.clone());
            let env: Vec<(&str, &str)> = env
                .iter()
                .map(|v| ("RETRY_INSTALL_MAX_TARBALL_BYTES", v.as_str()))
                .collect();
            let started = Instant::now();
            let out = setup.install(by, &mirror, &env);
            let took = started.elapsed();
            setup.refused(by, &out, &[&format!("tar.gz is larger than {limit} bytes")]);
            // What the kernel took past the limit is its socket buffers.
            let sent = mirror.sent();
            assert!(
                sent > limit && sent < limit + 32 * MIB,
                "{by:?}: sent {sent}"
            );
            assert!(took < Duration::from_secs(30), "{by:?}: {took:?}");
            eprintln!("{by:?}: endless tarball refused at {limit} bytes in {took:?} (sent {sent})");
        }
    }
}

/// Runs the script against `routes` with `env`: its output and how long it
/// took.
fn timed(
    setup: &Setup,
    by: Downloader,
    routes: HashMap<String, Reply>,
    env: &[(&str, &str)],
) -> (Output, Duration) {
    let mirror = Mirror::start(routes);
    let started = Instant::now();
    let out = setup.install(by, &mirror, env);
    (out, started.elapsed())
}

#[test]
fn the_install_script_gives_up_a_silent_mirror_after_the_stall_limit() {
    // Silent on SHA256SUMS, then on the tarball after a good SHA256SUMS:
    // each given up after RETRY_INSTALL_STALL_SECONDS (2), not tried again.
    for by in downloaders() {
        let setup = Setup::new();
        let good = release(setup.path(), &borrowed(&members_with(binary())));
        for file in ["SHA256SUMS".to_string(), format!("{}.tar.gz", top())] {
            let mut routes = good.clone();
            routes.insert(served(&file), Reply::Silent);
            let env = [("RETRY_INSTALL_STALL_SECONDS", "2")];
            let (out, took) = timed(&setup, by, routes, &env);
            setup.refused(
                by,
                &out,
                &[
                    "could not download http://127.0.0.1:",
                    &format!("/{file}: gave up after"),
                    "RETRY_INSTALL_STALL_SECONDS",
                ],
            );
            assert!(
                took >= Duration::from_secs(2) && took < Duration::from_secs(10),
                "{by:?}: {file}: {took:?}"
            );
        }
    }
}

#[test]
fn the_install_script_gives_up_a_silent_mirror_within_100_s_by_default() {
    // With the default limits (nothing for 30 s), curl and wget at once.
    let by = downloaders();
    if by.is_empty() {
        return;
    }
    let mut routes = HashMap::new();
    routes.insert(served("SHA256SUMS"), Reply::Silent);
    let runs: Vec<_> = by
        .iter()
        .map(|&by| {
            let routes = routes.clone();
            thread::spawn(move || {
                let setup = Setup::new();
                let (out, took) = timed(&setup, by, routes, &[]);
                (by, setup, out, took)
            })
        })
        .collect();
    for run in runs {
        let (by, setup, out, took) = run.join().unwrap();
        eprintln!("{by:?}: a silent mirror given up after {took:?} with the default limits");
        setup.refused(by, &out, &["gave up after", "30 s with nothing"]);
        assert!(took < Duration::from_secs(100), "{by:?}: {took:?}");
        assert!(took >= Duration::from_secs(29), "{by:?}: {took:?}");
    }
}

#[test]
fn the_install_script_gives_up_a_mirror_that_sends_a_byte_a_second() {
    // curl: under RETRY_INSTALL_MIN_RATE for RETRY_INSTALL_STALL_SECONDS (3);
    // wget (no minimum rate): at RETRY_INSTALL_MAX_SECONDS (6).
    for by in downloaders() {
        let setup = Setup::new();
        let mut routes = release(setup.path(), &borrowed(&members_with(binary())));
        let sums = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n".to_vec();
        routes.insert(served("SHA256SUMS"), Reply::Trickle(sums));
        let env = [
            ("RETRY_INSTALL_STALL_SECONDS", "3"),
            ("RETRY_INSTALL_MAX_SECONDS", "6"),
        ];
        let (out, took) = timed(&setup, by, routes, &env);
        setup.refused(
            by,
            &out,
            &["SHA256SUMS: gave up after", "RETRY_INSTALL_MAX_SECONDS"],
        );
        let (least, most) = match by {
            Downloader::Curl => (3, 6),
            Downloader::Wget => (6, 10),
        };
        assert!(
            took >= Duration::from_secs(least) && took < Duration::from_secs(most),
            "{by:?}: {took:?}"
        );
    }
}

/// The install script with `path` as PATH (curl, so the tools the script
/// needs are found on the rest of the machine's PATH): its exit, stdout and
/// stderr.
fn installed_with_path(setup: &Setup, mirror: &Mirror, path: &str) -> (Output, String, String) {
    let out = setup
        .command(Downloader::Curl, mirror, VERSION)
        .env("PATH", path)
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    let installed = setup.into.join("retry");
    assert_eq!(
        stdout.lines().last(),
        Some(installed.to_str().unwrap()),
        "the last stdout line is the installed path: {stdout}"
    );
    (out, stdout, stderr)
}

#[test]
fn the_install_script_warns_when_its_directory_is_not_on_path_or_another_retry_comes_first() {
    if !downloaders().contains(&Downloader::Curl) {
        return;
    }
    let machine_path = std::env::var("PATH").unwrap_or_default();
    let setup = Setup::new();
    let mirror = Mirror::start(release(setup.path(), &borrowed(&members_with(binary()))));
    let into = setup.into.display().to_string();

    // Not on PATH: said, with what to do.
    let (_, _, stderr) = installed_with_path(&setup, &mirror, &machine_path);
    assert!(
        stderr.contains(&format!("warning: {into} is not on PATH"))
            && stderr.contains("export PATH="),
        "{stderr}"
    );

    // On PATH, first: nothing to say.
    let (_, _, stderr) = installed_with_path(&setup, &mirror, &format!("{into}:{machine_path}"));
    assert!(!stderr.contains("warning"), "{stderr}");

    // Another retry comes first (Debian's /usr/bin/retry, say): named, and
    // how to put this one first; also when PATH names the directory through
    // a symbolic link.
    let other = setup.path().join("usr-bin");
    fs::create_dir(&other).unwrap();
    script(&other, "retry", "#!/bin/sh\necho Debian\n");
    let (_, _, stderr) = installed_with_path(
        &setup,
        &mirror,
        &format!("{}:{into}:{machine_path}", other.display()),
    );
    let shadow = format!("{}/retry", other.display());
    assert!(
        stderr.contains(&format!("warning: {shadow} comes before {into} on PATH")),
        "{stderr}"
    );
    let link = setup.path().join("link-to-bin");
    std::os::unix::fs::symlink(&setup.into, &link).unwrap();
    let (_, _, stderr) = installed_with_path(
        &setup,
        &mirror,
        &format!("{}:{}:{machine_path}", other.display(), link.display()),
    );
    assert!(
        stderr.contains(&format!("{shadow} comes before")),
        "{stderr}"
    );
    assert!(!stderr.contains("not on PATH"), "{stderr}");

    // Not on PATH, and a bare `retry` is another program: both said.
    let (_, _, stderr) = installed_with_path(
        &setup,
        &mirror,
        &format!("{}:{machine_path}", other.display()),
    );
    assert!(
        stderr.contains("is not on PATH")
            && stderr.contains(&format!("`retry` on PATH is {shadow}")),
        "{stderr}"
    );
}

/// Sanity of the mirror itself: a file, a 404, and the stop that ends a
/// silent connection.
#[test]
fn the_hostile_mirror_serves_files_and_stops() {
    let mirror = Mirror::start(HashMap::from([
        ("/f".to_string(), Reply::File(b"hello".to_vec())),
        ("/s".to_string(), Reply::Silent),
    ]));
    let get = |path: &str| {
        let mut stream = TcpStream::connect(("127.0.0.1", mirror.port)).unwrap();
        write!(stream, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        stream
    };
    let mut response = String::new();
    get("/f").read_to_string(&mut response).unwrap();
    assert!(
        response.starts_with("HTTP/1.1 200 OK") && response.ends_with("\r\n\r\nhello"),
        "{response}"
    );
    response.clear();
    get("/other").read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 404"), "{response}");
    let mut silent = get("/s");
    silent
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    assert!(
        silent.read(&mut [0; 1]).is_err(),
        "the silent path answered"
    );
    let started = Instant::now();
    drop(mirror);
    assert!(started.elapsed() < Duration::from_secs(5));
    silent
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    assert_eq!(
        silent.read(&mut [0; 1]).unwrap(),
        0,
        "not closed when stopped"
    );
}
