#!/bin/sh
# SPDX-License-Identifier: MIT
# run.sh — runs the libFuzzer harnesses of a tree configured with --enable-fuzzing (`make fuzz`
# calls it there): each target for SECONDS, starting from its committed corpus and regression
# inputs plus what earlier runs found (WORK/corpus/NAME), prints one line per target (executions,
# executions/s, coverage) and fails when any target crashed, leaked, hung or ran out of memory,
# leaving the input in CRASHES/NAME/ and the log in WORK/logs/NAME.log.
# usage: run.sh --seconds N --srcdir DIR --crashes DIR --work DIR NAME...
set -u
seconds=60 srcdir=. crashes=fuzz-crashes work=fuzz-work
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) seconds=$2; shift 2 ;;
	--srcdir) srcdir=$2; shift 2 ;;
	--crashes) crashes=$2; shift 2 ;;
	--work) work=$2; shift 2 ;;
	-*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || { echo "run.sh: no targets given" >&2; exit 2; }

# Leaks count as findings (libFuzzer checks them per input); UBSan reports come with a stack.
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ASAN_OPTIONS UBSAN_OPTIONS

findings() { find "$1" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | sort; }

status=0
mkdir -p "$work/logs"
for t in "$@"; do
	prog=tests/fuzz/fuzz_$t
	log=$work/logs/$t.log
	if [ ! -x "$prog" ]; then
		echo "fuzz $t: FAIL: $prog was not built" >&2
		status=1
		continue
	fi
	mkdir -p "$work/corpus/$t" "$crashes/$t"
	seeds=$srcdir/tests/fuzz/corpus/$t
	[ -d "$srcdir/tests/fuzz/regress/$t" ] && seeds="$seeds $srcdir/tests/fuzz/regress/$t"
	dict=
	[ -f "$srcdir/tests/fuzz/$t.dict" ] && dict=-dict=$srcdir/tests/fuzz/$t.dict
	old=$(findings "$crashes/$t")
	"$prog" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$crashes/$t/" $dict "$work/corpus/$t" $seeds >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
	# The last status line: "#N  NEW|REDUCE|pulse|DONE  cov: C ft: F corp: U/SIZE ... exec/s: R"
	last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
	[ -n "$execs" ] || execs=$(printf '%s\n' "$last" | sed -n 's/^#\([0-9]*\).*/\1/p')
	# (after a crash libFuzzer prints an average of 0)
	[ -n "$rate" ] && [ "$rate" != 0 ] || rate=$(printf '%s\n' "$last" | sed -n 's/.*exec\/s: \([0-9]*\).*/\1/p')
	cov=$(printf '%s\n' "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
	ft=$(printf '%s\n' "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
	corp=$(printf '%s\n' "$last" | sed -n 's/.*corp: \([0-9]*\)\/.*/\1/p')
	new=$(findings "$crashes/$t" | grep -vxF "$old" || true)
	[ -n "$old" ] || new=$(findings "$crashes/$t")
	line="fuzz $t: ${execs:-?} runs in ${seconds}s (${rate:-?}/s), coverage ${cov:-?} edges ${ft:-?} features, corpus ${corp:-?}"
	if [ $rc -eq 0 ] && [ -z "$new" ]; then
		echo "$line: ok"
		continue
	fi
	status=1
	echo "$line: FAIL (exit $rc)"
	grep -m1 -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|.*fuzz check failed|==[0-9]+== ERROR: libFuzzer)' "$log" | sed 's/^/    /'
	for f in $new; do
		echo "    input: $f"
		echo "    reproduce: $(pwd)/$prog $f   (log: $log)"
	done
	echo "    after fixing, commit the input as tests/fuzz/regress/$t/<what-it-broke> so make check replays it"
done
exit $status
