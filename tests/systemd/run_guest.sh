#!/bin/bash
# Boot the systemd guest (build_image.sh's Debian 12 image, its own kernel)
# under QEMU (TCG) with this build's thpctl and preload, and run
# guest_test.sh in it.
# usage: run_guest.sh BUILD_DIR LABEL THPCTL PRELOAD THPCTL_DEST PRELOAD_DEST [PHASES [SRC=DEST...]]
# THPCTL and PRELOAD go into the guest at THPCTL_DEST and PRELOAD_DEST
# (where meson installs them: thpctl finds its installed preload there),
# each further SRC at DEST, with the libraries of this build it links
# (libthp.so) in /usr/local/lib.
# The image is never written: QEMU's -snapshot keeps the changes in a
# temporary file.  VMTEST lines: stdout and BUILD_DIR/systemd-logs/LABEL.txt.
# Exit: 0 all checks passed, 1 failure, 77 no image (1 under CI=true).
set -u
build_dir=$1 label=$2 thpctl=$3 preload=$4 thpctl_dest=$5 preload_dest=$6 phases=${7:-}
here=$(cd "$(dirname "$0")" && pwd)

skip() {
	echo "$*" >&2
	if [ "${CI:-}" = true ]; then
		echo "CI=true: the systemd guest must run; this is a failure, not a skip." >&2
		exit 1
	fi
	exit 77
}
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not found (bash .ci/deps)"
t=$(date +%s)
# Its last line of output is the image directory.
# THP_SYSTEMD_VARIANT=containers: the image with the container engines
# (build_image.sh) for the containers phase (containers_test.sh).
image=$(THP_IMAGE_VARIANT=${THP_SYSTEMD_VARIANT:-} bash "$here/build_image.sh")
rc=$?
image=${image##*$'\n'}
if [ $rc = 77 ]; then
	skip "the systemd guest's image cannot be built here (see above; bash .ci/deps as root)"
elif [ $rc != 0 ] || [ ! -d "$image" ]; then
	echo "build_image.sh failed (exit $rc, answered \"$image\")" >&2
	exit 1
fi
echo "image: $image ($(($(date +%s) - t)) s to build or find)"

work=$(mktemp -d "${build_dir%/}/systemd-guest.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/payload/opt/libthp-vmtest"
cp "$here/guest_test.sh" "$here/thpd_test.sh" "$here/soak_test.sh" "$here/containers_test.sh" \
	"$work/payload/opt/libthp-vmtest/" || exit 1
# LIBTHP_DEBS (a directory of .ci/package's output; .ci/run sets it): the
# guest installs the project's packages with dpkg, as a user would, and
# runs thpctl and the preload from where they put them.  Otherwise this
# build's thpctl and preload go where meson installs them.
if [ -n "${LIBTHP_DEBS:-}" ]; then
	mkdir -p "$work/payload/opt/libthp-vmtest/debs"
	for pkg in libthp0 thpctl thpd; do
		deb=$(ls "$LIBTHP_DEBS"/${pkg}_*_amd64.deb 2>/dev/null | head -n1)
		[ -n "$deb" ] || { echo "LIBTHP_DEBS=$LIBTHP_DEBS has no ${pkg}_*_amd64.deb" >&2; exit 1; }
		cp "$deb" "$work/payload/opt/libthp-vmtest/debs/" || exit 1
	done
	# thpd depends on libinih1, which the image lacks (its recipe, whose
	# hash keys a cold build, stays as it is): the host's copy of Debian's.
	deb=$(ls /var/cache/apt/archives/libinih1_*_amd64.deb 2>/dev/null | head -n1)
	if [ -z "$deb" ]; then
		(cd "$work" && apt-get download libinih1 >/dev/null 2>&1)
		deb=$(ls "$work"/libinih1_*_amd64.deb 2>/dev/null | head -n1)
	fi
	[ -n "$deb" ] || { echo "no libinih1 .deb for thpd (apt-get download libinih1 failed)" >&2; exit 1; }
	cp "$deb" "$work/payload/opt/libthp-vmtest/debs/" || exit 1
	thpd_dest=/usr/sbin/thpd
	thpctl_dest=/usr/bin/thpctl
	preload_dest=/usr/lib/x86_64-linux-gnu/libthp/libthp-preload.so
	echo "packages: $(cd "$work/payload/opt/libthp-vmtest/debs" && echo *.deb)"
else
	mkdir -p "$work/payload$(dirname "$thpctl_dest")" "$work/payload$(dirname "$preload_dest")"
	cp "$thpctl" "$work/payload$thpctl_dest" && cp "$preload" "$work/payload$preload_dest" || exit 1
fi
for extra in "${@:8}"; do
	src=${extra%%=*} dest=${extra#*=}
	# thpd from the build tree: not when the packages bring their own.
	case $dest in
	*/sbin/thpd | */systemd/system/thpd.service | /etc/thpd.conf)
		[ -n "${LIBTHP_DEBS:-}" ] && continue
		[ "${dest##*/}" = thpd ] && thpd_dest=$dest ;;
	# The OCI hook and its hooks.d file (containers_test.sh installs it);
	# with LIBTHP_DEBS the thpd package's, where it puts them.
	*/oci-hook/*.json)
		[ -n "${LIBTHP_DEBS:-}" ] && continue
		oci_hook_json_dest=$dest ;;
	*/oci-hook/*)
		[ -n "${LIBTHP_DEBS:-}" ] && continue
		oci_hook_dest=$dest ;;
	esac
	mkdir -p "$work/payload$(dirname "$dest")" && cp "$src" "$work/payload$dest" || exit 1
	# libinih, which thpd links and the image lacks: the host's.
	for dep in $(ldd "$src" 2>/dev/null | awk '/libinih/ {print $3}'); do
		mkdir -p "$work/payload/usr/local/lib" && cp -L "$dep" "$work/payload/usr/local/lib/" || exit 1
	done
	for dep in $(ldd "$src" 2>/dev/null | grep -o "${build_dir%%/tests/*}[^ ]*"); do
		mkdir -p "$work/payload/usr/local/lib" && cp -L "$dep" "$work/payload/usr/local/lib/" || exit 1
	done
done
cat >"$work/payload/opt/libthp-vmtest/conf" <<-CONF
THPCTL=$thpctl_dest
PRELOAD_DIR=$(dirname "$preload_dest")
PHASES="${phases:-${THP_SYSTEMD_PHASES:-}}"
AGENT_TIMEOUT=${THP_SYSTEMD_AGENT_TIMEOUT:-90}
FILL_MIB=${THP_SYSTEMD_FILL_MIB:-500}
AGENT_ARGS="${THP_SYSTEMD_AGENT_ARGS:-}"
WORKLOAD=/usr/local/libexec/libthp-vmtest/tlb_workload
GO_WORKLOAD=/usr/local/libexec/libthp-vmtest/go_workload
THPD=${thpd_dest:-}
THPD_HUGE_SECONDS=${THP_SYSTEMD_THPD_HUGE_SECONDS:-120}
THPD_FILL_MIB=${THP_SYSTEMD_THPD_FILL_MIB:-500}
SOAK_SECONDS=${THP_SYSTEMD_SOAK_SECONDS:-1800}
SOAK_WORKLOAD=/usr/local/libexec/libthp-vmtest/soak_workload
SECCOMP_TARGET=/usr/local/libexec/libthp-vmtest/seccomp_target
CT_FILL_MIB=${THP_SYSTEMD_CT_FILL_MIB:-256}
CT_HUGE_SECONDS=${THP_SYSTEMD_CT_HUGE_SECONDS:-120}
CT_SHORT_LIVED=${THP_SYSTEMD_CT_SHORT_LIVED:-100}
CT_PARALLEL=${THP_SYSTEMD_CT_PARALLEL:-4}
CT_RUN_SECONDS=${THP_SYSTEMD_CT_RUN_SECONDS:-180}
CT_STEPS="${THP_SYSTEMD_CT_STEPS:-crun runc leaks docker}"
CT_CACHE_METRIC=${THP_SYSTEMD_CT_CACHE_METRIC:-thpd_container_cache_entries}
OCI_HOOK=${oci_hook_dest:-}
OCI_HOOK_JSON=${oci_hook_json_dest:-}
CONF
# A tar on a raw disk: the guest reads it from /dev/vdb (vmtest.service).
tar -C "$work/payload" -cf "$work/payload.tar" --owner=0 --group=0 . || exit 1

# Boot time under TCG is mostly units started and modules probed: no
# getty (the console is the test's), no devices beyond the two disks
# (-nodefaults), no kvm module probing the emulated CPU.
# no_timer_check: under TCG on a loaded host the kernel's IO-APIC timer
# check can miss its ticks and panic ("IO-APIC + timer doesn't work!").
boot_args="no_timer_check systemd.mask=getty.target systemd.mask=getty-static.service modprobe.blacklist=kvm,kvm_amd,kvm_intel"
for unit in systemd-update-utmp systemd-update-utmp-runlevel systemd-user-sessions \
	modprobe@dm_mod modprobe@fuse modprobe@loop modprobe@configfs; do
	boot_args+=" systemd.mask=$unit.service"
done
# The containers image: podman's API service and its units that start
# containers at boot, which the test does not use (the podman command
# runs without them).
if [ "${THP_SYSTEMD_VARIANT:-}" = containers ]; then
	for unit in podman.service podman.socket podman-restart.service podman-auto-update.timer; do
		boot_args+=" systemd.mask=$unit"
	done
fi
# A bound on the whole guest, not a latency: under TCG on a loaded 2-core
# machine the default phases outlasted 900 s (doc/testing.md).  The soak
# phase runs for SOAK_SECONDS on top of the boot and its setup.
qemu_timeout=1800
case " ${phases:-${THP_SYSTEMD_PHASES:-}} " in
*" soak "*) qemu_timeout=$((1800 + ${THP_SYSTEMD_SOAK_SECONDS:-1800})) ;;
esac
start=$(date +%s)
timeout "${THP_SYSTEMD_TIMEOUT:-$qemu_timeout}" qemu-system-x86_64 -accel tcg -nographic -m 4G -smp 2 \
	-kernel "$image/vmlinuz" -initrd "$image/initrd.img" \
	-append "root=/dev/vda rw console=ttyS0 quiet loglevel=3 panic=-1 systemd.show_status=0 $boot_args" \
	-drive "file=$image/rootfs.img,if=virtio,format=raw" \
	-drive "file=$work/payload.tar,if=virtio,format=raw,readonly=on" \
	-nodefaults -snapshot -no-reboot -monitor none -serial stdio -display none </dev/null >"$work/console.log" 2>&1
qrc=$?
end=$(date +%s)
tr -d '\r' <"$work/console.log" >"$work/console.txt"
mkdir -p "${build_dir%/}/systemd-logs"
cp "$work/console.txt" "${build_dir%/}/systemd-logs/$label.console.txt"
grep -a '^VMTEST' "$work/console.txt" | grep -av '^VMTEST METRIC ' | tee "${build_dir%/}/systemd-logs/$label.txt"
# thpd's metrics from the guest, checked here (the image has no promtool).
metrics_rc=0
if grep -aq '^VMTEST METRIC ' "$work/console.txt"; then
	sed -n 's/^VMTEST METRIC //p' "$work/console.txt" >"${build_dir%/}/systemd-logs/$label.thpd.prom"
	if command -v promtool >/dev/null; then
		if promtool check metrics <"${build_dir%/}/systemd-logs/$label.thpd.prom" >"$work/promtool.txt" 2>&1; then
			echo "VMTEST PASS thpd_promtool ($(grep -c '^thpd_' "${build_dir%/}/systemd-logs/$label.thpd.prom") samples)"
		else
			echo "VMTEST FAIL thpd_promtool: $(head -n 5 "$work/promtool.txt" | tr '\n' ' ')"
			metrics_rc=1
		fi
	else
		echo "VMTEST INFO thpd metrics not checked: no promtool on the host (prometheus)"
	fi
fi
echo "qemu exit $qrc after $((end - start)) s ($label)"
if ! grep -aq '^VMTEST DONE' "$work/console.txt"; then
	echo "no 'VMTEST DONE' from the guest; console:" >&2
	tail -n 60 "$work/console.txt" >&2
	exit 1
fi
grep -aq '^VMTEST FAIL' "$work/console.txt" && exit 1
[ "$metrics_rc" = 0 ] || exit 1
grep -aq '^VMTEST PASS' "$work/console.txt" || { echo "no check passed" >&2; exit 1; }
exit 0
