#!/bin/bash
# Fail if libthp defines a global symbol outside its namespace: a static
# application that defines sys_read or caps_get must still link against
# libthp.a ("multiple definition" otherwise).
# usage: symbols.sh NM [KIND=FILE...]   KIND: static, shared, preload
# static: every global in libthp.a is thp_*.  shared: every global and
# dynamic symbol of libthp.so is thp_* (or the version node).  preload: the
# preload's are exactly its interposed functions and thp_preload_control.
set -u
nm=$1
shift
fail=0
for arg in "$@"; do
	kind=${arg%%=*} file=${arg#*=}
	case $kind in
	static) syms=$("$nm" -g --defined-only "$file") || exit 1 ;;
	shared | preload)
		syms=$("$nm" -g --defined-only "$file" && "$nm" -D --defined-only "$file") || exit 1 ;;
	*) echo "symbols.sh: unknown kind $kind" >&2; exit 1 ;;
	esac
	# nm lines are "ADDRESS TYPE NAME"; archive member headers end in ':'.
	names=$(awk 'NF >= 2 && $NF !~ /:$/ { print $NF }' <<<"$syms" | sed 's/@.*//' | sort -u)
	case $kind in
	preload) bad=$(grep -vxE 'mmap|mmap64|thp_preload_control' <<<"$names") ;;
	*) bad=$(grep -vE '^(thp_|LIBTHP_)' <<<"$names") ;;
	esac
	count=$(grep -c . <<<"$names")
	if [ -n "$bad" ]; then
		echo "FAIL $kind $file: $(grep -c . <<<"$bad") global symbol(s) outside the thp_ namespace:"
		echo "$bad" | sed 's/^/  /'
		fail=1
	else
		echo "ok   $kind $file: $count global symbol(s): $(tr '\n' ' ' <<<"$names")"
	fi
done
exit $fail
