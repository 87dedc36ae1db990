#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# slurm-headers.sh — the SPANK plugin's sources compile with -Wall -Wextra -Werror against the
# headers of every Slurm release in ../shared/vendor/slurm/headers (22.05 ... 26.05), not only the
# Debian 22.05 this build uses. One line per release; fails on any error or warning; skips (77)
# when ../shared is absent. Run by make check from the build directory (TT_TEST_SRCDIR = sources).
set -uo pipefail
srcdir=${TT_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
headers=${TT_SHARED:-$srcdir/../shared}/vendor/slurm/headers
if [ ! -d "$headers" ]; then
	echo "SKIP: no Slurm header sets at $headers (../shared is absent from this checkout)"
	exit 77
fi
# The plugin's compiler and flags as the Makefile has them; -I of each header set goes first, so it
# wins over the configured Slurm's and the system's.
compile=$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL ${MAKE:-make} -s print-plugin-compile) || {
	echo "FAIL: 'make print-plugin-compile' failed in $PWD (run from the configured build directory)"
	exit 1
}
cc=$(sed -n 1p <<<"$compile")
flags=$(sed -n 2p <<<"$compile")
sources=$(cd "$srcdir" && ls spank/*.c)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

failed=0 tested=0
for dir in "$headers"/slurm-*; do
	[ -f "$dir/slurm/spank.h" ] || continue
	tag=${dir##*/}
	version=$(sed -n 's/^#define SLURM_VERSION_NUMBER *//p' "$dir/slurm/slurm_version.h")
	release=$(printf '%d.%02d.%d' $((version >> 16)) $(((version >> 8) & 255)) $((version & 255)))
	# The build's config.h with configure's Slurm facts for these headers instead of its own
	# (found first: -I"$tmp" comes before the build's own include path).
	grep -v -e '^#define TT_SLURM_VERSION ' config.h >"$tmp/config.h"
	echo "#define TT_SLURM_VERSION $((version))" >>"$tmp/config.h"
	errors=0
	for src in $sources; do
		# shellcheck disable=SC2086  # $cc and $flags are word lists
		if ! $cc -I"$tmp" -I"$dir" $flags -Wall -Wextra -Werror -c "$srcdir/$src" \
			-o "$tmp/out.o" 2>"$tmp/err.txt"; then
			errors=$((errors + 1))
			sed "s|^|    $tag: |" "$tmp/err.txt" | head -n 20
		fi
	done
	tested=$((tested + 1))
	if [ $errors -eq 0 ]; then
		echo "PASS: Slurm $release ($tag): $(echo $sources | wc -w) plugin sources compile with -Werror"
	else
		echo "FAIL: Slurm $release ($tag): $errors of $(echo $sources | wc -w) plugin sources fail to compile"
		failed=$((failed + 1))
	fi
done
if [ $tested -eq 0 ]; then
	echo "FAIL: no header set (slurm-*/slurm/spank.h) under $headers"
	exit 1
fi
echo "Slurm header sets: $tested compiled, $failed failed"
[ $failed -eq 0 ]
