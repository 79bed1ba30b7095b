//! `--generate KIND`: the man page and the shell completion scripts, made
//! from the clap definition itself so they never drift from the binary. The
//! committed copies under `completions/` and `man/` are checked against this
//! output by a test; `scripts/generate` rewrites them, and the guide's
//! generated blocks with the hidden `--generate markdown` (a Markdown file
//! on stdin, printed with its blocks rendered anew: `contract_text`).

use std::io::{Read, Write};

use anyhow::Context;

use clap::ValueEnum;
use clap_complete::Shell;
use roff::{Roff, bold, italic, roman};

use super::contract_text::{self, sentence, variable_sentences};
use crate::contract::{ENVIRONMENT, EXIT_STATUSES, WARNING_KINDS};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Kind {
    Man,
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
    /// The Markdown file on stdin with its generated blocks rewritten
    /// (for `scripts/generate`, not for users: hidden).
    #[value(hide = true)]
    Markdown,
}

/// Write `kind` for the command line `command` (the clap definition);
/// `input` is read only by [`Kind::Markdown`].
pub(crate) fn generate(
    kind: Kind,
    mut command: clap::Command,
    input: &mut dyn Read,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let shell = match kind {
        Kind::Man => return Ok(man_page(&command, out)?),
        Kind::Markdown => return markdown(input, out),
        Kind::Bash => Shell::Bash,
        Kind::Zsh => Shell::Zsh,
        Kind::Fish => Shell::Fish,
        Kind::Elvish => Shell::Elvish,
        Kind::Powershell => Shell::PowerShell,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "retry", &mut script);
    out.write_all(&script)?;
    // Past `--` the words are a command line of their own: complete it as
    // one (zsh does already, from the COMMAND argument's value hint).
    match kind {
        Kind::Bash => out.write_all(BASH_COMMAND.as_bytes())?,
        Kind::Fish => out.write_all(FISH_COMMAND.as_bytes())?,
        _ => {}
    }
    Ok(())
}

/// `--generate markdown`: stdin's Markdown with its blocks rendered anew.
fn markdown(input: &mut dyn Read, out: &mut dyn Write) -> anyhow::Result<()> {
    let mut text = String::new();
    input
        .read_to_string(&mut text)
        .context("reading Markdown from stdin")?;
    let (text, _) = contract_text::rewrite_blocks(&text)?;
    out.write_all(text.as_bytes())?;
    Ok(())
}

/// Bash: after `--`, the command and its own arguments (bash-completion's
/// `_command_offset` when it is loaded, else command names).
const BASH_COMMAND: &str = r#"
_retry_command() {
    local i
    for ((i = 1; i < COMP_CWORD; i++)); do
        if [[ ${COMP_WORDS[i]} == -- ]]; then
            if declare -F _command_offset >/dev/null; then
                _command_offset $((i + 1))
            else
                mapfile -t COMPREPLY < <(compgen -c -- "${COMP_WORDS[COMP_CWORD]}")
            fi
            return 0
        fi
    done
    _retry "$@"
}
complete -F _retry_command -o bashdefault -o default retry
"#;

/// Fish: after `--`, what fish would complete for the command line there.
const FISH_COMMAND: &str = r"function __retry_complete_command
    set -l words (commandline -opc)
    set -l at (contains -i -- -- $words)
    or return
    set -l line $words[(math $at + 1)..-1] (commandline -ct)
    complete -C (string join -- ' ' (string escape -- $line))
end
complete -c retry -n 'contains -- -- (commandline -opc)' -f -a '(__retry_complete_command)'
";

