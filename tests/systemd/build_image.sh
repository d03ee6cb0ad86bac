#!/bin/bash
# Build (once per recipe) the Debian 12 root filesystem the systemd guest boots.
# usage: build_image.sh [CACHE_DIR]   (default /var/cache/libthp)
# THP_IMAGE_VARIANT=containers adds the container engines of the
# systemd-containers test (containers_test.sh) in an image of its own.
# Prints the image directory: rootfs.img (raw ext4), vmlinuz, initrd.img,
# recipe.sha256.  The directory's name carries a hash of this file and of
# vmtest.service, so a changed recipe is a new image and an unchanged one is
# built once per machine.  Needs root, mmdebstrap and e2fsprogs (.ci/deps)
# and Debian's archive (deb.debian.org, as the host's apt uses it).
# Exit: 0 built or cached, 77 cannot be built here (not root, no mmdebstrap,
# no archive), 1 the build failed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${1:-${THP_IMAGE_CACHE:-/var/cache/libthp}}
# What goes into the image.  redis-tools (redis-cli) fills redis from the
# test script; procps gives pgrep/ps for it.
packages=systemd,systemd-sysv,udev,linux-image-cloud-amd64,redis-server,redis-tools,memcached,procps,libcap2-bin
variant=${THP_IMAGE_VARIANT:-}
size=2G
extra_hooks=()
case $variant in
'') ;;
containers)
	# Debian 12's podman (crun, runc; catatonit for the pause image
	# kube play builds locally), docker.io and containerd; dbus, which
	# their systemd cgroup driver (the default) needs.  Docker's
	# daemons start only in the phase that uses them, without a bridge or
	# iptables rules (the containers use the host's network): a faster
	# boot for the podman phases.
	packages+=,dbus,podman,crun,runc,catatonit,docker.io,containerd
	size=3G
	extra_hooks=(--customize-hook='chroot "$1" systemctl disable docker.service docker.socket containerd.service'
		--customize-hook='mkdir -p "$1/etc/docker" && printf "{\"bridge\": \"none\", \"iptables\": false, \"ip6tables\": false}\n" > "$1/etc/docker/daemon.json"')
	;;
*)
	echo "build_image.sh: unknown THP_IMAGE_VARIANT=$variant" >&2
	exit 1 ;;
esac
hash=$( (cat "$here/build_image.sh" "$here/vmtest.service"; echo "$variant") | sha256sum | cut -c1-16)
dir=$cache/systemd-guest-bookworm${variant:+-$variant}-$hash

if [[ -r $dir/rootfs.img && -r $dir/vmlinuz && -r $dir/initrd.img ]]; then
	echo "$dir"
	exit 0
fi
if ((EUID != 0)); then
	echo "build_image.sh: building the guest image needs root (mmdebstrap, mke2fs -d)" >&2
	exit 77
fi
for tool in mmdebstrap mke2fs; do
	if ! command -v $tool >/dev/null; then
		echo "build_image.sh: $tool not found (bash .ci/deps installs it)" >&2
		exit 77
	fi
done

mkdir -p "$cache"
# One build at a time per machine: meson may start two guests.
exec 9>"$cache/systemd-guest.lock"
flock 9
if [[ -r $dir/rootfs.img ]]; then
	echo "$dir"
	exit 0
fi
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
start=$(date +%s)

# The hooks run on the host with the new root as $1.
#  - initramfs: only what booting from a virtio disk needs (MODULES=list),
#    set before the kernel's postinst builds it: a smaller initrd unpacks
#    faster under TCG.
#  - units that a test guest does not need are masked (timers, getty,
#    fsck): boot time under TCG is mostly units started.
#  - redis and memcached are installed enabled; the test starts them itself,
#    after writing its drop-ins, so they do not start at boot.
if ! mmdebstrap --variant=minbase --include="$packages" \
	--setup-hook='mkdir -p "$1/etc/initramfs-tools/conf.d"' \
	--setup-hook='printf "MODULES=list\nCOMPRESS=gzip\n" > "$1/etc/initramfs-tools/conf.d/libthp"' \
	--setup-hook='mkdir -p "$1/etc/initramfs-tools" && printf "virtio_pci\nvirtio_blk\next4\n" > "$1/etc/initramfs-tools/modules"' \
	--customize-hook='echo thp-guest > "$1/etc/hostname"' \
	--customize-hook='printf "/dev/vda / ext4 rw,noatime 0 0\n" > "$1/etc/fstab"' \
	--customize-hook='chroot "$1" passwd -d root' \
	--customize-hook='chroot "$1" systemctl disable redis-server.service memcached.service' \
	--customize-hook='chroot "$1" systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service fstrim.timer getty@tty1.service serial-getty@ttyS0.service systemd-timesyncd.service systemd-pstore.service dpkg-db-backup.timer systemd-tmpfiles-clean.timer' \
	--customize-hook="copy-in '$here/vmtest.service' /etc/systemd/system" \
	--customize-hook='chroot "$1" systemctl enable vmtest.service' \
	"${extra_hooks[@]}" \
	--customize-hook='rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/*' \
	bookworm "$work/root" http://deb.debian.org/debian >"$work/mmdebstrap.log" 2>&1; then
	tail -30 "$work/mmdebstrap.log" >&2
	if grep -qE 'Could not resolve|Failed to fetch|Temporary failure|Network is unreachable' \
		"$work/mmdebstrap.log"; then
		echo "build_image.sh: Debian's archive is not reachable" >&2
		exit 77
	fi
	echo "build_image.sh: mmdebstrap failed" >&2
	exit 1
fi
mkdir -p "$work/out"
cp -L "$work/root/vmlinuz" "$work/out/vmlinuz"
cp -L "$work/root/initrd.img" "$work/out/initrd.img"
# Room for 500 MiB of redis data on tmpfs is not needed (it lives in RAM);
# the disk has what the packages take plus some slack for the journal.
# Even with -q, mke2fs says "Creating regular file" on stdout for a new
# image file, and stdout is this script's answer: the image directory.
mke2fs -q -t ext4 -L thp-guest -d "$work/root" "$work/out/rootfs.img" $size >&2
(cat "$here/build_image.sh" "$here/vmtest.service"; echo "$variant") | sha256sum | cut -d' ' -f1 >"$work/out/recipe.sha256"
cp "$work/mmdebstrap.log" "$work/out/"
rm -rf "$dir"
mv "$work/out" "$dir"
echo "build_image.sh: built $dir in $(($(date +%s) - start)) s" >&2
echo "$dir"
