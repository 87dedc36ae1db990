/* SPDX-License-Identifier: MIT */
/* comm.c — trainrt_comm: reads the launch environment, runs the rendezvous, picks a backend and
 * executes collectives in issue order: asynchronous ones on one progress thread per communicator
 * (so compute overlaps communication), blocking ones on the caller's thread when nothing is
 * queued, else behind the queue. (Point-to-point: comm_p2p.c; groups: comm_group.c.) */
#include <config.h>

#include "comm_backend.h"
#include "comm_priv.h"
#include "rt_net.h"
#include "rt_pmix.h"
#ifdef TT_HAVE_NCCL
#include "rt_cuda.h"
#endif
#include "rt_store.h"
#include "rt_token.h"
#include "trainrt.h"
#include "tt_envnames.h"
#include "tt_parse.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- environment -------------------------------------------------------------------------- */

static int env_int(const char *name, int lo, int hi, int *out, int required, int dflt, tt_err *err)
{
	const char *v = getenv(name);
	long long x;

	if (!v || !*v) {
		if (required)
			return tt_err_set(err, "%s is not set: launch with train-run, torchrun, srun --mpi=pmix, or set RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT", name);
		*out = dflt;
		return 0;
	}
	if (tt_parse_int(v, lo, hi, name, &x, err) != 0)
		return -1;
	*out = (int)x;
	return 0;
}

/* The env contract (RANK, WORLD_SIZE, ...) into w; MASTER_ADDR/PORT into addr/port. */
static int read_env(rt_world *w, char *addr, size_t alen, int *port, tt_err *err)
{
	const char *ma = getenv(TT_ENV_MASTER_ADDR);

	if (env_int(TT_ENV_WORLD_SIZE, 1, 1 << 20, &w->size, 1, 0, err) != 0 ||
	    env_int(TT_ENV_RANK, 0, w->size - 1, &w->rank, 1, 0, err) != 0 ||
	    env_int(TT_ENV_LOCAL_WORLD_SIZE, 1, w->size, &w->local_size, 0, 1, err) != 0 ||
	    env_int(TT_ENV_LOCAL_RANK, 0, w->local_size - 1, &w->local_rank, 0, 0, err) != 0)
		return -1;
	if (w->size > 1 || getenv(TT_ENV_MASTER_PORT)) {
		if (env_int(TT_ENV_MASTER_PORT, 1, 65535, port, 1, 0, err) != 0)
			return -1;
	} else {
		*port = 0;
	}
	if (!getenv(TT_ENV_LOCAL_WORLD_SIZE) && w->size > 1)
		return tt_err_set(err, "LOCAL_WORLD_SIZE is not set: it tells which ranks share a node");
	if (w->size > 1 && (!ma || !*ma))
		return tt_err_set(err, "MASTER_ADDR is not set: it must name the host of rank 0");
	snprintf(addr, alen, "%s", ma && *ma ? ma : "127.0.0.1");
	return 0;
}

static int check_layout(rt_world *w, tt_err *err)
{
	if (w->size % w->local_size != 0)
		return tt_err_set(err, "WORLD_SIZE %d is not a multiple of LOCAL_WORLD_SIZE %d: every node must run the same number of ranks",
				  w->size, w->local_size);
	if (w->rank % w->local_size != w->local_rank)
		return tt_err_set(err, "RANK %d with LOCAL_RANK %d and LOCAL_WORLD_SIZE %d: ranks of a node must be contiguous (RANK = node * LOCAL_WORLD_SIZE + LOCAL_RANK)",
				  w->rank, w->local_rank, w->local_size);
	w->node = w->rank / w->local_size;
	w->nnodes = w->size / w->local_size;
	return 0;
}

/* TRAINRT_TIMEOUT in seconds (300 when unset); a bad value is reported in err, and 300 is used
 * meanwhile so the rank can still tell the others (agree_settings). Below TIMEOUT_FLOOR_S every
 * wait would fail before a live peer could answer (a rendezvous alone takes milliseconds), so
 * 0.000001 is refused rather than turned into failures that blame the peers. */
#define TIMEOUT_FLOOR_S 1.0
static double env_timeout(tt_err *err, int *bad)
{
	const char *v = getenv("TRAINRT_TIMEOUT");
	char *end;
	double t;

	*bad = 0;
	if (!v || !*v)
		return 300;
	t = strtod(v, &end);
	if (*end || end == v || !(t > 0) || t > 1e7) {
		*bad = 1;
		tt_err_set(err, "TRAINRT_TIMEOUT='%s' is not a positive number of seconds", v);
		return 300;
	}
	if (t < TIMEOUT_FLOOR_S) {
		*bad = 1;
		tt_err_set(err, "TRAINRT_TIMEOUT='%s' is below the %.0f s floor: every wait for a peer would fail before "
			   "it could answer; give at least %.0f (seconds)", v, TIMEOUT_FLOOR_S, TIMEOUT_FLOOR_S);
		return 300;
	}
	return t;
}

int trainrt_gpu_device(int local_rank)
{
#ifdef TT_HAVE_NCCL
	return rt_gpu_device_for(local_rank);
#else
	(void)local_rank;
	return 0;
#endif
}

/* ---- settings every rank must share ------------------------------------------------------- */

/* The world's backend, as decided on each rank before it is built. */
enum backend_kind { BACKEND_UNDECIDED, BACKEND_SHM, BACKEND_TCP, BACKEND_HIER, BACKEND_NCCL };

static const char *backend_name(int32_t kind)
{
	static const char *const names[] = { "(undecided)", "shm", "tcp", "hier", "nccl" };

	return kind >= 0 && kind < (int32_t)(sizeof(names) / sizeof(names[0])) ? names[kind] : "(unknown)";
}

/* What rank 0 publishes and every other rank compares with its own. A rank launched with another
 * layout, backend or algorithm would wait for peers that never come and, TRAINRT_TIMEOUT later,
 * fail naming a lost link; compared here, every rank fails at once naming the setting. */
struct settings {
	int32_t valid; /* 0: rank 0 has a problem of its own (it reports that instead) */
	int32_t local_size;
	int32_t arena_mb;
	int32_t backend; /* enum backend_kind */
	int32_t tcp_ring_only;
	int32_t node_rdv; /* 1: the start goes through node leaders (TRAINRT_RENDEZVOUS) */
};

/* The mode when TRAINRT_RENDEZVOUS is unset or auto: through node leaders when a node runs more
 * than one rank. */
static int node_by_default(const rt_world *w)
{
	return w->local_size > 1;
}

/* TRAINRT_RENDEZVOUS: "node" meets through node leaders (rt_node.h), "flat" has every rank meet
 * rank 0's store itself; unset or "auto": node_by_default. Returns 1 for
 * node, 0 for flat, -1 with err for another value. */
