/* SPDX-License-Identifier: MIT */
/* die_on_listen.c — an LD_PRELOAD shim for tests/trainer/node_follower_gone.sh: the process exits
 * at once, with status 42 and no word, at its first listen(). A libtrainrt follower that meets
 * through its node leader listens first in the backend's set-up (its point-to-point endpoint,
 * p2p_net.c), after the rendezvous and the shared memory: so it dies during the set-up, as a
 * crashed or killed rank would. */
#include <sys/socket.h>
#include <unistd.h>

int listen(int fd, int backlog)
{
	(void)fd;
	(void)backlog;
	_exit(42);
}
