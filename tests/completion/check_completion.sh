#!/bin/bash
# The bash completion of thpctl and thpd against their --help: every
# command `thpctl --help` lists, every option each `--help` lists and the
# values it spells out (huge|nohuge|...) must be offered when the
# completion function is driven as bash drives it (COMP_WORDS, COMP_CWORD,
# then the function's compgen into COMPREPLY).
# usage: check_completion.sh COMPLETION_DIR THPCTL [THPD]
set -u
dir=$1 thpctl=$2 thpd=${3:-}
fail=0 checked=0

# offered FUNC WORD... : the words the completion function offers when the
# cursor is at the end of the last WORD.
offered() {
	local func=$1
	shift
	COMP_WORDS=("$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE="${COMP_WORDS[*]}"
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	"$func" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
	printf '%s\n' "${COMPREPLY[@]}"
}

# expect WANT FUNC WORD...: WANT is offered both for the whole word and
# for its first two characters.
expect() {
	local want=$1 func=$2 prefix
	shift 2
	for prefix in "$want" "${want:0:2}"; do
		checked=$((checked + 1))
		if ! offered "$func" "$@" "$prefix" | grep -qxF -- "$want"; then
			echo "FAIL: '$*' + '$prefix' does not offer '$want'"
			echo "      offered: $(offered "$func" "$@" "$prefix" | tr '\n' ' ')"
			fail=1
		fi
	done
}

# The options a --help text names: -x and --long words that stand after a
# blank, '[', '(' or '|' (so "thpctl-json.md" is not one).
options_of() {
	grep -oE '(^|[][ (|])--?[a-zA-Z][a-zA-Z-]*' | sed 's/^[][ (|]//' | sort -u
}

# OPTION VALUE|VALUE|...: the values a --help text spells out for an option.
values_of() {
	grep -oE -- '--?[a-z][a-z-]* [a-z]+(\|[a-z]+)+' | sort -u
}

source "$dir/thpctl.bash" || exit 1
top=$("$thpctl" --help) || { echo "FAIL: thpctl --help"; exit 1; }
commands=$(sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p' <<<"$top")
[ -n "$commands" ] || { echo "FAIL: no commands in thpctl --help"; exit 1; }
for c in $commands help; do
	expect "$c" _thpctl thpctl
done
for o in $(options_of <<<"$top"); do
	expect "$o" _thpctl thpctl
done
for c in $commands; do
	expect "$c" _thpctl thpctl help
	usage=$("$thpctl" "$c" --help) || { echo "FAIL: thpctl $c --help"; fail=1; continue; }
	n=0
	for o in $(options_of <<<"$usage"); do
		expect "$o" _thpctl thpctl "$c"
		n=$((n + 1))
	done
	while read -r o vals; do
		[ -n "$o" ] || continue
		for v in ${vals//|/ }; do
			expect "$v" _thpctl thpctl "$c" "$o"
		done
	done < <(values_of <<<"$usage")
	echo "thpctl $c: $n options"
done
# policy's positional policy name (Usage: thpctl policy -p PID never|...).
for v in $("$thpctl" policy --help | sed -n 's/^Usage: thpctl policy -p PID \([a-z|]*\)$/\1/p' | tr '|' ' '); do
	expect "$v" _thpctl thpctl policy -p 1
done
# run: the command to run, after the options or after "--".
expect bash _thpctl thpctl run --policy never
expect bash _thpctl thpctl run --policy never --

if [ -n "$thpd" ]; then
	source "$dir/thpd.bash" || exit 1
	usage=$("$thpd" --help) || { echo "FAIL: thpd --help"; exit 1; }
	n=0
	for o in $(options_of <<<"$usage"); do
		expect "$o" _thpd thpd
		n=$((n + 1))
	done
	[ "$n" -gt 0 ] || { echo "FAIL: no options in thpd --help"; fail=1; }
	echo "thpd: $n options"
fi
echo "$checked completions checked"
exit $fail
