
use builtin;
use str;

set edit:completion:arg-completer[retry] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'retry'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'retry'= {
            cand -n 'Most attempts, the first included: N >= 1 or ''unlimited'' [default: 5; unlimited with --max-time or --until-failure]'
            cand --attempts 'Most attempts, the first included: N >= 1 or ''unlimited'' [default: 5; unlimited with --max-time or --until-failure]'
            cand -d 'Base delay: the ceiling before the first retry'
            cand --delay 'Base delay: the ceiling before the first retry'
            cand --throttle-delay 'A floor over --delay for a failure judged throttled (HTTP 429, a 503 with a wait, a preset''s rate-limit message): its backoff grows from the larger of the two, so a throttled failure never backs off faster than another; jitter and --cap apply as usual'
            cand -m 'Growth factor of the ceiling per retry (finite, >= 1)'
            cand --multiplier 'Growth factor of the ceiling per retry (finite, >= 1)'
            cand -c 'Largest single delay; growth stops here'
            cand --cap 'Largest single delay; growth stops here'
            cand -j 'How a sleep is drawn under its ceiling: full, equal, decorrelated, none, or a proportion P in (0,1] (also 20%)'
            cand --jitter 'How a sleep is drawn under its ceiling: full, equal, decorrelated, none, or a proportion P in (0,1] (also 20%)'
            cand --splay 'Sleep a random time in [0, DURATION) before the first attempt (spreads out fleets of cron jobs)'
            cand -t 'Budget for the whole run from retry''s start: no sleep starts that would end past it, and a running attempt is terminated when it expires. Given to the command as RETRY_DEADLINE; a retry that finds RETRY_DEADLINE cuts its own --max-time to what is left'
            cand --max-time 'Budget for the whole run from retry''s start: no sleep starts that would end past it, and a running attempt is terminated when it expires. Given to the command as RETRY_DEADLINE; a retry that finds RETRY_DEADLINE cuts its own --max-time to what is left'
            cand -T 'Limit for each attempt; an attempt over it is terminated and counts as a transient failure (permanent with --stop-on-timeout)'
            cand --timeout 'Limit for each attempt; an attempt over it is terminated and counts as a transient failure (permanent with --stop-on-timeout)'
            cand --kill-after 'After terminating an attempt with SIGTERM, wait this long, then SIGKILL its process group'
            cand --retry-on-exit 'Exit codes that are worth retrying (e.g. 1,7,28,52-56); any other failing code is then permanent. A death by signal N counts as code 128+N; a timed-out attempt is judged only as timed out (see --stop-on-timeout)'
            cand --stop-on-exit 'Exit codes that are permanent failures: stop at once (a death by signal N counts as 128+N)'
            cand --retry-on-output 'A failed attempt whose output has a line matching REGEX is transient (repeatable)'
            cand --stop-on-output 'A failed attempt whose output has a line matching REGEX is permanent (repeatable)'
            cand --preset 'Rules for a known command (curl, wget, git, ssh, scp, rsync, apt, pip, npm, docker, kubectl, aws, terraform, or one of a presets file), below your own rules. Without --preset, the command''s file name chooses one. ''none'': no preset; ''list'': print every preset and exit; ''show NAME'': print one in the presets-file form and exit; ''check FILE'': check a presets file and exit (0, or 125 naming each problem''s line). User presets: $RETRY_PRESETS, else $XDG_CONFIG_HOME/retry/presets.toml (~/.config/retry/presets.toml), over /etc/retry/presets.toml'
            cand --max-retry-after 'Longest wait a server (Retry-After, the rate-limit headers) or the hint file may ask for; a longer one, or one that would end past --max-time, ends the run at once (exhausted, the command''s status; --give-up-exit applies), never answered by a shorter sleep'
            cand --stdin 'What each attempt reads: auto, replay (every attempt gets the whole input), inherit, null'
            cand -o 'A successful attempt''s stdout replaces FILE atomically (mode like the file it replaces, or 0644 under the umask); a failed or interrupted run leaves FILE as it was, and no temporary file behind. FILE must be a regular file or not exist, in a writable directory'
            cand --output 'A successful attempt''s stdout replaces FILE atomically (mode like the file it replaces, or 0644 under the umask); a failed or interrupted run leaves FILE as it was, and no temporary file behind. FILE must be a regular file or not exist, in a writable directory'
            cand --on-retry 'Run CMD (with /bin/sh -c) after each backoff sleep, right before the retry. It sees the RETRY_* variables of the attempt to come (RETRY_PREVIOUS_EXIT too), its output goes to retry''s stderr, it is bounded by --timeout and --max-time, and its failure is only a warning'
            cand --on-give-up 'Run CMD (with /bin/sh -c) once when the run fails: never on success, nor when retry is interrupted by a signal. It sees RETRY_EXIT, RETRY_OUTCOME and RETRY_ATTEMPTS, its output goes to retry''s stderr, and it is bounded by --timeout, else 60s'
            cand --success-on-exit 'Exit codes that count as success (retry exits 0), decided before every other rule; a code may not also be in --stop-on-exit or --retry-on-exit'
            cand --until-output 'Success also needs a line of the output (stdout and stderr, both scanned) matching REGEX; a success code without one is a transient failure, "not ready yet" (repeatable: one match is enough)'
            cand --successes 'The run succeeds only after N successful attempts in a row, --delay apart (a service that answers once is not ready yet); a failure starts the count over. --attempts counts every attempt'
            cand --give-up-exit 'Exit CODE (0-255) when the run ends on a transient failure (attempts exhausted, --max-time, the budget refused, a circuit open), for a CI system''s own retry (75 is EX_TEMPFAIL); a permanent failure keeps the command''s status, retry''s own errors theirs'
            cand --hedge-after 'Start one more copy of an attempt that has run DURATION without ending (p95: the 95th percentile of the --circuit''s or --budget''s earlier successful attempts, at least 100ms, once 5 are known); the first success wins and the others are ended as a time limit ends an attempt (superseded). For idempotent commands only: copies run at once, each with the whole input (--stdin replay) or none'
            cand --hedges 'With --hedge-after: how many copies beyond the first at most (1 to 5, as gRPC''s hedging allows); each costs a --budget token'
            cand --reset-after 'An attempt that ran at least DURATION before failing starts the backoff over from --delay (a command that was healthy for a while is not punished for old failures)'
            cand --log-format 'Format of retry''s own messages [default: github when GITHUB_ACTIONS=true, gitlab when GITLAB_CI=true, else text]'
            cand --color 'When to colour retry''s own lines: auto (a terminal, unless NO_COLOR, CLICOLOR=0 or TERM=dumb; CLICOLOR_FORCE forces it), always, never'
            cand --log-file 'Append retry''s own messages to PATH instead of stderr'
            cand --metrics-file 'At the end of the run, write a Prometheus text file (for node_exporter''s textfile collector) to PATH, atomically'
            cand --name 'The name label of --metrics-file [default: the command''s file name]'
            cand --generate 'Print the man page (man) or a completion script (bash, zsh, fish, elvish, powershell) and exit'
            cand --circuit 'Keep a circuit breaker NAME across runs: after --circuit-threshold failed runs in a row, refuse to run (exit 75) until a cooldown has passed (--circuit-mode adaptive: throttle instead)'
            cand --circuit-mode 'How the circuit decides: breaker (open, cooldown, one probe) or adaptive (reject runs locally with a probability that grows as the backend''s accepts fall behind the requests, Google SRE''s client-side throttling) [default: breaker]'
            cand --circuit-threshold 'Failed runs in a row that open the circuit (breaker) [default: 3]'
            cand --circuit-cooldown 'How long an opened circuit refuses runs before one run may probe (breaker) [default: 1m]'
            cand --circuit-max-cooldown 'Largest cooldown: each failed probe doubles it up to this (breaker) [default: 1h]'
            cand --circuit-k 'Adaptive: the backend receives about K times what it accepts before runs are rejected locally; 1 <= K <= 1000, lower throttles sooner [default: 2]'
            cand --circuit-window 'Adaptive: how long requests and accepts are counted, 1s to 24h (kept as 12 buckets, so old counts age out) [default: 2m]'
            cand --budget 'Share retry budget NAME: each retry (attempt 2 and later) takes a whole token from a bucket that first attempts and time fill; with none left the run does not retry'
            cand --budget-ratio 'Tokens each run''s first attempt deposits: retries add at most this share of the first attempts'' load (also 20%) [default: 0.2]'
            cand --budget-min 'Tokens that flow in with time, N/UNIT (10/s, 1/min, 30/h), so a lone job can still retry now and then [default: 1/min]'
            cand --budget-burst 'The bucket''s capacity; a new bucket starts full [default: 10]'
            cand --state-dir 'Where circuits and budgets are kept [default: $RETRY_STATE_DIR, else $XDG_STATE_HOME/retry, else ~/.local/state/retry (HOME, else the password entry''s home), else /tmp/retry-state-UID]'
            cand --state-url 'Keep circuits and budgets in Redis, shared by a fleet: redis://[user:password@]host:port/db (rediss:// for TLS), a Redis Cluster''s seed nodes redis://host:port,host:port (or --state-url given once per node), or Sentinel redis+sentinel://host:26379,host/master[/db] [env: RETRY_STATE_URL, unless --state-dir is given]'
            cand --state-ca 'Also trust the CA certificates (PEM) in FILE for a rediss:// state URL, besides the system''s trust store and the public web roots [env: RETRY_STATE_CA]'
            cand --state-timeout 'One deadline for each exchange with the state store (the file lock''s wait, or Redis from connecting on); past it the job runs as if there were no circuit or budget, with a warning'
            cand --stop-on-timeout 'An attempt ended by --timeout or --max-time is a permanent failure (by default it is transient, whatever the exit-code lists say)'
            cand --scan-stdout 'Scan stdout as well as stderr for the output patterns (when stdout and stderr are the same file or pipe, not a terminal, both are always scanned: they share one pipe to keep their order)'
            cand --retry-after 'Sleep as long as a ''Retry-After:'' header line in the scanned output says (implied by the curl and wget presets)'
            cand --buffer-stdout 'Hold each attempt''s stdout apart and emit only a successful attempt''s; on give-up nothing is emitted, and the number of bytes dropped is said'
            cand --foreground 'Keep the child in retry''s process group even when not in a terminal''s foreground'
            cand --until-failure 'The inverse run, to hunt a flaky failure: repeat while the command succeeds, stop at its first failure and exit with its status; exit 0 when every run passed. Attempts are unlimited unless --attempts is given'
            cand -q 'Only retry''s own errors, and warnings about settings not taken as given or a circuit or budget store that cannot be used; nothing per attempt'
            cand --quiet 'Only retry''s own errors, and warnings about settings not taken as given or a circuit or budget store that cannot be used; nothing per attempt'
            cand -v 'Also the policy at start and every attempt''s start'
            cand --verbose 'Also the policy at start and every attempt''s start'
            cand --explain 'Print the schedule this policy produces and exit without running anything'
            cand --circuit-status 'Print the circuit''s state (closed, open, half-open; failures; until when; adaptive: requests, accepts, the rejection probability) and exit 0'
            cand --circuit-reset 'Close the circuit and forget its failures (adaptive: its requests and accepts), then exit 0'
            cand --budget-status 'Print the budget''s tokens and settings and exit 0'
            cand --budget-reset 'Refill the budget and store the settings given (or the defaults), then exit 0'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
    ]
    $completions[$command]
}
