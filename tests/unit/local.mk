# tests/unit/: CUnit programs, one per module, all sharing cunit_main.c. `make check` runs them.
AM_TESTS_ENVIRONMENT = TT_TEST_SRCDIR='$(abs_top_srcdir)'; export TT_TEST_SRCDIR;
UNIT_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
UNIT_LDADD = libtopo.la $(CUNIT_LIBS)

check_PROGRAMS += tests/unit/test_err
tests_unit_test_err_SOURCES = tests/unit/test_err.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_err_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_err_LDADD = $(UNIT_LDADD)

# layout: nodelists, GRES GPU lists, the env contract, the plugin's config parser.
check_PROGRAMS += tests/unit/test_hostlist
tests_unit_test_hostlist_SOURCES = tests/unit/test_hostlist.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_hostlist_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_hostlist_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/test_gres
tests_unit_test_gres_SOURCES = tests/unit/test_gres.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_gres_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_gres_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/test_layout
tests_unit_test_layout_SOURCES = tests/unit/test_layout.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_layout_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_layout_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/test_plugin_config
tests_unit_test_plugin_config_SOURCES = tests/unit/test_plugin_config.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_plugin_config_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/spank
tests_unit_test_plugin_config_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_plugin_config_LDADD = spank/libplugin_config.la $(UNIT_LDADD)

TESTS += $(check_PROGRAMS)

# train-run's pure modules (wrapper/).
check_PROGRAMS += tests/unit/test_proctable tests/unit/test_output tests/unit/test_options tests/unit/test_bind
tests_unit_test_proctable_SOURCES = tests/unit/test_proctable.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_proctable_CPPFLAGS = $(WRAPPER_CPPFLAGS)
tests_unit_test_proctable_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_proctable_LDADD = libwrapper.la $(UNIT_LDADD)
tests_unit_test_output_SOURCES = tests/unit/test_output.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_output_CPPFLAGS = $(WRAPPER_CPPFLAGS)
tests_unit_test_output_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_output_LDADD = libwrapper.la $(UNIT_LDADD)
tests_unit_test_options_SOURCES = tests/unit/test_options.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_options_CPPFLAGS = $(WRAPPER_CPPFLAGS)
tests_unit_test_options_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_options_LDADD = libwrapper.la $(UNIT_LDADD)
tests_unit_test_bind_SOURCES = tests/unit/test_bind.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_bind_CPPFLAGS = $(WRAPPER_CPPFLAGS)
tests_unit_test_bind_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_bind_LDADD = libwrapper.la $(UNIT_LDADD)
