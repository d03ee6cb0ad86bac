# bash completion for thpd(8): its options and their file and directory
# arguments.  Installed as completions/thpd; plain bash only (see
# thpctl.bash); tests/completion/ checks it against `thpd --help`.

_thpd()
{
	local cur=${COMP_WORDS[COMP_CWORD]}
	local prev=${COMP_WORDS[COMP_CWORD - 1]}
	COMPREPLY=()

	case $prev in
	--config | -c | --socket | -s | --metrics-file | -m)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		return ;;
	--config-dir | -d)
		mapfile -t COMPREPLY < <(compgen -d -- "$cur")
		return ;;
	--listen | -l | --interval | -i)
		# HOST:PORT or a number: nothing to offer.
		return ;;
	esac
	mapfile -t COMPREPLY < <(compgen -W "--config --config-dir --socket --metrics-file
		--listen --interval --once --check-config --verbose --help" -- "$cur")
}
complete -F _thpd thpd
