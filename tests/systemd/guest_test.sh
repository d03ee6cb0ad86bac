#!/bin/bash
# The systemd guest's checks (run by vmtest.service inside the guest): the
# distributions' own units of redis-server and memcached under thpctl
# drop-ins, checked against systemctl and /proc/PID/smaps.  One VMTEST line
# per result on the serial console, "VMTEST DONE" last.
# /opt/libthp-vmtest/conf (from the host) sets THPCTL (thpctl's path),
# PRELOAD_DIR (where the preload lives) and PHASES.
set -u
. /opt/libthp-vmtest/conf
export SYSTEMD_PAGER='' SYSTEMD_COLORS=0

info() { echo "VMTEST INFO $*"; }
pass() { echo "VMTEST PASS $*"; }
fail() { echo "VMTEST FAIL $*"; }
check() { # NAME WHY COMMAND...: PASS when COMMAND succeeds
	local name=$1 why=$2
	shift 2
	if "$@"; then pass "$name"; else fail "$name: $why"; fi
}

# A line of its own: systemd resets the terminal when it opens it.
echo
# The project's packages, when the host sent them (LIBTHP_DEBS): installed
# as a user installs them, before anything uses thpctl.
if ls /opt/libthp-vmtest/debs/*.deb >/dev/null 2>&1; then
	if dpkg -i /opt/libthp-vmtest/debs/*.deb >/tmp/dpkg.log 2>&1; then
		pass "packages_installed"
		info "packages: $(dpkg-query -W -f '${Package} ${Version}, ' libthp0 thpctl thpd 2>/dev/null)thpctl at $(command -v thpctl)"
	else
		fail "packages_installed: dpkg -i failed"
		sed 's/^/VMTEST LOG dpkg: /' /tmp/dpkg.log
	fi
fi
info "systemd $(systemctl --version | head -n1)"
info "kernel $(uname -r) THP mode $(cat /sys/kernel/mm/transparent_hugepage/enabled)"
# systemd-analyze time waits for the end of the boot, which this unit is part of.
info "boot: multi-user.target reached $(systemctl show -P ActiveEnterTimestampMonotonic multi-user.target | awk '{printf "%.1f", $1 / 1e6}') s after the kernel started"
# What the boot spent its time on (TCG), slowest steps of systemd's journal.
journalctl -b -q --no-pager -o short-monotonic | grep -E 'Reached target|Finished|Started|Run /init|Freeing unused|Mounted root|systemd 252 running' |
	sed 's/^/VMTEST LOG boot: /'
info "thpctl $($THPCTL --version 2>&1 | head -n1)"
# The project's host runs the madvise mode; so does the guest (Debian's
# kernel boots with "always", where everything is huge anyway).
echo madvise >/sys/kernel/mm/transparent_hugepage/enabled

dropin_dir=/etc/systemd/system/redis-server.service.d
# The unit's own ExecStart=, as systemd read it from Debian's file.
redis_exec=$(systemctl show -P ExecStart redis-server.service | sed -n 's/.*argv\[\]=\([^;]*\) ;.*/\1/p')
info "redis-server.service ExecStart: $redis_exec"
info "redis-server.service $(systemctl show -p Type -p User -p NotifyAccess -p CapabilityBoundingSet -p ExecPaths -p NoExecPaths redis-server.service | tr '\n' ' ')"

# Everything about a unit after a start attempt, for the log.
show_unit() { # UNIT LABEL
	info "$2: $(systemctl show -p ActiveState -p SubState -p Result -p MainPID -p ExecMainStatus "$1" | tr '\n' ' ')"
	systemctl status --no-pager -n 0 "$1" 2>&1 | sed "s/^/VMTEST LOG $2 status: /"
	journalctl --no-pager -q -o cat -u "$1" --since "@$3" 2>&1 | tail -n 20 | sed "s/^/VMTEST LOG $2 journal: /"
}

# Start UNIT, wait at most S seconds for active; the state reached.
start_unit() { # UNIT SECONDS
	timeout "$2" systemctl start "$1" >/dev/null 2>&1
	systemctl show -P ActiveState "$1"
}

write_dropin() { # DIR NAME TEXT
	mkdir -p "$1" && printf '%s\n' "$3" >"$1/$2" && systemctl daemon-reload
}

