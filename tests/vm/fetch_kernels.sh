#!/bin/bash
# Fetch the Debian cloud kernels of tests/vm/kernels.lock from Debian's
# archive into a cache outside the source tree, so that a fresh clone runs
# the VM suite's distro guests without ../shared/kernels.  Private apt
# directories, Debian's archive keyring, no change to the system's apt
# sources, nothing installed; kernels.lock says what is pinned and what
# happens when the archive no longer serves a pin.
#
#   fetch_kernels.sh [IMAGE...]   (IMAGE: a name from kernels.lock; none: all)
#
# Prints one line per image on stdout: "IMAGE PATH PACKAGE VERSION pinned"
# or "... replacement" (a newer kernel in place of a dropped pin).  A cached
# image is used as it is: a second run does not touch the network.
# Cache: $THP_KERNEL_CACHE, else /var/cache/libthp/kernels for root, else
# ${XDG_CACHE_HOME:-~/.cache}/libthp/kernels.
# Exit: 0 every image available, 77 an image cannot be had (no network, no
# apt, the suites not served), 1 a hash mismatch or other error.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lockfile=${THP_KERNELS_LOCK:-$here/kernels.lock} # another pin file: for trying the policy
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

if [ -n "${THP_KERNEL_CACHE:-}" ]; then
	cache=$THP_KERNEL_CACHE
elif [ "$(id -u)" = 0 ]; then
	cache=/var/cache/libthp/kernels
else
	cache=${XDG_CACHE_HOME:-$HOME/.cache}/libthp/kernels
fi

say() { echo "fetch_kernels.sh: $*" >&2; }

sha() { sha256sum "$1" | cut -d' ' -f1; }

# The kernels.lock line of an image, as: suites package version deb_sha member vmlinuz_sha
pin_of() {
	awk -v img="$1" '!/^#/ && $1 == img { $1 = ""; print; found = 1 } END { exit !found }' "$lockfile"
}

# Serialise: meson may start several VM tests at once, and each asks for
# its kernel; the second waits and then finds it cached.
mkdir -p "$cache/distro/replaced" || exit 1
exec 9>"$cache/.lock"
flock 9

apt_dir='' apt_opts=()
cleanup() { [ -n "$apt_dir" ] && rm -rf "$apt_dir"; }
trap cleanup EXIT

# A private apt state for SUITES (comma-separated), with fresh signed lists.
# Returns 77 when the archive cannot be reached or apt is missing.
apt_setup() {
	local suite uri
	for tool in apt-get apt-cache dpkg-deb; do
		if ! command -v $tool >/dev/null; then
			say "$tool not found: fetching Debian's kernels needs apt and dpkg"
			return 77
		fi
	done
	if [ ! -r "$keyring" ]; then
		say "$keyring not found (apt install debian-archive-keyring)"
		return 77
	fi
	cleanup
	apt_dir=$(mktemp -d "$cache/apt.XXXXXX") || return 1
	mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/sources" "$apt_dir/debs"
	for suite in ${1//,/ }; do
		case $suite in
		*-security) uri=http://deb.debian.org/debian-security ;;
		*) uri=http://deb.debian.org/debian ;;
		esac
		cat >"$apt_dir/sources/$suite.sources" <<-SOURCES
		Types: deb
		URIs: $uri
		Suites: $suite
		Components: main
		Architectures: amd64
		Signed-By: $keyring
		SOURCES
	done
	apt_opts=(
		-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt_dir/sources"
		-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
		-o "Dir::State::status=/dev/null" -o "APT::Architecture=amd64"
		-o "Debug::NoLocking=1" -o "APT::Sandbox::User=$(id -un)"
		-o "Acquire::Retries=2"
	)
	if ! apt-get "${apt_opts[@]}" -q update >"$apt_dir/update.log" 2>&1 ||
	   grep -q '^[EW]: ' "$apt_dir/update.log"; then
		cat "$apt_dir/update.log" >&2
		say "Debian's archive (deb.debian.org, suites $1) could not be read: no network?"
		return 77
	fi
}

# The sha256 that the signed Packages index gives for PACKAGE=VERSION.
index_sha() {
	apt-cache "${apt_opts[@]}" show "$1=$2" 2>/dev/null | sed -n 's/^SHA256: //p' | head -n1
}

# Download PACKAGE=VERSION into the private apt dir; print the .deb's path.
# apt checks it against the signed index; so does this, once more.
download() {
	local pkg=$1 ver=$2 want deb
	want=$(index_sha "$pkg" "$ver")
	[ -n "$want" ] || { say "$pkg $ver is not in the index"; return 1; }
	(cd "$apt_dir/debs" && apt-get "${apt_opts[@]}" -q download "$pkg=$ver" >&2) || {
		say "apt-get download $pkg=$ver failed"
		return 77
	}
	deb=$(find "$apt_dir/debs" -name "${pkg}_*.deb" | head -n1)
	if [ -z "$deb" ] || [ "$(sha "$deb")" != "$want" ]; then
		say "$pkg $ver: the package's sha256 is not the signed index's $want"
		return 1
	fi
	echo "$deb"
}

