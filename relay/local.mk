# SPDX-License-Identifier: MIT
# relay/: the checkpoint-signal relay, the one owner of that signal below slurmstepd — the relay
# the plugin forks above each task (relay.h), the process-tree rules it and train-run share
# (proctree.h: who handles the signal, whether the relay is above a launcher) and the two
# variables that tell a task about its relay. A convenience library the plugin, train-run and
# the unit tests link; libc only, as the plugin must be.
noinst_LTLIBRARIES += libttrelay.la
libttrelay_la_SOURCES = \
	relay/relay.h relay/relay.c \
	relay/proctree.h relay/proctree.c