# AnonHugePages as a percentage of the anonymous memory that could be huge:
# per anonymous mapping, its resident anonymous memory up to the part of it
# that 2 MiB pages can cover (the mapping's aligned span).
huge_share() { # PID -> "pct anon_kB huge_kB alignable_kB"
	perl -e '
		my ($anon, $huge, $align, $span, $is_anon) = (0, 0, 0, 0, 0);
		while (<>) {
			if (/^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(\S*)/) {
				my ($s, $e) = (hex($1), hex($2));
				my ($a, $b) = (int(($s + 2097151) / 2097152), int($e / 2097152));
				$span = $b > $a ? ($b - $a) * 2048 : 0;
				$is_anon = $3 eq "" || $3 =~ /^\[(heap|stack)/;
			} elsif (/^Anonymous:\s+(\d+)/) {
				$anon += $1;
				$align += $1 < $span ? $1 : $span if $is_anon;
			} elsif (/^AnonHugePages:\s+(\d+)/) {
				$huge += $1;
			}
		}
		printf "%d %d %d %d\n", $align ? 100 * $huge / $align : 0, $anon, $huge, $align;
	' "/proc/$1/smaps"
}

# The pid of the redis-server process of the unit (MainPID or its child).
redis_pid() { pgrep -x redis-server | head -n1; }

# MiB of 8000-byte values through redis-cli (one EVAL: under TCG, 1 KiB
# values took two minutes for 500 MiB, most of it per-command overhead).
redis_fill() { # MiB
	redis-cli EVAL "for i=1,$(($1 * 1048576 / 8000)) do redis.call('SET','k'..i,string.rep('x',8000)) end return 1" 0 >/dev/null
}

t0() { date +%s; }

# 1. The recipe of README and thpctl(1) as written: only ExecStart= prefixed.
phase_prefix_only() {
	local since
	since=$(t0)
	write_dropin $dropin_dir thpctl.conf "[Service]
ExecStart=
ExecStart=$THPCTL run --policy huge -- $redis_exec"
	state=$(start_unit redis-server.service 60)
	show_unit redis-server.service prefix_only "$since"
	info "prefix_only: redis-server.service with only ExecStart= prefixed: $state"
	systemctl stop redis-server.service; systemctl reset-failed redis-server.service 2>/dev/null
	rm -f $dropin_dir/thpctl.conf
}

# 2. As thpctl runs under Debian's unit: user redis, no capability, so no
#    agent: thpctl execs redis, whose notifications go straight to systemd.
phase_exec() {
	local since pid
	since=$(t0)
	write_dropin $dropin_dir thpctl.conf "[Service]
ExecPaths=$THPCTL $PRELOAD_DIR
ExecStart=
ExecStart=$THPCTL run --policy huge -- $redis_exec"
	state=$(start_unit redis-server.service 60)
	show_unit redis-server.service exec "$since"
	check redis_exec_active "state $state" test "$state" = active
	pid=$(systemctl show -P MainPID redis-server.service)
	info "exec: MainPID $pid is $(cat /proc/$pid/comm 2>/dev/null)"
	measure exec "$pid"
	systemctl stop redis-server.service
	rm -f $dropin_dir/thpctl.conf
}

# 3. thpctl as the collapse agent (the unit gives it CAP_SYS_NICE): thpctl
#    is the main PID and redis its child.
phase_agent() {
	local since main child state t
	since=$(t0)
	write_dropin $dropin_dir thpctl.conf "[Service]
ExecPaths=$THPCTL $PRELOAD_DIR
PrivateUsers=no
CapabilityBoundingSet=CAP_SYS_NICE
AmbientCapabilities=CAP_SYS_NICE
SystemCallFilter=process_madvise pidfd_open
TimeoutStartSec=${AGENT_TIMEOUT:-90}
ExecStart=
ExecStart=$THPCTL run --policy huge ${AGENT_ARGS:-} -- $redis_exec"
	t=$(date +%s%N)
	state=$(start_unit redis-server.service $((${AGENT_TIMEOUT:-90} + 10)))
	info "agent: start took $((($(date +%s%N) - t) / 1000000)) ms"
	show_unit redis-server.service agent "$since"
	journalctl --no-pager -q -o short-monotonic -u redis-server.service --since "@$since" | sed 's/^/VMTEST LOG agent journal-full: /'
	ps -e -o pid,ppid,user,comm | grep -E 'thpctl|redis' | sed 's/^/VMTEST LOG agent ps: /'
	tail -n 5 /var/log/redis/redis-server.log | sed 's/^/VMTEST LOG agent redis log: /'
	if [ -n "${AGENT_ARGS:-}" ]; then
		journalctl -b --no-pager -q -o short-monotonic --since "@$since" | sed 's/^/VMTEST LOG agent all: /'
		dmesg | tail -n 10 | sed 's/^/VMTEST LOG agent dmesg: /'
	fi
	check redis_agent_active "state $state (Type=notify, thpctl the main PID)" test "$state" = active
	[ "$state" = active ] || { systemctl stop redis-server.service; rm -f $dropin_dir/thpctl.conf; return; }
	main=$(systemctl show -P MainPID redis-server.service)
	child=$(redis_pid)
	info "agent: MainPID $main ($(cat /proc/$main/comm)), redis-server pid $child (parent $(ps -o ppid= -p $child))"
	check redis_agent_mainpid "MainPID $main is $(cat /proc/$main/comm), not thpctl" \
		test "$(cat /proc/$main/comm)" = thpctl
	check redis_agent_child "redis-server $child is not MainPID's child" \
		test "$(ps -o ppid= -p "$child" | tr -d ' ')" = "$main"
	measure agent "$child"
	# restart: a new thpctl and redis, active again.
	systemctl restart redis-server.service
	state=$(systemctl show -P ActiveState redis-server.service)
	local main2
	main2=$(systemctl show -P MainPID redis-server.service)
	check redis_agent_restart "after restart: $state, MainPID $main2" \
		test "$state" = active -a "$main2" != "$main" -a "$(cat /proc/$main2/comm 2>/dev/null)" = thpctl
	# reload: Debian's unit has no ExecReload=, so systemctl refuses it with
	# or without thpctl; the same answer is what "behaves as without" means.
	systemctl reload redis-server.service >/dev/null 2>&1
	rc=$?
	[ -n "$RELOAD_PLAIN" ] && check redis_agent_reload "reload answered $rc (without thpctl: $RELOAD_PLAIN)" test "$rc" = "$RELOAD_PLAIN"
	systemctl stop redis-server.service
	state=$(systemctl show -P ActiveState redis-server.service)
	check redis_agent_stop "after stop: $state, redis-server left: $(redis_pid)" \
		test "$state" = inactive -a -z "$(redis_pid)"
	rm -f $dropin_dir/thpctl.conf
	systemctl daemon-reload
}

measure() { # LABEL PID
	local t
	t=$(date +%s%N)
	redis_fill "${FILL_MIB:-500}"
	info "$1: filled ${FILL_MIB:-500} MiB in $((($(date +%s%N) - t) / 1000000)) ms"
	if [ "$1" = agent ]; then
		# That the agent makes it huge, within a bound for a loaded CI
		# machine; how soon (the goal: 10 s) is logged.
		t=$(time_to_huge "$2" 120)
	else
		sleep 10
		t=10
	fi
	read -r pct anon huge align <<<"$(huge_share "$2")"
	info "$1: redis-server pid $2 after $t s: Anonymous $anon kB AnonHugePages $huge kB alignable $align kB: ${pct}% huge"
	grep -E '^(Rss|Anonymous|AnonHugePages):' "/proc/$2/smaps_rollup" | tr -s ' ' | tr '\n' ' ' | sed "s/^/VMTEST INFO $1: smaps_rollup: /"; echo
	if [ "$1" = agent ]; then
		check redis_agent_huge "${pct}% of alignable anonymous memory huge ${t} s after the fill (want >= 90% within 120 s)" \
			test "$t" != timeout
	fi
}

# Without thpctl, as shipped: the reference for every other run.
phase_plain() {
	local since state
	since=$(t0)
	state=$(start_unit redis-server.service 60)
	show_unit redis-server.service plain "$since"
	check redis_plain_active "state $state" test "$state" = active
	systemctl reload redis-server.service >/dev/null 2>&1
	RELOAD_PLAIN=$?
	info "plain: systemctl reload answered $RELOAD_PLAIN"
	measure plain "$(systemctl show -P MainPID redis-server.service)"
	systemctl stop redis-server.service
}

# memcached (Debian's unit: Type=simple, a perl wrapper that execs memcached,
# which drops to user memcache) under --policy never and nohuge.  The guest
# runs the THP mode "always" for this, where the policies make a difference
# to memory nobody advised: per policy, its THPeligible mappings and its
# AnonHugePages after a 48 MiB fill (8 KiB values through bash's /dev/tcp).
memcached_fill() { # MiB
	local v i n=$(($1 * 128))
	v=$(head -c 8000 /dev/zero | tr '\0' x)
	exec 3<>/dev/tcp/127.0.0.1/11211 || return 1
	for ((i = 0; i < n; i++)); do
		printf 'set k%d 0 0 8000 noreply\r\n%s\r\n' "$i" "$v" >&3
	done
	printf 'quit\r\n' >&3
	cat <&3 >/dev/null
	exec 3<&-
}

# PR_THP_DISABLE_EXCEPT_ADVISED: mainline 6.18.
kernel_has_except_advised() {
	local v
	v=$(uname -r | sed 's/^\([0-9]*\)\.\([0-9]*\).*/\1 \2/')
	set -- $v
	[ "$1" -gt 6 ] || { [ "$1" = 6 ] && [ "$2" -ge 18 ]; }
}

memcached_case() { # LABEL [POLICY]
	local since state pid eligible total t
	since=$(t0)
	mkdir -p /etc/systemd/system/memcached.service.d
	if [ -n "${2:-}" ]; then
		write_dropin /etc/systemd/system/memcached.service.d thpctl.conf "[Service]
ExecStart=
ExecStart=$THPCTL run --policy $2 -- $memcached_exec"
	else
		rm -f /etc/systemd/system/memcached.service.d/thpctl.conf
		systemctl daemon-reload
	fi
	state=$(start_unit memcached.service 60)
	sleep 2
	if [ "${2:-}" = nohuge ] && ! kernel_has_except_advised; then
		# NOHUGE needs PR_THP_DISABLE_EXCEPT_ADVISED (6.18): thpctl must
		# refuse with exit 125 and say why, not run memcached without it.
		local why
		why=$(journalctl -q --no-pager -o cat -u memcached.service --since "@$since" | grep -m1 'cannot set policy nohuge')
		info "memcached nohuge on $(uname -r): ExecMainStatus $(systemctl show -P ExecMainStatus memcached.service): $why"
		check memcached_nohuge_refused "no refusal in the journal: '$why'" \
			test -n "$why" -a -z "$(pgrep -x memcached)"
		systemctl stop memcached.service
		systemctl reset-failed memcached.service 2>/dev/null
		return
	fi
	pid=$(pgrep -x memcached | head -n1)
	info "memcached $1: $state, MainPID $(systemctl show -P MainPID memcached.service), memcached pid $pid user $(ps -o user= -p "$pid")"
	check "memcached_${1}_active" "state $state" test "$state" = active -a -n "$pid"
	[ -n "$pid" ] || { show_unit memcached.service "memcached_$1" "$since"; return; }
	t=$(date +%s%N)
	memcached_fill 48
	info "memcached $1: filled 48 MiB in $((($(date +%s%N) - t) / 1000000)) ms"
	sleep 10
	eligible=$(grep -c '^THPeligible: *1' /proc/$pid/smaps)
	total=$(grep -c '^THPeligible' /proc/$pid/smaps)
	read -r pct anon huge align <<<"$(huge_share "$pid")"
	info "memcached $1: pid $pid THPeligible $eligible of $total mappings, Anonymous $anon kB AnonHugePages $huge kB alignable $align kB (${pct}%), THP_enabled: $(grep THP_enabled /proc/$pid/status | tr -d '\t')"
	case ${2:-} in
	never)
		check memcached_never_none "THPeligible $eligible, AnonHugePages $huge kB" \
			test "$eligible" = 0 -a "$huge" = 0 ;;
	nohuge)
		check memcached_nohuge_none "AnonHugePages $huge kB (memcached advises nothing)" \
			test "$huge" = 0 ;;
	'')
		# How much is huge depends on khugepaged's timing (2-20 MiB seen);
		# that its mappings may be huge does not.
		check memcached_plain_eligible "THPeligible $eligible under THP mode always" \
			test "$eligible" -gt 0 ;;
	esac
	systemctl stop memcached.service
}

