#!/bin/bash
# Turn the archive of libthp's objects into the installed libthp.a: one
# relocatable object (ld -r) in which every hidden symbol is local, so that
# the only global names are the exported thp_* ones.
# usage: localize_static.sh IN.a OUT.a OBJCOPY AR CC [CC_ARGS...]
set -eu
in=$(realpath "$1") out=$(realpath -m "$2") objcopy=$3 ar=$4
shift 4
tmp=$(mktemp -d "${TMPDIR:-/tmp}/libthp-localize.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
# The machine code of the objects only: the fat LTO objects' intermediate
# code would keep the internal names global for an -flto application link.
# (The linker reads meson's thin archive itself; ar x cannot.)
"$@" -r -nostdlib -fno-lto -fno-use-linker-plugin -o libthp.o \
	-Wl,--whole-archive "$in" -Wl,--no-whole-archive
# Section groups (COMDAT) go too: on i386 the PIC thunks
# (__x86.get_pc_thunk.bx, ...) are hidden symbols in COMDAT groups named
# after them.  Once the symbols are local, the application's link keeps its
# own copy of each group and discards ours, and libthp.o's calls are left
# pointing into a discarded section.  Without the group the thunks are
# plain local code of libthp.o (a few bytes each); x86_64 has no groups.
"$objcopy" --localize-hidden --remove-section=.group \
	--remove-section='.gnu.lto_*' --remove-section='.gnu.debuglto_*' libthp.o
rm -f "$out"
"$ar" rcs "$out" libthp.o
