# SPDX-License-Identifier: MIT
# layout/: who runs where — nodelists, GRES GPU lists, the rank env contract (layout.h), its
# rendezvous point (rendezvous.h) and the CPU binding rule. Pure logic over base/, shared by the
# plugin and train-run.
noinst_LTLIBRARIES += libttlayout.la
libttlayout_la_SOURCES = \
	layout/hostlist.h layout/hostlist.c \
	layout/gres.h layout/gres.c \
	layout/layout.h layout/layout.c \
	layout/rendezvous.h layout/rendezvous.c \
	layout/het_step.h layout/het_step.c \
	layout/cpu_bind.h layout/cpu_bind.c \
	layout/node_policy.h layout/node_policy.c
