# The systemd-containers test's phase (sourced by guest_test.sh, whose
# check, info and huge_share it uses, and thpd_test.sh's thpd_ask,
# time_to_huge, wait_for, steady_fds and thpd_service_up): Debian 12's
# podman (with crun and with runc) and docker.io in the guest, images made
# here from the guest's own redis-server and memcached (no registry), the
# OCI hook in podman's hooks.d and thpd.service with identity rules.  Each
# figure comes from the containers' own /proc/PID/status and smaps_rollup,
# read here through their host PIDs.
# CT_FILL_MIB (MiB filled into each workload), CT_HUGE_SECONDS (the bound
# on "90% huge": a safety bound for a loaded CI machine; the time is
# logged), CT_SHORT_LIVED (the number of short-lived containers) and
# CT_PARALLEL (how many of them at a time), CT_RUN_SECONDS (the bound on
# each of them),
# OCI_HOOK and OCI_HOOK_JSON (the hook and its hooks.d file, when the host
# sent them) and CT_STEPS (the steps run, in order: crun runc leaks docker;
# leaks needs a pod of crun or runc) come from /opt/libthp-vmtest/conf.

ct_image=localhost/thp-ct:1
ct_yaml=/run/thp-ct

# A root filesystem of the guest's own binaries and the libraries ldd
# names for them, as a tar for podman import and docker import.
ct_rootfs_tar() { # OUT
	local root=/run/thp-ct-root f
	rm -rf $root && mkdir -p $root/tmp $root/etc $root/data
	chmod 1777 $root/tmp
	for f in /usr/bin/redis-server /usr/bin/memcached /bin/sh /bin/sleep /bin/true /bin/cat; do
		cp --parents -L "$f" $root/
		ldd "$f" | grep -o '/[^ ]*' | while read -r lib; do
			[ -e "$lib" ] && cp --parents -L "$lib" $root/
		done
	done
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' >$root/etc/passwd
	printf 'root:x:0:\nnogroup:x:65534:\n' >$root/etc/group
	tar -C $root -cf "$1" .
}

# The container processes of the container whose init is PID: every
# process of its cgroup (and of the cgroups below it).
ct_procs() { # PID
	local cg
	cg=$(sed -n 's/^0:://p' /proc/$1/cgroup 2>/dev/null)
	# Never the root cgroup's (a PID that is gone, or not in a container).
	[ -n "$cg" ] && [ "$cg" != / ] || return
	find "/sys/fs/cgroup$cg" -name cgroup.procs -exec cat {} + 2>/dev/null
}

# "THP_enabled AnonHugePages_kB" of each process of the container, one
# line each: "pid comm thp huge".
ct_sample() { # PID
	local p
	for p in $(ct_procs "$1"); do
		echo "$p $(cat /proc/$p/comm 2>/dev/null) $(awk '/^THP_enabled:/ {print $2}' /proc/$p/status 2>/dev/null) $(awk '/^AnonHugePages:/ {print $2}' /proc/$p/smaps_rollup 2>/dev/null)"
	done
}

# The host PID of a container's init, once it runs; 0 after 120 s.
ct_pid() { # ENGINE NAME
	local pid end=$(($(date +%s) + 120))
	while [ "$(date +%s)" -lt $end ]; do
		pid=$($1 inspect --format '{{.State.Pid}}' "$2" 2>/dev/null)
		[ "${pid:-0}" != 0 ] && { echo "$pid"; return; }
		sleep 0.2
	done
	echo 0
}

# The PID of the process named COMM among the container's processes.
ct_find() { # PID COMM
	local p
	for p in $(ct_procs "$1"); do
		[ "$(cat /proc/$p/comm 2>/dev/null)" = "$2" ] && { echo "$p"; return; }
	done
}

ct_redis_fill() { # PORT MiB
	redis-cli -p "$1" EVAL "for i=1,$(($2 * 1048576 / 8000)) do redis.call('SET','k'..i,string.rep('x',8000)) end return 1" 0 >/dev/null
}