static int node_rendezvous(const rt_world *w, tt_err *err)
{
	const char *v = getenv("TRAINRT_RENDEZVOUS");

	if (!v || !*v || strcmp(v, "auto") == 0)
		return node_by_default(w);
	if (strcmp(v, "node") == 0 || strcmp(v, "flat") == 0)
		return strcmp(v, "node") == 0;
	return tt_err_set(err, "TRAINRT_RENDEZVOUS='%s' is not auto, node or flat", v);
}

/* The backend this rank would build for buffers in `where`: decided from TRAINRT_BACKEND, the
 * layout and the GPUs this rank sees; the message names the setting to change. */
static enum backend_kind choose_backend(const rt_world *w, trainrt_buffers where, tt_err *err)
{
	const char *want = getenv("TRAINRT_BACKEND");
	int automatic = !want || !*want || strcmp(want, "auto") == 0;

	if (where == TRAINRT_BUFFERS_DEVICE && !automatic && strcmp(want, "nccl") != 0) {
		tt_err_set(err, "TRAINRT_BACKEND=%s works on host memory, but this program passes GPU buffers; use auto or nccl",
			   want);
		return BACKEND_UNDECIDED;
	}
	if (where == TRAINRT_BUFFERS_HOST && !automatic && strcmp(want, "nccl") == 0) {
		tt_err_set(err, "TRAINRT_BACKEND=nccl needs GPU buffers, but this program passes host memory; use auto, shm or tcp");
		return BACKEND_UNDECIDED;
	}
	if (automatic) {
#ifdef TT_HAVE_NCCL
		if (where != TRAINRT_BUFFERS_HOST && rt_gpu_count() > 0)
			return BACKEND_NCCL;
		if (where == TRAINRT_BUFFERS_DEVICE) {
			tt_err_set(err, "GPU buffers need the nccl backend, but no CUDA device is visible to rank %d "
				   "(check CUDA_VISIBLE_DEVICES and the job's --gres=gpu)", w->rank);
			return BACKEND_UNDECIDED;
		}
#else
		if (where == TRAINRT_BUFFERS_DEVICE) {
			tt_err_set(err, "GPU buffers need the nccl backend, but this libtrainrt was built without CUDA "
				   "(configure --with-cuda)");
			return BACKEND_UNDECIDED;
		}
#endif
		return w->nnodes == 1 ? BACKEND_SHM : BACKEND_HIER;
	}
	if (strcmp(want, "shm") == 0) {
		if (w->nnodes != 1) {
			tt_err_set(err, "TRAINRT_BACKEND=shm needs all ranks on one node, but there are %d nodes (use auto or tcp)",
				   w->nnodes);
			return BACKEND_UNDECIDED;
		}
		return BACKEND_SHM;
	}
	if (strcmp(want, "tcp") == 0)
		return BACKEND_TCP;
	if (strcmp(want, "nccl") == 0) {
#ifdef TT_HAVE_NCCL
		return BACKEND_NCCL;
#else
		tt_err_set(err, "TRAINRT_BACKEND=nccl, but this libtrainrt was built without CUDA (configure --with-cuda)");
		return BACKEND_UNDECIDED;
#endif
	}
	tt_err_set(err, "TRAINRT_BACKEND='%s' is not one of auto, shm, tcp, nccl", want);
	return BACKEND_UNDECIDED;
}

static rt_backend *build_backend(rt_world *w, enum backend_kind kind, tt_err *err)
{
	switch (kind) {
	case BACKEND_SHM:
		return rt_shm_create(w, err);
	case BACKEND_TCP:
		return rt_tcp_world_create(w, err);
	case BACKEND_HIER:
		return rt_hier_create(w, err);
	case BACKEND_NCCL:
#ifdef TT_HAVE_NCCL
		return rt_nccl_create(w, err);
#else
		break;
#endif
	case BACKEND_UNDECIDED:
		break;
	}
	tt_err_set(err, "no backend was decided");
	return NULL;
}

/* This rank's settings; a bad value leaves valid 0 and says why in err. */
static void read_settings(rt_world *w, trainrt_buffers where, struct settings *s, tt_err *err)
{
	const char *algo = getenv("TRAINRT_TCP_ALLREDUCE");
	int arena_mb = 256, node_rdv = node_rendezvous(w, err);

	*s = (struct settings){ .local_size = w->local_size, .node_rdv = node_by_default(w) };
	if (node_rdv < 0)
		return;
	s->node_rdv = node_rdv;
	if (env_int("TRAINRT_SHM_ARENA_MB", 1, 1 << 20, &arena_mb, 0, 256, err) != 0)
		return;
	s->arena_mb = arena_mb;
	w->arena_bytes = (size_t)arena_mb << 20;
	if (algo && *algo && strcmp(algo, "auto") != 0 && strcmp(algo, "ring") != 0) {
		tt_err_set(err, "TRAINRT_TCP_ALLREDUCE='%s' is not auto or ring", algo);
		return;
	}
	s->tcp_ring_only = w->tcp_ring_only = algo && strcmp(algo, "ring") == 0;
	s->backend = (int32_t)choose_backend(w, where, err);
	s->valid = s->backend != BACKEND_UNDECIDED;
}

/* Why `mine` cannot work with rank 0's `theirs` (into why), or 0 when they agree. */
static int settings_differ(const struct settings *mine, const struct settings *theirs, tt_err *why)
{
	if (mine->local_size != theirs->local_size)
		return tt_err_set(why, "LOCAL_WORLD_SIZE %d differs from rank 0's %d: every node must run the same number of ranks",
				  mine->local_size, theirs->local_size);
	if (mine->arena_mb != theirs->arena_mb)
		return tt_err_set(why, "TRAINRT_SHM_ARENA_MB %d differs from rank 0's %d: set it the same for every rank",
				  mine->arena_mb, theirs->arena_mb);
	if (mine->node_rdv != theirs->node_rdv)
		return tt_err_set(why, "TRAINRT_RENDEZVOUS=%s differs from rank 0's %s: set it the same for every rank",
				  mine->node_rdv ? "node" : "flat", theirs->node_rdv ? "node" : "flat");
	if (mine->tcp_ring_only != theirs->tcp_ring_only)
		return tt_err_set(why, "TRAINRT_TCP_ALLREDUCE=%s differs from rank 0's %s: set it the same for every rank",
				  mine->tcp_ring_only ? "ring" : "auto", theirs->tcp_ring_only ? "ring" : "auto");
	if (mine->backend != theirs->backend) {
		const char *want = getenv("TRAINRT_BACKEND");

		return tt_err_set(why, "this rank picks the %s backend (TRAINRT_BACKEND=%s) and rank 0 the %s one: set "
				  "TRAINRT_BACKEND the same for every rank, and give every node GPUs or none",
				  backend_name(mine->backend), want && *want ? want : "auto", backend_name(theirs->backend));
	}
	return 0;
}

