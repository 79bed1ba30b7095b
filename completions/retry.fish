complete -c retry -s n -l attempts -d 'Most attempts, the first included: N >= 1 or \'unlimited\' [default: 5; unlimited with --max-time or --until-failure]' -r
complete -c retry -s d -l delay -d 'Base delay: the ceiling before the first retry' -r
complete -c retry -l throttle-delay -d 'A floor over --delay for a failure judged throttled (HTTP 429, a 503 with a wait, a preset\'s rate-limit message): its backoff grows from the larger of the two, so a throttled failure never backs off faster than another; jitter and --cap apply as usual' -r
complete -c retry -s m -l multiplier -d 'Growth factor of the ceiling per retry (finite, >= 1)' -r
complete -c retry -s c -l cap -d 'Largest single delay; growth stops here' -r
complete -c retry -s j -l jitter -d 'How a sleep is drawn under its ceiling: full, equal, decorrelated, none, or a proportion P in (0,1] (also 20%)' -r -f -a "full\t''
equal\t''
decorrelated\t''
none\t''"
complete -c retry -l splay -d 'Sleep a random time in [0, DURATION) before the first attempt (spreads out fleets of cron jobs)' -r
complete -c retry -s t -l max-time -d 'Budget for the whole run from retry\'s start: no sleep starts that would end past it, and a running attempt is terminated when it expires. Given to the command as RETRY_DEADLINE; a retry that finds RETRY_DEADLINE cuts its own --max-time to what is left' -r
complete -c retry -s T -l timeout -d 'Limit for each attempt; an attempt over it is terminated and counts as a transient failure (permanent with --stop-on-timeout)' -r
complete -c retry -l kill-after -d 'After terminating an attempt with SIGTERM, wait this long, then SIGKILL its process group' -r
complete -c retry -l retry-on-exit -d 'Exit codes that are worth retrying (e.g. 1,7,28,52-56); any other failing code is then permanent. A death by signal N counts as code 128+N; a timed-out attempt is judged only as timed out (see --stop-on-timeout)' -r
complete -c retry -l stop-on-exit -d 'Exit codes that are permanent failures: stop at once (a death by signal N counts as 128+N)' -r
complete -c retry -l retry-on-output -d 'A failed attempt whose output has a line matching REGEX is transient (repeatable)' -r
complete -c retry -l stop-on-output -d 'A failed attempt whose output has a line matching REGEX is permanent (repeatable)' -r
complete -c retry -l preset -d 'Rules for a known command (curl, wget, git, ssh, scp, rsync, apt, pip, npm, docker, kubectl, aws, terraform, or one of a presets file), below your own rules. Without --preset, the command\'s file name chooses one. \'none\': no preset; \'list\': print every preset and exit; \'show NAME\': print one in the presets-file form and exit; \'check FILE\': check a presets file and exit (0, or 125 naming each problem\'s line). User presets: $RETRY_PRESETS, else $XDG_CONFIG_HOME/retry/presets.toml (~/.config/retry/presets.toml), over /etc/retry/presets.toml' -r -f -a "cargo\t''
go\t''
gradle\t''
mvn\t''
docker\t''
kubectl\t''
aws\t''
terraform\t''
registry\t''
helm\t''
gcloud\t''
az\t''
curl\t''
wget\t''
llm\t''
apt\t''
pip\t''
npm\t''
uv\t''
yarn\t''
pnpm\t''
ssh\t''
scp\t''
rsync\t''
git\t''
gh\t''
list\t''
show\t''
none\t''
check\t''"
complete -c retry -l max-retry-after -d 'Longest wait a server (Retry-After, the rate-limit headers) or the hint file may ask for; a longer one, or one that would end past --max-time, ends the run at once (exhausted, the command\'s status; --give-up-exit applies), never answered by a shorter sleep' -r
complete -c retry -l stdin -d 'What each attempt reads: auto, replay (every attempt gets the whole input), inherit, null' -r -f -a "auto\t'A terminal is inherited, a file is re-read from the offset it had when retry started, a pipe is inherited (never read ahead)'
replay\t'Every attempt reads the same complete input (a pipe is spooled to disk)'
inherit\t'Handed to the child as it is'
null\t'/dev/null'"
complete -c retry -s o -l output -d 'A successful attempt\'s stdout replaces FILE atomically (mode like the file it replaces, or 0644 under the umask); a failed or interrupted run leaves FILE as it was, and no temporary file behind. FILE must be a regular file or not exist, in a writable directory' -r -F
complete -c retry -l on-retry -d 'Run CMD (with /bin/sh -c) after each backoff sleep, right before the retry. It sees the RETRY_* variables of the attempt to come (RETRY_PREVIOUS_EXIT too), its output goes to retry\'s stderr, it is bounded by --timeout and --max-time, and its failure is only a warning' -r
complete -c retry -l on-give-up -d 'Run CMD (with /bin/sh -c) once when the run fails: never on success, nor when retry is interrupted by a signal. It sees RETRY_EXIT, RETRY_OUTCOME and RETRY_ATTEMPTS, its output goes to retry\'s stderr, and it is bounded by --timeout, else 60s' -r
complete -c retry -l success-on-exit -d 'Exit codes that count as success (retry exits 0), decided before every other rule; a code may not also be in --stop-on-exit or --retry-on-exit' -r
complete -c retry -l until-output -d 'Success also needs a line of the output (stdout and stderr, both scanned) matching REGEX; a success code without one is a transient failure, "not ready yet" (repeatable: one match is enough)' -r
complete -c retry -l successes -d 'The run succeeds only after N successful attempts in a row, --delay apart (a service that answers once is not ready yet); a failure starts the count over. --attempts counts every attempt' -r
complete -c retry -l give-up-exit -d 'Exit CODE (0-255) when the run ends on a transient failure (attempts exhausted, --max-time, the budget refused, a circuit open), for a CI system\'s own retry (75 is EX_TEMPFAIL); a permanent failure keeps the command\'s status, retry\'s own errors theirs' -r
complete -c retry -l hedge-after -d 'Start one more copy of an attempt that has run DURATION without ending (p95: the 95th percentile of the --circuit\'s or --budget\'s earlier successful attempts, at least 100ms, once 5 are known); the first success wins and the others are ended as a time limit ends an attempt (superseded). For idempotent commands only: copies run at once, each with the whole input (--stdin replay) or none' -r
complete -c retry -l hedges -d 'With --hedge-after: how many copies beyond the first at most (1 to 5, as gRPC\'s hedging allows); each costs a --budget token' -r
complete -c retry -l reset-after -d 'An attempt that ran at least DURATION before failing starts the backoff over from --delay (a command that was healthy for a while is not punished for old failures)' -r
complete -c retry -l log-format -d 'Format of retry\'s own messages [default: github when GITHUB_ACTIONS=true, gitlab when GITLAB_CI=true, else text]' -r -f -a "text\t'Lines prefixed \'retry:\''
json\t'One JSON object per line'
github\t'Text, each attempt in a GitHub Actions log group, failures as annotations'
gitlab\t'Text, each attempt in a GitLab CI collapsible section'"
complete -c retry -l color -d 'When to colour retry\'s own lines: auto (a terminal, unless NO_COLOR, CLICOLOR=0 or TERM=dumb; CLICOLOR_FORCE forces it), always, never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retry -l log-file -d 'Append retry\'s own messages to PATH instead of stderr' -r -F
complete -c retry -l metrics-file -d 'At the end of the run, write a Prometheus text file (for node_exporter\'s textfile collector) to PATH, atomically' -r -F
complete -c retry -l name -d 'The name label of --metrics-file [default: the command\'s file name]' -r
complete -c retry -l generate -d 'Print the man page (man) or a completion script (bash, zsh, fish, elvish, powershell) and exit' -r -f -a "man\t''
bash\t''
zsh\t''
fish\t''
elvish\t''
powershell\t''"
complete -c retry -l circuit -d 'Keep a circuit breaker NAME across runs: after --circuit-threshold failed runs in a row, refuse to run (exit 75) until a cooldown has passed (--circuit-mode adaptive: throttle instead)' -r
complete -c retry -l circuit-mode -d 'How the circuit decides: breaker (open, cooldown, one probe) or adaptive (reject runs locally with a probability that grows as the backend\'s accepts fall behind the requests, Google SRE\'s client-side throttling) [default: breaker]' -r -f -a "breaker\t'Open after --circuit-threshold failed runs in a row; refuse every run until a cooldown has passed, then probe with one'
adaptive\t'Client-side throttling: reject a run locally with probability max(0, (requests - K x accepts) / (requests + 1)) over --circuit-window'"
complete -c retry -l circuit-threshold -d 'Failed runs in a row that open the circuit (breaker) [default: 3]' -r
complete -c retry -l circuit-cooldown -d 'How long an opened circuit refuses runs before one run may probe (breaker) [default: 1m]' -r
complete -c retry -l circuit-max-cooldown -d 'Largest cooldown: each failed probe doubles it up to this (breaker) [default: 1h]' -r
complete -c retry -l circuit-k -d 'Adaptive: the backend receives about K times what it accepts before runs are rejected locally; 1 <= K <= 1000, lower throttles sooner [default: 2]' -r
complete -c retry -l circuit-window -d 'Adaptive: how long requests and accepts are counted, 1s to 24h (kept as 12 buckets, so old counts age out) [default: 2m]' -r
complete -c retry -l budget -d 'Share retry budget NAME: each retry (attempt 2 and later) takes a whole token from a bucket that first attempts and time fill; with none left the run does not retry' -r
complete -c retry -l budget-ratio -d 'Tokens each run\'s first attempt deposits: retries add at most this share of the first attempts\' load (also 20%) [default: 0.2]' -r
complete -c retry -l budget-min -d 'Tokens that flow in with time, N/UNIT (10/s, 1/min, 30/h), so a lone job can still retry now and then [default: 1/min]' -r
complete -c retry -l budget-burst -d 'The bucket\'s capacity; a new bucket starts full [default: 10]' -r
complete -c retry -l state-dir -d 'Where circuits and budgets are kept [default: $RETRY_STATE_DIR, else $XDG_STATE_HOME/retry, else ~/.local/state/retry (HOME, else the password entry\'s home), else /tmp/retry-state-UID]' -r -F
complete -c retry -l state-url -d 'Keep circuits and budgets in Redis, shared by a fleet: redis://[user:password@]host:port/db (rediss:// for TLS), a Redis Cluster\'s seed nodes redis://host:port,host:port (or --state-url given once per node), or Sentinel redis+sentinel://host:26379,host/master[/db] [env: RETRY_STATE_URL, unless --state-dir is given]' -r
complete -c retry -l state-ca -d 'Also trust the CA certificates (PEM) in FILE for a rediss:// state URL, besides the system\'s trust store and the public web roots [env: RETRY_STATE_CA]' -r -F
complete -c retry -l state-timeout -d 'One deadline for each exchange with the state store (the file lock\'s wait, or Redis from connecting on); past it the job runs as if there were no circuit or budget, with a warning' -r
complete -c retry -l stop-on-timeout -d 'An attempt ended by --timeout or --max-time is a permanent failure (by default it is transient, whatever the exit-code lists say)'
complete -c retry -l scan-stdout -d 'Scan stdout as well as stderr for the output patterns (when stdout and stderr are the same file or pipe, not a terminal, both are always scanned: they share one pipe to keep their order)'
complete -c retry -l retry-after -d 'Sleep as long as a \'Retry-After:\' header line in the scanned output says (implied by the curl and wget presets)'
complete -c retry -l buffer-stdout -d 'Hold each attempt\'s stdout apart and emit only a successful attempt\'s; on give-up nothing is emitted, and the number of bytes dropped is said'
complete -c retry -l foreground -d 'Keep the child in retry\'s process group even when not in a terminal\'s foreground'
complete -c retry -l until-failure -d 'The inverse run, to hunt a flaky failure: repeat while the command succeeds, stop at its first failure and exit with its status; exit 0 when every run passed. Attempts are unlimited unless --attempts is given'
complete -c retry -s q -l quiet -d 'Only retry\'s own errors, and warnings about settings not taken as given or a circuit or budget store that cannot be used; nothing per attempt'
complete -c retry -s v -l verbose -d 'Also the policy at start and every attempt\'s start'
complete -c retry -l explain -d 'Print the schedule this policy produces and exit without running anything'
complete -c retry -l circuit-status -d 'Print the circuit\'s state (closed, open, half-open; failures; until when; adaptive: requests, accepts, the rejection probability) and exit 0'
complete -c retry -l circuit-reset -d 'Close the circuit and forget its failures (adaptive: its requests and accepts), then exit 0'
complete -c retry -l budget-status -d 'Print the budget\'s tokens and settings and exit 0'
complete -c retry -l budget-reset -d 'Refill the budget and store the settings given (or the defaults), then exit 0'
complete -c retry -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retry -s V -l version -d 'Print version'
function __retry_complete_command
    set -l words (commandline -opc)
    set -l at (contains -i -- -- $words)
    or return
    set -l line $words[(math $at + 1)..-1] (commandline -ct)
    complete -C (string join -- ' ' (string escape -- $line))
end
complete -c retry -n 'contains -- -- (commandline -opc)' -f -a '(__retry_complete_command)'