ct_memcached_fill() { # PORT MiB
	perl -MIO::Socket::INET -e '
		my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$ARGV[0]") or die "connect: $!";
		my $v = "x" x 8000;
		for my $i (1 .. $ARGV[1] * 128) { print $s "set k$i 0 0 8000 noreply\r\n$v\r\n"; }
		print $s "get k1\r\n";
		my $l = <$s>;
		exit($l =~ /^VALUE k1/ ? 0 : 1);' "$1" "$2"
}

# Wait until a TCP port answers (the workload is up).
ct_port_up() { # PORT
	wait_for 60 perl -MIO::Socket::INET -e 'exit !IO::Socket::INET->new(PeerAddr => "127.0.0.1:$ARGV[0]")' "$1"
}

# A Kubernetes Pod of one container with the host's network; ANNOTATION
# (KEY: VALUE) or none.  Its init is sh, which starts the workload and a
# second process, so that "every process" is more than one.
ct_pod_yaml() { # NAME ANNOTATION COMMAND
	mkdir -p $ct_yaml
	{
		printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n' "$1"
		[ -n "$2" ] && printf '  annotations:\n    %s\n' "$2"
		printf 'spec:\n  hostNetwork: true\n  restartPolicy: Never\n  containers:\n'
		printf '  - name: work\n    image: %s\n    command: ["/bin/sh", "-c", "trap \\"kill 0; exit 0\\" TERM; %s & /bin/sleep 100000 & wait"]\n' \
			"$ct_image" "$3"
	} >"$ct_yaml/$1.yaml"
}

ct_redis_cmd() { # PORT
	echo "/usr/bin/redis-server --port $1 --bind 127.0.0.1 --save '' --appendonly no --protected-mode no --disable-thp no --dir /tmp"
}

# podman kube play of a pod, its container's init PID (0 on failure).
ct_play() { # RUNTIME NAME
	local out
	out=$(timeout 600 podman --runtime "$1" kube play "$ct_yaml/$2.yaml" 2>&1) ||
		echo "$out" | tail -n 5 | sed "s/^/VMTEST LOG $2 kube play: /" >&2
	ct_pid podman "$2-work"
}

ct_down() { # NAME
	podman pod rm -f -t 0 "$1" >/dev/null 2>&1
}

# memcached (host PID PID, listening on PORT) filled with CT_FILL_MIB:
# 90% of its 2 MiB-alignable memory huge within CT_HUGE_SECONDS (the
# time is logged: thpd's default budget, a benchmark figure).
ct_memcached_huge() { # CHECK WHAT PID PORT
	local t pct anon huge align
	t=$(date +%s%N)
	ct_memcached_fill "$4" "$CT_FILL_MIB" || fail "${1}_fill: memcached did not return k1"
	info "containers $2: memcached filled $CT_FILL_MIB MiB in $((($(date +%s%N) - t) / 1000000)) ms"
	t=$(time_to_huge "$3" "$CT_HUGE_SECONDS")
	read -r pct anon huge align <<<"$(huge_share "$3")"
	info "containers $2: memcached pid $3: >= 90% huge $t s after the fill; Anonymous $anon kB AnonHugePages $huge kB alignable $align kB (${pct}%); THP_enabled $(awk '/^THP_enabled:/ {print $2}' /proc/$3/status)"
	echo "VMTEST INFO containers: time to 90% huge ($2): $t s"
	check "$1" "memcached ($2): 90% huge after $t s (bound $CT_HUGE_SECONDS s)" \
		awk -v t="$t" -v b="$CT_HUGE_SECONDS" 'BEGIN { exit !(t != "timeout" && t + 0 <= b) }'
}

