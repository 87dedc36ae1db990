# wrapper/: train-run, the GRES-aware launcher. Its pure logic (process table and exit policy,
# output line splitting, option parsing) is a convenience library the unit tests link too.
noinst_LTLIBRARIES += libwrapper.la
libwrapper_la_SOURCES = \
	wrapper/proctable.h wrapper/proctable.c \
	wrapper/output.h wrapper/output.c \
	wrapper/options.h wrapper/options.c \
	wrapper/bind.h wrapper/bind.c
WRAPPER_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/wrapper
libwrapper_la_CPPFLAGS = $(WRAPPER_CPPFLAGS)
