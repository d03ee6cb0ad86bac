# The systemd guest's soak phase (sourced by guest_test.sh after
# thpd_test.sh, whose thpd_ask and steady_fds it uses; not in the default
# phase list: THP_SYSTEMD_PHASES=soak runs it, for SOAK_SECONDS from
# /opt/libthp-vmtest/conf, THP_SYSTEMD_SOAK_SECONDS on the host, default
# 1800; a soak that long needs `meson test -t 0`, meson's own timeout being
# shorter).  thpd.service runs throughout with rules on Debian's
# redis-server and memcached (filled at the start, checked at the end) and
# on units of ours running soak_workload (memory it verifies every second);
# a loop restarts services with pid_max lowered (PIDs are reused), starts
# and stops template instances whose cgroups go away while passes run,
# and restarts a huge-rule service that execs a setuid-root copy of the
# workload.  Processes under a never rule, under no rule and the setuid
# ones are sampled every round: none may hold a huge page.

SOAK_SUID=/usr/local/libexec/libthp-vmtest/soak_workload_suid
SOAK_KEYS=4096 # 8000-byte values: 32 MiB in redis and in memcached

# AnonHugePages (kB) of PID, 0 when it is gone.
soak_ahp() { # PID
	local a
	a=$(awk '/^AnonHugePages:/ {print $2}' "/proc/$1/smaps_rollup" 2>/dev/null)
	echo "${a:-0}"
}

soak_unit() { # NAME EXTRA_SERVICE_LINES EXECSTART
	printf '[Unit]\nDescription=libthp soak: %s\n[Service]\n%s\nExecStart=%s\n' "$1" "$2" "$3" \
		>"/etc/systemd/system/$1.service"
}

# Values that differ per key, so that the digest sees a page out of place.
soak_redis_fill() {
	redis-cli EVAL "for i=1,$SOAK_KEYS do redis.call('SET','k'..i,string.rep(string.format('%07d,',i),1000)) end return 1" 0 >/dev/null
}
soak_redis_digest() {
	redis-cli EVAL "local h='' for i=1,$SOAK_KEYS do h=redis.sha1hex(h..(redis.call('GET','k'..i) or 'missing')) end return h" 0
}

# memcached over its text protocol (perl: the image has no python3): fill
# SOAK_KEYS values, or count the keys whose value is not as filled.
soak_memcached() { # fill|verify
	perl -MIO::Socket::INET -e '
		my ($op, $n) = @ARGV;
		my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:11211") or die "connect: $!";
		if ($op eq "fill") {
			for my $i (1 .. $n) { print $s "set k$i 0 0 8000 noreply\r\n" . (sprintf("%07d,", $i) x 1000) . "\r\n"; }
			print $s "get k1\r\n";
			my $l = <$s>;
			exit($l =~ /^VALUE k1 / ? 0 : 1);
		}
		my $bad = 0;
		for my $i (1 .. $n) {
			print $s "get k$i\r\n";
			my $l = <$s>;
			if ($l !~ /^VALUE k$i 0 8000/) { $bad++; next; }
			my $d = "";
			read($s, $d, 8002);
			<$s>; # END
			$bad++ if $d ne (sprintf("%07d,", $i) x 1000) . "\r\n";
		}
		print "$bad\n";' "$1" "$SOAK_KEYS"
}

