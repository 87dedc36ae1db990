#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bounded_check.sh — make check's time limit (tests/bounded.sh): a test past its limit fails with
# one line naming it, and is stopped at the limit, not after it finishes; one inside its limit
# passes, and 77 (skip) and other statuses pass through.
# tt-test-limit: 60
set -euo pipefail
bounded="${TT_TEST_SRCDIR:-.}/tests/bounded.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
check() { # WHAT EXPECTED GOT
	if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAIL: $1: expected '$2', got '$3'"; fails=$((fails + 1)); fi
}
script() { # NAME LIMIT BODY: a test script with its own limit line
	printf '#!/bin/sh\n# tt-test-limit: %s\n%s\n' "$2" "$3" >"$work/$1"
	chmod +x "$work/$1"
}

script slow.sh 2 'sleep 30'
start=$SECONDS rc=0
out=$(sh "$bounded" "$work/slow.sh") || rc=$?
check "a test past its 2 s limit fails" 1 "$rc"
check "it is stopped at its limit (well before its 30 s)" yes "$([ $((SECONDS - start)) -lt 15 ] && echo yes || echo no)"
check "one line names it and its limit" 1 "$(grep -c "^FAIL: $work/slow.sh ran past its limit of 2 s" <<<"$out")"

script inside.sh 3 'sleep 1; exit 0'
rc=0; sh "$bounded" "$work/inside.sh" >/dev/null || rc=$?
check "a test inside its limit passes" 0 "$rc"
script skip.sh 5 'exit 77'
rc=0; sh "$bounded" "$work/skip.sh" >/dev/null || rc=$?
check "a skip stays a skip" 77 "$rc"
script hard.sh 5 'exit 99'
rc=0; sh "$bounded" "$work/hard.sh" >/dev/null || rc=$?
check "a hard error stays one" 99 "$rc"
# Without a line of its own, TT_TEST_LIMIT applies.
printf '#!/bin/sh\nsleep 30\n' >"$work/plain.sh"
chmod +x "$work/plain.sh"
rc=0; TT_TEST_LIMIT=1 sh "$bounded" "$work/plain.sh" >/dev/null || rc=$?
check "TT_TEST_LIMIT bounds a test without its own limit" 1 "$rc"
[ $fails -eq 0 ] || exit 1
echo "PASS: bounded.sh"
