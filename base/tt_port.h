/* SPDX-License-Identifier: MIT */
/* tt_port.h — a free TCP port on 127.0.0.1 for a job that runs on this machine only (train-run
 * without a host list, trainrt-bench --local), chosen where no other process's connection can
 * take it before the job's rank 0 listens on it. */
#ifndef TT_PORT_H
#define TT_PORT_H

#include <stdint.h>

#include "tt_err.h"

/* A port no socket on 127.0.0.1 is bound to now (in any state), below the kernel's ephemeral
 * range (net.ipv4.ip_local_port_range), from 10000 up: the kernel gives ports of that range to
 * outgoing connections, and one can take a port chosen there (bind to port 0 and close, as
 * torchrun does) before rank 0 listens, which then fails with "Address already in use". Where
 * the range leaves no room below it, the kernel's choice. -1 with err when no socket works. */
int tt_free_loopback_port(uint16_t *port, tt_err *err);

#endif