phase_memcached() {
	memcached_exec=$(systemctl cat memcached.service | sed -n 's/^ExecStart=//p' | tail -n1)
	info "memcached.service ExecStart: $memcached_exec"
	echo always >/sys/kernel/mm/transparent_hugepage/enabled
	memcached_case plain
	memcached_case never never
	memcached_case nohuge nohuge
	rm -f /etc/systemd/system/memcached.service.d/thpctl.conf
	# MemoryTHP= (systemd 260): what this systemd makes of it.
	write_dropin /etc/systemd/system/memcached.service.d memorythp.conf "[Service]
MemoryTHP=disable"
	# systemd's own parser, with the drop-in (the journal has its warning
	# only once per reload, and not always by the time we look).
	local said
	said=$(systemd-analyze verify memcached.service 2>&1 | grep -m1 MemoryTHP)
	info "memcached MemoryTHP=disable: ${said:-no complaint from systemd}"
	rm -f /etc/systemd/system/memcached.service.d/memorythp.conf
	systemctl daemon-reload
	echo madvise >/sys/kernel/mm/transparent_hugepage/enabled
}

# The drop-in recipe of thpctl(1) and doc/preload.md, as a script: the
# unit's own ExecStart= line (systemctl cat: its text, quoting and
# specifiers as written) behind thpctl, in a drop-in that removing undoes.
dropin_write() { # UNIT POLICY
	local line
	line=$(systemctl cat "$1" | sed -n 's/^ExecStart=//p' | tail -n1)
	mkdir -p "/etc/systemd/system/$1.d"
	printf '[Service]\nExecStart=\nExecStart=%s run --policy %s -- %s\n' "$THPCTL" "$2" "$line" \
		>"/etc/systemd/system/$1.d/thpctl.conf"
	systemctl daemon-reload
}
dropin_remove() { # UNIT
	rm -f "/etc/systemd/system/$1.d/thpctl.conf"
	rmdir --ignore-fail-on-non-empty "/etc/systemd/system/$1.d"
	systemctl daemon-reload
}

