#!/bin/sh
# SPDX-License-Identifier: MIT
# commands.sh — every command traintopo installs answers -h/--help and -V/--version with exit 0
# (usage on stdout, "NAME (traintopo) VERSION"), and a bad option with exit 2 and one message
# that starts with the command's short name, never with the path getopt would print.
# Run by `make check` from the build directory.
set -u
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
# TT_BIN_PROGRAMS: the commands this build has (make check sets it; configure may leave parts out).
for name in ${TT_BIN_PROGRAMS:-train-run train-topo train-mlp train-sweep trainrt-bench}; do
	bin=$(pwd)/$name
	[ -x "$bin" ] || { fail "$name: $bin not built"; continue; }
	for opt in -h --help; do
		"$bin" $opt >"$out" 2>"$err"
		rc=$?
		[ $rc -eq 0 ] || fail "$name $opt: exit $rc"
		grep -qi "usage: $name" "$out" || fail "$name $opt: no usage on stdout: $(head -c 200 "$out")"
	done
	for opt in -V --version; do
		"$bin" $opt >"$out" 2>"$err"
		rc=$?
		[ $rc -eq 0 ] || fail "$name $opt: exit $rc"
		grep -qx "$name (traintopo) [0-9][0-9.]*" "$out" || fail "$name $opt: printed '$(cat "$out")'"
	done
	"$bin" --no-such-option >"$out" 2>"$err"
	rc=$?
	[ $rc -eq 2 ] || fail "$name --no-such-option: exit $rc, expected 2"
	head -n 1 "$err" | grep -q "^$name: .*--no-such-option" ||
		fail "$name --no-such-option: message does not start with '$name:': $(head -n 1 "$err")"
	! grep -q "/$name\|\.libs" "$err" || fail "$name: a message names the program by its path: $(cat "$err")"
	echo "ok: $name: -h, --help, -V, --version, bad option"
done
[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
