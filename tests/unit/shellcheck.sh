#!/bin/sh
# SPDX-License-Identifier: MIT
# The shell is code too (tests/unit/shellcheck.sh): every shell file of the tree (*.sh, and files
# whose first line runs sh, bash or dash or which name their shell in a `# shellcheck shell=`
# directive: scripts, tests, benchmarks, sbatch templates) passes `shellcheck -S warning` with no
# finding, and every `# shellcheck disable=` left in them gives its reason on the same line. In a
# git checkout the files are the tracked ones; from a tarball (make distcheck) every file of the
# source tree, less what configure and the build made there. Skipped (77) without shellcheck
# (Debian package shellcheck; scripts/install-deps.sh installs it).
set -u
src=${TT_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$src" || exit 1
command -v shellcheck >/dev/null 2>&1 || { echo "SKIP: no shellcheck (apt-get install shellcheck)"; exit 77; }
list=$(mktemp /tmp/tt-shellcheck-XXXXXX)
trap 'rm -f "$list"' EXIT

# Is FILE a shell file? By its name, its first line, or a shell directive in its first lines.
is_shell() {
	case $1 in *.sh) return 0 ;; esac
	head -n 1 "$1" 2>/dev/null | grep -Eq '^#![[:space:]]*[^[:space:]]*/(env[[:space:]]+)?(ba|da)?sh([[:space:]]|$)' && return 0
	head -n 5 "$1" 2>/dev/null | grep -q '^# shellcheck shell='
}

# A git checkout only when this very folder is its top: a distdir (traintopo-*/) made inside a
# checkout must not list the checkout's files (nor none at all).
top=$(git rev-parse --show-toplevel 2>/dev/null || true)
from="files of the source tree"
[ -n "$top" ] && [ "$(cd "$top" && pwd -P)" = "$(pwd -P)" ] && from="tracked files"
if [ "$from" = "tracked files" ]; then
	git ls-files -z | tr '\0' '\n'
else
	# The same build outputs as spdx.sh leaves out, and what autoreconf and configure write into the
	# source folder (configure, libtool, build-aux/: shell, but not ours).
	find . \( -name '.?*' -o -name 'autom4te.cache' -o -name 'build-aux' -o -name 'm4' -o -name '_build' \
		-o -name '*.dir' -o -name 'fuzz-build' -o -name 'deb-build' -o -name 'rpm-build' \
		-o -name 'sanitizer-build' -o -name 'gpu-bundle' -o -path './build*' -o -path './traintopo-*' \
		-o -path ./debian/tmp -o -path './debian/traintopo*' -o -path './debian/libtrainrt*' \) -prune \
		-o -type f ! -path ./configure ! -path ./libtool ! -path ./config.status -print | sed 's|^\./||'
fi | while IFS= read -r f; do
	[ -f "$f" ] && is_shell "$f" && printf '%s\n' "$f"
done | sort >"$list"
n=$(wc -l <"$list")
[ "$n" -gt 0 ] || { echo "FAIL: no shell file found among the $from of $src"; exit 1; }

# Bounded: the whole tree takes about 20 s on a loaded 2-core machine.
out=$(tr '\n' '\0' <"$list" | xargs -0 timeout 300 shellcheck -S warning -f gcc 2>&1)
rc=$?
if [ "$rc" -ne 0 ] || [ -n "$out" ]; then
	printf '%s\n' "$out"
	echo "FAIL: shellcheck -S warning (exit $rc): $(printf '%s\n' "$out" | grep -c ': \(warning\|error\): ') findings in $n shell files"
	exit 1
fi

# A disable without a reason hides a finding from the next reader: each says why on its line.
disables=$(tr '\n' '\0' <"$list" | xargs -0 grep -Hn '^[[:space:]]*# shellcheck disable=' || true)
bare=$(printf '%s\n' "$disables" | grep -Ev '# shellcheck disable=[A-Z0-9,]+[[:space:]]+#[[:space:]]*[^[:space:]]' | grep -v '^$' || true)
[ -z "$bare" ] || { echo "FAIL: a shellcheck disable without its reason ('# shellcheck disable=SCnnnn # why'):"; echo "$bare"; exit 1; }
nd=$(printf '%s\n' "$disables" | grep -c 'disable=')
echo "PASS: $n shell files ($from) clean at shellcheck -S warning; $nd disables, each with its reason"