# The pods of one OCI runtime: redis annotated never (the hook) under
# THP mode always, where an unannotated redis gets huge pages of the
# kernel's own; memcached annotated huge (thpd) under madvise, where only
# thpd makes it huge.
ct_kube() { # RUNTIME
	local rt=$1 npid upid mpid rpid urpid mmpid s x bad first
	echo always >/sys/kernel/mm/transparent_hugepage/enabled
	ct_pod_yaml "ct-never-$rt" "libthp.io/thp-policy: never" "$(ct_redis_cmd 6390)"
	ct_pod_yaml "ct-plain-$rt" "" "$(ct_redis_cmd 6391)"
	npid=$(ct_play "$rt" "ct-never-$rt")
	# Sampled from the first moment the container's init runs.
	first=$(ct_sample "$npid")
	upid=$(ct_play "$rt" "ct-plain-$rt")
	info "containers $rt: pod ct-never-$rt init pid $npid ($(podman inspect --format '{{.OCIRuntime}}' "ct-never-$rt-work" 2>/dev/null)), ct-plain-$rt init pid $upid; first sample: $(echo $first | tr '\n' ' ')"
	check "ct_${rt}_pods_run" "init pids $npid and $upid" test "$npid" != 0 -a "$upid" != 0
	# What the hook said (syslog) and the hooks podman put in the bundle.
	journalctl -q --no-pager -o cat -t thp-oci-hook 2>&1 | tail -n 4 | sed "s/^/VMTEST LOG ct-never-$rt hook: /"
	info "containers $rt: hooks in ct-never-$rt-work's config.json: $(grep -o '"hooks":{[^]]*]' \
		"$(podman inspect --format '{{.StaticDir}}' "ct-never-$rt-work" 2>/dev/null)/config.json" 2>/dev/null | head -c 400)"
	[ "$npid" != 0 ] && [ "$upid" != 0 ] || { ct_down "ct-never-$rt"; ct_down "ct-plain-$rt"; return; }
	ct_port_up 6390
	ct_port_up 6391
	rpid=$(ct_find "$npid" redis-server)
	urpid=$(ct_find "$upid" redis-server)
	bad=
	# Every sample, while CT_FILL_MIB go in: THP_enabled 0 and
	# 0 kB AnonHugePages in each process of the container.
	ct_redis_fill 6390 "$CT_FILL_MIB" &
	local filler=$!
	while kill -0 $filler 2>/dev/null; do
		s=$(ct_sample "$npid")
		x=$(echo "$s" | awk '$3 != 0 || $4 != 0' | tr '\n' ' ')
		[ -n "$x" ] && bad+="$x; "
		sleep 0.5
	done
	ct_redis_fill 6391 "$CT_FILL_MIB"
	sleep 5
	s=$(ct_sample "$npid")
	for x in "$first" "$s"; do
		x=$(echo "$x" | awk '$3 != 0 || $4 != 0' | tr '\n' ' ')
		[ -n "$x" ] && bad+="$x; "
	done
	info "containers $rt: never pod after the fill: $(echo $s | tr '\n' ' '); redis-server pid ${rpid:-none}: $(grep -E '^(Anonymous|AnonHugePages):' /proc/${rpid:-0}/smaps_rollup 2>/dev/null | tr -s ' ' | tr '\n' ' ')"
	check "ct_${rt}_never_processes" "want more than one process with redis-server among them: $(echo $s | tr '\n' ' ')" \
		test "$(echo "$s" | grep -c .)" -ge 2 -a -n "$rpid"
	check "ct_${rt}_never_first_sample" "samples (pid comm THP_enabled AnonHugePages_kB) with THP_enabled 1 or huge pages: $bad" \
		test -z "$bad" -a -n "$first"
	# The unannotated pod: THP as the machine gives it (its redis has
	# huge pages under "always"), no policy, not listed by thpd.
	s=$(ct_sample "$upid")
	thpd_ask json >/tmp/thpd.json
	info "containers $rt: plain pod: $(echo $s | tr '\n' ' ')"
	check "ct_${rt}_plain_untouched" "want THP_enabled 1 everywhere and huge pages in redis-server: $(echo $s | tr '\n' ' ')" \
		test -z "$(echo "$s" | awk '$3 != 1')" -a "$(echo "$s" | awk '$2 == "redis-server" {print $4}')" -gt 0
	check "ct_${rt}_plain_unlisted" "pids $(ct_procs "$upid" | tr '\n' ' ')in thpd's processes" \
		test -z "$(for p in $(ct_procs "$upid"); do grep -o "\"pid\":$p," /tmp/thpd.json; done)"
	ct_down "ct-never-$rt"
	ct_down "ct-plain-$rt"

	echo madvise >/sys/kernel/mm/transparent_hugepage/enabled
	# The huge pod of the step before holds the port (the host's network).
	[ -n "${CT_HUGE_POD:-}" ] && ct_down "$CT_HUGE_POD"
	ct_pod_yaml "ct-huge-$rt" "libthp.io/thp-policy: huge" "/usr/bin/memcached -u root -m 1024 -p 11312 -l 127.0.0.1"
	mpid=$(ct_play "$rt" "ct-huge-$rt")
	ct_port_up 11312
	mmpid=$(ct_find "$mpid" memcached)
	check "ct_${rt}_huge_runs" "memcached in pod ct-huge-$rt: init $mpid, memcached ${mmpid:-none}" test -n "$mmpid"
	[ -n "$mmpid" ] || { ct_down "ct-huge-$rt"; return; }
	ct_memcached_huge "ct_${rt}_huge" "$rt, pod annotated huge" "$mmpid" 11312
	thpd_ask json >/tmp/thpd.json
	check "ct_${rt}_huge_listed" "memcached pid $mmpid not in thpd's processes" grep -q "\"pid\":$mmpid," /tmp/thpd.json
	CT_HUGE_POD=ct-huge-$rt
}

