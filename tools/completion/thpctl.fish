# fish completion for thpctl(1): its commands, each command's options and
# the values they take.  Installed as vendor_completions.d/thpctl.fish;
# tests/completion/ checks it against every command and option that
# `thpctl ... --help` lists (fish's own `complete -C`).

set -l thpctl_commands probe status apply collapse policy run compare top help

# The command line past "run" or "compare": the words after "--", or for
# run the first word that is not an option (or an option's value), start
# the command to run.  __thpctl_cmdline_start prints the index of its
# first word in (commandline -opc) and fails before it has started.
function __thpctl_cmdline_start
    set -l words (commandline -opc)
    set -l cmd $words[2]
    contains -- "$cmd" run compare; or return 1
    set -l i 3
    while test $i -le (count $words)
        switch $words[$i]
            case --
                echo (math $i + 1)
                return 0
            case --policy -p --collapse-interval --collapse-budget --collapse-time-budget
                if test $cmd = run
                    set i (math $i + 1)
                    # The word being typed is this option's value.
                    test $i -gt (count $words); and return 1
                end
            case '-*'
            case '*'
                if test $cmd = run
                    echo $i
                    return 0
                end
        end
        set i (math $i + 1)
    end
    # run, past its options: the word being typed is the command.
    if test $cmd = run; and not string match -q -- '-*' (commandline -ct)
        echo $i
        return 0
    end
    return 1
end

function __thpctl_in_cmdline
    __thpctl_cmdline_start >/dev/null
end

# The command line to run completes as fish completes it on its own.
function __thpctl_complete_cmdline
    set -l start (__thpctl_cmdline_start); or return
    set -l words (commandline -opc)
    complete -C (string join -- ' ' $words[$start..-1] (commandline -ct))
end

# True when the command is $argv[1] and the command line to run has not started.
function __thpctl_using
    set -l words (commandline -opc)
    test (count $words) -ge 2; and test "$words[2]" = $argv[1]; and not __thpctl_in_cmdline
end

complete -c thpctl -f
complete -c thpctl -n "not __fish_seen_subcommand_from $thpctl_commands" -a "$thpctl_commands"
complete -c thpctl -n "not __fish_seen_subcommand_from $thpctl_commands" -s h -l help -d 'show the help'
complete -c thpctl -n "not __fish_seen_subcommand_from $thpctl_commands" -s V -l version -d 'show the version'
complete -c thpctl -n "__fish_seen_subcommand_from help" -a "probe status apply collapse policy run compare top"

# -h/--help, and --json where the command has it.
for c in probe status apply collapse policy run compare top
    complete -c thpctl -n "__thpctl_using $c" -s h -l help -d 'show this help'
end
for c in probe status apply collapse compare top
    complete -c thpctl -n "__thpctl_using $c" -l json -d 'machine-readable output'
end
# -p/--pid PID, but for run, where -p is --policy.
for c in status apply collapse policy
    complete -c thpctl -n "__thpctl_using $c" -s p -l pid -x -a '(__fish_complete_pids)' -d 'the process'
end

complete -c thpctl -n '__thpctl_using status' -l anon -d 'anonymous mappings only'
complete -c thpctl -n '__thpctl_using status' -l huge -d 'mappings advised huge or holding huge pages'
complete -c thpctl -n '__thpctl_using status' -l daemon -d "thpd's rules and processes"
complete -c thpctl -n '__thpctl_using status' -l socket -r -F -d "thpd's socket"

complete -c thpctl -n '__thpctl_using apply' -s a -l advice -x -a 'huge nohuge collapse' -d 'the advice'
complete -c thpctl -n '__thpctl_using apply' -l all -d 'every mapping'
complete -c thpctl -n '__thpctl_using apply' -l skip-errors -d 'go on past failures'
complete -c thpctl -n '__thpctl_using apply' -l no-error-on-unmapped -d 'unmapped gaps are no error'
complete -c thpctl -n '__thpctl_using apply' -l inject -d 'the process makes the call itself'

complete -c thpctl -n '__thpctl_using collapse' -l watch -d 'repeat until the process exits'
complete -c thpctl -n '__thpctl_using collapse' -l interval -x -d 'seconds between passes'
complete -c thpctl -n '__thpctl_using collapse' -l budget -x -d 'bytes per pass'
complete -c thpctl -n '__thpctl_using collapse' -l time-budget -x -d 'seconds per pass'
complete -c thpctl -n '__thpctl_using collapse' -l min-present -x -d 'resident pages an extent needs'
complete -c thpctl -n '__thpctl_using collapse' -l max-shared -x -d 'shared pages an extent may hold'

# policy's positional policy name.
complete -c thpctl -n '__thpctl_using policy' -a 'never nohuge system'

complete -c thpctl -n '__thpctl_using run' -s p -l policy -x -a 'huge nohuge never system' -d 'the default THP policy'
complete -c thpctl -n '__thpctl_using run' -l require-persistent -d 'fail unless the kernel keeps it'
complete -c thpctl -n '__thpctl_using run' -l collapse-interval -x -d 'seconds between collapse passes'
complete -c thpctl -n '__thpctl_using run' -l collapse-budget -x -d 'bytes per collapse pass'
complete -c thpctl -n '__thpctl_using run' -l collapse-time-budget -x -d 'seconds per collapse pass'
complete -c thpctl -n '__thpctl_using run' -l collapse-verbose -d 'report each collapse pass'
complete -c thpctl -n '__thpctl_using run' -a -- -d 'the command follows'
complete -c thpctl -n '__thpctl_in_cmdline' -a '(__thpctl_complete_cmdline)'

complete -c thpctl -n '__thpctl_using compare' -l policies -x -a 'never,huge never,nohuge,huge never,system,huge' -d 'the policies'
complete -c thpctl -n '__thpctl_using compare' -l pairs -x -d 'pairs of runs'
complete -c thpctl -n '__thpctl_using compare' -l metric -x -d 'a figure from the output'
complete -c thpctl -n '__thpctl_using compare' -l metric-name -x -d "the metric's name"
complete -c thpctl -n '__thpctl_using compare' -l lower-is-better -d 'the metric is a cost'
complete -c thpctl -n '__thpctl_using compare' -l load -x -d 'the load, a shell command line'
complete -c thpctl -n '__thpctl_using compare' -l ready -x -d 'retried until it exits 0'
complete -c thpctl -n '__thpctl_using compare' -l ready-timeout -x -d 'seconds'
complete -c thpctl -n '__thpctl_using compare' -l sample-interval -x -d 'seconds'
complete -c thpctl -n '__thpctl_using compare' -l svg -r -F -d 'draw the pairs into FILE'
complete -c thpctl -n '__thpctl_using compare' -l verbose -d "each run's output on stderr"
complete -c thpctl -n '__thpctl_using compare' -a -- -d 'the command follows'

complete -c thpctl -n '__thpctl_using top' -l once -d 'one table, then exit'
complete -c thpctl -n '__thpctl_using top' -s n -l iterations -x -d 'refresh N times'
complete -c thpctl -n '__thpctl_using top' -s d -l delay -x -d 'seconds between refreshes'
complete -c thpctl -n '__thpctl_using top' -l sort -x -a 'huge anon share pid name' -d 'the sort key'
complete -c thpctl -n '__thpctl_using top' -l cgroup -x -d 'a cgroup v2 path'
complete -c thpctl -n '__thpctl_using top' -l rule -x -d 'a thpd rule'
complete -c thpctl -n '__thpctl_using top' -l folios -d 'bytes by folio size'
complete -c thpctl -n '__thpctl_using top' -l socket -r -F -d "thpd's socket"
