#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# build.sh — configures (once) and builds traintopo in the source tree with -Werror.
# Extra arguments go to configure on the first run (after --enable-werror, which they may undo
# with --disable-werror).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x configure ] || [ configure.ac -nt configure ]; then
	autoreconf -fi
fi
if [ ! -f Makefile ]; then
	./configure --enable-werror "$@"
fi
make -j"$(nproc)"
