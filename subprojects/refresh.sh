#!/bin/sh
# refresh.sh - re-fetch the vendored tree-sitter runtime and grammars.
#
# Reads versions.txt (folder, npm package, version), fetches each package with
# `npm pack NAME@VERSION` (the registry npm is configured for), copies only the
# C sources and licences into subprojects/FOLDER/, keeps the hand-written
# FOLDER/meson.build, and writes the tarball's sha256 back into versions.txt.
# The build itself never touches the network: run this by hand, review the
# diff, commit.
#
# usage: subprojects/refresh.sh [FOLDER...]   (default: every line)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
list="$here/versions.txt"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

want() {
	[ $# -eq 0 ] && return 0
	for w in "$@"; do [ "$w" = "$folder" ] && return 0; done
	return 1
}

# copy_grammar SRC DST: parser.c (xz-compressed: the generated tables are
# most of the repository's bytes otherwise; each FOLDER/meson.build writes it
# out at build time), scanner.c and the generated headers.
copy_grammar() {
	mkdir -p "$2/src/tree_sitter"
	python3 -c 'import lzma, sys; lzma.open(sys.argv[2], "wb", preset=9 | lzma.PRESET_EXTREME).write(open(sys.argv[1], "rb").read())' \
		"$1/src/parser.c" "$2/src/parser.c.xz"
	[ -f "$1/src/scanner.c" ] && cp "$1/src/scanner.c" "$2/src/"
	cp "$1"/src/tree_sitter/*.h "$2/src/tree_sitter/"
}

out="$tmp/versions.txt"
grep '^#' "$list" > "$out"
grep -v '^#' "$list" | while read -r folder pkg version _sha; do
	[ -n "$folder" ] || continue
	if ! want "$@"; then
		printf '%-22s %-37s %-7s %s\n' "$folder" "$pkg" "$version" "$_sha" >> "$out"
		continue
	fi
	echo "refresh: $pkg@$version -> $folder" >&2
	work="$tmp/$folder"
	mkdir -p "$work"
	(cd "$work" && npm pack --silent "$pkg@$version" > name.txt)
	tgz="$work/$(tail -n 1 "$work/name.txt")"
	sha=$(sha256sum "$tgz" | cut -d' ' -f1)
	tar xzf "$tgz" -C "$work"
	p="$work/package"
	dst="$here/$folder"
	# Keep our meson.build; replace everything else.
	[ -f "$dst/meson.build" ] && cp "$dst/meson.build" "$work/meson.build.keep"
	rm -rf "$dst"
	mkdir -p "$dst"
	[ -f "$work/meson.build.keep" ] && cp "$work/meson.build.keep" "$dst/meson.build"
	for l in LICENSE LICENSE.md; do [ -f "$p/$l" ] && cp "$p/$l" "$dst/"; done
	case "$folder" in
	tree-sitter)
		mkdir -p "$dst/lib"
		cp -r "$p/vendor/tree-sitter/lib/src" "$p/vendor/tree-sitter/lib/include" "$dst/lib/"
		;;
	tree-sitter-typescript)
		mkdir -p "$dst/common"
		cp "$p"/common/*.h "$dst/common/"
		copy_grammar "$p/typescript" "$dst/typescript"
		copy_grammar "$p/tsx" "$dst/tsx"
		;;
	*)
		copy_grammar "$p" "$dst"
		;;
	esac
	printf '%-22s %-37s %-7s %s\n' "$folder" "$pkg" "$version" "$sha" >> "$out"
done
cp "$out" "$list"
echo "refresh: done; review with git diff --stat subprojects/" >&2
