//! Windows' `sys::spawn`: one attempt's program, found as a Windows user
//! expects and started in a Job Object of its own.
//!
//! - Found: a name without a directory is looked for in `PATH` with each
//!   extension of `PATHEXT` (`hello` finds `hello.cmd`), as `cmd.exe` does;
//!   std's `Command` only adds `.exe`. A name with an extension of
//!   `PATHEXT` is looked for as it is. A path is tried as it is, then with
//!   each extension.
//! - Batch files (`.cmd`, `.bat`) run through `cmd.exe /d /c` by std's
//!   `Command`, whose quoting refuses the arguments cmd would misread
//!   (CVE-2024-24576); a refused argument is the attempt's failure to
//!   start (126).
//! - Shell lines (hooks) go to `%ComSpec% /d /c LINE` with the line as it
//!   is: cmd parses it itself.
//! - Started suspended, put in a new job (kill-on-close), then resumed:
//!   nothing it starts can run before it is in the job. With
//!   `CREATE_NEW_PROCESS_GROUP` in the own-group mode, so that a Ctrl-Break
//!   can be sent to it alone.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::windows::io::AsRawHandle;
use std::os::windows::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use windows_sys::Win32::System::Threading::{CREATE_NEW_PROCESS_GROUP, CREATE_SUSPENDED};

use super::windows::{Job, resume_threads};

/// One program to start.
pub(crate) struct Request<'a> {
    /// As given: a name to look for in `PATH`, or a path.
    pub(crate) program: &'a OsStr,
    /// The arguments after `argv[0]`.
    pub(crate) args: &'a [OsString],
    /// Added to (or replacing in) retry's own environment.
    pub(crate) env: &'a [(&'static str, OsString)],
    /// What the child gets as stdin, stdout and stderr.
    pub(crate) stdio: [Stdio; 3],
    pub(crate) own_group: bool,
}

/// A started program: the process, and the job that holds it and all it
/// starts.
pub(crate) struct Started {
    pub(crate) child: Child,
    pub(crate) job: Job,
}

/// The shell that runs a line: `%ComSpec%` (cmd.exe).
fn comspec() -> OsString {
    std::env::var_os("ComSpec")
        .filter(|path| !path.is_empty())
        .unwrap_or_else(|| "cmd.exe".into())
}

/// The argv that runs `line` in the shell: `cmd.exe /d /c LINE` (`/d`: no
/// `AutoRun` commands from the registry).
pub(crate) fn shell(line: &OsStr) -> Vec<OsString> {
    vec![comspec(), "/d".into(), "/c".into(), line.to_os_string()]
}

/// Whether `program` and `args` are what [`shell`] made: the line is then
/// handed to cmd as it is.
fn shell_line<'a>(program: &OsStr, args: &'a [OsString]) -> Option<&'a OsStr> {
    match args {
        [d, c, line] if program == comspec() && d == "/d" && c == "/c" => Some(line),
        _ => None,
    }
}

/// The extensions `PATHEXT` names (`.COM;.EXE;.BAT;.CMD` where unset).
fn extensions(pathext: Option<&OsStr>) -> Vec<String> {
    let listed = pathext
        .and_then(OsStr::to_str)
        .filter(|list| !list.trim().is_empty())
        .unwrap_or(".COM;.EXE;.BAT;.CMD");
    listed
        .split(';')
        .map(str::trim)
        .filter(|ext| ext.starts_with('.') && ext.len() > 1)
        .map(str::to_string)
        .collect()
}

/// Whether `name` ends in one of `exts` (case does not matter).
fn has_extension(name: &Path, exts: &[String]) -> bool {
    name.extension().and_then(OsStr::to_str).is_some_and(|ext| {
        exts.iter()
            .any(|known| known[1..].eq_ignore_ascii_case(ext))
    })
}

/// `base` as it is if it already has a known extension, else with each.
fn candidates(base: &Path, exts: &[String]) -> Vec<PathBuf> {
    if has_extension(base, exts) {
        return vec![base.to_path_buf()];
    }
    exts.iter()
        .map(|ext| {
            let mut name = base.as_os_str().to_os_string();
            name.push(ext);
            PathBuf::from(name)
        })
        .collect()
}

/// Where `program` is, as cmd.exe finds it: a path tried as it is and
/// with each extension; a bare name in each directory of `path`, with each
/// extension of `pathext`. `None`: not found.
pub(crate) fn find_program(
    program: &OsStr,
    path: Option<&OsStr>,
    pathext: Option<&OsStr>,
) -> Option<PathBuf> {
    let exts = extensions(pathext);
    let given = Path::new(program);
    let is_path = program
        .to_str()
        .is_none_or(|name| name.contains(['/', '\\', ':']));
    if is_path {
        if given.is_file() {
            return Some(given.to_path_buf());
        }
        return candidates(given, &exts).into_iter().find(|c| c.is_file());
    }
    let dirs = path.map(std::env::split_paths).into_iter().flatten();
    dirs.filter(|dir| !dir.as_os_str().is_empty())
        .flat_map(|dir| candidates(&dir.join(given), &exts))
        .find(|candidate| candidate.is_file())
}

