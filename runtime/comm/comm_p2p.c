/* SPDX-License-Identifier: MIT */
/* comm_p2p.c — point-to-point messages of a trainrt_comm (trainrt_send, _recv, _isend, _irecv,
 * _sendrecv). Each message is numbered per peer and direction at issue. On host backends each
 * peer and direction has its own queue and thread, started on first use, so exchanges with
 * different peers and collectives never wait for each other; on in-order backends (nccl) the
 * messages join the collective queue. A blocking call whose queue is empty runs its message on
 * the caller's thread instead (two thread hand-offs cost far more than a small message over
 * shared memory); trainrt_sendrecv does so with both of its messages at once where the backend
 * can (sendrecv), and trainrt_isend does so when the backend takes the message at once
 * (try_send: it fits the free shared-memory slots). The backend moves the bytes and checks the
 * headers. */
#include "comm_priv.h"

#include <stdlib.h>
#include <string.h>

/* One peer and direction: runs its queue in order until the communicator stops. */
static void *chan_main(void *arg)
{
	rt_chan *ch = arg;
	trainrt_comm *c = ch->comm;

	pthread_mutex_lock(&c->lock);
	for (;;) {
		trainrt_req *r;
		int rc;

		while (ch->busy || (!ch->head && !c->stopping))
			pthread_cond_wait(&c->cond, &c->lock);
		if (!ch->head)
			break;
		r = ch->head;
		rc = rt_comm_run_locked(c, &r->op);
		ch->head = r->next;
		if (!ch->head)
			ch->tail = NULL;
		r->rc = rc;
		r->done = 1;
		pthread_cond_broadcast(&c->cond);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* Hands r (numbered) to its peer's queue, at its end (or its front: see try_here_locked),
 * starting the queue's thread on first use. Call with c->lock held; NULL (r freed) when the
 * thread cannot start. */
static trainrt_req *queue_locked(trainrt_comm *c, rt_chan *ch, trainrt_req *r, int front)
{
	if (!ch->started) {
		if (pthread_create(&ch->thread, NULL, chan_main, ch) != 0) {
			rt_comm_fail_locked(c, "cannot start a point-to-point thread");
			free(r);
			return NULL;
		}
		ch->started = 1;
	}
	if (front) {
		r->next = ch->head;
		ch->head = r;
		if (!ch->tail)
			ch->tail = r;
	} else {
		if (ch->tail)
			ch->tail->next = r;
		else
			ch->head = r;
		ch->tail = r;
	}
	pthread_cond_broadcast(&c->cond);
	return r;
}

/* Ends the caller's hold on ch. Only the queue's thread waits for that, and only when messages
 * were queued meanwhile: waking every waiter of c->cond (the progress thread among them) after
 * each message would cost more than the message. */
static void release_locked(trainrt_comm *c, rt_chan *ch)
{
	ch->busy = 0;
	if (ch->head)
		pthread_cond_broadcast(&c->cond);
}

/* A send whose queue is idle, on the caller's thread, when the backend can take it without
 * waiting for the receiver (try_send). 0 when the queue is not idle (nothing done: the caller
 * queues r); 1 when r was handled: done (sent, or failed and c with it), or queued at the front
 * when the backend could not take it, since messages other threads posted while the lock was
 * released are numbered after r and must not overtake it (*rp NULL if queueing failed). Call
 * with c->lock held (released while the backend copies; the queue is busy meanwhile). */
static int try_here_locked(trainrt_comm *c, rt_chan *ch, trainrt_req **rp)
{
	trainrt_req *r = *rp;
	tt_err err = { "" };
	int rc;

	if (!c->be->ops->try_send || ch->head || ch->busy)
		return 0;
	ch->busy = 1;
	pthread_mutex_unlock(&c->lock);
	rc = c->be->ops->try_send(c->be, r->op.peer[0], &r->op.msg[0], r->op.send, &err);
	pthread_mutex_lock(&c->lock);
	if (rc == 0)
		*rp = queue_locked(c, ch, r, 1);
	release_locked(c, ch);
	if (rc == 0)
		return 1;
	if (rc < 0)
		rt_comm_fail_locked(c, err.msg);
	else
		c->bytes_sent += rt_op_wire_bytes(&r->op, c->w.size, c->w.rank);
	r->rc = rc < 0 ? -1 : 0;
	r->done = 1;
	return 1;
}

static int chan_index(const trainrt_req *r)
{
	return 2 * r->op.peer[0] + (r->op.hdr.kind == RT_SEND);
}

/* Numbers r's message and hands it to its peer's queue (or the collective queue). */
static trainrt_req *post(trainrt_comm *c, trainrt_req *r)
{
	int i = chan_index(r);

	pthread_mutex_lock(&c->lock);
	if (c->failed) {
		pthread_mutex_unlock(&c->lock);
		free(r);
		return NULL;
	}
	r->op.msg[0].seq = ++c->p2p_seq[i];
	if (c->be->ops->p2p_in_order) {
		pthread_mutex_unlock(&c->lock);
		return rt_comm_enqueue(c, r, 0);
	}
	if (r->op.hdr.kind == RT_SEND && try_here_locked(c, &c->chans[i], &r)) {
		pthread_mutex_unlock(&c->lock);
		return r;
	}
	r = queue_locked(c, &c->chans[i], r, 0);
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* Runs op on the caller's thread while it holds the queues ch[0..n-1] (busy, so their threads
 * wait), then frees them. Call with c->lock held; returns with it released. */
static int run_here_locked(trainrt_comm *c, rt_chan **ch, int n, const rt_op *op)
{
	int rc;

	for (int k = 0; k < n; k++)
		ch[k]->busy = 1;
	rc = rt_comm_run_locked(c, op);
	for (int k = 0; k < n; k++)
		release_locked(c, ch[k]);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* A blocking send or receive: on the caller's thread when its queue is idle (the message is next
 * in order then), else queued behind the pending ones and waited for. */
static int blocking(trainrt_comm *c, trainrt_req *r)
{
	int i;
	rt_chan *ch;

	if (!r)
		return -1;
	if (c->be->ops->p2p_in_order)
		return trainrt_wait(c, post(c, r));
	i = chan_index(r);
	ch = &c->chans[i];
	pthread_mutex_lock(&c->lock);
	if (c->failed) {
		pthread_mutex_unlock(&c->lock);
		free(r);
		return -1;
	}
	r->op.msg[0].seq = ++c->p2p_seq[i];
	if (!ch->head && !ch->busy) {
		int rc = run_here_locked(c, &ch, 1, &r->op);

		free(r);
		return rc;
	}
	r = queue_locked(c, ch, r, 0);
	pthread_mutex_unlock(&c->lock);
	return trainrt_wait(c, r);
}

/* Checks one message's arguments and describes it; NULL (and c failed) on bad ones. */
static trainrt_req *message(trainrt_comm *c, rt_kind kind, const void *buf, size_t count, trainrt_dtype dtype,
			    int peer, int tag)
{
	trainrt_req *r;

	if (!c)
		return NULL;
	if (dtype != TRAINRT_FLOAT32 && dtype != TRAINRT_BF16) {
		rt_comm_error(c, "unknown dtype %d (use TRAINRT_FLOAT32 or TRAINRT_BF16)", (int)dtype);
		return NULL;
	}
	if (peer < 0 || peer >= c->w.size || peer == c->w.rank) {
		rt_comm_error(c, "%s peer %d is not another rank of this communicator of %d",
			      kind == RT_SEND ? "send" : "receive", peer, c->w.size);
		return NULL;
	}
	if (count > 0 && !buf) {
		rt_comm_error(c, "NULL buffer passed for %zu elements", count);
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		rt_comm_error(c, "out of memory queueing a message");
		return NULL;
	}
	r->op.hdr.kind = kind;
	r->op.hdr.dtype = dtype;
	r->op.hdr.count = count;
	r->op.peer[0] = peer;
	r->op.msg[0] = (rt_p2p_hdr){ .dtype = dtype, .tag = tag, .count = count };
	if (kind == RT_SEND)
		r->op.send = buf;
	else
		r->op.recv = (void *)buf;
	return r;
}

trainrt_req *trainrt_isend(trainrt_comm *c, const void *buf, size_t count, trainrt_dtype dtype, int peer, int tag)
{
	trainrt_req *r = message(c, RT_SEND, buf, count, dtype, peer, tag);

	return r ? post(c, r) : NULL;
}

trainrt_req *trainrt_irecv(trainrt_comm *c, void *buf, size_t count, trainrt_dtype dtype, int peer, int tag)
{
	trainrt_req *r = message(c, RT_RECV, buf, count, dtype, peer, tag);

	return r ? post(c, r) : NULL;
}

int trainrt_send(trainrt_comm *c, const void *buf, size_t count, trainrt_dtype dtype, int peer, int tag)
{
	return blocking(c, message(c, RT_SEND, buf, count, dtype, peer, tag));
}

int trainrt_recv(trainrt_comm *c, void *buf, size_t count, trainrt_dtype dtype, int peer, int tag)
{
	return blocking(c, message(c, RT_RECV, buf, count, dtype, peer, tag));
}

/* Makes s the exchange of s and r as one operation (numbered; frees r). Call with c->lock held. */
static void join_locked(trainrt_comm *c, trainrt_req *s, trainrt_req *r)
{
	s->op.msg[0].seq = ++c->p2p_seq[2 * s->op.peer[0] + 1];
	s->op.peer[1] = r->op.peer[0];
	s->op.msg[1] = r->op.msg[0];
	s->op.msg[1].seq = ++c->p2p_seq[2 * r->op.peer[0]];
	s->op.recv = r->op.recv;
	s->op.hdr.kind = RT_SENDRECV;
	free(r);
}

/* In-order backends run the exchange as one operation (NCCL: one group), since issuing the
 * send before the receive would leave both ranks waiting in their sends. */
static int sendrecv_in_order(trainrt_comm *c, trainrt_req *s, trainrt_req *r)
{
	pthread_mutex_lock(&c->lock);
	if (c->failed) {
		pthread_mutex_unlock(&c->lock);
		free(s);
		free(r);
		return -1;
	}
	join_locked(c, s, r);
	pthread_mutex_unlock(&c->lock);
	return trainrt_wait(c, rt_comm_enqueue(c, s, 0));
}

/* A host backend with a sendrecv runs the exchange on the caller's thread when both queues are
 * idle (1: done, *rc its result); 0 when they are not (nothing numbered, s and r untouched). */
static int sendrecv_here(trainrt_comm *c, trainrt_req *s, trainrt_req *r, int *rc)
{
	rt_chan *ch[2] = { &c->chans[chan_index(s)], &c->chans[chan_index(r)] };

	if (!c->be->ops->sendrecv)
		return 0;
	pthread_mutex_lock(&c->lock);
	if (c->failed) {
		pthread_mutex_unlock(&c->lock);
		free(s);
		free(r);
		*rc = -1;
		return 1;
	}
	if (ch[0]->head || ch[0]->busy || ch[1]->head || ch[1]->busy) {
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	join_locked(c, s, r);
	*rc = run_here_locked(c, ch, 2, &s->op);
	free(s);
	return 1;
}

int trainrt_sendrecv(trainrt_comm *c, const void *sendbuf, size_t sendcount, int dest, void *recvbuf,
		     size_t recvcount, int source, trainrt_dtype dtype, int tag)
{
	trainrt_req *s = message(c, RT_SEND, sendbuf, sendcount, dtype, dest, tag), *r;
	int rc;

	if (!s)
		return -1;
	r = message(c, RT_RECV, recvbuf, recvcount, dtype, source, tag);
	if (!r) {
		free(s);
		return -1;
	}
	if (c->be->ops->p2p_in_order)
		return sendrecv_in_order(c, s, r);
	if (sendrecv_here(c, s, r, &rc))
		return rc;
	s = post(c, s);
	r = post(c, r);
	rc = trainrt_wait(c, s);
	return trainrt_wait(c, r) || rc ? -1 : 0;
}