phase_recipe() {
	local before with after want
	for unit in memcached.service redis-server.service; do
		before=$(systemctl show -P ExecStart "$unit" | sed -n 's/.*argv\[\]=\([^;]*\) ;.*/\1/p')
		dropin_write "$unit" never
		with=$(systemctl show -P ExecStart "$unit" | sed -n 's/.*argv\[\]=\([^;]*\) ;.*/\1/p')
		want="$THPCTL run --policy never -- $before"
		check "recipe_write_$unit" "ExecStart is '$with', want '$want'" test "$with" = "$want"
		dropin_remove "$unit"
		after=$(systemctl show -P ExecStart "$unit" | sed -n 's/.*argv\[\]=\([^;]*\) ;.*/\1/p')
		check "recipe_remove_$unit" "ExecStart is '$after' after removal, was '$before'" test "$after" = "$before"
	done
}

# examples/systemd/thp-workload.service.in as README points to it, this
# build's paths filled in: as root thpctl stays the parent (the agent), the
# workload its child, and its memory (2 GiB for -s 1024) is huge.
phase_example() {
	local since state main pid i t
	if [ ! -r /opt/libthp-vmtest/thp-workload.service.in ]; then
		info "example: not built (-Dextras=false), not run"
		return
	fi
	since=$(t0)
	sed -e "s|@THPCTL@|$THPCTL|" -e "s|@WORKLOAD@|$WORKLOAD|" \
		/opt/libthp-vmtest/thp-workload.service.in >/etc/systemd/system/thp-workload.service
	systemctl daemon-reload
	state=$(start_unit thp-workload.service 60)
	main=$(systemctl show -P MainPID thp-workload.service)
	pid=$(pgrep -P "$main" | head -n1)
	info "example: $state, MainPID $main ($(cat /proc/$main/comm 2>/dev/null)), its child ${pid:-none} ($(cat /proc/$pid/comm 2>/dev/null))"
	check example_active "state $state" test "$state" = active
	check example_agent "MainPID $main is not thpctl with the workload as its child" \
		test "$(cat /proc/$main/comm 2>/dev/null)" = thpctl -a -n "$pid"
	[ -n "$pid" ] || pid=$main
	# The workload touches its memory first, then reads it at random.
	for ((i = 0; i < 120; i++)); do
		[ "$(awk '/^Anonymous:/ {print $2}' /proc/$pid/smaps_rollup 2>/dev/null || echo 0)" -ge 1000000 ] && break
		sleep 1
	done
	t=$(time_to_huge "$pid" 120)
	read -r pct anon huge align <<<"$(huge_share "$pid")"
	info "example: tlb_workload pid $pid, $t s after it touched its memory: Anonymous $anon kB AnonHugePages $huge kB alignable $align kB: ${pct}% huge"
	$THPCTL status -p "$pid" 2>&1 | grep -E '^(policy|coverage)' | sed 's/^/VMTEST INFO example: thpctl status: /'
	check example_huge "${pct}% huge after $t s (want >= 90% within 120 s)" test "$t" != timeout
	systemctl stop thp-workload.service
	state=$(systemctl show -P ActiveState thp-workload.service)
	check example_stop "after stop: $state" test "$state" = inactive -o "$state" = failed
	show_unit thp-workload.service example "$since" | grep -v ' status: '
}

