#!/bin/sh
# SPDX-License-Identifier: MIT
# file_cycles.sh — no two source files of the project's libraries and programs depend on each other,
# directly or around a loop: file A depends on file B when A's object calls a function B's defines
# (nm on the built objects, so only real calls count, not includes; a component's one context
# struct, defined beside its entry points, is data and does not count). tsort finds the loops.
# Run by make check from the build tree after `make`; needs nm (binutils).
set -u
command -v nm >/dev/null 2>&1 || { echo "SKIP: nm not found (install binutils)"; exit 77; }
command -v tsort >/dev/null 2>&1 || { echo "SKIP: tsort not found (coreutils)"; exit 77; }

# The objects of this configuration's libraries and programs, as the Makefile names them (stale
# objects of targets a change removed stay out), tests and benchmarks left aside.
[ -f Makefile ] || { echo "SKIP: run from a configured build directory"; exit 77; }
objs=$(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' Makefile |
	grep -E '^am(_[A-Za-z0-9_]+_OBJECTS|__objects_[0-9]+) =' | tr ' \t' '\n\n' |
	grep -E '\.(lo|\$\(OBJEXT\))$' | grep -Ev '^(tests|bench)/' |
	sed -e 's/\.\$(OBJEXT)$/.o/' -e 's|^\(.*\)/\([^/]*\)\.lo$|\1/.libs/\2.o|' | sort -u)
missing=$(for o in $objs; do [ -f "$o" ] || echo "$o"; done)
[ -n "$objs" ] && [ -z "$missing" ] || { echo "SKIP: objects not built yet ($missing): run make first"; exit 77; }

# One line per object: "folder/source" (libtool's target prefix "libx_la-" and .libs/ dropped).
src_of() {
	f=$1
	d=$(dirname "$f" | sed 's|/\.libs$||')
	b=$(basename "$f" .o)
	echo "$d/${b##*-}"
}

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
for o in $objs; do
	s=$(src_of "$o")
	nm "$o" 2>/dev/null | awk -v s="$s" -v def="$tmp/def" -v use="$tmp/use" '
		$1 == "U" { print $2, s >> use; next }
		NF == 3 && $2 == "T" { print $3, s >> def }'
done
sort -u "$tmp/def" >"$tmp/def.s"
sort -u "$tmp/use" >"$tmp/use.s"
# symbol user  +  symbol definer  ->  "user definer" (a file's own symbols do not count).
join "$tmp/use.s" "$tmp/def.s" | awk '$2 != $3 { print $2, $3 }' | sort -u >"$tmp/edges"
edges=$(wc -l <"$tmp/edges")
if ! tsort "$tmp/edges" >/dev/null 2>"$tmp/loops"; then
	echo "FAIL: source files depend on each other in a loop (each line: a file of the loop):"
	grep -v "input contains a loop" "$tmp/loops" | sed 's/^tsort: /  /'
	echo "the edges (user defining-file):"
	cat "$tmp/edges"
	exit 1
fi
echo "PASS: $edges dependencies between $(awk '{print $1; print $2}' "$tmp/edges" | sort -u | wc -l) source files, no loop"