/* The start of every world: rank 0 publishes its settings, each rank compares its own, and a rank
 * with a problem (a bad value or a difference) records it before all meet in the "trainrt/start"
 * rendezvous (which also fails every rank, naming it, if one never comes or dies), then in
 * "trainrt/checked", by when the ranks that start through node leaders (lead_start; a rank launched
 * with another TRAINRT_RENDEZVOUS) recorded theirs too. After it every rank asks whether anyone
 * reported a problem: then all fail with the first one reported, rather
 * than wait for a peer that will not build the same backend. `problem` is this rank's own, or NULL. */
static int agree_settings(trainrt_comm *c, const struct settings *mine, const char *problem, tt_err *err)
{
	rt_store *st = c->w.store;
	struct settings theirs;
	tt_err why;
	char msg[sizeof(why.msg) + 32];
	size_t len = 0;
	int64_t reported = 0;

	if (c->w.rank == 0 && rt_store_set(st, "trainrt/settings", mine, sizeof(*mine), err) != 0)
		return -1;
	if (c->w.rank != 0 && !problem) {
		if (rt_store_get(st, "trainrt/settings", &theirs, sizeof(theirs), &len, err) != 0)
			return -1;
		if (len != sizeof(theirs))
			return tt_err_set(err, "rank 0's settings have %zu bytes, not %zu: all ranks must run the same libtrainrt",
					  len, sizeof(theirs));
		if (theirs.valid && settings_differ(mine, &theirs, &why) != 0)
			problem = why.msg;
	}
	if (problem) {
		snprintf(msg, sizeof(msg), "rank %d: %s", c->w.rank, problem);
		if (rt_store_add(st, "trainrt/problems", 1, &reported, err) != 0 ||
		    (reported == 1 && rt_store_set(st, "trainrt/problem", msg, strlen(msg) + 1, err) != 0))
			return -1;
	}
	if (rt_store_join(st, "trainrt/start", c->w.rank, err) != 0 ||
	    rt_store_join(st, "trainrt/checked", c->w.rank, err) != 0)
		return -1;
	if (problem) {
		tt_err_set(err, "%s", problem);
	} else {
		if (rt_store_add(st, "trainrt/problems", 0, &reported, err) != 0)
			return -1;
		if (reported == 0)
			return 0;
		if (rt_store_get(st, "trainrt/problem", msg, sizeof(msg) - 1, &len, err) != 0)
			return -1;
		msg[len] = '\0';
		tt_err_set(err, "cannot start: %s%s", msg, reported > 1 ? " (and other ranks reported problems too)" : "");
	}
	/* Every rank fails now; rank 0's store must stay until all have read why. */
	rt_store_join(st, "trainrt/problem-read", c->w.rank, &why);
	return -1;
}

/* The same agreement through node leaders (rt_node.h), so the store sees one connection and a few
 * requests per node: the ranks meet in "trainrt/start" through their leaders; each leader hands
 * its followers rank 0's settings, gathers their problems (named with their ranks), records the
 * node's first, and the leaders meet in "trainrt/checked" before each hands its node the verdict:
 * every rank fails with the first problem recorded, a rank with one of its own with its own. */
#define NODE_START "trainrt/start"

/* How long a follower waits for its leader's next word: the leader may wait a timeout for the store
 * (rank 0's settings, a rendezvous) and its grace. */
static double node_wait(const rt_world *w)
{
	return w->timeout + RT_NODE_GATHER_S + 3 * RT_STORE_JOIN_GRACE_S;
}

/* The node's problems (the first one's text in first, "rank R: why"), counted in *n. */
static void note_problem(char *first, size_t cap, int *n, int rank, const char *why)
{
	if ((*n)++ == 0)
		snprintf(first, cap, "rank %d: %s", rank, why);
}

static int lead_start(trainrt_comm *c, const struct settings *mine, const char *problem, tt_err *err)
{
	rt_store *st = c->w.store;
	struct settings theirs = *mine;
	char first[sizeof(err->msg) + 32] = "", why_text[sizeof(err->msg)], line[sizeof(first) + 64] = "";
	size_t len = 0;
	int64_t reported = 0;
	int n = 0, rc = -1;
	tt_err differ, why;

	if (c->w.rank == 0 && rt_store_set(st, "trainrt/settings", mine, sizeof(*mine), err) != 0)
		return -1;
	if (rt_node_lead(c->node, st, c->w.timeout, err) != 0)
		return -1;
	if (c->w.rank != 0) {
		if (rt_store_get(st, "trainrt/settings", &theirs, sizeof(theirs), &len, err) != 0)
			return -1;
		if (len != sizeof(theirs))
			return tt_err_set(err, "rank 0's settings have %zu bytes, not %zu: all ranks must run the same libtrainrt",
					  len, sizeof(theirs));
	}
	if (!problem && c->w.rank != 0 && theirs.valid && settings_differ(mine, &theirs, &differ) != 0)
		problem = differ.msg;
	if (problem)
		note_problem(first, sizeof(first), &n, c->w.rank, problem);
	for (int l = 1; l < c->w.local_size; l++) {
		int fd = rt_node_peer(c->node, l);

		if (fd < 0) { /* the world met without it coming here: it joined the store itself */
			note_problem(first, sizeof(first), &n, c->w.rank + l,
				     "TRAINRT_RENDEZVOUS=flat differs from its node leader's node: set it the same for every rank");
			continue;
		}
		if (rt_node_send(fd, &theirs, sizeof(theirs), c->w.timeout, &why) != 0 ||
		    rt_node_recv(fd, why_text, sizeof(why_text) - 1, &len, node_wait(&c->w), &why) != 0) {
			note_problem(first, sizeof(first), &n, c->w.rank + l,
				     "closed its connection to its node leader during the settings agreement (crashed or killed?)");
			continue;
		}
		why_text[len] = '\0';
		if (len > 0)
			note_problem(first, sizeof(first), &n, c->w.rank + l, why_text);
	}
	if (n > 0 && (rt_store_add(st, "trainrt/problems", n, &reported, err) != 0 ||
		      (reported == n && rt_store_set(st, "trainrt/problem", first, strlen(first) + 1, err) != 0)))
		goto out;
	if (rt_node_barrier(c->node, st, "trainrt/checked", c->w.timeout, err) != 0 ||
	    rt_store_add(st, "trainrt/problems", 0, &reported, err) != 0)
		goto out;
	if (reported > 0) {
		if (rt_store_get(st, "trainrt/problem", first, sizeof(first) - 1, &len, err) != 0)
			goto out;
		first[len] = '\0';
		snprintf(line, sizeof(line), "cannot start: %s%s", first,
			 reported > 1 ? " (and other ranks reported problems too)" : "");
	}
	rc = 0;
out:
	if (rc != 0)
		snprintf(line, sizeof(line), "%s", err->msg);
	/* A follower gone since is named by the line already. */
	for (int l = 1; l < c->w.local_size; l++)
		if (rt_node_peer(c->node, l) >= 0)
			rt_node_send(rt_node_peer(c->node, l), line, strlen(line), c->w.timeout, &why);
	if (rc != 0)
		return -1;
	if (!*line)
		return 0;
	if (problem)
		tt_err_set(err, "%s", problem);
	else
		tt_err_set(err, "%s", line);
	/* Every rank fails now; rank 0's store must stay until all leaders have read why. */
	rt_node_barrier(c->node, st, "trainrt/problem-read", c->w.timeout, &why);
	return -1;
}

