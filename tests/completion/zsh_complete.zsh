# Completes command lines with zsh's own completion system and the _thpctl
# and _thpd of COMPLETION_DIR: an interactive zsh -f in a zpty (zle runs
# only on a terminal) with compinit over that directory and compadd
# wrapped so that every match it adds is written to a file; each line of
# stdin is typed, then TAB.  Prints "## LINE" and then one match a line.
# usage: zsh -f zsh_complete.zsh COMPLETION_DIR < LINES
zmodload zsh/zpty zsh/zselect || exit 1
dir=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/libthp-zsh.XXXXXX") || exit 1
trap 'zpty -d z 2>/dev/null; rm -rf $tmp' EXIT
out=$tmp/matches

cat >$tmp/setup.zsh <<SETUP
PS1='' RPS1='' PROMPT_EOL_MARK=''
unsetopt autolist listambiguous automenu menucomplete
fpath=(${(q)dir} \$fpath)
autoload -Uz compinit && compinit -u -D
zstyle ':completion:*' list-prompt ''
# The matches of every compadd that adds (not one that only asks, -O/-A/-D).
compadd() {
	if [[ \${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then
		builtin compadd "\$@"
		return
	fi
	local -a __m
	builtin compadd -A __m "\$@"
	((\$#__m)) && print -rl -- \$__m >>${(q)out}
	builtin compadd "\$@"
}
# TAB completes, then marks the end of its matches (_main_complete empties
# comppostfuncs after each completion).
_libthp_done() { print -r -- '#DONE' >>${(q)out}; }
_libthp_tab() { comppostfuncs=(_libthp_done); zle complete-word; }
zle -N _libthp_tab
bindkey '^I' _libthp_tab
print -r -- '#READY' >>${(q)out}
SETUP

: >$out
zpty z zsh -f -i || exit 1
zpty -w z "source ${(q)tmp}/setup.zsh"
# wait_for MARK: until the file's last line is MARK (60 s at most).  What
# the zsh echoes is read and dropped: a full terminal would block it.
wait_for() {
	local i junk
	local -a got
	for i in {1..6000}; do
		while zpty -rt z junk; do :; done
		got=("${(@f)$(<$out)}")
		[[ $got[-1] == $1 ]] && return 0
		zselect -t 1
	done
	print -u2 "zsh_complete: no $1 from the zsh in the zpty"
	return 1
}
wait_for '#READY' || exit 1
while IFS= read -r line; do
	: >$out
	# Type the line and TAB, then after the completion kill the whole line.
	zpty -w -n z "$line"$'\t'
	wait_for '#DONE' || exit 1
	print -r -- "## $line"
	grep -v '^#DONE$' $out
	zpty -w -n z $'\C-e\C-u'
done
