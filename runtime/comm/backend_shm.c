/* SPDX-License-Identifier: MIT */
/* backend_shm.c — collectives between the ranks of one node through one POSIX shared-memory
 * segment that the node's first rank creates (mode 0600, named with a label derived from the job
 * key so other users can neither guess nor pre-create it, unlinked as soon as every rank has
 * mapped it, so nothing leaks when a job dies).
 *
 * Layout: control block (barrier counter + futex word, abort flag, one slot per rank with its pid,
 * CPU mask and operation header, one channel head per ordered pair of ranks) | per rank two
 * staging halves | per rank an arena for trainrt_alloc | per ordered pair the channel's slots.
 * When every buffer of an operation lies in the arenas, ranks read and write each other's
 * buffers directly (no staging copies); otherwise data moves through the staging halves in
 * chunks, alternating halves so one barrier per phase suffices. Reductions are split: each rank
 * reduces its own slice for everyone, in parallel. Pages are placed by first touch of the owner,
 * so each rank's arena and staging sit on its own NUMA node when the launcher bound it.
 *
 * Point-to-point: the channel from rank a to rank b is a ring of SHM_CHAN_SLOTS slots; a sends by
 * filling slots (at most that many ahead of b), b receives by emptying them, each side counting
 * its slots in the channel head. A slot carries a message of up to SHM_INLINE_BYTES in its own
 * cache lines (one copy in, one out, no other line touched), or a chunk of SHM_CHAN_SLOT_BYTES in
 * the channel's data area, or, for a message longer than the whole ring whose buffer lies in the
 * sender's arena, only where it is: the receiver copies it from there once (single copy) and the
 * send ends when it has. Only the two ranks touch a channel, so exchanges between other pairs,
 * and collectives, run at the same time.
 *
 * Waiting (barriers and messages) spins, only when every rank has a CPU of its own and for a
 * budget that adapts (below), then sleeps on a futex word in 50 ms rounds that re-check the abort
 * flag, the peers' lives and TRAINRT_TIMEOUT: a rank that waits long gives its core to the one
 * that computes. A wait that slept but ended within SHM_SPIN_MAX_NS doubles the budget of its kind
 * (collective or message; a longer spin would have saved the sleep and wake-up), one that slept
 * longer halves it (sleeping was right), down to SHM_SPIN_MIN_NS. A sleeper raises a counter next to its word first, so the side that makes progress
 * issues FUTEX_WAKE only when someone sleeps (a syscall per message otherwise). Point-to-point
 * waits sleep on the waiting rank's own bell, rung by whichever peer moved one of its channels,
 * so a sendrecv waits for both of its messages at once.
 */
#include "comm_backend.h"
#include "rt_net.h"
#include "rt_reduce.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SHM_MAGIC 0x54524d53u
#define SHM_STAGE_BYTES ((size_t)4 << 20) /* per half */
/* Spin budgets of a wait before it sleeps. A futex sleep and wake-up costs some 30-50 us here
 * (under a hypervisor the woken vCPU must be scheduled too): spinning longer than a few of those
 * saves nothing, and a rank whose peer computes should give its core up soon. The budget starts
 * at SHM_SPIN_START_NS: some hundred small-message round trips between cores. */
#define SHM_SPIN_MIN_NS 2000u
#define SHM_SPIN_START_NS 20000u
#define SHM_SPIN_MAX_NS 100000u
/* A rank late at a barrier may be stuck on a wait of its own that began a little later (a leader
 * on the TCP ring when a link went down): waiting this much longer than TRAINRT_TIMEOUT lets it
 * publish its reason first, which is what every rank of the node then reports. */
#define SHM_REASON_GRACE_S 2.0
#define SHM_CHAN_SLOTS 4
#define SHM_CHAN_SLOT_BYTES ((size_t)256 << 10)
#define SHM_INLINE_BYTES 80 /* a slot is two cache lines: header and a small message */

struct shm_slot {
	_Atomic int32_t pid;
	cpu_set_t cpus;         /* where this rank may run: decides whether barriers spin */
	_Atomic uint64_t bar_arrived;
	/* The futex word this rank's point-to-point waits sleep on, and how many of its threads
	 * sleep there: a peer that moved one of its channels rings it (ring). */
	_Atomic uint32_t bell __attribute__((aligned(64)));
	_Atomic uint32_t bell_sleepers;
	/* by seq parity, so a fast rank never overwrites a header in use; on a line of its own, so
	 * writing it never takes the bell's line from a peer about to ring */
	rt_op_hdr hdr[2] __attribute__((aligned(64)));
	int64_t send_off[2];    /* arena offsets of this operation's buffers, -1 when outside */
	int64_t recv_off[2];
} __attribute__((aligned(128)));

enum slot_how {
	SLOT_INLINE = 1, /* the bytes are in the slot's data */
	SLOT_CHUNK,      /* in the slot's part of the channel's data area */
	SLOT_DIRECT,     /* the whole message, at arena offset `at` of the sender */
};

/* What the receiver needs to know about the bytes in one slot. */
struct chan_slot {
	rt_p2p_hdr hdr;    /* of the message they belong to */
	uint64_t off, len; /* which bytes of the message */
	uint64_t at;       /* SLOT_DIRECT: where the message lies in the sender's arena */
	uint32_t how;
	unsigned char data[SHM_INLINE_BYTES];
} __attribute__((aligned(64)));

struct shm_chan {
	_Atomic uint64_t posted __attribute__((aligned(64))); /* slots the sender has filled */
	_Atomic uint64_t taken __attribute__((aligned(64)));  /* slots the receiver has emptied */
	struct chan_slot slot[SHM_CHAN_SLOTS];
};

struct shm_ctl {
	uint32_t magic;
	int32_t nlocal;
	uint64_t arena_bytes;
	_Atomic uint64_t bar_count __attribute__((aligned(64)));
	_Atomic uint32_t bar_gen __attribute__((aligned(64)));
	_Atomic uint32_t bar_sleepers; /* ranks asleep on bar_gen: the last to arrive wakes them */
	_Atomic int32_t abort_flag __attribute__((aligned(64)));
	char abort_msg[768];
	struct shm_slot slots[];
};