const ALGORITHM: &[&str] = &[
    "The ceiling for the retry after the n-th failure (n counted from 0) is min(cap, delay * multiplier^n), computed without overflow for any n. The sleep is drawn under it by the jitter kind: none sleeps the ceiling; full draws uniformly from [0, ceiling] (the default: many clients failing together then come back spread out instead of all at once); equal sleeps ceiling/2 plus a uniform draw from [0, ceiling/2]; decorrelated draws min(cap, uniform in [delay, 3 * previous sleep]); a proportion P multiplies the ceiling by a uniform draw from [1-P, 1+P], clamped to the cap.",
    "Retry never sleeps after the last attempt, and with --max-time it never starts a sleep that would end past that limit: it gives up at once instead. An attempt still running when --timeout or --max-time expires gets SIGTERM (and SIGCONT), then SIGKILL after --kill-after.",
    "An attempt succeeds when it exits 0 or with a code in --success-on-exit, in time; with --until-output a line of its output (stdout or stderr) must match as well, or the attempt is not ready yet: a transient failure, unless the hint file or an output rule says otherwise (the exit-code lists do not judge a success code). A run that gives up after an attempt that exited 0 exits 1. A failed attempt is transient (retried while limits allow) or permanent (retry stops at once). Decided first: an attempt ended by --timeout or --max-time is judged only as timed out, transient, or permanent under --stop-on-timeout (the exit-code lists never see it); a death by SIGINT, SIGQUIT or SIGPIPE ends the run (quietly for SIGPIPE: its reader went away, as in retry -- cmd | head -1). Then the first rule that matches decides: 0. a word in the hint file ($RETRY_HINT_FILE); 1. --stop-on-output matched a line of the scanned output: permanent; 2. --retry-on-output matched: transient; 3. --stop-on-exit lists the exit code: permanent; 4. --retry-on-exit is given: transient if it lists the code, else permanent (for 3 and 4 a death by signal N counts as code 128+N); 5. the command could not be started: permanent (but what passes is transient: a binary still being written, ETXTBSY; a process limit, EAGAIN; memory, ENOMEM); 6. anything else: transient. Rules 1 to 4 given on the command line come before those of a preset (see PRESETS).",
    "A transient failure known to be the server asking to slow down is throttled: a preset's throttled rule matched (HTTP 429, TooManyRequests, SlowDown, Throttling, a pull rate limit), the hint file said 'throttled', or, with response headers read (--retry-after, the curl and wget presets), the last response printed was a 429, a 503 that asked for a wait, or an error whose quota is spent (X-RateLimit-Remaining: 0, RateLimit with r=0; this also overrides a preset's permanent verdict, not the user's flags). It is retried like any transient failure and shown as throttled; its ceiling grows from the larger of --delay and --throttle-delay. A wait a response asks for sets the next sleep, not clamped by --cap; a wait longer than --max-retry-after, or one that would end past --max-time, ends the run at once (exhausted, the command's status; --give-up-exit applies), naming the header and the flag that would allow it: it is never answered by a shorter sleep; the first found wins: Retry-After (seconds or an HTTP-date), grpc-retry-pushback-ms and x-amz-retry-after (milliseconds), the IETF RateLimit field (the largest t of the items with r=0), RateLimit-Reset or X-RateLimit-Reset when the matching Remaining is 0 (a value from 1000000000 on is Unix time, measured from the response's Date, from 10^12 on in milliseconds, a smaller one seconds from now). -v and the JSON sleep event's header field name the header that set it.",
    "With --reset-after, an attempt that ran at least that long before failing starts the backoff over: the next ceiling is --delay again. With --until-failure the run is inverted, to hunt a flaky failure: the command runs again (after the policy's sleep) while it succeeds, the first failure ends the run with its status (done outcome permanent), and when the limits end the run first retry exits 0 (outcome success); a run cut short by --max-time is not counted. Attempts are then unlimited unless --attempts is given. With --successes N the run succeeds only after N successful attempts in a row, --delay apart (steady, not backing off); a failure starts the count over, and the backoff too. --attempts counts every attempt, successes included (an N above it is refused); a run whose limits end it short of N in a row exits 1 (never 0).",
    "A run with a deadline (--max-time) gives it to the command and to --on-retry as RETRY_DEADLINE, Unix time in milliseconds. A retry that finds RETRY_DEADLINE in its own environment never runs past it: its --max-time is cut to what is left (or set to it, without one), it passes the outer deadline on unchanged, and --on-give-up is cut off there too; -v and --explain say so. A deadline already past starts no attempt (outcome deadline, exit 124); a value that is not a whole number of milliseconds (or looks like seconds) is a usage error, exit 125; empty counts as unset.",
    "Hooks are shell commands (/bin/sh -c CMD) treated like attempts: each in its own process group outside a terminal's foreground, terminated (SIGTERM, then SIGKILL after --kill-after) at its limit with whatever it started, and a signal to retry while one runs is passed on and ends the run. Their stdin is /dev/null; their stdout and stderr go to retry's stderr (never to --log-file). --on-retry runs after each backoff sleep, right before the retry, with the RETRY_* variables of the attempt to come; it is bounded by --timeout and --max-time, and its failure is a warning. --on-give-up runs once when the run fails (attempts exhausted, --max-time, a permanent failure, an empty retry budget), never on success nor when retry is interrupted by a signal; it is bounded by --timeout, else 60 seconds. Each hook is reported as a JSON hook event.",
    "Outside a terminal's foreground each attempt runs in its own process group, so termination reaches everything it started, and whatever a failed attempt left running in its group is terminated before the next attempt. In the foreground of a terminal (or with --foreground) the child stays in retry's group, so it can read the terminal and Ctrl-C reaches it; termination then goes to each process the attempt started (its descendants and the orphans it left, found through /proc). Every signal sent to retry that ends a process by default (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGABRT, SIGXCPU, SIGVTALRM, SIGPROF, on Linux SIGPWR and the real-time signals) is passed on to the attempt (and cuts a sleep short); retry then starts no further attempt and dies of the same signal, so a calling script stops as it would for the command itself. Signals the caller ignored (nohup, trap '' PIPE) stay ignored, for retry and the command. Retry ignores SIGXFSZ: a write of its own past ulimit -f fails (a --stdin replay spool ends the run with 125) instead of killing it. Ctrl-Z stops the attempt with retry, and fg or bg continue both; an attempt that wants the terminal (a /dev/tty prompt while stdin is a pipe) gets it while retry holds it, and in the background the job stops until fg gives it. Time limits are real time: the time retry is stopped counts, and no attempt starts after --max-time. If retry is killed outright (SIGKILL), the command is killed with it, but not what the command started in turn: that stays in the attempt's process group; nor a set-uid, set-gid or file-capability command (sudo, su, ping), for which the kernel clears the parent-death signal: it stays in the attempt's group too (kill -- -PGID ends it). In retry's group on Linux a keeper process kills both when retry dies.",
];

