_retry() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="retry"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        retry)
            opts="-n -d -m -c -j -t -T -o -q -v -h -V --attempts --delay --throttle-delay --multiplier --cap --jitter --splay --max-time --timeout --kill-after --retry-on-exit --stop-on-exit --retry-on-output --stop-on-output --stop-on-timeout --scan-stdout --preset --retry-after --max-retry-after --stdin --buffer-stdout --output --foreground --on-retry --on-give-up --success-on-exit --until-output --until-failure --successes --give-up-exit --hedge-after --hedges --reset-after --quiet --verbose --log-format --color --log-file --explain --metrics-file --name --generate --circuit --circuit-mode --circuit-threshold --circuit-cooldown --circuit-max-cooldown --circuit-k --circuit-window --circuit-status --circuit-reset --budget --budget-ratio --budget-min --budget-burst --budget-status --budget-reset --state-dir --state-url --state-ca --state-timeout --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --attempts)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --delay)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -d)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --throttle-delay)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --multiplier)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -m)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cap)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -c)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --jitter)
                    COMPREPLY=($(compgen -W "full equal decorrelated none" -- "${cur}"))
                    return 0
                    ;;
                -j)
                    COMPREPLY=($(compgen -W "full equal decorrelated none" -- "${cur}"))
                    return 0
                    ;;
                --splay)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -t)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -T)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --kill-after)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --retry-on-exit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stop-on-exit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --retry-on-output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stop-on-output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --preset)
                    COMPREPLY=($(compgen -W "cargo go gradle mvn docker kubectl aws terraform registry helm gcloud az curl wget llm apt pip npm uv yarn pnpm ssh scp rsync git gh list show none check" -- "${cur}"))
                    return 0
                    ;;
                --max-retry-after)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stdin)
                    COMPREPLY=($(compgen -W "auto replay inherit null" -- "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --on-retry)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --on-give-up)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --success-on-exit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --until-output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --successes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --give-up-exit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hedge-after)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hedges)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --reset-after)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json github gitlab" -- "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --log-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --name)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --generate)
                    COMPREPLY=($(compgen -W "man bash zsh fish elvish powershell" -- "${cur}"))
                    return 0
                    ;;
                --circuit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --circuit-mode)
                    COMPREPLY=($(compgen -W "breaker adaptive" -- "${cur}"))
                    return 0
                    ;;
                --circuit-threshold)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --circuit-cooldown)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --circuit-max-cooldown)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --circuit-k)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --circuit-window)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-ratio)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-min)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-burst)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --state-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --state-url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --state-ca)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --state-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _retry -o nosort -o bashdefault -o default retry
else
    complete -F _retry -o bashdefault -o default retry
fi

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