# A Go service (tests/thpctl/go_workload: static, the Go runtime's own
# allocator, which no preload reaches) started by a unit of ours under
# thpctl run --policy huge as root: the agent collapses its heap.  It reads
# stdin until "quit", so its stdin is a FIFO this script holds open.
phase_go() {
	local since state main pid i t
	if [ ! -x "$GO_WORKLOAD" ]; then
		info "go: no Go workload in this build (golang-go), not run"
		return
	fi
	since=$(t0)
	rm -f /run/thp-go.fifo && mkfifo /run/thp-go.fifo
	exec 4<>/run/thp-go.fifo
	printf '[Unit]\nDescription=Go service under thpctl (libthp systemd guest)\n[Service]\nStandardInput=file:/run/thp-go.fifo\nExecStart=%s run --policy huge -- %s -m 256\n' \
		"$THPCTL" "$GO_WORKLOAD" >/etc/systemd/system/thp-go.service
	systemctl daemon-reload
	state=$(start_unit thp-go.service 60)
	main=$(systemctl show -P MainPID thp-go.service)
	for ((i = 0; i < 120; i++)); do
		journalctl -q --no-pager -o cat -u thp-go.service --since "@$since" | grep -q '^ready' && break
		sleep 1
	done
	pid=$(pgrep -P "$main" | head -n1)
	info "go: $state, MainPID $main ($(cat /proc/$main/comm 2>/dev/null)), its child ${pid:-none} ($(cat /proc/$pid/comm 2>/dev/null)); $(journalctl -q --no-pager -o cat -u thp-go.service --since "@$since" | grep -m1 '^ready')"
	check go_agent "MainPID $main is not thpctl with the Go program as its child" \
		test "$state" = active -a "$(cat /proc/$main/comm 2>/dev/null)" = thpctl -a -n "$pid"
	[ -n "$pid" ] || pid=$main
	t=$(time_to_huge "$pid" 120)
	read -r pct anon huge align <<<"$(huge_share "$pid")"
	info "go: go_workload pid $pid $t s after ready: Anonymous $anon kB AnonHugePages $huge kB alignable $align kB: ${pct}% huge"
	check go_huge "${pct}% huge after $t s (want >= 90% within 120 s)" test "$t" != timeout
	echo quit >&4
	exec 4>&-
	for ((i = 0; i < 30; i++)); do
		[ "$(systemctl show -P ActiveState thp-go.service)" = active ] || break
		sleep 1
	done
	state=$(systemctl show -P ActiveState thp-go.service)
	check go_quit "after quit: $state (Result $(systemctl show -P Result thp-go.service))" test "$state" = inactive
	show_unit thp-go.service go "$since" | grep -v ' status: '
}

# thpd.service (tests/systemd/thpd_test.sh): phase_thpd, phase_thpd_seccomp.
. /opt/libthp-vmtest/thpd_test.sh
# The soak (tests/systemd/soak_test.sh): phase_soak, only when PHASES names it.
. /opt/libthp-vmtest/soak_test.sh
# The containers (tests/systemd/containers_test.sh): phase_containers, only
# when PHASES names it (the systemd-containers test, its own image).
. /opt/libthp-vmtest/containers_test.sh

RELOAD_PLAIN=
for phase in ${PHASES:-plain prefix_only exec agent memcached recipe example go thpd thpd_seccomp}; do
	info "phase $phase"
	redis-cli FLUSHALL >/dev/null 2>&1
	phase_$phase
done
echo "VMTEST DONE"