struct blk {
	size_t off, len;
	int used;
};

typedef struct shm_be {
	rt_backend be;
	int me, n;
	int *names;         /* world rank of each local rank, for messages */
	int fd;             /* the segment, kept to reserve pages before they are touched */
	double timeout;
	struct shm_ctl *ctl;
	unsigned char *base;
	size_t map_len, ctl_len, arena_bytes;
	uint64_t nbar;      /* barriers passed by this rank */
	int may_spin;       /* every rank has a CPU of its own (else waits sleep at once) */
	_Atomic uint32_t spin_ns[2]; /* spin budget of collective (0) and message (1) waits */
	uint64_t stage_step; /* staging steps taken (picks the half) */
	struct blk *blks;   /* this rank's arena allocator */
	size_t nblks, cap_blks;
	size_t chan_ctl_off;    /* where the channel heads start in the control block */
	unsigned char *chan_reserved; /* per peer: this rank's outgoing slots are reserved */
} shm_be;

static unsigned char *stage(shm_be *s, int q, uint64_t step)
{
	return s->base + s->ctl_len + ((size_t)q * 2 + (step & 1)) * SHM_STAGE_BYTES;
}

static unsigned char *arena(shm_be *s, int q)
{
	return s->base + s->ctl_len + (size_t)s->n * 2 * SHM_STAGE_BYTES + (size_t)q * s->arena_bytes;
}

static struct shm_chan *chan(shm_be *s, int from, int to)
{
	return (struct shm_chan *)(s->base + s->chan_ctl_off) + (size_t)from * s->n + to;
}

static unsigned char *chan_slot_data(shm_be *s, int from, int to, uint64_t k)
{
	size_t first = s->ctl_len + (size_t)s->n * (2 * SHM_STAGE_BYTES + s->arena_bytes);

	return s->base + first + (((size_t)from * s->n + to) * SHM_CHAN_SLOTS + k % SHM_CHAN_SLOTS) * SHM_CHAN_SLOT_BYTES;
}

static int64_t arena_off(shm_be *s, const void *p, size_t bytes)
{
	const unsigned char *a = arena(s, s->me);

	if (!p || (const unsigned char *)p < a || (const unsigned char *)p + bytes > a + s->arena_bytes)
		return -1;
	return (const unsigned char *)p - a;
}

/* Reserves [off, off+len) of the segment in /dev/shm, so a full tmpfs is an error here rather
 * than a SIGBUS when the page is first written. Called by the pages' owner: the reservation
 * allocates them, on the owner's NUMA node. */
static int reserve(shm_be *s, const unsigned char *p, size_t len, tt_err *err)
{
	int rc = posix_fallocate(s->fd, (off_t)(p - s->base), (off_t)len);

	if (rc != 0) {
		errno = rc;
		return tt_err_errno(err, "cannot reserve %zu MiB of shared memory in /dev/shm (too small? df /dev/shm)",
				    (len + (1 << 20) - 1) >> 20);
	}
	return 0;
}

/* ---- failure propagation and waiting ------------------------------------------------------- */

