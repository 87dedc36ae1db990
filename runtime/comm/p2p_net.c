/* SPDX-License-Identifier: MIT */
/* p2p_net.c — point-to-point messages over TCP between any two ranks of a world (the tcp and
 * hierarchical backends use it for peers on other nodes). Every rank listens from the start and
 * publishes its address and a nonce in the store (through node leaders its leader publishes them,
 * rt_world_node_publish); a pair connects on first use, the lower rank
 * dialling, both ends proving they hold the job key (rt_link.h), and keeps one connection that
 * carries both directions. A message is its header
 * then its bytes; the receiver checks the header before taking the bytes. */
#include "comm_backend.h"
#include "rt_link.h"
#include "rt_net.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct rt_p2p_net {
	int me, n, lfd;
	const rt_world *w; /* store, ns, key, timeout, names: outlive this object */
	struct rt_link_peer self; /* where this rank listens, and its nonce */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a connection arrived, or the accepting thread finished */
	int *fd;             /* per peer, -1 until connected */
	unsigned char *dialling;
	int accepting;       /* one thread accepts at a time, for every peer */
	int aborted;
};

rt_p2p_net *rt_p2p_net_create(const rt_world *w, tt_err *err)
{
	rt_p2p_net *p = calloc(1, sizeof(*p));
	char key[400], text[RT_LINK_TEXT_MAX];
	size_t len = 0;

	if (!p || !(p->fd = malloc(sizeof(int) * (size_t)w->size)) || !(p->dialling = calloc((size_t)w->size, 1))) {
		if (p)
			free(p->fd);
		free(p);
		tt_err_set(err, "out of memory");
		return NULL;
	}
	p->me = w->rank;
	p->n = w->size;
	p->w = w;
	p->lfd = -1;
	for (int i = 0; i < p->n; i++)
		p->fd[i] = -1;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	if (rt_world_key(w, key, sizeof(key), "p2p/%d", p->me) != 0) {
		tt_err_set(err, "the group's store keys are too long (groups nested too deeply)");
		goto fail;
	}
	/* Through node leaders a follower takes its leader's address (the node's: the one it would
	 * find itself) and hands its own to the leader to publish, so it needs no store connection. */
	if (!w->via_leaders || w->local_rank == 0) {
		if (rt_link_address(w, p->self.ip, sizeof(p->self.ip), err) != 0)
			goto fail;
		len = strlen(p->self.ip) + 1;
	}
	if (w->via_leaders && rt_world_node_share(w, p->self.ip, sizeof(p->self.ip), &len, err) != 0)
		goto fail;
	p->self.ip[sizeof(p->self.ip) - 1] = '\0';
	if (rt_net_listen(p->self.ip, 0, &p->lfd, &p->self.port, err) != 0 ||
	    (len = rt_link_text(&p->self, text, sizeof(text), err)) == 0 ||
	    rt_world_node_publish(w, key, text, len, err) != 0)
		goto fail;
	return p;
fail:
	tt_err_wrap(err, "point-to-point endpoint of rank %d", rt_world_name(w, w->rank));
	rt_p2p_net_destroy(p);
	return NULL;
}

void rt_p2p_net_destroy(rt_p2p_net *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->n; i++)
		if (p->fd[i] >= 0)
			close(p->fd[i]);
	if (p->lfd >= 0)
		close(p->lfd);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p->fd);
	free(p->dialling);
	free(p);
}