/// Whether [`start`] would find `program` on `path` (with the extensions
/// of this process's `PATHEXT`), or, for a path, whether it names a file.
pub(crate) fn found_on_path(program: &OsStr, path: Option<&OsStr>) -> bool {
    find_program(program, path, std::env::var_os("PATHEXT").as_deref()).is_some()
}

/// Start the program in a job of its own. `NotFound` when it is nowhere.
pub(crate) fn start(request: Request<'_>) -> io::Result<Started> {
    let from_env = |name: &str| {
        request
            .env
            .iter()
            .rev()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.clone())
            .or_else(|| std::env::var_os(name))
    };
    let mut command = if let Some(line) = shell_line(request.program, request.args) {
        let mut command = Command::new(request.program);
        command.args(["/d", "/c"]).raw_arg(line);
        command
    } else {
        let found = find_program(
            request.program,
            from_env("PATH").as_deref(),
            from_env("PATHEXT").as_deref(),
        )
        .ok_or(io::ErrorKind::NotFound)?;
        let mut command = Command::new(found);
        command.args(request.args);
        command
    };
    let [stdin, stdout, stderr] = request.stdio;
    command
        .envs(request.env.iter().map(|(key, value)| (key, value)))
        .stdin(stdin)
        .stdout(stdout)
        .stderr(stderr);
    let group = if request.own_group {
        CREATE_NEW_PROCESS_GROUP
    } else {
        0
    };
    command.creation_flags(CREATE_SUSPENDED | group);
    // The job first: a system that refuses one leaves no child behind.
    let job = Job::new()?;
    let mut child = command.spawn()?;
    let placed = job
        .assign(child.as_raw_handle())
        .and_then(|()| resume_threads(child.id()));
    if let Err(err) = placed {
        let _ = child.kill();
        let _ = child.wait();
        return Err(err);
    }
    Ok(Started { child, job })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pathext_is_read_as_cmd_reads_it() {
        assert_eq!(extensions(None), [".COM", ".EXE", ".BAT", ".CMD"]);
        assert_eq!(
            extensions(Some(OsStr::new(".exe; .CMD;;nodot;.x"))),
            [".exe", ".CMD", ".x"]
        );
        let exts = extensions(None);
        assert!(has_extension(Path::new("a/hello.cmd"), &exts));
        assert!(!has_extension(Path::new("hello"), &exts));
        assert_eq!(
            candidates(Path::new("x.Exe"), &exts),
            [PathBuf::from("x.Exe")]
        );
        assert_eq!(candidates(Path::new("x"), &exts).len(), 4);
    }

    /// The same path but for case (the file system ignores it; the found
    /// name has the extension as `PATHEXT` spells it).
    fn same(found: Option<PathBuf>, wanted: &Path) -> bool {
        found.is_some_and(|found| {
            found
                .to_string_lossy()
                .eq_ignore_ascii_case(&wanted.to_string_lossy())
        })
    }

    #[test]
    fn a_name_is_found_with_an_extension_of_pathext() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("hello.cmd"), "@echo hi\r\n").unwrap();
        std::fs::write(dir.path().join("bare"), "").unwrap();
        let path = std::env::join_paths([dir.path()]).unwrap();
        let wanted = dir.path().join("hello.cmd");
        assert!(same(
            find_program(OsStr::new("hello"), Some(&path), None),
            &wanted
        ));
        assert!(same(
            find_program(OsStr::new("hello.cmd"), Some(&path), None),
            &wanted
        ));
        // A file without a known extension is not a program.
        assert_eq!(find_program(OsStr::new("bare"), Some(&path), None), None);
        assert_eq!(find_program(OsStr::new("nowhere"), Some(&path), None), None);
        let by_path = dir.path().join("hello");
        assert!(same(find_program(by_path.as_os_str(), None, None), &wanted));
    }

    #[test]
    fn a_hook_line_goes_to_cmd_as_it_is() {
        let argv = shell(OsStr::new("echo \"a b\" & exit 3"));
        assert_eq!(
            shell_line(&argv[0], &argv[1..]),
            Some(OsStr::new("echo \"a b\" & exit 3"))
        );
        assert_eq!(shell_line(OsStr::new("other"), &argv[1..]), None);
    }
}