# thpd's figures a leak would grow: fds (pidfds not counted), VmRSS and
# the containers it remembers.
ct_thpd_figures() { # -> "fds rss_kB cache"
	local main
	main=$(systemctl show -P MainPID thpd.service)
	thpd_ask metrics >/tmp/thpd.prom
	echo "$(steady_fds "$main") $(awk '/^VmRSS:/ {print $2}' /proc/$main/status) $(awk -v m="$CT_CACHE_METRIC" '$1 == m {print $NF}' /tmp/thpd.prom)"
}

# Container restart, pod delete and recreate, CT_SHORT_LIVED short-lived
# containers: afterwards thpd holds no more fds, memory or cache entries
# than before (RSS: 1 MiB of slack for malloc's arenas).
ct_leaks() {
	local f0 f1 fds0 rss0 c0 fds1 rss1 c1 pid pid2 i t
	[ -n "${CT_HUGE_POD:-}" ] || { fail "ct_leaks: no huge pod from the podman phases"; return; }
	f0=$(ct_thpd_figures)
	read -r fds0 rss0 c0 <<<"$f0"
	info "containers leaks: [$(date +%T)] thpd before: fds $fds0 VmRSS $rss0 kB $CT_CACHE_METRIC ${c0:-absent}"
	pid=$(ct_pid podman "$CT_HUGE_POD-work")
	podman restart -t 0 "$CT_HUGE_POD-work" >/dev/null 2>&1
	pid2=$(ct_pid podman "$CT_HUGE_POD-work")
	check ct_restart "container $CT_HUGE_POD-work: init $pid, after podman restart $pid2" \
		test "$pid2" != 0 -a "$pid2" != "$pid"
	ct_down "$CT_HUGE_POD"
	podman --runtime crun kube play "$ct_yaml/$CT_HUGE_POD.yaml" >/dev/null 2>&1
	pid=$(ct_pid podman "$CT_HUGE_POD-work")
	check ct_recreate "pod $CT_HUGE_POD deleted and played again: init $pid" test "$pid" != 0
	ct_down "$CT_HUGE_POD"
	t=$(date +%s)
	# Short-lived containers, CT_PARALLEL at a time (a new one as soon as
	# one ends), each annotated (the hook runs) and alive for a second
	# (thpd sees it); each must end well, within a bound for a loaded
	# machine (one that does not is shown with the engine's processes as
	# they were then).
	local running=0 ok=0 ended=0 d=/run/thp-ct-short
	rm -rf $d && mkdir -p $d
	for ((i = 0; i < CT_SHORT_LIVED; i++)); do
		(
			timeout -k 10 "$CT_RUN_SECONDS" podman run --rm --network host \
				--annotation libthp.io/thp-policy=never "$ct_image" /bin/sleep 1 >$d/$i.log 2>&1
			rc=$?
			[ $rc = 124 ] && ps -eo pid,ppid,stat,etimes,wchan:24,args |
				grep -E 'podman|conmon|crun|runc|thp-oci|catatonit|sleep' >>$d/$i.log
			echo $rc >$d/$i.rc
		) &
		if ((++running >= CT_PARALLEL)); then
			wait -n
			running=$((running - 1))
			((++ended % 20 == 0)) && info "containers leaks: [$(date +%T)] $ended short-lived containers ended"
		fi
	done
	wait
	ok=$(grep -lx 0 $d/*.rc 2>/dev/null | wc -l)
	for i in $(grep -Lx 0 $d/*.rc 2>/dev/null | head -n 3); do
		i=${i%.rc}
		info "containers leaks: ${i##*/}: status $(cat $i.rc): $(tail -n 12 $i.log | tr '\n' '|')"
	done
	info "containers leaks: [$(date +%T)] $CT_SHORT_LIVED short-lived containers, $CT_PARALLEL at a time, in $(($(date +%s) - t)) s"
	check ct_short_lived "$ok of $CT_SHORT_LIVED podman run --rm ended with status 0 within $CT_RUN_SECONDS s" test "$ok" = "$CT_SHORT_LIVED"
	# thpd forgets a container with its cgroup, at its next passes.
	wait_for 30 eval 'f1=$(ct_thpd_figures); read -r fds1 rss1 c1 <<<"$f1"; [ -n "$c1" ] && [ "$c1" -le "${c0:-0}" ] && [ "$fds1" -le "$fds0" ]'
	read -r fds1 rss1 c1 <<<"$f1"
	info "containers leaks: [$(date +%T)] thpd after: fds $fds1 VmRSS $rss1 kB $CT_CACHE_METRIC ${c1:-absent}"
	check ct_leak_fds "thpd fds $fds0 before, $fds1 after" test "$fds1" -le "$fds0"
	check ct_leak_rss "thpd VmRSS $rss0 kB before, $rss1 kB after (slack 1024 kB)" test "$rss1" -le $((rss0 + 1024))
	check ct_leak_cache "$CT_CACHE_METRIC ${c0:-absent} before, ${c1:-absent} after" \
		test -n "$c0" -a -n "$c1" -a "${c1:-1}" -le "${c0:-0}"
}