static int fail_all(shm_be *s, tt_err *err)
{
	int32_t zero = 0;

	if (atomic_compare_exchange_strong(&s->ctl->abort_flag, &zero, s->names[s->me] + 1))
		snprintf(s->ctl->abort_msg, sizeof(s->ctl->abort_msg), "%.700s", err->msg);
	atomic_fetch_add(&s->ctl->bar_gen, 0x40000000u); /* wake waiters whatever the generation */
	syscall(SYS_futex, &s->ctl->bar_gen, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	/* Every rank's point-to-point waits too, asleep or about to be (so no sleepers check). */
	for (int q = 0; q < s->n; q++) {
		atomic_fetch_add(&s->ctl->slots[q].bell, 1);
		syscall(SYS_futex, &s->ctl->slots[q].bell, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	}
	return -1;
}

void rt_shm_abort(rt_backend *be, tt_err *err)
{
	fail_all((shm_be *)be, err);
}

static int aborted(shm_be *s, tt_err *err)
{
	int32_t who = atomic_load(&s->ctl->abort_flag);

	if (!who)
		return 0;
	return tt_err_set(err, "rank %d on this node failed: %s", who - 1, s->ctl->abort_msg);
}

/* Names a local rank that is gone, or returns 0 when all that registered are alive. */
static int dead_peer(shm_be *s, tt_err *err)
{
	for (int q = 0; q < s->n; q++) {
		pid_t pid = atomic_load(&s->ctl->slots[q].pid);

		if (q != s->me && pid > 0 && kill(pid, 0) != 0 && errno == ESRCH)
			return tt_err_set(err, "rank %d (pid %d) on this node died; the job cannot continue",
					  s->names[q], (int)pid);
	}
	return 0;
}

static int late_ranks(shm_be *s, uint64_t k, char *buf, size_t len)
{
	size_t used = 0;
	int late = 0;

	buf[0] = '\0';
	for (int q = 0; q < s->n && used + 16 < len; q++)
		if (atomic_load(&s->ctl->slots[q].bar_arrived) < k) {
			used += (size_t)snprintf(buf + used, len - used, "%s%d", late ? "," : "", s->names[q]);
			late++;
		}
	return late;
}

/* One wait: whether it began sleeping, and when (TRAINRT_TIMEOUT counts from then). */
struct waiter {
	int kind;     /* 0: a collective's, 1: a message's (their spin budgets adapt apart) */
	double t0;    /* when the wait began (first clock read) */
	double slept; /* when its first sleep began, 0 while it spins */
};

/* A wait that slept has ended: adapts its kind's spin budget (see the top of the file). Racing
 * threads of one rank may lose an update; the budget is a hint. Returns 0 (doze's "ready"). */
static int wait_over(shm_be *s, const struct waiter *wt)
{
	_Atomic uint32_t *b = &s->spin_ns[wt->kind];
	uint32_t ns = atomic_load_explicit(b, memory_order_relaxed);

	if (rt_now() - wt->t0 < SHM_SPIN_MAX_NS * 1e-9)
		ns = ns * 2 < SHM_SPIN_MAX_NS ? ns * 2 : SHM_SPIN_MAX_NS;
	else
		ns = ns / 2 > SHM_SPIN_MIN_NS ? ns / 2 : SHM_SPIN_MIN_NS;
	atomic_store_explicit(b, ns, memory_order_relaxed);
	return 0;
}

/* Waits for ready(arg) on futex word w: whoever makes ready true then calls wake() (which bumps
 * w) or sets w itself (a barrier's generation). Spins while the spin budget from the wait's
 * start lasts (the clock is read every 64 pauses), then sleeps once for at most 50 ms. The
 * sleeper counts itself in *sleepers before it reads w and re-checks ready, so a waker that
 * finds *sleepers 0 knows the sleeper will see its change (all accesses are sequentially
 * consistent). Returns 0 when ready, 1 after a sleep (the caller checks aborts, peers and the
 * timeout, then calls again, which sleeps at once). */
static int doze(shm_be *s, _Atomic uint32_t *w, _Atomic uint32_t *sleepers, int (*ready)(const void *),
		const void *arg, struct waiter *wt)
{
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	uint32_t seen;

	if (ready(arg))
		return wt->slept ? wait_over(s, wt) : 0;
	if (!wt->slept) {
		double now = rt_now(), budget = 0;

		if (s->may_spin)
			budget = atomic_load_explicit(&s->spin_ns[wt->kind], memory_order_relaxed) * 1e-9;
		if (!wt->t0)
			wt->t0 = now;
		while (now - wt->t0 < budget) {
			for (int i = 0; i < 64; i++) {
				if (ready(arg))
					return 0;
				__builtin_ia32_pause();
			}
			now = rt_now();
		}
		wt->slept = now;
	}
	atomic_fetch_add(sleepers, 1);
	seen = atomic_load(w);
	if (ready(arg)) {
		atomic_fetch_sub(sleepers, 1);
		return 0;
	}
	syscall(SYS_futex, w, FUTEX_WAIT, seen, &ts, NULL, 0);
	atomic_fetch_sub(sleepers, 1);
	return ready(arg) ? wait_over(s, wt) : 1;
}

/* The other half of doze: after the change that makes a waiter's condition true. */
static void wake(_Atomic uint32_t *w, _Atomic uint32_t *sleepers)
{
	if (atomic_load(sleepers) == 0)
		return;
	atomic_fetch_add(w, 1);
	syscall(SYS_futex, w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

struct bar_wait {
	shm_be *s;
	uint32_t gen;
};

static int bar_open(const void *arg)
{
	const struct bar_wait *b = arg;

	return atomic_load(&b->s->ctl->bar_gen) == b->gen || atomic_load(&b->s->ctl->abort_flag) != 0;
}

/* All local ranks meet: a short spin when ranks have CPUs of their own (see may_spin), then
 * futex sleeps of 50 ms that re-check the abort flag, peer liveness and the timeout. */
static int shm_barrier_raw(shm_be *s, const char *what, tt_err *err)
{
	uint64_t k = ++s->nbar;
	struct waiter wt = { 0, 0, 0 };
	struct bar_wait bw = { s, (uint32_t)k };

	if (aborted(s, err))
		return -1;
	atomic_store(&s->ctl->slots[s->me].bar_arrived, k);
	if (atomic_fetch_add(&s->ctl->bar_count, 1) + 1 == k * (uint64_t)s->n) {
		/* bar_gen is the condition itself: stored, then the sleepers woken if any. */
		atomic_store(&s->ctl->bar_gen, (uint32_t)k);
		if (atomic_load(&s->ctl->bar_sleepers))
			syscall(SYS_futex, &s->ctl->bar_gen, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
		return aborted(s, err);
	}
	for (;;) {
		if (doze(s, &s->ctl->bar_gen, &s->ctl->bar_sleepers, bar_open, &bw, &wt) == 0) {
			if (atomic_load(&s->ctl->bar_gen) == (uint32_t)k)
				return 0;
			if (aborted(s, err))
				return -1;
			continue;
		}
		if (aborted(s, err))
			return -1;
		/* A peer may pass this barrier and exit before we look, so a death only counts when
		 * the barrier is still open after it was seen. */
		if (dead_peer(s, err) != 0) {
			if (atomic_load(&s->ctl->bar_gen) == (uint32_t)k)
				return 0;
			/* A peer that failed, published why and then exited: its reason, not its death,
			 * is what every rank must report. */
			if (aborted(s, err))
				return -1;
			return fail_all(s, err);
		}
		if (rt_now() - wt.slept > s->timeout + SHM_REASON_GRACE_S) {
			char late[256];

			late_ranks(s, k, late, sizeof(late));
			tt_err_set(err, "%s: ranks %s on this node did not arrive within %.0f s (hung or stopped; TRAINRT_TIMEOUT)",
				   what, late, s->timeout);
			return fail_all(s, err);
		}
	}
}

/* Spinning only pays when every waiting rank has a CPU of its own: with more ranks than CPUs a
 * spinning rank takes the core from the peer it waits for, so it sleeps at once. The node's ranks
 * may run on the union of their affinity masks (disjoint when the launcher binds them). */
static int may_spin(shm_be *s)
{
	cpu_set_t all;

	CPU_ZERO(&all);
	for (int q = 0; q < s->n; q++)
		CPU_OR(&all, &all, &s->ctl->slots[q].cpus);
	return s->n <= CPU_COUNT(&all);
}

/* Publishes this rank's header and buffer offsets, meets, and compares every peer's header. */
static int shm_enter(shm_be *s, const rt_op *op, size_t send_bytes, size_t recv_bytes, tt_err *err)
{
	struct shm_slot *me = &s->ctl->slots[s->me];
	int par = (int)(op->hdr.seq & 1);

	me->hdr[par] = op->hdr;
	me->send_off[par] = arena_off(s, op->send, send_bytes);
	me->recv_off[par] = arena_off(s, op->recv, recv_bytes);
	if (shm_barrier_raw(s, "entering a collective", err) != 0)
		return -1;
	for (int q = 0; q < s->n; q++)
		if (rt_op_hdr_check(&op->hdr, &s->ctl->slots[q].hdr[par], s->names[q], err) != 0)
			return fail_all(s, err);
	return 0;
}

static int all_in_arena(shm_be *s, uint64_t seq, int send, int recv)
{
	int par = (int)(seq & 1);

	for (int q = 0; q < s->n; q++) {
		if (send && s->ctl->slots[q].send_off[par] < 0)
			return 0;
		if (recv && s->ctl->slots[q].recv_off[par] < 0)
			return 0;
	}
	return 1;
}

static const void *peer_send(shm_be *s, int q, uint64_t seq)
{
	return arena(s, q) + s->ctl->slots[q].send_off[seq & 1];
}

static void *peer_recv(shm_be *s, int q, uint64_t seq)
{
	return arena(s, q) + s->ctl->slots[q].recv_off[seq & 1];
}

/* ---- collectives --------------------------------------------------------------------------- */

static int shm_allreduce(rt_backend *be, const rt_op *op, tt_err *err)
{
	shm_be *s = (shm_be *)be;
	trainrt_dtype dt = (trainrt_dtype)op->hdr.dtype;
	trainrt_redop rop = (trainrt_redop)op->hdr.redop;
	size_t es = trainrt_dtype_size(dt), count = op->hdr.count, lo, hi;
	const void *in[256];
	void *out[256];

	if (shm_enter(s, op, count * es, count * es, err) != 0)
		return -1;
	if (count == 0)
		return 0;
	if (all_in_arena(s, op->hdr.seq, 1, 1)) {
		rt_split(count, s->n, s->me, &lo, &hi);
		for (int q = 0; q < s->n; q++) {
			in[q] = (const unsigned char *)peer_send(s, q, op->hdr.seq) + lo * es;
			out[q] = (unsigned char *)peer_recv(s, q, op->hdr.seq) + lo * es;
		}
		rt_reduce(out, s->n, in, s->n, hi - lo, dt, rop, s->n);
		return shm_barrier_raw(s, "allreduce", err);
	}
	size_t chunk = SHM_STAGE_BYTES / es;
	for (size_t off = 0; off < count; off += chunk) {
		size_t len = count - off < chunk ? count - off : chunk;
		uint64_t step = s->stage_step++;

		memcpy(stage(s, s->me, step), (const unsigned char *)op->send + off * es, len * es);
		if (shm_barrier_raw(s, "allreduce", err) != 0)
			return -1;
		rt_split(len, s->n, s->me, &lo, &hi);
		for (int q = 0; q < s->n; q++)
			in[q] = stage(s, q, step) + lo * es;
		out[0] = stage(s, s->me, step) + lo * es;
		rt_reduce(out, 1, in, s->n, hi - lo, dt, rop, s->n);
		if (shm_barrier_raw(s, "allreduce", err) != 0)
			return -1;
		for (int q = 0; q < s->n; q++) {
			rt_split(len, s->n, q, &lo, &hi);
			memcpy((unsigned char *)op->recv + (off + lo) * es, stage(s, q, step) + lo * es,
			       (hi - lo) * es);
		}
	}
	return 0;
}

static int shm_reducescatter(rt_backend *be, const rt_op *op, tt_err *err)
{
	shm_be *s = (shm_be *)be;
	trainrt_dtype dt = (trainrt_dtype)op->hdr.dtype;
	trainrt_redop rop = (trainrt_redop)op->hdr.redop;
	size_t es = trainrt_dtype_size(dt), count = op->hdr.count;
	const void *in[256];

	if (shm_enter(s, op, count * es * (size_t)s->n, count * es, err) != 0)
		return -1;
	if (count == 0)
		return 0;
	if (all_in_arena(s, op->hdr.seq, 1, 0)) {
		/* recv may alias our own send block; the block is read before it is written. */
		for (int q = 0; q < s->n; q++)
			in[q] = (const unsigned char *)peer_send(s, q, op->hdr.seq) + (size_t)s->me * count * es;
		rt_reduce(&op->recv, 1, in, s->n, count, dt, rop, s->n);
		return shm_barrier_raw(s, "reducescatter", err);
	}
	size_t chunk = SHM_STAGE_BYTES / es / (size_t)s->n;
	for (size_t off = 0; off < count; off += chunk) {
		size_t len = count - off < chunk ? count - off : chunk;
		uint64_t step = s->stage_step++;

		for (int q = 0; q < s->n; q++)
			memcpy(stage(s, s->me, step) + (size_t)q * chunk * es,
			       (const unsigned char *)op->send + ((size_t)q * count + off) * es, len * es);
		if (shm_barrier_raw(s, "reducescatter", err) != 0)
			return -1;
		for (int q = 0; q < s->n; q++)
			in[q] = stage(s, q, step) + (size_t)s->me * chunk * es;
		void *out = (unsigned char *)op->recv + off * es;
		rt_reduce(&out, 1, in, s->n, len, dt, rop, s->n);
	}
	return 0;
}

static int shm_allgather(rt_backend *be, const rt_op *op, tt_err *err)
{
	shm_be *s = (shm_be *)be;
	size_t es = trainrt_dtype_size((trainrt_dtype)op->hdr.dtype), count = op->hdr.count;
	unsigned char *recv = op->recv;

	if (shm_enter(s, op, count * es, count * es * (size_t)s->n, err) != 0)
		return -1;
	if (count == 0)
		return 0;
	if (all_in_arena(s, op->hdr.seq, 1, 0)) {
		for (int q = 0; q < s->n; q++)
			memmove(recv + (size_t)q * count * es, peer_send(s, q, op->hdr.seq), count * es);
		return shm_barrier_raw(s, "allgather", err);
	}
	size_t chunk = SHM_STAGE_BYTES / es;
	for (size_t off = 0; off < count; off += chunk) {
		size_t len = count - off < chunk ? count - off : chunk;
		uint64_t step = s->stage_step++;

		memcpy(stage(s, s->me, step), (const unsigned char *)op->send + off * es, len * es);
		if (shm_barrier_raw(s, "allgather", err) != 0)
			return -1;
		for (int q = 0; q < s->n; q++)
			memcpy(recv + ((size_t)q * count + off) * es, stage(s, q, step), len * es);
	}
	return 0;
}

static int shm_broadcast(rt_backend *be, const rt_op *op, tt_err *err)
{
	shm_be *s = (shm_be *)be;
	size_t es = trainrt_dtype_size((trainrt_dtype)op->hdr.dtype), count = op->hdr.count;
	int root = op->hdr.root;
	unsigned char *buf = op->recv;

	if (shm_enter(s, op, count * es, count * es, err) != 0)
		return -1;
	if (count == 0)
		return 0;
	if (s->ctl->slots[root].send_off[op->hdr.seq & 1] >= 0) {
		if (s->me != root)
			memcpy(buf, peer_send(s, root, op->hdr.seq), count * es);
		return shm_barrier_raw(s, "broadcast", err);
	}
	size_t chunk = SHM_STAGE_BYTES / es;
	for (size_t off = 0; off < count; off += chunk) {
		size_t len = count - off < chunk ? count - off : chunk;
		uint64_t step = s->stage_step++;

		if (s->me == root)
			memcpy(stage(s, root, step), buf + off * es, len * es);
		if (shm_barrier_raw(s, "broadcast", err) != 0)
			return -1;
		if (s->me != root)
			memcpy(buf + off * es, stage(s, root, step), len * es);
	}
	return 0;
}

static int shm_barrier(rt_backend *be, const rt_op *op, tt_err *err)
{
	return shm_enter((shm_be *)be, op, 0, 0, err);
}

/* ---- point-to-point ---------------------------------------------------------------------------- */

/* Names the peer when it is gone (only the peer: other local ranks may have finished and left). */
static int peer_dead(shm_be *s, int q, tt_err *err)
{
	pid_t pid = atomic_load(&s->ctl->slots[q].pid);

	if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH)
		return tt_err_set(err, "rank %d (pid %d) on this node died; the job cannot continue", s->names[q], (int)pid);
	return 0;
}

/* One message in flight on this rank: a send to or a receive from peer, moved by step(). */
struct xfer {
	shm_be *s;
	int peer, sending;
	const rt_p2p_hdr *h;
	unsigned char *buf;
	size_t bytes, off; /* off: bytes posted (send) or copied out (receive) so far */
	uint64_t need;     /* a direct send: ends when the receiver has taken this many slots */
	int started, done;
	struct shm_chan *ch;
};

static void xfer_init(struct xfer *x, shm_be *s, int peer, int sending, const rt_p2p_hdr *h, const void *buf)
{
	*x = (struct xfer){ .s = s, .peer = peer, .sending = sending, .h = h, .buf = (unsigned char *)buf,
			    .bytes = h->count * trainrt_dtype_size((trainrt_dtype)h->dtype),
			    .ch = sending ? chan(s, s->me, peer) : chan(s, peer, s->me) };
}

/* Rings peer q's bell after one of its channels moved. */
static void ring(shm_be *s, int q)
{
	wake(&s->ctl->slots[q].bell, &s->ctl->slots[q].bell_sleepers);
}

/* Whether step() would move x now. */
static int xfer_ready(const struct xfer *x)
{
	if (x->done)
		return 1;
	if (!x->sending)
		return atomic_load(&x->ch->posted) > atomic_load(&x->ch->taken);
	if (x->need)
		return atomic_load(&x->ch->taken) >= x->need;
	return atomic_load(&x->ch->posted) - atomic_load(&x->ch->taken) < SHM_CHAN_SLOTS;
}

/* Fills the free slots with x's bytes: inline when the message fits a slot, by reference when it
 * is longer than the ring and lies in this rank's arena (the receiver copies it once), else in
 * chunks through the data area. 1 when it moved, 0 when the ring is full, -1 on an error. */
static int send_step(struct xfer *x, tt_err *err)
{
	shm_be *s = x->s;
	struct shm_chan *ch = x->ch;
	int moved = 0;
	int64_t at;

	if (x->need) {
		if (atomic_load(&ch->taken) < x->need)
			return 0;
		x->done = 1;
		return 1;
	}
	while (!x->done && atomic_load(&ch->posted) - atomic_load(&ch->taken) < SHM_CHAN_SLOTS) {
		uint64_t k = atomic_load(&ch->posted);
		struct chan_slot *sl = &ch->slot[k % SHM_CHAN_SLOTS];
		size_t len = x->bytes - x->off < SHM_CHAN_SLOT_BYTES ? x->bytes - x->off : SHM_CHAN_SLOT_BYTES;

		sl->hdr = *x->h;
		sl->off = x->off;
		if (!x->started && x->bytes <= SHM_INLINE_BYTES) {
			sl->how = SLOT_INLINE;
			len = x->bytes;
			memcpy(sl->data, x->buf, len);
		} else if (!x->started && x->bytes > SHM_CHAN_SLOTS * SHM_CHAN_SLOT_BYTES &&
			   (at = arena_off(s, x->buf, x->bytes)) >= 0) {
			/* Longer than the ring: a sender that copied in would wait for the receiver anyway. */
			sl->how = SLOT_DIRECT;
			sl->at = (uint64_t)at;
			len = x->bytes;
			x->need = k + 1;
		} else {
			/* The data area is this rank's to fill: reserved (first touched) here, on its node. */
			if (!s->chan_reserved[x->peer]) {
				if (reserve(s, chan_slot_data(s, s->me, x->peer, 0), SHM_CHAN_SLOTS * SHM_CHAN_SLOT_BYTES, err) != 0)
					return -1;
				s->chan_reserved[x->peer] = 1;
			}
			sl->how = SLOT_CHUNK;
			memcpy(chan_slot_data(s, s->me, x->peer, k), x->buf + x->off, len);
		}
		sl->len = len;
		atomic_store(&ch->posted, k + 1);
		ring(s, x->peer);
		x->started = 1;
		x->off += len;
		moved = 1;
		/* A message of 0 bytes is still one slot: its header must be checked. */
		if (x->off >= x->bytes && !x->need)
			x->done = 1;
		if (x->need)
			break;
	}
	return moved;
}

/* Empties the filled slots into x's buffer after checking each one's header against x's.
 * 1 when it moved, 0 when nothing had arrived, -1 on an error. */
static int recv_step(struct xfer *x, tt_err *err)
{
	shm_be *s = x->s;
	struct shm_chan *ch = x->ch;
	int moved = 0;

	while (!x->done && atomic_load(&ch->posted) > atomic_load(&ch->taken)) {
		uint64_t k = atomic_load(&ch->taken);
		const struct chan_slot *sl = &ch->slot[k % SHM_CHAN_SLOTS];

		if (rt_p2p_hdr_check(x->h, &sl->hdr, s->names[x->peer], err) != 0)
			return -1;
		if (sl->off != x->off || sl->len > x->bytes - x->off ||
		    (sl->how == SLOT_INLINE && sl->len > SHM_INLINE_BYTES) ||
		    (sl->how == SLOT_DIRECT && (sl->at > s->arena_bytes || sl->len > s->arena_bytes - sl->at))) {
			tt_err_set(err, "message #%llu from rank %d arrived out of order (internal error)",
				   (unsigned long long)x->h->seq, s->names[x->peer]);
			return -1;
		}
		if (sl->how == SLOT_INLINE)
			memcpy(x->buf + x->off, sl->data, sl->len);
		else if (sl->how == SLOT_DIRECT) {
			memcpy(x->buf + x->off, arena(s, x->peer) + sl->at, sl->len);
			/* A sender that gave up meanwhile (the node failed) may have reused its buffer. */
			if (aborted(s, err))
				return -1;
		} else
			memcpy(x->buf + x->off, chan_slot_data(s, x->peer, s->me, k), sl->len);
		x->off += sl->len;
		atomic_store(&ch->taken, k + 1);
		ring(s, x->peer);
		moved = 1;
		if (x->off >= x->bytes)
			x->done = 1;
	}
	return moved;
}

struct xfers {
	struct xfer *x;
	int n;
};

static int any_ready(const void *arg)
{
	const struct xfers *xs = arg;

	for (int i = 0; i < xs->n; i++)
		if (!xs->x[i].done && xfer_ready(&xs->x[i]))
			return 1;
	return atomic_load(&xs->x[0].s->ctl->abort_flag) != 0;
}

/* Moves every message of xs until all are done, sleeping on this rank's bell when none can move;
 * after each sleep checks the abort flag, the lives of the peers still owed something and the
 * timeout (from the last progress). A failure fails every local rank (fail_all). */
static int drive(shm_be *s, struct xfer *x, int n, tt_err *err)
{
	struct xfers xs = { x, n };
	struct shm_slot *me = &s->ctl->slots[s->me];
	struct waiter wt = { 1, 0, 0 };

	for (;;) {
		int left = 0, moved = 0;

		if (aborted(s, err))
			return -1;
		for (int i = 0; i < n; i++) {
			int rc = x[i].done ? 0 : x[i].sending ? send_step(&x[i], err) : recv_step(&x[i], err);

			if (rc < 0)
				return fail_all(s, err);
			moved |= rc;
			left |= !x[i].done;
		}
		if (!left)
			return 0;
		if (moved) {
			if (wt.slept)
				wait_over(s, &wt);
			wt = (struct waiter){ 1, 0, 0 };
			continue;
		}
		if (doze(s, &me->bell, &me->bell_sleepers, any_ready, &xs, &wt) == 0)
			continue;
		for (int i = 0; i < n; i++) {
			const char *what = x[i].sending ? "sending to" : "receiving from";

			if (x[i].done)
				continue;
			if (peer_dead(s, x[i].peer, err) != 0) {
				/* Its reason, when it failed and published one before exiting, is what to report. */
				if (aborted(s, err))
					return -1;
				tt_err_wrap(err, "%s rank %d: message #%llu (tag %d)", what, s->names[x[i].peer],
					    (unsigned long long)x[i].h->seq, x[i].h->tag);
				return fail_all(s, err);
			}
			if (rt_now() - wt.slept > s->timeout) {
				tt_err_set(err, "%s rank %d: message #%llu (tag %d): rank %d did not take part within %.0f s (hung, stopped, or it never posted the matching %s; TRAINRT_TIMEOUT)",
					   what, s->names[x[i].peer], (unsigned long long)x[i].h->seq, x[i].h->tag,
					   s->names[x[i].peer], s->timeout, x[i].sending ? "receive" : "send");
				return fail_all(s, err);
			}
		}
	}
}

static int shm_send(rt_backend *be, int peer, const rt_p2p_hdr *h, const void *buf, tt_err *err)
{
	struct xfer x;

	xfer_init(&x, (shm_be *)be, peer, 1, h, buf);
	return drive((shm_be *)be, &x, 1, err);
}

static int shm_recv(rt_backend *be, int peer, const rt_p2p_hdr *h, void *buf, tt_err *err)
{
	struct xfer x;

	xfer_init(&x, (shm_be *)be, peer, 0, h, buf);
	return drive((shm_be *)be, &x, 1, err);
}

/* The message at once when it fits the channel's free slots (so it never waits: only the
 * receiver frees slots, and it only frees more). */
static int shm_try_send(rt_backend *be, int peer, const rt_p2p_hdr *h, const void *buf, tt_err *err)
{
	shm_be *s = (shm_be *)be;
	struct xfer x;
	uint64_t used;

	xfer_init(&x, s, peer, 1, h, buf);
	if (aborted(s, err))
		return -1;
	used = atomic_load(&x.ch->posted) - atomic_load(&x.ch->taken);
	if (used >= SHM_CHAN_SLOTS ||
	    (x.bytes > SHM_INLINE_BYTES && x.bytes > (SHM_CHAN_SLOTS - used) * SHM_CHAN_SLOT_BYTES))
		return 0;
	if (send_step(&x, err) < 0)
		return fail_all(s, err);
	return 1;
}

/* Both halves of an exchange at once on the caller's thread (comm_p2p.c runs trainrt_sendrecv
 * here when both channels are idle): neither waits for the other, so ranks that all send first
 * still meet, whatever the sizes. */
static int shm_sendrecv(rt_backend *be, const rt_op *op, tt_err *err)
{
	struct xfer x[2];

	xfer_init(&x[0], (shm_be *)be, op->peer[0], 1, &op->msg[0], op->send);
	xfer_init(&x[1], (shm_be *)be, op->peer[1], 0, &op->msg[1], op->recv);
	return drive((shm_be *)be, x, 2, err);
}

static void shm_abort_op(rt_backend *be, tt_err *err)
{
	fail_all((shm_be *)be, err);
}

/* ---- arena allocator (this rank's arena only; metadata stays private) ---------------------- */

static void *shm_alloc(rt_backend *be, size_t bytes, tt_err *err)
{
	shm_be *s = (shm_be *)be;
	size_t need = (bytes + 63) & ~(size_t)63;

	if (need == 0)
		need = 64;
	for (size_t i = 0; i < s->nblks; i++) {
		struct blk *b = &s->blks[i];

		if (b->used || b->len < need)
			continue;
		if (b->len > need) {
			if (s->nblks == s->cap_blks) {
				size_t cap = s->cap_blks * 2;
				struct blk *nb = realloc(s->blks, cap * sizeof(*nb));

				if (!nb)
					break;
				s->blks = nb;
				s->cap_blks = cap;
				b = &s->blks[i];
			}
			memmove(&s->blks[i + 2], &s->blks[i + 1], (s->nblks - i - 1) * sizeof(*b));
			s->blks[i + 1] = (struct blk){ b->off + need, b->len - need, 0 };
			b->len = need;
			s->nblks++;
		}
		if (reserve(s, arena(s, s->me) + b->off, b->len, err) != 0)
			return NULL;
		b->used = 1;
		return arena(s, s->me) + b->off;
	}
	tt_err_set(err, "shared-memory arena exhausted allocating %zu bytes (arena is %zu MiB per rank; raise TRAINRT_SHM_ARENA_MB)",
		   bytes, s->arena_bytes >> 20);
	return NULL;
}

static void shm_free(rt_backend *be, void *ptr)
{
	shm_be *s = (shm_be *)be;
	int64_t off = arena_off(s, ptr, 0);

	for (size_t i = 0; off >= 0 && i < s->nblks; i++) {
		if (s->blks[i].off != (size_t)off || !s->blks[i].used)
			continue;
		s->blks[i].used = 0;
		if (i + 1 < s->nblks && !s->blks[i + 1].used) {
			s->blks[i].len += s->blks[i + 1].len;
			memmove(&s->blks[i + 1], &s->blks[i + 2], (s->nblks - i - 2) * sizeof(struct blk));
			s->nblks--;
		}
		if (i > 0 && !s->blks[i - 1].used) {
			s->blks[i - 1].len += s->blks[i].len;
			memmove(&s->blks[i], &s->blks[i + 1], (s->nblks - i - 1) * sizeof(struct blk));
			s->nblks--;
		}
		return;
	}
}

static void shm_destroy(rt_backend *be)
{
	shm_be *s = (shm_be *)be;

	if (s->base)
		munmap(s->base, s->map_len);
	if (s->fd >= 0)
		close(s->fd);
	free(s->blks);
	free(s->names);
	free(s->chan_reserved);
	free(s);
}

static const struct rt_backend_ops shm_ops = {
	.name = "shm",
	.allreduce = shm_allreduce,
	.allgather = shm_allgather,
	.reducescatter = shm_reducescatter,
	.broadcast = shm_broadcast,
	.barrier = shm_barrier,
	.send = shm_send,
	.recv = shm_recv,
	.sendrecv = shm_sendrecv,
	.try_send = shm_try_send,
	.abort = shm_abort_op,
	.alloc = shm_alloc,
	.free = shm_free,
	.destroy = shm_destroy,
};

/* ---- creation ------------------------------------------------------------------------------ */

static int map_segment(shm_be *s, const char *name, int create, tt_err *err)
{
	int fd = shm_open(name, create ? O_RDWR | O_CREAT | O_EXCL : O_RDWR, 0600);
	struct stat st;

	if (fd < 0)
		return tt_err_errno(err, "cannot %s shared memory %s", create ? "create" : "open", name);
	if (create && ftruncate(fd, (off_t)s->map_len) != 0) {
		tt_err_errno(err, "cannot size shared memory %s to %zu MiB (is /dev/shm large enough?)", name,
			     s->map_len >> 20);
		close(fd);
		shm_unlink(name);
		return -1;
	}
	if (!create && (fstat(fd, &st) != 0 || st.st_uid != geteuid())) {
		close(fd);
		return tt_err_set(err, "shared memory %s does not belong to this user: it is not this job's segment", name);
	}
	if (!create && (size_t)st.st_size != s->map_len) {
		close(fd);
		return tt_err_set(err, "shared memory %s has the wrong size: ranks disagree on TRAINRT_SHM_ARENA_MB or LOCAL_WORLD_SIZE", name);
	}
	s->base = mmap(NULL, s->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (s->base == MAP_FAILED) {
		s->base = NULL;
		close(fd);
		if (create)
			shm_unlink(name);
		return tt_err_errno(err, "cannot map shared memory %s", name);
	}
	s->fd = fd;
	if (create && reserve(s, s->base, s->ctl_len, err) != 0) {
		shm_unlink(name);
		return -1;
	}
	return 0;
}

rt_backend *rt_shm_create(const rt_world *w, tt_err *err)
{
	shm_be *s = calloc(1, sizeof(*s));
	char name[128], key[300];
	size_t len = 0, chans;
	uint32_t ns_hash = 2166136261u; /* FNV-1a of the namespace: a group's segment has its own name */

	if (!s) {
		tt_err_set(err, "out of memory");
		return NULL;
	}
	if (w->local_size > 256) {
		free(s);
		tt_err_set(err, "LOCAL_WORLD_SIZE %d is above the shm backend's limit of 256", w->local_size);
		return NULL;
	}
	s->be.ops = &shm_ops;
	s->fd = -1;
	s->me = w->local_rank;
	s->n = w->local_size;
	s->timeout = w->timeout;
	s->names = malloc(sizeof(int) * (size_t)s->n);
	s->chan_reserved = calloc((size_t)s->n, 1);
	if (!s->names || !s->chan_reserved) {
		tt_err_set(err, "out of memory");
		goto fail;
	}
	for (int q = 0; q < s->n; q++)
		s->names[q] = rt_world_name(w, w->rank - w->local_rank + q);
	s->arena_bytes = (w->arena_bytes + 4095) & ~(size_t)4095;
	chans = (size_t)s->n * (size_t)s->n;
	s->chan_ctl_off = (sizeof(struct shm_ctl) + (size_t)s->n * sizeof(struct shm_slot) + 63) & ~(size_t)63;
	s->ctl_len = (s->chan_ctl_off + chans * sizeof(struct shm_chan) + 4095) & ~(size_t)4095;
	s->map_len = s->ctl_len + (size_t)s->n * (2 * SHM_STAGE_BYTES + s->arena_bytes) +
		     chans * SHM_CHAN_SLOTS * SHM_CHAN_SLOT_BYTES;
	for (const char *p = w->ns ? w->ns : ""; *p; p++)
		ns_hash = (ns_hash ^ (unsigned char)*p) * 16777619u;
	if (rt_world_key(w, key, sizeof(key), "shm/%d", w->node) != 0) {
		tt_err_set(err, "the group's store keys are too long (groups nested too deeply)");
		goto fail;
	}
	if (s->me == 0) {
		snprintf(name, sizeof(name), "/trainrt-%016llx-n%d-p%d-g%08x", (unsigned long long)w->key_label,
			 w->node, (int)getpid(), ns_hash);
		if (map_segment(s, name, 1, err) != 0)
			goto fail;
		s->ctl = (struct shm_ctl *)s->base;
		s->ctl->nlocal = s->n;
		s->ctl->arena_bytes = s->arena_bytes;
		s->ctl->magic = SHM_MAGIC;
		len = strlen(name) + 1;
		if ((w->via_leaders ? rt_world_node_share(w, name, sizeof(name), &len, err)
				    : rt_store_set(w->store, key, name, len, err)) != 0) {
			shm_unlink(name);
			goto fail;
		}
	} else {
		if ((w->via_leaders ? rt_world_node_share(w, name, sizeof(name), &len, err)
				    : rt_store_get(w->store, key, name, sizeof(name), &len, err)) != 0)
			goto fail;
		name[sizeof(name) - 1] = '\0';
		if (map_segment(s, name, 0, err) != 0)
			goto fail;
		s->ctl = (struct shm_ctl *)s->base;
		if (s->ctl->magic != SHM_MAGIC || s->ctl->nlocal != s->n) {
			tt_err_set(err, "shared memory %s is not this job's segment for %d local ranks", name, s->n);
			goto fail;
		}
	}
	atomic_store(&s->ctl->slots[s->me].pid, (int32_t)getpid());
	if (sched_getaffinity(0, sizeof(cpu_set_t), &s->ctl->slots[s->me].cpus) != 0) {
		long online = sysconf(_SC_NPROCESSORS_ONLN);

		/* Unknown mask: count it as every online CPU, so spinning stays as before. */
		for (long c = 0; c < online && c < CPU_SETSIZE; c++)
			CPU_SET(c, &s->ctl->slots[s->me].cpus);
	}
	s->may_spin = 1;
	s->spin_ns[0] = SHM_SPIN_START_NS;
	s->spin_ns[1] = SHM_SPIN_START_NS;
	/* Reserved and first touched by the owner: staging pages sit on its NUMA node. */
	if (reserve(s, stage(s, s->me, 0), 2 * SHM_STAGE_BYTES, err) != 0) {
		if (s->me == 0)
			shm_unlink(name);
		goto fail;
	}
	memset(stage(s, s->me, 0), 0, SHM_STAGE_BYTES);
	memset(stage(s, s->me, 1), 0, SHM_STAGE_BYTES);
	s->cap_blks = 16;
	s->blks = calloc(s->cap_blks, sizeof(*s->blks));
	if (!s->blks) {
		tt_err_set(err, "out of memory");
		goto fail;
	}
	s->blks[0] = (struct blk){ 0, s->arena_bytes, 0 };
	s->nblks = 1;
	if (shm_barrier_raw(s, "attaching the node's shared memory", err) != 0) {
		if (s->me == 0)
			shm_unlink(name);
		goto fail;
	}
	if (s->me == 0)
		shm_unlink(name);
	s->may_spin = may_spin(s);
	return &s->be;
fail:
	tt_err_wrap(err, "shm backend (node %d)", w->node);
	shm_destroy(&s->be);
	return NULL;
}