const EXAMPLES: &[(&str, &str)] = &[
    (
        "retry --cap 30s --max-time 2m -- curl -fsS https://example.com/health",
        "Wait for a service: up to two minutes, sleeps capped at 30 seconds.",
    ),
    (
        "retry -- curl -fsS -D /dev/stderr -o items.json https://api.example.com/items",
        "The curl preset applies by itself (chosen from the command name): connection errors, timeouts and HTTP 408, 429, 500, 502, 503, 504 are retried, a 404 stops at once. -D /dev/stderr shows retry the response headers, so a Retry-After is honoured; -S makes curl print the status that tells a 404 from a 503.",
    ),
    (
        "retry --preset show git > ~/.config/retry/presets.toml",
        "Start a presets file of your own from the git preset: edit it, and it replaces the built-in one.",
    ),
    (
        "retry -n 10 --timeout 30s --retry-on-exit 75 -- ./sync.sh",
        "In a script: at most 10 attempts of 30 seconds each; only exit status 75 is worth retrying.",
    ),
    (
        "retry -q --splay 5m --max-time 30m --metrics-file /var/lib/node_exporter/backup.prom --name backup -- ./backup.sh",
        "From cron: spread a fleet's start over five minutes, give up after half an hour, and leave a metrics file for node_exporter's textfile collector.",
    ),
    (
        "retry --stop-on-output '(?i)no space left' --retry-on-output '(?i)connection reset' -- rsync -a src/ host:dst/",
        "Decide by what the command prints on stderr. Patterns are case-sensitive; (?i) at the start makes one case-insensitive (rsync prints \"No space left on device\").",
    ),
    (
        "retry --until-output '^Running$' -t 5m -- kubectl get pod web -o jsonpath='{.status.phase}'",
        "Poll until the pod says it is running, for at most five minutes.",
    ),
    (
        "retry --until-failure -d 0 -t 10m --on-retry 'rm -rf /tmp/test-state' -- ./flaky-test.sh",
        "Hunt a flaky failure: run the test again and again for ten minutes, cleaning up between runs; exit with the first failure's status, or 0 when every run passed.",
    ),
    (
        "retry -n 10 --on-give-up 'notify-send \"backup failed: $RETRY_EXIT\"' -- ./backup.sh",
        "Alert once when every attempt failed.",
    ),
    (
        "retry --explain --delay 1s --cap 30s --attempts 5",
        "Show the schedule: worst case 15 s of sleep, mean 7.5 s.",
    ),
];