members() { dpkg-deb --fsys-tarfile "$1" | tar -t | sed 's|^\./||'; }

# Extract MEMBER of DEB to OUT (atomically).
extract() {
	dpkg-deb --fsys-tarfile "$1" | tar -xO "./$2" >"$3.tmp" && mv "$3.tmp" "$3"
}

# The pinned package is served: fetch it, check both hashes, cache it.
fetch_pinned() {
	local image=$1 pkg=$3 ver=$4 deb_sha=$5 member=$6 vml_sha=$7 deb
	deb=$(download "$pkg" "$ver") || return
	if [ "$(sha "$deb")" != "$deb_sha" ]; then
		say "$pkg $ver: sha256 $(sha "$deb"), kernels.lock pins $deb_sha"
		return 1
	fi
	extract "$deb" "$member" "$cache/distro/$image.part" || return 1
	if [ "$(sha "$cache/distro/$image.part")" != "$vml_sha" ]; then
		say "$member of $pkg $ver: sha256 $(sha "$cache/distro/$image.part"), kernels.lock pins $vml_sha"
		rm -f "$cache/distro/$image.part"
		return 1
	fi
	mv "$cache/distro/$image.part" "$cache/distro/$image"
}

# The pin is gone: take the newest linux-image-cloud-amd64 the suites
# serve and follow its dependencies to the package with the vmlinuz
# (linux-image-ABI-cloud-amd64; in sid, its linux-binary-ABI-cloud-amd64).
fetch_replacement() {
	local image=$1 ver pkg deb member dep
	ver=$(apt-cache "${apt_opts[@]}" policy linux-image-cloud-amd64 2>/dev/null |
		sed -n 's/^ *Candidate: //p')
	if [ -z "$ver" ] || [ "$ver" = "(none)" ]; then
		say "the suites serve no linux-image-cloud-amd64"
		return 77
	fi
	pkg=linux-image-cloud-amd64
	for _ in 1 2 3; do
		deb=$(download "$pkg" "$ver") || return
		member=$(members "$deb" | grep -E '(^|/)vmlinuz(-[^/]*)?$' | head -n1)
		[ -n "$member" ] && break
		# The next link: the image or binary package, at its exact version.
		dep=$(dpkg-deb -f "$deb" Depends | tr ',' '\n' |
			sed -n 's/^ *\(linux-\(image\|binary\)-[^ ]*\) (= \([^)]*\)).*/\1 \3/p' | head -n1)
		[ -n "$dep" ] || break
		pkg=${dep% *} ver=${dep#* }
		rm -f "$deb"
	done
	if [ -z "$member" ]; then
		say "no vmlinuz found below linux-image-cloud-amd64"
		return 1
	fi
	extract "$deb" "$member" "$cache/distro/replaced/$image" || return 1
	echo "$pkg $ver $(sha "$deb") $(sha "$cache/distro/replaced/$image") $member" \
		>"$cache/distro/replaced/$image.txt"
}

# Print the cached image's line; fail when it is not cached (or damaged).
cached() {
	local image=$1 pkg=$3 ver=$4 vml_sha=$7 rp rver rsha
	if [ -r "$cache/distro/$image" ] && [ "$(sha "$cache/distro/$image")" = "$vml_sha" ]; then
		echo "$image $cache/distro/$image $pkg $ver pinned"
		return 0
	fi
	if [ -r "$cache/distro/replaced/$image.txt" ] && [ -r "$cache/distro/replaced/$image" ]; then
		read -r rp rver _ rsha _ <"$cache/distro/replaced/$image.txt"
		if [ "$(sha "$cache/distro/replaced/$image")" = "$rsha" ]; then
			echo "$image $cache/distro/replaced/$image $rp $rver replacement"
			return 0
		fi
	fi
	return 1
}

images=("$@")
if [ ${#images[@]} = 0 ]; then
	mapfile -t images < <(awk '!/^#/ && NF { print $1 }' "$lockfile")
fi
status=0
for image in "${images[@]}"; do
	if ! pin=$(pin_of "$image"); then
		say "$image is not in $lockfile"
		status=1
		continue
	fi
	# shellcheck disable=SC2086
	set -- "$image" $pin
	cached "$@" && continue
	say "$image: fetching $3 $4 from Debian ($2) into $cache"
	apt_setup "$2"
	rc=$?
	if [ $rc = 0 ]; then
		if [ -n "$(index_sha "$3" "$4")" ]; then
			fetch_pinned "$@"
		else
			say "$image: Debian ($2) no longer serves the pinned $3 $4;" \
				"taking the newest linux-image-cloud-amd64 there instead (kernels.lock says why)"
			fetch_replacement "$@"
		fi
		rc=$?
	fi
	if [ $rc = 0 ] && cached "$@"; then
		continue
	fi
	[ $rc = 0 ] && rc=1
	say "$image: not available"
	if [ $rc = 1 ] || [ $status = 0 ]; then
		status=$rc
	fi
done
exit $status
