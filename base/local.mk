# SPDX-License-Identifier: MIT
# base/: the helpers every other folder uses — error records (tt_err), string buffers, atomic
# file writes, environment access, signal names, CPU list text, a free loopback port, the strict
# integer parser, monotonic milliseconds and write-all. Nothing beyond libc. A PIC convenience library.
noinst_LTLIBRARIES += libttbase.la
libttbase_la_SOURCES = \
	base/tt_err.h base/tt_err.c \
	base/tt_strbuf.h base/tt_strbuf.c \
	base/tt_file.h base/tt_file.c \
	base/tt_env.h base/tt_env.c base/tt_envnames.h \
	base/tt_signal.h base/tt_signal.c \
	base/tt_ckpt_exit.h base/tt_ckpt_exit.c \
	base/tt_cpuset.h base/tt_cpuset.c \
	base/tt_port.h base/tt_port.c \
	base/tt_parse.h base/tt_parse.c \
	base/tt_io.h base/tt_io.c