phase_soak() {
	local secs=${SOAK_SECONDS:-1800} since rpid mpid main nr0 pid_max0 i end now
	if [ -z "${THPD:-}" ] || [ ! -x "$THPD" ] || [ ! -x "${SOAK_WORKLOAD:-}" ]; then
		info "soak: [$(date +%T)] no thpd or soak_workload in this build, not run"
		return
	fi
	since=$(t0)
	thpd_service_up
	check soak_thpd_active "ActiveState $(systemctl show -P ActiveState thpd.service)" \
		test "$(systemctl show -P ActiveState thpd.service)" = active
	install -o root -g root -m 4755 "$SOAK_WORKLOAD" "$SOAK_SUID"

	# Fewer PIDs: the loop's restarts reuse them within minutes.
	pid_max0=$(cat /proc/sys/kernel/pid_max)
	echo 1024 >/proc/sys/kernel/pid_max

	mkdir -p /etc/thpd.d
	cat >/etc/thpd.d/50-soak.conf <<-'EOF'
	[daemon]
	interval_ms = 500

	[rule redis]
	cgroup = system.slice/redis-server.service
	policy = huge

	[rule memcached]
	cgroup = system.slice/memcached.service
	policy = huge

	[rule soak-huge]
	cgroup = system.slice/soak-huge.service
	policy = huge

	[rule soak-churn]
	cgroup = system.slice/soak-churn.service
	policy = huge

	[rule soak-transient]
	cgroup = system.slice/system-soaktr.slice/*
	policy = huge

	[rule soak-suid]
	cgroup = system.slice/soak-suid*.service
	policy = huge

	[rule soak-never]
	cgroup = system.slice/soak-never.service
	policy = never
	EOF
	systemctl reload thpd.service
	$THPD --check-config 2>&1 | grep -E '^[0-9]+\.' | sed 's/^/VMTEST LOG soak rules: /'

	soak_unit soak-huge '' "$SOAK_WORKLOAD 32 1 1"
	soak_unit soak-churn '' "$SOAK_WORKLOAD 16 2 1"
	soak_unit soak-never '' "$SOAK_WORKLOAD 16 3 1"
	soak_unit soak-unmatched '' "$SOAK_WORKLOAD 16 4 1"
	# A huge-rule service whose process becomes a setuid-root program by
	# exec (after thpd has seen it as a shell), and one started as one.
	soak_unit soak-suid 'User=nobody' "/bin/sh -c 'sleep 1; exec $SOAK_SUID 16 5 1'"
	soak_unit soak-suid-direct 'User=nobody' "$SOAK_SUID 16 6 1"
	printf '[Unit]\nDescription=libthp soak: transient %%i\n[Service]\nExecStart=%s 16 %%i 1\n' \
		"$SOAK_WORKLOAD" >/etc/systemd/system/soaktr@.service
	systemctl daemon-reload

	sed -i 's/^-m .*/-m 1024/' /etc/memcached.conf
	systemctl stop redis-server.service memcached.service
	rm -f /var/lib/redis/dump.rdb
	systemctl start redis-server.service memcached.service
	rpid=$(systemctl show -P MainPID redis-server.service)
	mpid=$(pgrep -x memcached | head -n1)
	soak_redis_fill
	soak_memcached fill || fail "soak_memcached_fill: memcached did not return k1"
	local keys0 digest0
	keys0=$(redis-cli DBSIZE)
	digest0=$(soak_redis_digest)
	info "soak: [$(date +%T)] redis-server pid $rpid: $keys0 keys, digest $digest0; memcached pid $mpid: $SOAK_KEYS keys"
	systemctl start soak-huge.service soak-never.service soak-unmatched.service soak-suid.service \
		soak-suid-direct.service
	# Warm-up: the long-lived targets collapsed, thpd at its steady state.
	local hpid
	hpid=$(systemctl show -P MainPID soak-huge.service)
	for ((i = 0; i < 120; i++)); do
		[ "$(soak_ahp "$hpid")" -ge $((30 * 1024)) ] && break
		sleep 1
	done
	local warm=$i
	sleep 5
	main=$(systemctl show -P MainPID thpd.service)
	nr0=$(systemctl show -P NRestarts thpd.service)
	local fds0 rss0
	fds0=$(steady_fds "$main")
	rss0=$(awk '/^VmRSS:/ {print $2}' /proc/$main/status)
	info "soak: [$(date +%T)] after warm-up ($warm s): soak-huge pid $hpid AnonHugePages $(soak_ahp "$hpid") kB; thpd pid $main: $fds0 fds, VmRSS $rss0 kB, NRestarts $nr0; soak for $secs s"

	# The loop.  Per round: soak-churn restarted (or stopped, one round in
	# three), a transient instance started and stopped 0-2 s later, the
	# setuid services restarted every 5th and 7th round, never/unmatched
	# every 10th; then everything that must not be huge sampled.
	local -A seen_pid max_ahp max_pid
	local iters=0 reused=0 wraps=0 removed=0 tr_started=0 tr_huge=0 mainchg=0 last_pid prev_pid=0
	local u pid a tr cg last_info w
	end=$(($(t0) + secs))
	last_info=$(t0)
	for u in never unmatched suid suid-direct huge churn transient; do max_ahp[$u]=0 max_pid[$u]=-; done
	note_pid() { # UNIT PID: a unit's new main PID; counts PIDs used before
		[ "${2:-0}" != 0 ] || return 0
		local key="$2:$(awk '{print $22}' /proc/$2/stat 2>/dev/null)"
		if [ -z "${seen_pid[$key]:-}" ]; then
			[ -n "${seen_pid[$2]:-}" ] && [ "${seen_pid[$2]}" != "$key" ] && reused=$((reused + 1))
			seen_pid[$key]=$1
			seen_pid[$2]=$key
		fi
	}
	sample() { # CLASS UNIT
		local p a
		p=$(systemctl show -P MainPID "$2.service")
		note_pid "$2" "$p"
		a=$(soak_ahp "$p")
		if [ "$a" -gt "${max_ahp[$1]}" ]; then
			max_ahp[$1]=$a
			max_pid[$1]=$p
		fi
	}
	while [ "$(t0)" -lt "$end" ]; do
		iters=$((iters + 1))
		if ((iters % 3 == 0)); then
			systemctl stop soak-churn.service
		else
			systemctl restart soak-churn.service
		fi
		tr=soaktr@$iters.service
		if timeout 30 systemctl start "$tr"; then
			tr_started=$((tr_started + 1))
			pid=$(systemctl show -P MainPID "$tr")
			note_pid "$tr" "$pid"
			sleep "$((RANDOM % 21 / 10)).$((RANDOM % 10))"
			a=$(soak_ahp "$pid")
			[ "$a" -gt 0 ] && tr_huge=$((tr_huge + 1))
			[ "$a" -gt "${max_ahp[transient]}" ] && max_ahp[transient]=$a max_pid[transient]=$pid
			cg=/sys/fs/cgroup/system.slice/system-soaktr.slice/$tr
			systemctl stop "$tr"
			for ((w = 0; w < 20; w++)); do
				[ -e "$cg" ] || { removed=$((removed + 1)); break; }
				sleep 0.1
			done
		fi
		((iters % 5 == 0)) && systemctl restart soak-suid.service
		((iters % 7 == 0)) && systemctl restart soak-suid-direct.service
		((iters % 10 == 0)) && systemctl restart soak-never.service soak-unmatched.service
		# The setuid program is exec'd a second after the start: sample
		# once before and once after, as thpd passes every 500 ms.
		sleep 1
		sample never soak-never
		sample unmatched soak-unmatched
		sample suid soak-suid
		sample suid-direct soak-suid-direct
		sample huge soak-huge
		sample churn soak-churn
		[ "$(systemctl show -P MainPID thpd.service)" != "$main" ] && mainchg=$((mainchg + 1))
		last_pid=$(cat /proc/sys/kernel/ns_last_pid)
		[ "$last_pid" -lt "$prev_pid" ] && wraps=$((wraps + 1))
		prev_pid=$last_pid
		if [ $(($(t0) - last_info)) -ge 60 ]; then
			last_info=$(t0)
			info "soak: [$(date +%T)] round $iters: pid wraps $wraps, reused $reused, cgroups removed $removed; thpd $(ls /proc/$main/fd 2>/dev/null | wc -l) fds, VmRSS $(awk '/^VmRSS:/ {print $2}' /proc/$main/status 2>/dev/null) kB"
		fi
	done

	# The end: the same units as at the warm-up's measurement.
	systemctl stop soak-churn.service
	systemctl start soak-suid.service soak-suid-direct.service soak-never.service soak-unmatched.service
	sleep 5
	local main2 nr fds1 rss1 grow
	main2=$(systemctl show -P MainPID thpd.service)
	nr=$(systemctl show -P NRestarts thpd.service)
	fds1=$(steady_fds "$main2")
	rss1=$(awk '/^VmRSS:/ {print $2}' /proc/$main2/status)
	grow=$((rss1 - rss0))
	info "soak: [$(date +%T)] $iters rounds in $secs s; PIDs: $wraps wraps of pid_max 1024, $reused unit main PIDs reused; transient units: $tr_started started, $tr_huge with huge pages when stopped, $removed cgroups removed"
	info "soak: thpd pid $main2 (was $main), NRestarts $nr (was $nr0); fds $fds1 (was $fds0); VmRSS $rss1 kB (was $rss0 kB, growth $grow kB, $((rss0 ? grow * 100 / rss0 : 0))%)"
	for u in never unmatched suid suid-direct huge churn transient; do
		info "soak: max AnonHugePages of $u: ${max_ahp[$u]} kB (pid ${max_pid[$u]})"
	done
	check soak_thpd_no_restart "MainPID $main2 (was $main, changed in $mainchg rounds), NRestarts $nr (was $nr0), $(systemctl show -P ActiveState thpd.service)" \
		test "$main2" = "$main" -a "$nr" = "$nr0" -a "$mainchg" = 0 -a "$(systemctl show -P ActiveState thpd.service)" = active
	check soak_thpd_fds "fds $fds1 at the end, $fds0 after the warm-up" test "$fds1" -le "$fds0"
	check soak_thpd_rss "VmRSS grew $grow kB from $rss0 kB (bound: 2048 kB or 25%)" \
		test "$grow" -le 2048 -o "$((grow * 4))" -le "$rss0"

	local mism rounds
	mism=$(journalctl -q --no-pager -o cat --since "@$since" | grep -c 'soak_workload: MISMATCH')
	rounds=$(journalctl -q --no-pager -o cat --since "@$since" | sed -n 's/^soak_workload: stopped: \([0-9]*\) rounds.*/\1/p' | awk '{s += $1} END {print s + 0}')
	journalctl -q --no-pager -o cat --since "@$since" | grep -m5 'soak_workload: MISMATCH' | sed 's/^/VMTEST LOG soak: /'
	info "soak: workloads: $rounds rounds verified by the stopped ones, $mism mismatches; failed units: $(systemctl list-units --failed --plain --no-legend 'soak*' | awk '{print $1}' | tr '\n' ' ')"
	check soak_workloads_intact "$mism MISMATCH lines in the journal" test "$mism" = 0
	check soak_units_not_failed "failed: $(systemctl list-units --failed --plain --no-legend 'soak*' | tr '\n' ' ')" \
		test -z "$(systemctl list-units --failed --plain --no-legend 'soak*')"
	local keys1 digest1 mbad
	keys1=$(redis-cli DBSIZE)
	digest1=$(soak_redis_digest)
	mbad=$(soak_memcached verify)
	check soak_redis_intact "redis pid $(systemctl show -P MainPID redis-server.service) (was $rpid): $keys1 keys (was $keys0), digest $digest1 (was $digest0)" \
		test "$keys1" = "$keys0" -a "$digest1" = "$digest0" -a "$(systemctl show -P MainPID redis-server.service)" = "$rpid"
	check soak_memcached_intact "memcached pid $(pgrep -x memcached | head -n1) (was $mpid): ${mbad:-?} of $SOAK_KEYS keys wrong or missing" \
		test "${mbad:-x}" = 0 -a "$(pgrep -x memcached | head -n1)" = "$mpid"

	for u in never unmatched suid suid-direct; do
		check "soak_${u}_no_huge" "max AnonHugePages ${max_ahp[$u]} kB (pid ${max_pid[$u]})" test "${max_ahp[$u]}" = 0
	done
	thpd_ask json >/tmp/thpd-soak.json
	local c
	for u in soak-suid soak-never; do
		c=$(grep -o "\"name\":\"$u\",[^}]*\"collapses\":[0-9]*" /tmp/thpd-soak.json | sed 's/.*"collapses"://')
		info "soak: rule $u: ${c:-?} collapses by thpd's count"
		check "soak_rule_${u}_no_collapse" "rule $u: ${c:-no figure} collapses" test "${c:-x}" = 0
	done
	local ra ma
	ra=$(soak_ahp "$rpid")
	ma=$(soak_ahp "$mpid")
	info "soak: AnonHugePages at the end: redis $ra kB, memcached $ma kB, soak-huge $(soak_ahp "$(systemctl show -P MainPID soak-huge.service)") kB"
	check soak_huge_rules_acted "max AnonHugePages: soak-huge ${max_ahp[huge]} kB, churn ${max_ahp[churn]} kB, transient ${max_ahp[transient]} kB; redis $ra kB, memcached $ma kB" \
		test "${max_ahp[huge]}" -gt 0 -a "${max_ahp[churn]}" -gt 0 -a "$ra" -gt 0 -a "$ma" -gt 0
	check soak_pids_reused "$reused unit main PIDs reused, $wraps wraps" test "$reused" -gt 0
	check soak_cgroups_removed "$removed of $tr_started transient cgroups removed" \
		test "$removed" -gt 0 -a "$removed" = "$tr_started"
	info "soak: thpd journal: $(journalctl -q --no-pager -o cat -u thpd.service --since "@$since" | grep -c 'setuid/setgid program, left alone') 'setuid, left alone' lines, $(journalctl -q --no-pager -o cat -u thpd.service --since "@$since" | grep -c 'collapse:') collapse failures logged"
	journalctl -q --no-pager -o short-monotonic -u thpd.service --since "@$since" | grep -v 'left alone' | tail -n 30 | sed 's/^/VMTEST LOG soak thpd journal: /'

	systemctl stop soak-huge.service soak-never.service soak-unmatched.service soak-suid.service \
		soak-suid-direct.service redis-server.service memcached.service
	echo "$pid_max0" >/proc/sys/kernel/pid_max
	rm -f /etc/thpd.d/50-soak.conf /etc/systemd/system/soak-*.service /etc/systemd/system/soaktr@.service "$SOAK_SUID"
	systemctl daemon-reload
	systemctl reload thpd.service
}