ct_docker() {
	local pid out
	systemctl start containerd.service docker.service
	check ct_docker_up "docker.service $(systemctl show -P ActiveState docker.service)" \
		test "$(systemctl show -P ActiveState docker.service)" = active
	docker import /run/thp-ct.tar thp-ct:1 >/dev/null || { fail "ct_docker_import: docker import failed"; return; }
	# The guest's kernel has AppArmor on but the image no apparmor_parser,
	# without which docker 20.10 refuses to start a container under its
	# default profile (podman runs it unconfined by itself).
	out=$(timeout 300 docker run -d --name ct-docker --network host --security-opt apparmor=unconfined \
		--label libthp.io/workload=cache thp-ct:1 \
		/usr/bin/memcached -u root -m 1024 -p 11313 -l 127.0.0.1 2>&1) ||
		{
			echo "$out" | tail -n 5 | sed 's/^/VMTEST LOG ct-docker run: /'
			journalctl -q --no-pager -o cat -u docker.service -u containerd.service | tail -n 20 |
				sed 's/^/VMTEST LOG ct-docker journal: /'
		}
	pid=$(ct_pid docker ct-docker)
	ct_port_up 11313
	check ct_docker_runs "docker container ct-docker: pid $pid ($(cat /proc/$pid/comm 2>/dev/null))" \
		test "$pid" != 0 -a "$(cat /proc/$pid/comm 2>/dev/null)" = memcached
	[ "$pid" != 0 ] || return
	ct_memcached_huge ct_docker_label_huge "docker, matched by label" "$pid" 11313
	docker rm -f ct-docker >/dev/null 2>&1
}

