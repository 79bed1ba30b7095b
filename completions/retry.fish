complete -c retry -s n -l attempts -d 'Most attempts, the first included: N >= 1 or \'unlimited\' [default: 5; unlimited with --max-time]' -r
complete -c retry -s d -l delay -d 'Base delay: the ceiling before the first retry' -r
complete -c retry -s m -l multiplier -d 'Growth factor of the ceiling per retry (finite, >= 1)' -r
complete -c retry -s c -l cap -d 'Largest single delay; growth stops here' -r
complete -c retry -s j -l jitter -d 'How a sleep is drawn under its ceiling: full, equal, decorrelated, none, or a proportion P in (0,1] (also 20%)' -r
complete -c retry -l splay -d 'Sleep a random time in [0, DURATION) before the first attempt (spreads out fleets of cron jobs)' -r
complete -c retry -s t -l max-time -d 'Budget for the whole run from retry\'s start: no sleep starts that would end past it, and a running attempt is terminated when it expires' -r
complete -c retry -s T -l timeout -d 'Limit for each attempt; an attempt over it is terminated and counts as a transient failure' -r
complete -c retry -l kill-after -d 'After terminating an attempt with SIGTERM, wait this long, then SIGKILL its process group' -r
complete -c retry -l retry-on-exit -d 'Exit codes that are worth retrying (e.g. 1,7,28,52-56); any other failing code is then permanent. A death by signal N counts as code 128+N; a timed-out attempt is judged only as timed out (see --stop-on-timeout)' -r
complete -c retry -l stop-on-exit -d 'Exit codes that are permanent failures: stop at once (a death by signal N counts as 128+N)' -r
complete -c retry -l retry-on-output -d 'A failed attempt whose output has a line matching REGEX is transient (repeatable)' -r
complete -c retry -l stop-on-output -d 'A failed attempt whose output has a line matching REGEX is permanent (repeatable)' -r
complete -c retry -l preset -d 'Rules for a known command (curl, wget, git, ssh, scp, rsync, apt-get, pip, npm, docker, kubectl, aws, terraform, or one of a presets file), below your own rules. Without --preset, the command\'s file name chooses one. \'none\': no preset; \'list\': print every preset and exit; \'show NAME\': print one in the presets-file form and exit. User presets: $RETRY_PRESETS, else ~/.config/retry/presets.toml, and /etc/retry/presets.toml' -r
complete -c retry -l max-retry-after -d 'Longest Retry-After (header or hint file) obeyed; a longer request is not: the computed backoff is used instead, with a warning' -r
complete -c retry -l stdin -d 'What each attempt reads: auto, replay (every attempt gets the whole input), inherit, null' -r -f -a "auto\t'A terminal is inherited, a file is re-read from its start for each attempt, a pipe is inherited (never read ahead)'
replay\t'Every attempt reads the same complete input (a pipe is spooled to disk)'
inherit\t'Handed to the child as it is'
null\t'/dev/null'"
complete -c retry -l log-format -d 'Format of retry\'s own messages' -r -f -a "text\t''
json\t''"
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
complete -c retry -l circuit -d 'Keep a circuit breaker NAME across runs: after --circuit-threshold failed runs in a row, refuse to run (exit 75) until a cooldown has passed' -r
complete -c retry -l state-dir -d 'Where circuits are kept [default: $RETRY_STATE_DIR, else $XDG_STATE_HOME/retry, else ~/.local/state/retry]' -r -F
complete -c retry -l state-url -d 'Keep circuits in Redis, shared by a fleet: redis://[user:password@]host:port/db (rediss:// for TLS)' -r
complete -c retry -l state-timeout -d 'Connect and command timeout for --state-url; past it the job runs as if the circuit were closed' -r
complete -c retry -l circuit-threshold -d 'Failed runs in a row that open the circuit' -r
complete -c retry -l circuit-cooldown -d 'How long an opened circuit refuses runs before one run may probe' -r
complete -c retry -l circuit-max-cooldown -d 'Largest cooldown: each failed probe doubles it up to this' -r
complete -c retry -l stop-on-timeout -d 'An attempt ended by --timeout or --max-time is a permanent failure (by default it is transient, whatever the exit-code lists say)'
complete -c retry -l scan-stdout -d 'Scan stdout as well as stderr for the output patterns'
complete -c retry -l retry-after -d 'Sleep as long as a \'Retry-After:\' header line in the scanned output says (implied by the curl and wget presets)'
complete -c retry -l buffer-stdout -d 'Hold each attempt\'s stdout and emit only the final attempt\'s'
complete -c retry -l foreground -d 'Keep the child in retry\'s process group even when not in a terminal\'s foreground'
complete -c retry -s q -l quiet -d 'Only retry\'s own errors; nothing per attempt'
complete -c retry -s v -l verbose -d 'Also the policy at start and every attempt\'s start'
complete -c retry -l explain -d 'Print the schedule this policy produces and exit without running anything'
complete -c retry -l circuit-status -d 'Print the circuit\'s state (closed, open, half-open; failures; until when) and exit 0'
complete -c retry -l circuit-reset -d 'Close the circuit and forget its failures, then exit 0'
complete -c retry -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retry -s V -l version -d 'Print version'