const PRESETS: &[&str] = &[
    "A preset is a set of rules for one command, kept as data: which exit codes and which lines of its output mean a failure worth another try, and which mean one that would only come back. With no --preset, the preset whose commands include the command's file name applies (retry -- git clone URL uses the git preset); -v says so at the start, and the first failure line names it. The preset's rules come after the ones given on the command line, so a flag always wins. --preset NAME picks one whatever the command; --preset none turns presets off; --preset list prints every preset, where it comes from and what it does; --preset show NAME prints one in the form of a presets file, ready to copy and edit (NAME may also be a command: --preset show claude shows the llm preset, which serves it). Neither of the last two runs anything.",
    "The command is read through wrappers: sudo, doas, env, nice, ionice, nohup, setsid, timeout, stdbuf, flock and GNU time (with their own options), python -m MODULE, and a versioned name (pip3.11 is pip when no preset claims pip3.11); -v and --explain say how the preset was found, or why none applies. While a preset's output patterns are in force the command gets its messages in the C locale (LC_MESSAGES=C; a set LC_ALL is emptied and its value given to each other LC_* variable; a set LANGUAGE is emptied), so that a verdict does not depend on the locale; -v and --explain say so.",
    "Presets are read in layers, a later one winning: the built-in presets, /etc/retry/presets.toml, then the file $RETRY_PRESETS names (when set and not empty), else $XDG_CONFIG_HOME/retry/presets.toml (else ~/.config/retry/presets.toml). A preset with an earlier one's name replaces it whole; a command name claimed in two layers goes to the later one. A user file must be a regular file of at most 1 MiB; one that is malformed stops retry with exit status 125, naming the file, the line and the problem, before anything runs.",
    "A presets file holds [preset.NAME] tables with description (one line), commands (file names that choose the preset), retry_after (read Retry-After header lines), other_exit (\"permanent\" or \"transient\": the verdict for a failure no rule decides; by default permanent when the preset has a transient exit rule), notes, and any number of [[preset.NAME.output]] rules (kind, pattern: a regular expression matched per line of the scanned output, means: how messages name it, {1} quoting the pattern's first group, source) and [[preset.NAME.exit]] rules (kind, codes such as \"1,7,28,52-56\", means, source). A rule's kind is \"permanent\", \"transient\" or \"throttled\" (a transient failure known to be throttling). Within a preset, permanent output rules come first, then throttled, then transient output rules, permanent exit codes, transient and throttled exit codes, then other_exit.",
    "The built-in presets:",
];

/// PRESETS: how presets work, and every built-in one, from the same data
/// the binary uses.
fn presets_section(roff: &mut Roff) {
    roff.control("SH", ["PRESETS"]);
    for (index, paragraph) in PRESETS.iter().enumerate() {
        if index > 0 {
            roff.control("PP", []);
        }
        roff.text([roman(*paragraph)]);
    }
    for preset in crate::presets::builtins() {
        let commands = if preset.commands.is_empty() {
            "only by --preset".to_string()
        } else {
            format!("for {}", preset.commands.join(", "))
        };
        roff.control("TP", [])
            .text([bold(preset.name.clone()), roman(format!(" ({commands})"))])
            .text([roman(preset.description.clone())]);
    }
}

/// EXIT STATUS, ENVIRONMENT and WARNINGS: the contract's tables.
fn contract_sections(roff: &mut Roff) {
    roff.control("SH", ["EXIT STATUS"]);
    for status in EXIT_STATUSES {
        roff.control("TP", [])
            .text([bold(status.code)])
            .text([roman(sentence(status.meaning))]);
    }
    roff.control("SH", ["ENVIRONMENT"]);
    for variable in ENVIRONMENT {
        roff.control("TP", [])
            .text([bold(variable.name)])
            .text([roman(variable_sentences(variable))]);
    }
    roff.control("SH", ["WARNINGS"]);
    roff.text([roman(
        "Each warning of retry's has a kind: the kind field of a JSON warning event (--log-format json).",
    )]);
    for warning in WARNING_KINDS {
        roff.control("TP", [])
            .text([bold(warning.kind)])
            .text([roman(sentence(warning.meaning))]);
    }
}

fn man_page(command: &clap::Command, out: &mut dyn Write) -> std::io::Result<()> {
    let man = clap_mangen::Man::new(command.clone());
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;

    let mut roff = Roff::new();
    roff.control("SH", ["DESCRIPTION"]);
    if let Some(about) = command.get_long_about() {
        roff.text([roman(about.to_string())]);
    }
    for paragraph in ALGORITHM {
        roff.control("PP", []);
        roff.text([roman(*paragraph)]);
    }
    roff.to_writer(out)?;

    man.render_options_section(out)?;

    let mut roff = Roff::new();
    contract_sections(&mut roff);
    presets_section(&mut roff);
    roff.control("SH", ["EXAMPLES"]);
    for (example, meaning) in EXAMPLES {
        roff.control("TP", [])
            .text([bold(*example)])
            .text([roman(*meaning)]);
    }
    roff.control("SH", ["SEE ALSO"]);
    roff.text([
        italic("timeout"),
        roman("(1), "),
        italic("curl"),
        roman("(1), "),
        italic("cron"),
        roman("(8)"),
    ]);
    roff.to_writer(out)?;
    man.render_version_section(out)
}