phase_containers() {
	local t step
	if [ -z "${THPD:-}" ] || [ ! -x "$THPD" ]; then
		fail "containers: no thpd in this build"
		return
	fi
	info "containers: $(podman --version), crun $(crun --version | head -n1), $(runc --version | head -n1), $(docker --version 2>/dev/null)"
	# The OCI hook in the hooks.d that podman 4.3 reads by default (its
	# containers.conf: /usr/share/containers/oci/hooks.d only, not /etc's),
	# where meson installs it, at the path the hook has here.
	if [ -n "${OCI_HOOK_JSON:-}" ] && [ -r "$OCI_HOOK_JSON" ]; then
		mkdir -p /usr/share/containers/oci/hooks.d
		sed "s|\"path\" *: *\"[^\"]*\"|\"path\": \"$OCI_HOOK\"|" "$OCI_HOOK_JSON" \
			>/usr/share/containers/oci/hooks.d/"${OCI_HOOK_JSON##*/}"
	fi
	# The file's key is a regular expression: libthp\.io/thp-policy.
	info "containers: hooks.d: $(grep -lF 'thp-policy' /etc/containers/oci/hooks.d/*.json /usr/share/containers/oci/hooks.d/*.json 2>/dev/null | tr '\n' ' ')"
	check ct_hook_installed "no hooks.d file names libthp.io/thp-policy" \
		eval "grep -qsF 'thp-policy' /etc/containers/oci/hooks.d/*.json /usr/share/containers/oci/hooks.d/*.json"
	t=$(date +%s)
	ct_rootfs_tar /run/thp-ct.tar
	podman import /run/thp-ct.tar "$ct_image" >/dev/null
	check ct_image "podman import of the guest's own binaries: $(podman images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | tr '\n' ' ')" \
		eval "podman image exists $ct_image"
	info "containers: [$(date +%T)] image made and imported in $(($(date +%s) - t)) s"

	thpd_service_up
	mkdir -p /etc/thpd.d
	cat >/etc/thpd.d/50-containers.conf <<-'EOF'
	# thpd's default budget: the times to 90% huge logged are the
	# benchmark figures of doc/performance.md.
	# A pod's own annotation decides (huge here; never is the hook's).
	[rule pods]
	annotation = libthp.io/thp-policy=*
	policy_from_annotation = yes

	[rule docker-cache]
	label = libthp.io/workload=cache
	policy = huge
	EOF
	systemctl reload thpd.service
	sleep 2
	$THPD --check-config 2>&1 | sed 's/^/VMTEST LOG containers thpd check-config: /'
	check ct_thpd_rules "thpd's rules: $(thpd_ask rules | tr '\n' ' ')" \
		eval "thpd_ask rules | grep -q docker-cache"

	for step in ${CT_STEPS:-crun runc leaks docker}; do
		t=$(date +%s)
		case $step in
		crun | runc) ct_kube "$step" ;;
		leaks) ct_leaks ;;
		docker) ct_docker ;;
		*) fail "containers: unknown step $step" ;;
		esac
		info "containers: [$(date +%T)] step $step in $(($(date +%s) - t)) s"
	done
	journalctl -q --no-pager -o short-monotonic -u thpd.service | tail -n 30 | sed 's/^/VMTEST LOG containers thpd journal: /'
	rm -f /etc/thpd.d/50-containers.conf
	systemctl reload thpd.service
}
