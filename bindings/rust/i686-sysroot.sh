#!/usr/bin/env bash
# A Rust sysroot for i686-unknown-linux-gnu beside Debian's x86_64 one, for
# libthp-sys/tests/layout.rs: Debian's libstd-rust-dev:i386 of the
# installed rustc's version, fetched from Debian's archive with a private
# apt state (as .ci/cross-sysroot does: no dpkg --add-architecture) and
# unpacked into DIR; DIR/lib/rustlib/x86_64-unknown-linux-gnu links to the
# system's.  Prints DIR.
#
#   bindings/rust/i686-sysroot.sh DIR
set -euo pipefail

root=${1:?usage: i686-sysroot.sh DIR}
if [[ -r $root/done ]]; then
	echo "$root"
	exit 0
fi
mkdir -p "$(dirname "$root")"
exec 9>"$root.lock"
flock 9
if [[ -r $root/done ]]; then
	echo "$root"
	exit 0
fi
ver=$(dpkg-query -W -f '${Version}' libstd-rust-dev)
. /etc/os-release
suite=${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}
rm -rf "$root"
apt_dir=$root.apt
rm -rf "$apt_dir"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/sources" \
	"$apt_dir/debs" "$root/unpacked" "$root/lib/rustlib"
trap 'rm -rf "$apt_dir"' EXIT
cat >"$apt_dir/sources/$suite.sources" <<SOURCES
Types: deb
URIs: http://deb.debian.org/debian
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
opts=(
	-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt_dir/sources"
	-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
	-o "APT::Architecture=i386" -o "APT::Architectures::=i386"
	-o "Debug::NoLocking=1" -o "APT::Sandbox::User=root" -qq
)
echo "i686-sysroot.sh: fetching libstd-rust-dev:i386 $ver into $root" >&2
apt-get "${opts[@]}" update >&2
(cd "$apt_dir/debs" && apt-get "${opts[@]}" download "libstd-rust-dev:i386=$ver" >&2)
for deb in "$apt_dir"/debs/*.deb; do
	dpkg-deb -x "$deb" "$root/unpacked"
done
ln -s /usr/lib/rustlib/x86_64-unknown-linux-gnu "$root/lib/rustlib/"
ln -s "$root/unpacked/usr/lib/rustlib/i686-unknown-linux-gnu" "$root/lib/rustlib/"
touch "$root/done"
echo "$root"
