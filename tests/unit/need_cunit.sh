#!/bin/sh
# SPDX-License-Identifier: MIT
# need_cunit.sh — make check in a build configured without CUnit: the unit tests are CUnit
# programs, so this one test fails and says what to install.
echo "FAIL: make check needs CUnit: install the Debian package 'libcunit1-dev', run configure again, then make check"
exit 1