void rt_p2p_net_abort(rt_p2p_net *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->aborted = 1;
	/* shutdown, not close: other threads may be polling these descriptors; they wake with an error. */
	for (int i = 0; i < p->n; i++)
		if (p->fd[i] >= 0)
			shutdown(p->fd[i], SHUT_RDWR);
	if (p->lfd >= 0)
		shutdown(p->lfd, SHUT_RDWR);
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

/* The link of a connection from rank `from` (its published nonce) to `to`. */
static struct rt_link p2p_link(const rt_p2p_net *p, int from, const unsigned char *from_nonce, int to,
			       const unsigned char *to_nonce)
{
	return (struct rt_link){ .tag = "p2p", .n = p->n, .from = from, .to = to, .from_nonce = from_nonce,
				 .to_nonce = to_nonce };
}

/* Connects to peer's listener (its address from the store) and proves who this rank is; the
 * peer's answer proves it is the rank that published that address. */
static int dial(rt_p2p_net *p, int peer, int *fd, tt_err *err)
{
	struct rt_link_peer them;
	struct rt_link l;
	char key[400], who[96];

	rt_world_key(p->w, key, sizeof(key), "p2p/%d", peer);
	if (rt_link_lookup(p->w, key, rt_world_name(p->w, peer), &them, err) != 0)
		return -1;
	if (rt_net_connect(them.ip, them.port, p->w->timeout, fd, err) != 0)
		return -1;
	snprintf(who, sizeof(who), "rank %d at %s:%d", rt_world_name(p->w, peer), them.ip, them.port);
	l = p2p_link(p, p->me, p->self.nonce, peer, them.nonce);
	if (rt_link_offer(*fd, p->w->key, &l, p->w->timeout, err) != 0 ||
	    rt_link_check_answer(*fd, p->w->key, &l, who, p->w->timeout, err) != 0) {
		close(*fd);
		return -1;
	}
	return 0;
}

/* The nonce a lower rank published: only lower ranks dial this one. */
static int lower_rank_nonce(void *ctx, int from, unsigned char nonce[RT_NONCE_LEN])
{
	rt_p2p_net *p = ctx;
	struct rt_link_peer them;
	char key[400];
	tt_err ignored;

	if (from >= p->me)
		return -1;
	rt_world_key(p->w, key, sizeof(key), "p2p/%d", from);
	if (rt_link_lookup(p->w, key, rt_world_name(p->w, from), &them, &ignored) != 0)
		return -1;
	memcpy(nonce, them.nonce, RT_NONCE_LEN);
	return 0;
}

/* Accepts one connection from a lower rank that proves it holds this job's key, within
 * deadline; strays are closed and ignored. */
static int accept_one(rt_p2p_net *p, double deadline, int *from, int *fd, tt_err *err)
{
	while (rt_now() < deadline) {
		if (rt_net_accept(p->lfd, deadline - rt_now(), fd, err) != 0)
			return -1;
		if (rt_link_accept(*fd, p->w->key, "p2p", p->n, p->me, p->self.nonce, lower_rank_nonce, p,
				   p->w->timeout, from) == 0)
			return 0;
		close(*fd);
	}
	return tt_err_set(err, "no connection within %.0f s", p->w->timeout);
}

/* The connection with peer, made on first use: this rank dials higher ranks and accepts lower
 * ones (whoever comes first: connections from other peers are kept for their turn). */
static int conn(rt_p2p_net *p, int peer, int *fd_out, tt_err *err)
{
	double deadline = rt_now() + p->w->timeout;
	int rc = 0;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		int fd, from;

		if (p->aborted) {
			rc = tt_err_set(err, "the communicator failed earlier");
			break;
		}
		if (p->fd[peer] >= 0) {
			*fd_out = p->fd[peer];
			break;
		}
		if (peer > p->me && !p->dialling[peer]) {
			p->dialling[peer] = 1;
			pthread_mutex_unlock(&p->lock);
			rc = dial(p, peer, &fd, err);
			pthread_mutex_lock(&p->lock);
			p->dialling[peer] = 0;
			if (rc != 0)
				break;
			p->fd[peer] = fd;
			pthread_cond_broadcast(&p->cond);
			continue;
		}
		if (peer < p->me && !p->accepting) {
			p->accepting = 1;
			pthread_mutex_unlock(&p->lock);
			rc = accept_one(p, deadline, &from, &fd, err);
			pthread_mutex_lock(&p->lock);
			p->accepting = 0;
			pthread_cond_broadcast(&p->cond);
			if (rc != 0) {
				tt_err_wrap(err, "waiting for rank %d to connect", rt_world_name(p->w, peer));
				break;
			}
			if (p->fd[from] >= 0 || p->aborted)
				close(fd); /* a peer that dialled twice is not to be trusted with the first */
			else
				p->fd[from] = fd;
			continue;
		}
		if (rt_now() > deadline) {
			rc = tt_err_set(err, "rank %d did not connect within %.0f s (TRAINRT_TIMEOUT)", rt_world_name(p->w, peer),
					p->w->timeout);
			break;
		}
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&p->cond, &p->lock, &ts);
	}
	pthread_mutex_unlock(&p->lock);
	return rc;
}

/* After a failure of one message: the connection's stream is no longer aligned, and the peer
 * must learn at once, so every connection goes down. */
static int failed(rt_p2p_net *p, const char *what, int peer, const rt_p2p_hdr *h, tt_err *err)
{
	rt_p2p_net_abort(p);
	return tt_err_wrap(err, "%s rank %d, message #%llu (tag %d)", what, rt_world_name(p->w, peer),
			   (unsigned long long)h->seq, h->tag);
}

int rt_p2p_net_send(rt_p2p_net *p, int peer, const rt_p2p_hdr *h, const void *buf, tt_err *err)
{
	size_t bytes = h->count * trainrt_dtype_size((trainrt_dtype)h->dtype);
	int fd;

	if (conn(p, peer, &fd, err) != 0 || rt_net_send_all(fd, h, sizeof(*h), p->w->timeout, err) != 0 ||
	    rt_net_send_all(fd, buf, bytes, p->w->timeout, err) != 0)
		return failed(p, "sending to", peer, h, err);
	return 0;
}

int rt_p2p_net_recv(rt_p2p_net *p, int peer, const rt_p2p_hdr *h, void *buf, tt_err *err)
{
	size_t bytes = h->count * trainrt_dtype_size((trainrt_dtype)h->dtype);
	rt_p2p_hdr sent;
	int fd;

	if (conn(p, peer, &fd, err) != 0 || rt_net_recv_all(fd, &sent, sizeof(sent), p->w->timeout, err) != 0)
		return failed(p, "receiving from", peer, h, err);
	if (rt_p2p_hdr_check(h, &sent, rt_world_name(p->w, peer), err) != 0) {
		rt_p2p_net_abort(p);
		return -1;
	}
	if (rt_net_recv_all(fd, buf, bytes, p->w->timeout, err) != 0)
		return failed(p, "receiving from", peer, h, err);
	return 0;
}