static int follow_start(trainrt_comm *c, const struct settings *mine, const char *problem, tt_err *err)
{
	int leader = c->w.rank - c->w.local_rank;
	struct settings theirs;
	struct rt_node_whom whom;
	char line[sizeof(err->msg) + 96];
	size_t len;
	tt_err why;

	rt_node_whom_init(&whom, c->w.rank, leader);
	if (rt_node_follow_start(c->key, c->store_at, NODE_START, c->w.node, c->w.rank, leader, c->w.timeout,
				 rt_node_leader_gone, &whom, &c->node_fd, err) != 0)
		return -1;
	if (rt_node_follow_verdict(c->node_fd, NODE_START, leader, c->w.timeout, 1, err) != 0) {
		c->node_fd = -1;
		return -1;
	}
	if (rt_node_recv(c->node_fd, &theirs, sizeof(theirs), &len, node_wait(&c->w), err) != 0)
		goto gone;
	if (len != sizeof(theirs))
		return tt_err_set(err, "rank 0's settings have %zu bytes, not %zu: all ranks must run the same libtrainrt",
				  len, sizeof(theirs));
	if (!problem && theirs.valid && settings_differ(mine, &theirs, &why) != 0)
		problem = why.msg;
	if (rt_node_send(c->node_fd, problem ? problem : "", problem ? strlen(problem) : 0, c->w.timeout, err) != 0 ||
	    rt_node_recv(c->node_fd, line, sizeof(line) - 1, &len, node_wait(&c->w), err) != 0)
		goto gone;
	line[len] = '\0';
	if (len == 0)
		return 0;
	return tt_err_set(err, "%s", problem ? problem : line);
gone:
	return tt_err_set(err, "this node's leader, rank %d (LOCAL_RANK 0), closed its connection during the start "
			  "(crashed or killed?): the store names this node's ranks to the others", leader);
}

/* The agreement after the backend's set-up through node leaders (issue #32), the one owner of
 * what every rank says when the set-up failed somewhere. Without it a follower that dies during
 * the set-up is named only on its own node (its leader waited for it); the other nodes, whose
 * set-up had worked, would fail at their first collective naming their leader's broken TCP ring.
 * So every rank ends its set-up with a note to its leader (rt_node.h: DONE, its error or empty);
 * a leader whose own set-up failed first sends STOP, so a follower waiting for its data stops.
 * Each leader reads its followers' notes: a connection that closes instead is a rank that ended
 * during the set-up. The leaders record their node's problems in the store and meet in
 * "trainrt/up"; then each reads what all recorded and hands its node the one verdict: the ranks
 * that ended, named one by one (the cause), else the first error reported. When the set-up worked
 * everywhere this costs one barrier over the leaders and one counter read per node.
 *
 * "trainrt/up-problems" counts both kinds in one counter: UP_GONE per rank that ended (whose
 * count before this one numbers its key "trainrt/up-gone/<i>") plus 1 per error. */
#define UP_GONE ((int64_t)1 << 32)
#define UP_ERRORS(total) ((total) & (UP_GONE - 1))

/* The verdict from the store's record, after "trainrt/up": empty in line when nothing was. */
static int up_verdict(rt_store *st, char *line, size_t cap, tt_err *err)
{
	char gone[RT_NODE_UP_GONE_MAX][160], first[sizeof(err->msg) + 32] = "", key[64];
	const char *names[RT_NODE_UP_GONE_MAX];
	int64_t total = 0, ngone;
	int shown;
	size_t len;

	*line = '\0';
	if (rt_store_add(st, "trainrt/up-problems", 0, &total, err) != 0)
		return -1;
	if (total == 0)
		return 0;
	ngone = total / UP_GONE;
	shown = ngone < RT_NODE_UP_GONE_MAX ? (int)ngone : RT_NODE_UP_GONE_MAX;
	for (int i = 0; i < shown; i++) {
		snprintf(key, sizeof(key), "trainrt/up-gone/%d", i);
		if (rt_store_get(st, key, gone[i], sizeof(gone[i]) - 1, &len, err) != 0)
			return -1;
		gone[i][len < sizeof(gone[i]) ? len : sizeof(gone[i]) - 1] = '\0';
		names[i] = gone[i];
	}
	if (ngone == 0) {
		if (rt_store_get(st, "trainrt/up-problem", first, sizeof(first) - 1, &len, err) != 0)
			return -1;
		first[len] = '\0';
	}
	rt_node_up_line(line, cap, ngone, shown, names, UP_ERRORS(total), first);
	return 0;
}

