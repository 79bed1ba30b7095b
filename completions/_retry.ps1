
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'retry' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'retry'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'retry' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Most attempts, the first included: N >= 1 or ''unlimited'' [default: 5; unlimited with --max-time or --until-failure]')
            [CompletionResult]::new('--attempts', '--attempts', [CompletionResultType]::ParameterName, 'Most attempts, the first included: N >= 1 or ''unlimited'' [default: 5; unlimited with --max-time or --until-failure]')
            [CompletionResult]::new('-d', '-d', [CompletionResultType]::ParameterName, 'Base delay: the ceiling before the first retry')
            [CompletionResult]::new('--delay', '--delay', [CompletionResultType]::ParameterName, 'Base delay: the ceiling before the first retry')
            [CompletionResult]::new('--throttle-delay', '--throttle-delay', [CompletionResultType]::ParameterName, 'A floor over --delay for a failure judged throttled (HTTP 429, a 503 with a wait, a preset''s rate-limit message): its backoff grows from the larger of the two, so a throttled failure never backs off faster than another; jitter and --cap apply as usual')
            [CompletionResult]::new('-m', '-m', [CompletionResultType]::ParameterName, 'Growth factor of the ceiling per retry (finite, >= 1)')
            [CompletionResult]::new('--multiplier', '--multiplier', [CompletionResultType]::ParameterName, 'Growth factor of the ceiling per retry (finite, >= 1)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Largest single delay; growth stops here')
            [CompletionResult]::new('--cap', '--cap', [CompletionResultType]::ParameterName, 'Largest single delay; growth stops here')
            [CompletionResult]::new('-j', '-j', [CompletionResultType]::ParameterName, 'How a sleep is drawn under its ceiling: full, equal, decorrelated, none, or a proportion P in (0,1] (also 20%)')
            [CompletionResult]::new('--jitter', '--jitter', [CompletionResultType]::ParameterName, 'How a sleep is drawn under its ceiling: full, equal, decorrelated, none, or a proportion P in (0,1] (also 20%)')
            [CompletionResult]::new('--splay', '--splay', [CompletionResultType]::ParameterName, 'Sleep a random time in [0, DURATION) before the first attempt (spreads out fleets of cron jobs)')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'Budget for the whole run from retry''s start: no sleep starts that would end past it, and a running attempt is terminated when it expires. Given to the command as RETRY_DEADLINE; a retry that finds RETRY_DEADLINE cuts its own --max-time to what is left')
            [CompletionResult]::new('--max-time', '--max-time', [CompletionResultType]::ParameterName, 'Budget for the whole run from retry''s start: no sleep starts that would end past it, and a running attempt is terminated when it expires. Given to the command as RETRY_DEADLINE; a retry that finds RETRY_DEADLINE cuts its own --max-time to what is left')
            [CompletionResult]::new('-T', '-T ', [CompletionResultType]::ParameterName, 'Limit for each attempt; an attempt over it is terminated and counts as a transient failure (permanent with --stop-on-timeout)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Limit for each attempt; an attempt over it is terminated and counts as a transient failure (permanent with --stop-on-timeout)')
            [CompletionResult]::new('--kill-after', '--kill-after', [CompletionResultType]::ParameterName, 'After terminating an attempt with SIGTERM, wait this long, then SIGKILL its process group')
            [CompletionResult]::new('--retry-on-exit', '--retry-on-exit', [CompletionResultType]::ParameterName, 'Exit codes that are worth retrying (e.g. 1,7,28,52-56); any other failing code is then permanent. A death by signal N counts as code 128+N; a timed-out attempt is judged only as timed out (see --stop-on-timeout)')
            [CompletionResult]::new('--stop-on-exit', '--stop-on-exit', [CompletionResultType]::ParameterName, 'Exit codes that are permanent failures: stop at once (a death by signal N counts as 128+N)')
            [CompletionResult]::new('--retry-on-output', '--retry-on-output', [CompletionResultType]::ParameterName, 'A failed attempt whose output has a line matching REGEX is transient (repeatable)')
            [CompletionResult]::new('--stop-on-output', '--stop-on-output', [CompletionResultType]::ParameterName, 'A failed attempt whose output has a line matching REGEX is permanent (repeatable)')
            [CompletionResult]::new('--preset', '--preset', [CompletionResultType]::ParameterName, 'Rules for a known command (curl, wget, git, ssh, scp, rsync, apt, pip, npm, docker, kubectl, aws, terraform, or one of a presets file), below your own rules. Without --preset, the command''s file name chooses one. ''none'': no preset; ''list'': print every preset and exit; ''show NAME'': print one in the presets-file form and exit; ''check FILE'': check a presets file and exit (0, or 125 naming each problem''s line). User presets: $RETRY_PRESETS, else $XDG_CONFIG_HOME/retry/presets.toml (~/.config/retry/presets.toml), over /etc/retry/presets.toml')
            [CompletionResult]::new('--max-retry-after', '--max-retry-after', [CompletionResultType]::ParameterName, 'Longest wait a server (Retry-After, the rate-limit headers) or the hint file may ask for; a longer one, or one that would end past --max-time, ends the run at once (exhausted, the command''s status; --give-up-exit applies), never answered by a shorter sleep')
            [CompletionResult]::new('--stdin', '--stdin', [CompletionResultType]::ParameterName, 'What each attempt reads: auto, replay (every attempt gets the whole input), inherit, null')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'A successful attempt''s stdout replaces FILE atomically (mode like the file it replaces, or 0644 under the umask); a failed or interrupted run leaves FILE as it was, and no temporary file behind. FILE must be a regular file or not exist, in a writable directory')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'A successful attempt''s stdout replaces FILE atomically (mode like the file it replaces, or 0644 under the umask); a failed or interrupted run leaves FILE as it was, and no temporary file behind. FILE must be a regular file or not exist, in a writable directory')
            [CompletionResult]::new('--on-retry', '--on-retry', [CompletionResultType]::ParameterName, 'Run CMD (with /bin/sh -c) after each backoff sleep, right before the retry. It sees the RETRY_* variables of the attempt to come (RETRY_PREVIOUS_EXIT too), its output goes to retry''s stderr, it is bounded by --timeout and --max-time, and its failure is only a warning')
            [CompletionResult]::new('--on-give-up', '--on-give-up', [CompletionResultType]::ParameterName, 'Run CMD (with /bin/sh -c) once when the run fails: never on success, nor when retry is interrupted by a signal. It sees RETRY_EXIT, RETRY_OUTCOME and RETRY_ATTEMPTS, its output goes to retry''s stderr, and it is bounded by --timeout, else 60s')
            [CompletionResult]::new('--success-on-exit', '--success-on-exit', [CompletionResultType]::ParameterName, 'Exit codes that count as success (retry exits 0), decided before every other rule; a code may not also be in --stop-on-exit or --retry-on-exit')
            [CompletionResult]::new('--until-output', '--until-output', [CompletionResultType]::ParameterName, 'Success also needs a line of the output (stdout and stderr, both scanned) matching REGEX; a success code without one is a transient failure, "not ready yet" (repeatable: one match is enough)')
            [CompletionResult]::new('--successes', '--successes', [CompletionResultType]::ParameterName, 'The run succeeds only after N successful attempts in a row, --delay apart (a service that answers once is not ready yet); a failure starts the count over. --attempts counts every attempt')
            [CompletionResult]::new('--give-up-exit', '--give-up-exit', [CompletionResultType]::ParameterName, 'Exit CODE (0-255) when the run ends on a transient failure (attempts exhausted, --max-time, the budget refused, a circuit open), for a CI system''s own retry (75 is EX_TEMPFAIL); a permanent failure keeps the command''s status, retry''s own errors theirs')
            [CompletionResult]::new('--hedge-after', '--hedge-after', [CompletionResultType]::ParameterName, 'Start one more copy of an attempt that has run DURATION without ending (p95: the 95th percentile of the --circuit''s or --budget''s earlier successful attempts, at least 100ms, once 5 are known); the first success wins and the others are ended as a time limit ends an attempt (superseded). For idempotent commands only: copies run at once, each with the whole input (--stdin replay) or none')
            [CompletionResult]::new('--hedges', '--hedges', [CompletionResultType]::ParameterName, 'With --hedge-after: how many copies beyond the first at most (1 to 5, as gRPC''s hedging allows); each costs a --budget token')
            [CompletionResult]::new('--reset-after', '--reset-after', [CompletionResultType]::ParameterName, 'An attempt that ran at least DURATION before failing starts the backoff over from --delay (a command that was healthy for a while is not punished for old failures)')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Format of retry''s own messages [default: github when GITHUB_ACTIONS=true, gitlab when GITLAB_CI=true, else text]')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour retry''s own lines: auto (a terminal, unless NO_COLOR, CLICOLOR=0 or TERM=dumb; CLICOLOR_FORCE forces it), always, never')
            [CompletionResult]::new('--log-file', '--log-file', [CompletionResultType]::ParameterName, 'Append retry''s own messages to PATH instead of stderr')
            [CompletionResult]::new('--metrics-file', '--metrics-file', [CompletionResultType]::ParameterName, 'At the end of the run, write a Prometheus text file (for node_exporter''s textfile collector) to PATH, atomically')
            [CompletionResult]::new('--name', '--name', [CompletionResultType]::ParameterName, 'The name label of --metrics-file [default: the command''s file name]')
            [CompletionResult]::new('--generate', '--generate', [CompletionResultType]::ParameterName, 'Print the man page (man) or a completion script (bash, zsh, fish, elvish, powershell) and exit')
            [CompletionResult]::new('--circuit', '--circuit', [CompletionResultType]::ParameterName, 'Keep a circuit breaker NAME across runs: after --circuit-threshold failed runs in a row, refuse to run (exit 75) until a cooldown has passed (--circuit-mode adaptive: throttle instead)')
            [CompletionResult]::new('--circuit-mode', '--circuit-mode', [CompletionResultType]::ParameterName, 'How the circuit decides: breaker (open, cooldown, one probe) or adaptive (reject runs locally with a probability that grows as the backend''s accepts fall behind the requests, Google SRE''s client-side throttling) [default: breaker]')
            [CompletionResult]::new('--circuit-threshold', '--circuit-threshold', [CompletionResultType]::ParameterName, 'Failed runs in a row that open the circuit (breaker) [default: 3]')
            [CompletionResult]::new('--circuit-cooldown', '--circuit-cooldown', [CompletionResultType]::ParameterName, 'How long an opened circuit refuses runs before one run may probe (breaker) [default: 1m]')
            [CompletionResult]::new('--circuit-max-cooldown', '--circuit-max-cooldown', [CompletionResultType]::ParameterName, 'Largest cooldown: each failed probe doubles it up to this (breaker) [default: 1h]')
            [CompletionResult]::new('--circuit-k', '--circuit-k', [CompletionResultType]::ParameterName, 'Adaptive: the backend receives about K times what it accepts before runs are rejected locally; 1 <= K <= 1000, lower throttles sooner [default: 2]')
            [CompletionResult]::new('--circuit-window', '--circuit-window', [CompletionResultType]::ParameterName, 'Adaptive: how long requests and accepts are counted, 1s to 24h (kept as 12 buckets, so old counts age out) [default: 2m]')
            [CompletionResult]::new('--budget', '--budget', [CompletionResultType]::ParameterName, 'Share retry budget NAME: each retry (attempt 2 and later) takes a whole token from a bucket that first attempts and time fill; with none left the run does not retry')
            [CompletionResult]::new('--budget-ratio', '--budget-ratio', [CompletionResultType]::ParameterName, 'Tokens each run''s first attempt deposits: retries add at most this share of the first attempts'' load (also 20%) [default: 0.2]')
            [CompletionResult]::new('--budget-min', '--budget-min', [CompletionResultType]::ParameterName, 'Tokens that flow in with time, N/UNIT (10/s, 1/min, 30/h), so a lone job can still retry now and then [default: 1/min]')
            [CompletionResult]::new('--budget-burst', '--budget-burst', [CompletionResultType]::ParameterName, 'The bucket''s capacity; a new bucket starts full [default: 10]')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Where circuits and budgets are kept [default: $RETRY_STATE_DIR, else $XDG_STATE_HOME/retry, else ~/.local/state/retry (HOME, else the password entry''s home), else /tmp/retry-state-UID]')
            [CompletionResult]::new('--state-url', '--state-url', [CompletionResultType]::ParameterName, 'Keep circuits and budgets in Redis, shared by a fleet: redis://[user:password@]host:port/db (rediss:// for TLS), a Redis Cluster''s seed nodes redis://host:port,host:port (or --state-url given once per node), or Sentinel redis+sentinel://host:26379,host/master[/db] [env: RETRY_STATE_URL, unless --state-dir is given]')
            [CompletionResult]::new('--state-ca', '--state-ca', [CompletionResultType]::ParameterName, 'Also trust the CA certificates (PEM) in FILE for a rediss:// state URL, besides the system''s trust store and the public web roots [env: RETRY_STATE_CA]')
            [CompletionResult]::new('--state-timeout', '--state-timeout', [CompletionResultType]::ParameterName, 'One deadline for each exchange with the state store (the file lock''s wait, or Redis from connecting on); past it the job runs as if there were no circuit or budget, with a warning')
            [CompletionResult]::new('--stop-on-timeout', '--stop-on-timeout', [CompletionResultType]::ParameterName, 'An attempt ended by --timeout or --max-time is a permanent failure (by default it is transient, whatever the exit-code lists say)')
            [CompletionResult]::new('--scan-stdout', '--scan-stdout', [CompletionResultType]::ParameterName, 'Scan stdout as well as stderr for the output patterns (when stdout and stderr are the same file or pipe, not a terminal, both are always scanned: they share one pipe to keep their order)')
            [CompletionResult]::new('--retry-after', '--retry-after', [CompletionResultType]::ParameterName, 'Sleep as long as a ''Retry-After:'' header line in the scanned output says (implied by the curl and wget presets)')
            [CompletionResult]::new('--buffer-stdout', '--buffer-stdout', [CompletionResultType]::ParameterName, 'Hold each attempt''s stdout apart and emit only a successful attempt''s; on give-up nothing is emitted, and the number of bytes dropped is said')
            [CompletionResult]::new('--foreground', '--foreground', [CompletionResultType]::ParameterName, 'Keep the child in retry''s process group even when not in a terminal''s foreground')
            [CompletionResult]::new('--until-failure', '--until-failure', [CompletionResultType]::ParameterName, 'The inverse run, to hunt a flaky failure: repeat while the command succeeds, stop at its first failure and exit with its status; exit 0 when every run passed. Attempts are unlimited unless --attempts is given')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only retry''s own errors, and warnings about settings not taken as given or a circuit or budget store that cannot be used; nothing per attempt')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only retry''s own errors, and warnings about settings not taken as given or a circuit or budget store that cannot be used; nothing per attempt')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Also the policy at start and every attempt''s start')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Also the policy at start and every attempt''s start')
            [CompletionResult]::new('--explain', '--explain', [CompletionResultType]::ParameterName, 'Print the schedule this policy produces and exit without running anything')
            [CompletionResult]::new('--circuit-status', '--circuit-status', [CompletionResultType]::ParameterName, 'Print the circuit''s state (closed, open, half-open; failures; until when; adaptive: requests, accepts, the rejection probability) and exit 0')
            [CompletionResult]::new('--circuit-reset', '--circuit-reset', [CompletionResultType]::ParameterName, 'Close the circuit and forget its failures (adaptive: its requests and accepts), then exit 0')
            [CompletionResult]::new('--budget-status', '--budget-status', [CompletionResultType]::ParameterName, 'Print the budget''s tokens and settings and exit 0')
            [CompletionResult]::new('--budget-reset', '--budget-reset', [CompletionResultType]::ParameterName, 'Refill the budget and store the settings given (or the defaults), then exit 0')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
