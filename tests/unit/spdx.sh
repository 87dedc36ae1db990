#!/bin/sh
# SPDX-License-Identifier: MIT
# spdx.sh — every source file of the tree carries the licence's SPDX line (LICENSE: MIT) within its
# first three lines: C, headers, CUDA, shell, Python, make and autoconf files, linker scripts,
# manual pages, templates, dictionaries and suppressions. Data (fixtures, corpora) is exempt, and
# so are build outputs (build*/: scripts/build-slurm.sh builds Slurm and the plugin there; a
# distdir traintopo-*/ left by make distcheck).
set -u
src=${TT_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$src" || exit 1
missing=$(find . \( -path ./tests/fixtures -o -path ./tests/fuzz/corpus -o -path ./tests/fuzz/regress \
	-o -path ./docs -o -name '.?*' -o -name 'fuzz-build' -o -name 'deb-build' -o -name 'rpm-build' -o -name 'sanitizer-build' -o -name 'gpu-bundle' \
	-o -name 'autom4te.cache' -o -name 'build-aux' -o -name 'm4' -o -name '_build' -o -name '*.dir' \
	-o -path './build*' -o -path './traintopo-*' \
	-o -path ./debian/tmp -o -path './debian/traintopo*' -o -path './debian/libtrainrt*' \) -prune -o -type f \
	\( -name '*.[ch]' -o -name '*.cu' -o -name '*.sh' -o -name '*.py' -o -name '*.mk' -o -name '*.map' \
	-o -name 'Makefile.am' -o -name 'configure.ac' -o -name '*.in' -o -name '*.[138]' -o -name '*.dict' \
	-o -name '*.supp' -o -name '*.sweep' \) -print |
	grep -v -e '/Makefile\.in$' -e '^\./config\.h\(\.in\)\{0,1\}$' | while read -r f; do
		head -n 3 "$f" | grep -q 'SPDX-License-Identifier: MIT' || echo "$f"
	done)
[ -z "$missing" ] || { echo "FAIL: no 'SPDX-License-Identifier: MIT' line near the top of:"; echo "$missing"; exit 1; }
grep -q '^MIT License' LICENSE || { echo "FAIL: LICENSE is not the MIT licence"; exit 1; }
echo "PASS: every source file names its licence"