static int lead_up(trainrt_comm *c, int built, tt_err *err)
{
	rt_store *st = c->w.store;
	double until = rt_now() + node_wait(&c->w);
	char first[sizeof(err->msg) + 32] = "", note[sizeof(err->msg)], line[RT_NODE_NOTE_MAX], host[64] = "?", key[64];
	char gone[160];
	unsigned char told[c->w.local_size];
	int64_t total = 0;
	int errors = 0, type, rc = -1;
	tt_err why, own = { "" };

	if (!built) {
		note_problem(first, sizeof(first), &errors, c->w.rank, err->msg);
		own = *err;
	}
	gethostname(host, sizeof(host) - 1);
	for (int l = 1; l < c->w.local_size; l++) {
		if (!built)
			rt_node_send_frame(rt_node_peer(c->node, l), RT_NODE_STOP, NULL, 0, 1.0, &why);
	}
	/* Every note first, so that each follower alive gets the verdict even when the store fails. */
	for (int l = 1; l < c->w.local_size; l++) {
		double left = until - rt_now();
		int fd = rt_node_peer(c->node, l); /* -1 only after a start that failed (lead_start) */

		told[l] = fd >= 0 && rt_node_recv_note(fd, &type, note, sizeof(note), left > 0 ? left : 0.001, &why) == 0 &&
			  type == RT_NODE_DONE;
		if (told[l] && *note)
			note_problem(first, sizeof(first), &errors, c->w.rank + l, note);
	}
	for (int l = 1; l < c->w.local_size; l++) {
		if (told[l])
			continue;
		snprintf(gone, sizeof(gone), "rank %d (LOCAL_RANK %d) on node %d (host %.40s)", c->w.rank + l, l, c->w.node, host);
		if (rt_store_add(st, "trainrt/up-problems", UP_GONE, &total, err) != 0)
			goto out;
		snprintf(key, sizeof(key), "trainrt/up-gone/%lld", (long long)(total / UP_GONE - 1));
		if (rt_store_set(st, key, gone, strlen(gone), err) != 0)
			goto out;
	}
	if (errors > 0 && (rt_store_add(st, "trainrt/up-problems", errors, &total, err) != 0 ||
			   (UP_ERRORS(total) == errors && rt_store_set(st, "trainrt/up-problem", first, strlen(first) + 1, err) != 0)))
		goto out;
	if (rt_node_barrier(c->node, st, "trainrt/up", c->w.timeout, err) != 0 ||
	    up_verdict(st, line, sizeof(line), err) != 0)
		goto out;
	rc = 0;
out:
	/* An agreement that could not run (the store gone, or lost after a wait in the set-up timed
	 * out): the leader's own error, when it had one, says more than the store's. */
	if (rc != 0 && !built)
		*err = own;
	if (rc != 0)
		snprintf(line, sizeof(line), "%s", err->msg);
	for (int l = 1; l < c->w.local_size; l++)
		if (told[l])
			rt_node_send_frame(rt_node_peer(c->node, l), RT_NODE_DONE, line, strlen(line), c->w.timeout, &why);
	if (rc != 0)
		return -1;
	if (!*line)
		return 0;
	tt_err_set(err, "%s", line);
	/* Every rank fails now; rank 0's store must stay until all leaders have read why. */
	rt_node_barrier(c->node, st, "trainrt/up-read", c->w.timeout, &why);
	return -1;
}

static int follow_up(trainrt_comm *c, int built, tt_err *err)
{
	/* The leader reads its node's notes (node_wait), then meets the other leaders. */
	double wait = 2 * node_wait(&c->w);
	char note[RT_NODE_NOTE_MAX], mine[RT_NODE_NOTE_MAX];
	int type = RT_NODE_STOP;
	tt_err why;

	snprintf(mine, sizeof(mine), "%s", built ? "" : err->msg);
	if (rt_node_send_frame(c->node_fd, RT_NODE_DONE, mine, strlen(mine), c->w.timeout, &why) != 0)
		goto gone;
	while (type == RT_NODE_STOP)
		if (rt_node_recv_note(c->node_fd, &type, note, sizeof(note), wait, &why) != 0)
			goto gone;
	if (!*note)
		return 0;
	return tt_err_set(err, "%s", note);
gone:
	return tt_err_set(err, "this node's leader, rank %d (LOCAL_RANK 0), closed its connection after the backend's "
			  "set-up (crashed or killed?): the store names this node's ranks to the others",
			  c->w.rank - c->w.local_rank);
}

/* ---- progress thread ---------------------------------------------------------------------- */

void rt_comm_fail_locked(trainrt_comm *c, const char *msg)
{
	tt_err err;

	if (c->failed)
		return;
	c->failed = 1;
	if (c->is_group)
		snprintf(c->errmsg, sizeof(c->errmsg), "trainrt: rank %d (rank %d of a group of %d): %s", c->world_rank,
			 c->w.rank, c->w.size, msg);
	else
		snprintf(c->errmsg, sizeof(c->errmsg), "trainrt: rank %d: %s", c->w.rank, msg);
	snprintf(err.msg, sizeof(err.msg), "%.1000s", c->errmsg);
	if (c->be && c->be->ops->abort)
		c->be->ops->abort(c->be, &err);
	pthread_cond_broadcast(&c->cond);
}

int rt_comm_run_locked(trainrt_comm *c, const rt_op *op)
{
	tt_err err = { "" };
	int rc;

	if (c->failed)
		return -1;
	pthread_mutex_unlock(&c->lock);
	rc = rt_backend_run(c->be, op, &err);
	pthread_mutex_lock(&c->lock);
	if (rc != 0)
		rt_comm_fail_locked(c, err.msg);
	else
		c->bytes_sent += rt_op_wire_bytes(op, c->w.size, c->w.rank);
	return rc;
}

