# bash completion for thpctl(1): its commands, each command's options and
# the values they take.  Installed as completions/thpctl; needs plain bash
# only (not the bash-completion package's helpers), so that the
# completion test drives it in a bare shell.  tests/completion/ checks it
# against every command and option that `thpctl ... --help` lists.

# The running processes' PIDs, for -p/--pid.
_thpctl_pids()
{
	local d pids=()
	for d in /proc/[0-9]*; do
		pids+=("${d#/proc/}")
	done
	printf '%s\n' "${pids[@]}"
}

_thpctl()
{
	local cur=${COMP_WORDS[COMP_CWORD]}
	local prev=${COMP_WORDS[COMP_CWORD - 1]}
	local commands="probe status apply collapse policy run compare top help"
	local cmd="" i opts=""
	COMPREPLY=()

	if ((COMP_CWORD == 1)); then
		mapfile -t COMPREPLY < <(compgen -W "$commands -h --help -V --version" -- "$cur")
		return
	fi
	cmd=${COMP_WORDS[1]}

	# compare: after "--" the rest is the command line to compare.
	if [[ $cmd == compare ]]; then
		for ((i = 2; i < COMP_CWORD; i++)); do
			if [[ ${COMP_WORDS[i]} == -- ]]; then
				if ((i + 1 == COMP_CWORD)); then
					mapfile -t COMPREPLY < <(compgen -c -- "$cur")
				else
					mapfile -t COMPREPLY < <(compgen -f -- "$cur")
				fi
				return
			fi
		done
	fi
	# run: after "--" or the first word that is not an option, the rest is
	# the command line to run.
	if [[ $cmd == run ]]; then
		local start=0
		for ((i = 2; i < COMP_CWORD; i++)); do
			case ${COMP_WORDS[i]} in
			--)
				start=$((i + 1))
				break ;;
			--policy | -p | --collapse-interval | --collapse-budget | --collapse-time-budget)
				((i++)) ;;
			-*) ;;
			*)
				start=$i
				break ;;
			esac
		done
		# Past the options (and their values): the current word is CMD.
		if ((start == 0 && i == COMP_CWORD)) && [[ $cur != -* ]]; then
			start=$COMP_CWORD
		fi
		if ((start == COMP_CWORD)); then
			mapfile -t COMPREPLY < <(compgen -c -- "$cur")
			return
		elif ((start > 0)); then
			mapfile -t COMPREPLY < <(compgen -f -- "$cur")
			return
		fi
	fi

	# The values of options that take one.
	case $cmd:$prev in
	*:-p | *:--pid)
		if [[ $cmd == run ]]; then
			mapfile -t COMPREPLY < <(compgen -W "huge nohuge never system" -- "$cur")
		else
			mapfile -t COMPREPLY < <(compgen -W "$(_thpctl_pids)" -- "$cur")
		fi
		return ;;
	run:--policy)
		mapfile -t COMPREPLY < <(compgen -W "huge nohuge never system" -- "$cur")
		return ;;
	apply:-a | apply:--advice)
		mapfile -t COMPREPLY < <(compgen -W "huge nohuge collapse" -- "$cur")
		return ;;
	status:--socket | top:--socket | compare:--svg)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		return ;;
	compare:--policies)
		mapfile -t COMPREPLY < <(compgen -W "never,huge never,nohuge,huge never,system,huge" -- "$cur")
		return ;;
	top:--sort)
		mapfile -t COMPREPLY < <(compgen -W "huge anon share pid name" -- "$cur")
		return ;;
	compare:--pairs | compare:--metric | compare:--metric-name | compare:--load | \
	compare:--ready | compare:--ready-timeout | compare:--sample-interval | \
	top:-n | top:--iterations | top:-d | top:--delay | top:--cgroup | top:--rule)
		# A number, a pattern or a command line: nothing to offer.
		return ;;
	collapse:--interval | collapse:--budget | collapse:--time-budget | \
	collapse:--min-present | collapse:--max-shared | \
	run:--collapse-interval | run:--collapse-budget | run:--collapse-time-budget)
		# A number: nothing to offer.
		return ;;
	esac

	case $cmd in
	help)
		if ((COMP_CWORD == 2)); then
			mapfile -t COMPREPLY < <(compgen -W "${commands% help}" -- "$cur")
		fi
		return ;;
	probe)
		opts="--json -h --help" ;;
	status)
		opts="-p --pid --anon --huge --json --daemon --socket -h --help" ;;
	apply)
		opts="-p --pid -a --advice --all --skip-errors --no-error-on-unmapped --inject --json -h --help" ;;
	collapse)
		opts="-p --pid --watch --interval --budget --time-budget --min-present --max-shared --json -h --help" ;;
	policy)
		opts="-p --pid -h --help"
		if [[ $cur != -* ]]; then
			mapfile -t COMPREPLY < <(compgen -W "never nohuge system" -- "$cur")
			return
		fi ;;
	compare)
		opts="--policies --pairs --metric --metric-name --lower-is-better --load --ready"
		opts+=" --ready-timeout --sample-interval --json --svg --verbose -h --help --" ;;
	top)
		opts="--once --json -n --iterations -d --delay --sort --cgroup --rule --folios"
		opts+=" --socket -h --help" ;;
	run)
		opts="-p --policy --require-persistent --collapse-interval --collapse-budget"
		opts+=" --collapse-time-budget --collapse-verbose -h --help --" ;;
	*)
		return ;;
	esac
	mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
}
complete -F _thpctl thpctl