static void *progress_main(void *arg)
{
	trainrt_comm *c = arg;

	pthread_mutex_lock(&c->lock);
	for (;;) {
		trainrt_req *r;
		int rc;

		while ((!c->head && !c->stopping) || c->inline_busy)
			pthread_cond_wait(&c->cond, &c->lock);
		if (!c->head)
			break;
		r = c->head;
		rc = rt_comm_run_locked(c, &r->op); /* r stays at the head while it runs (rt_comm_hold) */
		c->head = r->next;
		if (!c->head)
			c->tail = NULL;
		r->rc = rc;
		r->done = 1;
		pthread_cond_broadcast(&c->cond);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* Records msg as the last error unless the communicator already failed (whose first error
 * stays); fail marks it failed. Bad arguments fail it: ranks would otherwise drift apart in the
 * sequence of collectives. An exhausted arena or a store timeout only reports. */
static void record(trainrt_comm *c, int fail, const char *msg)
{
	pthread_mutex_lock(&c->lock);
	if (fail)
		rt_comm_fail_locked(c, msg);
	else if (!c->failed)
		snprintf(c->errmsg, sizeof(c->errmsg), "trainrt: rank %d: %s", c->world_rank, msg);
	pthread_mutex_unlock(&c->lock);
}

void rt_comm_error(trainrt_comm *c, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	record(c, 1, msg);
}

/* Checks the arguments of one collective and describes it in *o (all but the sequence). */
static int prepare(trainrt_comm *c, rt_op *o, rt_kind kind, const void *send, void *recv, size_t count,
		   trainrt_dtype dtype, trainrt_redop op, int root)
{
	if (dtype != TRAINRT_FLOAT32 && dtype != TRAINRT_BF16) {
		rt_comm_error(c, "unknown dtype %d (use TRAINRT_FLOAT32 or TRAINRT_BF16)", (int)dtype);
		return -1;
	}
	if (op != TRAINRT_SUM && op != TRAINRT_AVG && op != TRAINRT_MAX) {
		rt_comm_error(c, "unknown reduction %d (use TRAINRT_SUM, TRAINRT_AVG or TRAINRT_MAX)", (int)op);
		return -1;
	}
	if (kind == RT_BROADCAST && (root < 0 || root >= c->w.size)) {
		rt_comm_error(c, "broadcast root %d is not a rank of this world of %d", root, c->w.size);
		return -1;
	}
	if (count > 0 && (!recv || (kind != RT_BROADCAST && !send))) {
		rt_comm_error(c, "NULL buffer passed for %zu elements", count);
		return -1;
	}
	*o = (rt_op){ .hdr = { .kind = kind, .dtype = dtype, .redop = op, .root = root, .count = count },
		      .send = send, .recv = recv };
	return 0;
}

/* Queues a collective for the progress thread; ready (optional) orders it after device work. */
static trainrt_req *submit_after(trainrt_comm *c, rt_kind kind, const void *send, void *recv, size_t count,
				 trainrt_dtype dtype, trainrt_redop op, int root, trainrt_ready_fn ready, void *arg)
{
	trainrt_req *r;

	if (!c)
		return NULL;
	r = calloc(1, sizeof(*r));
	if (!r) {
		rt_comm_error(c, "out of memory queueing a collective");
		return NULL;
	}
	if (prepare(c, &r->op, kind, send, recv, count, dtype, op, root) != 0) {
		free(r);
		return NULL;
	}
	r->op.ready = ready;
	r->op.ready_arg = arg;
	return rt_comm_enqueue(c, r, 1);
}

trainrt_req *rt_comm_enqueue(trainrt_comm *c, trainrt_req *r, int collective)
{
	pthread_mutex_lock(&c->lock);
	if (c->failed) {
		pthread_mutex_unlock(&c->lock);
		free(r);
		return NULL;
	}
	if (collective)
		r->op.hdr.seq = ++c->seq;
	if (c->tail)
		c->tail->next = r;
	else
		c->head = r;
	c->tail = r;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	return r;
}

static trainrt_req *submit(trainrt_comm *c, rt_kind kind, const void *send, void *recv, size_t count,
			   trainrt_dtype dtype, trainrt_redop op, int root)
{
	return submit_after(c, kind, send, recv, count, dtype, op, root, NULL, NULL);
}

/* A blocking collective. With nothing queued it runs on the caller's thread (no hand-off to
 * the progress thread and back, which dominates small operations); otherwise it queues behind
 * the pending ones, keeping issue order. */
static int run_blocking(trainrt_comm *c, rt_kind kind, const void *send, void *recv, size_t count,
			trainrt_dtype dtype, trainrt_redop op, int root)
{
	rt_op o;
	int rc;

	if (!c || prepare(c, &o, kind, send, recv, count, dtype, op, root) != 0)
		return -1;
	pthread_mutex_lock(&c->lock);
	if (c->failed) {
		pthread_mutex_unlock(&c->lock);
		return -1;
	}
	if (c->head || c->inline_busy) {
		pthread_mutex_unlock(&c->lock);
		return trainrt_wait(c, submit(c, kind, send, recv, count, dtype, op, root));
	}
	c->inline_busy = 1;
	o.hdr.seq = ++c->seq;
	rc = rt_comm_run_locked(c, &o);
	c->inline_busy = 0;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int rt_comm_hold(trainrt_comm *c)
{
	pthread_mutex_lock(&c->lock);
	while ((c->head || c->inline_busy) && !c->failed)
		pthread_cond_wait(&c->cond, &c->lock);
	if (c->failed) {
		pthread_mutex_unlock(&c->lock);
		return -1;
	}
	c->inline_busy = 1;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

void rt_comm_release(trainrt_comm *c)
{
	pthread_mutex_lock(&c->lock);
	c->inline_busy = 0;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

int trainrt_test(trainrt_comm *c, trainrt_req *r)
{
	int done;

	if (!r)
		return 1;
	pthread_mutex_lock(&c->lock);
	done = r->done;
	pthread_mutex_unlock(&c->lock);
	return done;
}

int trainrt_wait(trainrt_comm *c, trainrt_req *r)
{
	int rc;

	if (!r)
		return -1;
	pthread_mutex_lock(&c->lock);
	while (!r->done)
		pthread_cond_wait(&c->cond, &c->lock);
	rc = r->rc;
	pthread_mutex_unlock(&c->lock);
	free(r);
	return rc;
}

trainrt_req *trainrt_iallreduce(trainrt_comm *c, const void *send, void *recv, size_t count,
				trainrt_dtype dtype, trainrt_redop op)
{
	return submit(c, RT_ALLREDUCE, send, recv, count, dtype, op, 0);
}

trainrt_req *trainrt_iallreduce_after(trainrt_comm *c, const void *send, void *recv, size_t count,
				      trainrt_dtype dtype, trainrt_redop op, trainrt_ready_fn ready, void *arg)
{
	return submit_after(c, RT_ALLREDUCE, send, recv, count, dtype, op, 0, ready, arg);
}

trainrt_req *trainrt_iallgather(trainrt_comm *c, const void *send, void *recv, size_t count,
				trainrt_dtype dtype)
{
	return submit(c, RT_ALLGATHER, send, recv, count, dtype, TRAINRT_SUM, 0);
}

trainrt_req *trainrt_ireducescatter(trainrt_comm *c, const void *send, void *recv, size_t count,
				    trainrt_dtype dtype, trainrt_redop op)
{
	return submit(c, RT_REDUCESCATTER, send, recv, count, dtype, op, 0);
}

trainrt_req *trainrt_ibroadcast(trainrt_comm *c, void *buf, size_t count, trainrt_dtype dtype, int root)
{
	return submit(c, RT_BROADCAST, buf, buf, count, dtype, TRAINRT_SUM, root);
}

int trainrt_allreduce(trainrt_comm *c, const void *send, void *recv, size_t count,
		      trainrt_dtype dtype, trainrt_redop op)
{
	return run_blocking(c, RT_ALLREDUCE, send, recv, count, dtype, op, 0);
}

int trainrt_allgather(trainrt_comm *c, const void *send, void *recv, size_t count, trainrt_dtype dtype)
{
	return run_blocking(c, RT_ALLGATHER, send, recv, count, dtype, TRAINRT_SUM, 0);
}

int trainrt_reducescatter(trainrt_comm *c, const void *send, void *recv, size_t count,
			  trainrt_dtype dtype, trainrt_redop op)
{
	return run_blocking(c, RT_REDUCESCATTER, send, recv, count, dtype, op, 0);
}

int trainrt_broadcast(trainrt_comm *c, void *buf, size_t count, trainrt_dtype dtype, int root)
{
	return run_blocking(c, RT_BROADCAST, buf, buf, count, dtype, TRAINRT_SUM, root);
}

int trainrt_barrier(trainrt_comm *c)
{
	return run_blocking(c, RT_BARRIER, NULL, NULL, 0, TRAINRT_FLOAT32, TRAINRT_SUM, 0);
}

/* ---- setup and teardown ------------------------------------------------------------------- */

/* The world's name for the node sockets: the store's "host:port". */
static void name_world(trainrt_comm *c, const char *addr, int port)
{
	snprintf(c->store_at, sizeof(c->store_at), "%s:%d", addr, port);
}

/* Rank 0 serves the store, listening only on MASTER_ADDR's address when that is this host's
 * (a loopback address of a name only when the whole job runs here), else on all addresses;
 * under PMIx it then publishes "host port" so the others learn where it is. A node leader listens
 * for its node first, where the store's address is known before (not under PMIx), so that its
 * ranks hear of every later failure of its (trainrt_init_for: rt_node_refuse). */
static int rendezvous(trainrt_comm *c, char *addr, int port, tt_err *err)
{
	char where[300];
	int lead = c->node_rdv && c->w.local_rank == 0;

	if (lead && !c->pmix) {
		name_world(c, addr, port);
		if (!(c->node = rt_node_listen(c->key, c->store_at, NODE_START, c->w.node, c->w.rank, c->w.local_size, err)))
			return -1;
	}
	if (c->w.rank == 0) {
		c->server = rt_store_server_start(addr, port, c->w.local_size == c->w.size, c->key,
						  c->w.size, err);
		if (!c->server)
			return tt_err_wrap(err, "starting the rendezvous store");
		port = rt_store_server_port(c->server);
	}
	if (c->pmix) {
		snprintf(where, sizeof(where), "%s %d", addr, port);
		if (rt_pmix_share_store(c->w.rank, where, sizeof(where), c->w.timeout, err) != 0)
			return -1;
		if (sscanf(where, "%255s %d", addr, &port) != 2)
			return tt_err_set(err, "malformed store address '%s' from PMIx", where);
	}
	{
		unsigned char probe[4];

		c->w.master_is_name = inet_pton(AF_INET, addr, probe) != 1;
	}
	name_world(c, addr, port);
	if (c->node_rdv && c->w.local_rank != 0) {
		c->w.store = rt_store_lazy(addr, port, c->key, c->w.size, c->w.timeout, err);
		return c->w.store ? 0 : -1;
	}
	if (lead && !c->node &&
	    !(c->node = rt_node_listen(c->key, c->store_at, NODE_START, c->w.node, c->w.rank, c->w.local_size, err)))
		return -1;
	c->w.store = rt_store_connect(addr, port, c->key, c->w.size, c->w.timeout, err);
	return c->w.store ? 0 : -1;
}

/* Under PMIx, rank 0's address is MASTER_ADDR when set, else its host name. */
static int pmix_world(trainrt_comm *c, char *addr, size_t alen, int *port, tt_err *err)
{
	const char *ma = getenv(TT_ENV_MASTER_ADDR);

	c->pmix = 1;
	if (rt_pmix_init(&c->w, err) != 0)
		return -1;
	if (env_int(TT_ENV_MASTER_PORT, 0, 65535, port, 0, 0, err) != 0)
		return -1;
	if (ma && *ma)
		snprintf(addr, alen, "%s", ma);
	else if (gethostname(addr, alen) != 0)
		return tt_err_errno(err, "cannot read the host name");
	return 0;
}

/* Point-to-point state (comm_p2p.c): the message counters and one queue per peer and direction,
 * whose threads comm_p2p.c starts on first use; p2p_stop joins them once their queues ran out,
 * before the backend goes. */
static int p2p_init(trainrt_comm *c, tt_err *err)
{
	int n = c->w.size;

	c->p2p_seq = calloc(2 * (size_t)n, sizeof(uint64_t));
	c->chans = calloc(2 * (size_t)n, sizeof(rt_chan));
	if (!c->p2p_seq || !c->chans)
		return tt_err_set(err, "out of memory for the point-to-point state of %d ranks", n);
	for (int i = 0; i < 2 * n; i++) {
		c->chans[i].peer = i / 2;
		c->chans[i].sending = i % 2;
		c->chans[i].comm = c;
	}
	return 0;
}

static void p2p_stop(trainrt_comm *c)
{
	if (!c->chans)
		return;
	pthread_mutex_lock(&c->lock);
	c->stopping = 1;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	for (int i = 0; i < 2 * c->w.size; i++)
		if (c->chans[i].started)
			pthread_join(c->chans[i].thread, NULL);
	free(c->chans);
	free(c->p2p_seq);
	c->chans = NULL;
	c->p2p_seq = NULL;
}

int rt_comm_start(trainrt_comm *c, tt_err *err)
{
	if (p2p_init(c, err) != 0)
		return -1;
	if (pthread_create(&c->progress, NULL, progress_main, c) != 0)
		return tt_err_set(err, "cannot start the progress thread");
	c->progress_started = 1;
	return 0;
}

trainrt_comm *rt_comm_new_group(void)
{
	trainrt_comm *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	c->is_group = 1;
	c->w.ns = c->ns;
	c->node_fd = -1;
	return c;
}

trainrt_comm *trainrt_init(char *errbuf, size_t errlen)
{
	return trainrt_init_for(TRAINRT_BUFFERS_ANY, errbuf, errlen);
}

trainrt_comm *trainrt_init_for(trainrt_buffers where, char *errbuf, size_t errlen)
{
	trainrt_comm *c = calloc(1, sizeof(*c));
	tt_err err = { "" }, problem = { "" };
	struct settings mine = { .valid = 0 };
	const char *bad_setting;
	char addr[256];
	int port = 0, bad;

	if (!c) {
		snprintf(errbuf, errlen, "trainrt: out of memory");
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	c->w.ns = c->ns;
	c->node_fd = -1;
	c->w.timeout = env_timeout(&problem, &bad);
	if (rt_pmix_detected()) {
		if (pmix_world(c, addr, sizeof(addr), &port, &err) != 0)
			goto fail;
	} else if (read_env(&c->w, addr, sizeof(addr), &port, &err) != 0) {
		goto fail;
	}
	if (check_layout(&c->w, &err) != 0 || rt_token_load(c->key, &err) != 0 ||
	    rt_token_label(c->key, &c->w.key_label, &err) != 0)
		goto fail;
	c->w.key = c->key;
	c->world_rank = c->w.rank;
	c->world_node = c->w.node;
	/* A bad setting of this rank is told to the others before it fails (agree_settings). */
	mine.node_rdv = node_by_default(&c->w);
	if (!bad)
		read_settings(&c->w, where, &mine, &problem);
	c->node_rdv = mine.node_rdv;
	bad_setting = mine.valid ? NULL : problem.msg;
	if (rendezvous(c, addr, port, &err) != 0)
		goto fail;
	if (!c->node_rdv ? agree_settings(c, &mine, bad_setting, &err) != 0
	    : c->w.local_rank == 0 ? lead_start(c, &mine, bad_setting, &err) != 0
				   : follow_start(c, &mine, bad_setting, &err) != 0)
		goto fail;
	if (c->node_rdv) { /* the backends' node-wide exchanges go through the leader too */
		c->w.via_leaders = 1;
		c->w.node_fd = c->node_fd;
		c->w.node_leader = c->node;
	}
	c->be = build_backend(&c->w, (enum backend_kind)mine.backend, &err);
	if (c->node_rdv && (c->w.local_rank == 0 ? lead_up(c, c->be != NULL, &err) : follow_up(c, c->be != NULL, &err)) != 0)
		goto fail;
	if (!c->be || rt_comm_start(c, &err) != 0)
		goto fail;
	return c;
fail:
	snprintf(errbuf, errlen, "trainrt: rank %d: %s", c->w.rank, err.msg);
	if (c->node) {
		char line[sizeof(err.msg) + 96];

		snprintf(line, sizeof(line), "this node's leader, rank %d (LOCAL_RANK 0), failed at its start: %s", c->w.rank,
			 err.msg);
		rt_node_refuse(c->node, line, c->w.timeout);
	}
	c->failed = 1;
	trainrt_finalize(c);
	return NULL;
}

/* Rank 0 keeps the store up until every rank has said goodbye, so late store users never see
 * it vanish; a failed communicator skips this (its peers may be dead). Through node leaders a
 * follower's goodbye is closing its connection to its leader, which then says it for the node. */
static void goodbye(trainrt_comm *c)
{
	tt_err err;
	int64_t n = 0;
	char flag = 0;
	size_t len;

	if (!c->w.store || c->failed || c->w.size == 1 || c->is_group)
		return;
	if (c->node && rt_node_goodbyes(c->node, c->w.timeout) != 0)
		return;
	if (rt_store_add(c->w.store, "finalize/count", c->node ? c->w.local_size : 1, &n, &err) != 0)
		return;
	if (n == c->w.size)
		rt_store_set(c->w.store, "finalize/done", "1", 1, &err);
	if (c->w.rank == 0)
		rt_store_get(c->w.store, "finalize/done", &flag, 1, &len, &err);
}

void trainrt_finalize(trainrt_comm *c)
{
	if (!c)
		return;
	if (c->progress_started) {
		pthread_mutex_lock(&c->lock);
		c->stopping = 1;
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->lock);
		pthread_join(c->progress, NULL);
	}
	p2p_stop(c);
	if (c->node_fd >= 0)
		close(c->node_fd);
	else
		goodbye(c);
	rt_node_close(c->node);
	if (c->be)
		c->be->ops->destroy(c->be);
	if (!c->is_group)
		rt_store_close(c->w.store);
	rt_store_server_stop(c->server);
	if (c->pmix)
		rt_pmix_finalize();
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	free(c->world_ranks);
	free(c);
}

/* ---- accessors, memory, store ------------------------------------------------------------- */

int trainrt_rank(const trainrt_comm *c) { return c->w.rank; }
int trainrt_world_size(const trainrt_comm *c) { return c->w.size; }
int trainrt_local_rank(const trainrt_comm *c) { return c->w.local_rank; }
int trainrt_local_world_size(const trainrt_comm *c) { return c->w.local_size; }
const char *trainrt_backend_name(const trainrt_comm *c) { return c->be->ops->name; }
int trainrt_buffers_on_device(const trainrt_comm *c) { return c->be->ops->on_device; }

const char *trainrt_last_error(const trainrt_comm *c)
{
	return c->errmsg;
}

uint64_t trainrt_bytes_sent(trainrt_comm *c)
{
	uint64_t n;

	if (!c)
		return 0;
	pthread_mutex_lock(&c->lock);
	n = c->bytes_sent;
	pthread_mutex_unlock(&c->lock);
	return n;
}

void *trainrt_alloc(trainrt_comm *c, size_t bytes)
{
	tt_err err = { "" };
	void *p = NULL;

	if (c->be->ops->alloc) {
		pthread_mutex_lock(&c->lock);
		p = c->be->ops->alloc(c->be, bytes, &err);
		pthread_mutex_unlock(&c->lock);
	} else if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0) {
		p = NULL;
		tt_err_set(&err, "out of memory allocating %zu bytes", bytes);
	}
	if (!p)
		record(c, 0, err.msg);
	return p;
}

void trainrt_free(trainrt_comm *c, void *ptr)
{
	if (!ptr)
		return;
	if (c->be->ops->free) {
		pthread_mutex_lock(&c->lock);
		c->be->ops->free(c->be, ptr);
		pthread_mutex_unlock(&c->lock);
		return;
	}
	free(ptr);
}

static int store_result(trainrt_comm *c, int rc, tt_err *err)
{
	if (rc != 0)
		record(c, 0, err->msg);
	return rc;
}

int trainrt_store_set(trainrt_comm *c, const char *key, const void *val, size_t len)
{
	tt_err err;
	char full[2 * RT_STORE_MAX_KEY + 8]; /* room for the namespace: the store refuses keys too long */

	snprintf(full, sizeof(full), "%suser/%s", c->ns, key);
	return store_result(c, rt_store_set(c->w.store, full, val, len, &err), &err);
}

int trainrt_store_get(trainrt_comm *c, const char *key, void *val, size_t cap, size_t *len)
{
	tt_err err;
	char full[2 * RT_STORE_MAX_KEY + 8]; /* room for the namespace: the store refuses keys too long */

	snprintf(full, sizeof(full), "%suser/%s", c->ns, key);
	return store_result(c, rt_store_get(c->w.store, full, val, cap, len, &err), &err);
}

int trainrt_store_add(trainrt_comm *c, const char *key, int64_t delta, int64_t *result)
{
	tt_err err;
	char full[2 * RT_STORE_MAX_KEY + 8]; /* room for the namespace: the store refuses keys too long */

	snprintf(full, sizeof(full), "%suser/%s", c->ns, key);
	return store_result(c, rt_store_add(c->w.store, full, delta, result, &err), &err);
}
