/*
 * replica.c - partition roles from LeaderAndIsr, the leader's side of its
 * followers' fetches and the acks=all produces waiting for the high
 * watermark (replica.h; the ISR and the high watermark over it are in
 * replica_isr.c).
 *
 * The states hang in a hash by (topic, partition) (replica_table.c).  A state names its
 * partition, never holds its struct part: the log is looked up when
 * needed (repl_part), so a topic made after its LeaderAndIsr, or deleted
 * meanwhile, is simply found or not.  A role is applied to the log once
 * per leader epoch (applied_epoch): at the LeaderAndIsr if the log
 * exists, else by the next replica_tick once it does.
 *
 * acks=all waits: each parked produce is a set of (partition, offset
 * needed) in its arena, on one list.  When a high watermark moves (a
 * follower's fetch, a sync round, a new LeaderAndIsr) the list is marked
 * and replica_after_events checks it once at the end of the loop pass.
 */
#include "broker/replica.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/api.h"
#include "broker/broker.h"
#include "broker/fetch_park.h"
#include "broker/registry.h"
#include "broker/replica_int.h"
#include "broker/replica_isr.h"
#include "broker/syncer.h"
#include "log/partition.h"
#include "proto/kerr.h"
#include "util/clock.h"
#include "util/durable.h"
#include "util/log.h"

/* One partition an acks=all produce waits for. */
struct repl_wait_tgt {
	struct kstr topic;
	int32_t partition;
	int64_t need; /* the high watermark that covers the batch */
	int16_t *err; /* the answer's error code */
	bool coord;   /* a coordinator's write: Kafka's coordinator error codes */
	bool done;
};

/* A parked acks=all produce (rq->hold; memory from its arena). */
struct repl_wait_set {
	struct req *rq;
	struct repl_wait_tgt *v;
	int32_t n, cap;
	uint64_t ticket; /* the syncer round its other partitions need */
	void (*fail)(struct req *rq);
	void (*done)(struct req *rq);        /* replica_wait_done: called just before the answer */
	struct repl_wait_set *next, **pprev; /* pprev NULL: not parked */
};

/* The coordinators following their partitions' leadership (replica_on_role). */
static replica_role_fn *replica_role_fns[REPLICA_ROLE_LISTENERS];

int replica_on_role(replica_role_fn *fn)
{
	for (int i = 0; i < REPLICA_ROLE_LISTENERS; i++)
		if (!replica_role_fns[i] || replica_role_fns[i] == fn) {
			replica_role_fns[i] = fn;
			return 0;
		}
	return -ENOSPC;
}

int16_t replica_on_follower_fetch(struct broker *b, const struct topic *t, int32_t partition, struct part *part,
				  int32_t replica_id, int32_t leader_epoch, int64_t fetch_offset)
{
	struct replica *r = replica_find(b, t->name, partition);
	int64_t now = clock_mono_ms(), leo = part_log_end_offset(part);
	struct replica_follower *f = NULL;

	if (!r || r->leader != b->node_id)
		return KERR_NOT_LEADER_OR_FOLLOWER;
	for (int32_t i = 0; i < r->nfollowers && !f; i++)
		if (r->followers[i].id == replica_id)
			f = &r->followers[i];
	if (!f)
		return KERR_NOT_LEADER_OR_FOLLOWER;
	if (leader_epoch >= 0 && leader_epoch != r->leader_epoch) /* Kafka's checks of CurrentLeaderEpoch */
		return leader_epoch < r->leader_epoch ? KERR_FENCED_LEADER_EPOCH : KERR_UNKNOWN_LEADER_EPOCH;
	if (fetch_offset > leo)
		return KERR_OFFSET_OUT_OF_RANGE; /* more than the leader has: never counted in the high watermark */
	/* Kafka's rule: caught up now if it has the log end; else as of its last fetch if it had what that saw */
	if (fetch_offset >= leo)
		f->last_caught_up_ms = now;
	else if (f->last_fetch_ms >= 0 && fetch_offset >= f->last_fetch_leader_leo)
		f->last_caught_up_ms =
			f->last_fetch_ms > f->last_caught_up_ms ? f->last_fetch_ms : f->last_caught_up_ms;
	f->last_fetch_leader_leo = leo;
	f->last_fetch_ms = now;
	if (fetch_offset != f->fetch_offset) {
		f->fetch_offset = fetch_offset;
		repl_update_hw(b->repl, r, part);
	}
	repl_isr_maybe_expand(b->repl, r, part, f);
	return KERR_NONE;
}

/* ---- roles ---- */

void replica_truncate_on_become_follower(struct broker *b, struct replica *r, struct part *part)
{
	(void)b;
	(void)part;
	r->truncating = true; /* replica_fetch.c asks the leader before fetching */
}

/* Applies r's role to its log, once per leader epoch; false if the log is not there yet. */
static bool repl_apply(struct repl *rp, struct replica *r)
{
	struct broker *b = rp->b;
	struct part *part = repl_part(rp, r);
	int err = 0;

	if (!part) {
		rp->unapplied = true; /* replica_on_made tries again once logs are made */
		return false;
	}
	if (r->applied_epoch == r->leader_epoch)
		return true;
	if (!r->hw_restored) { /* after a restart the log end may hold what the ISR did not have */
		part_restore_hw(part, ckpt_map_find(rp->hw_start, r->topic, r->partition));
		r->hw_restored = true;
	}
	if (r->leader == b->node_id) {
		if (part_leader_epoch(part) != r->leader_epoch)
			err = part_set_leader_epoch(part, r->leader_epoch);
		r->epoch_start_offset = part_log_end_offset(part);
		r->truncating = false;
		repl_update_hw(rp, r, part);
	} else {
		replica_truncate_on_become_follower(b, r, part);
		part_set_hw_limit(part, part_high_watermark(part)); /* the leader's answers move it from here */
		repl_fetchers_kick(rp);
	}
	if (err)
		log_error("replica: '%s-%d': cannot record leader epoch %d: %s", r->topic, r->partition,
			  r->leader_epoch, strerror(-err));
	log_info("replica: '%s-%d' is %s (leader %d, leader epoch %d, isr %d of %d replicas)", r->topic, r->partition,
		 r->leader == b->node_id ? "leader" : "follower", r->leader, r->leader_epoch, r->isr.n, r->replicas.n);
	r->applied_epoch = r->leader_epoch;
	for (int i = 0; i < REPLICA_ROLE_LISTENERS && replica_role_fns[i]; i++)
		replica_role_fns[i](b, r->topic, r->partition, r->leader == b->node_id);
	return true;
}

/* The leader's followers: every replica but this broker, keeping what is known of those that stay. */
static int repl_set_followers(struct replica *r, int32_t self)
{
	struct replica_follower *v = calloc((size_t)(r->replicas.n ? r->replicas.n : 1), sizeof(*v));
	int64_t now = clock_mono_ms();
	int32_t n = 0;

	if (!v)
		return -ENOMEM;
	for (int32_t i = 0; i < r->replicas.n; i++) {
		int32_t id = r->replicas.v[i];

		if (id == self)
			continue;
		v[n] = (struct replica_follower){ id, -1, -1, 0, now }; /* Kafka: caught up as of the election */
		for (int32_t j = 0; j < r->nfollowers; j++)
			if (r->followers[j].id == id && r->applied_epoch == r->leader_epoch)
				v[n] = r->followers[j];
		n++;
	}
	free(r->followers);
	r->followers = v;
	r->nfollowers = n;
	return 0;
}

static struct replica *repl_new_state(struct repl *rp, struct kstr topic, int32_t partition)
{
	struct replica **pp = repl_slot(rp, topic.p, topic.len, partition);
	struct replica *r = calloc(1, sizeof(*r));

	if (!r || !(r->topic = strndup(topic.p, (size_t)topic.len))) {
		free(r);
		return NULL;
	}
	r->partition = partition;
	r->leader = -1;
	r->leader_epoch = r->applied_epoch = -1;
	r->leader_hw = -1;
	*pp = r;
	return r;
}

int16_t replica_leader_and_isr(struct broker *b, struct kstr topic, const struct LeaderAndIsrPartitionState *ps)
{
	struct repl *rp = b->repl;
	struct replica *r = *repl_slot(rp, topic.p, topic.len, ps->PartitionIndex);

	if (r && ps->LeaderEpoch < r->leader_epoch)
		return KERR_STALE_CONTROLLER_EPOCH; /* an older leader epoch than the one held */
	if (!r && !(r = repl_new_state(rp, topic, ps->PartitionIndex)))
		return KERR_UNKNOWN_SERVER_ERROR;
	if (ps->LeaderEpoch != r->leader_epoch || ps->Leader != r->leader)
		r->applied_epoch = -1;
	if (ps->LeaderEpoch != r->leader_epoch || ps->ZkVersion != r->partition_epoch)
		repl_isr_reset(r);
	r->leader = ps->Leader;
	r->leader_epoch = ps->LeaderEpoch;
	if (repl_ids_set(&r->replicas, &ps->Replicas) || repl_set_followers(r, b->node_id) ||
	    replica_set_isr(b, r, &ps->Isr, ps->ZkVersion))
		return KERR_UNKNOWN_SERVER_ERROR;
	repl_apply(rp, r);
	return KERR_NONE;
}

void replica_set_leaders(struct broker *b, const struct LeaderAndIsrLiveLeader *v, int32_t n)
{
	struct repl *rp = b->repl;
	struct replica_leader_ep *eps = calloc((size_t)(n > 0 ? n : 1), sizeof(*eps));

	if (!eps)
		return;
	for (int32_t i = 0; i < n; i++) {
		const char *host;
		int32_t port;

		eps[i].id = v[i].BrokerId;
		snprintf(eps[i].host, sizeof(eps[i].host), "%.*s", v[i].HostName.len, v[i].HostName.p);
		eps[i].port = v[i].Port;
		if (broker_endpoint_inter(b, eps[i].id, &host, &port)) { /* the inter-broker listener's, Kafka's way */
			snprintf(eps[i].host, sizeof(eps[i].host), "%s", host);
			eps[i].port = port;
		} /* else the controller's: the same listener's, port 0 when that broker has none */
	}
	free(rp->leaders);
	rp->leaders = eps;
	rp->nleaders = n > 0 ? n : 0;
	repl_fetchers_sync(rp);
}

static void repl_free_state(struct replica *r)
{
	free(r->topic);
	free(r->replicas.v);
	free(r->isr.v);
	free(r->pending_isr.v);
	free(r->followers);
	free(r);
}

/* Forgets the roles of topic's partition (-1: all of them). */
static void repl_forget(struct broker *b, const char *topic, int32_t partition)
{
	if (!b->repl)
		return;
	for (int i = 0; i < REPL_BUCKETS; i++)
		for (struct replica **pp = &b->repl->buckets[i]; *pp;) {
			struct replica *r = *pp;

			if (strcmp(r->topic, topic) || (partition >= 0 && r->partition != partition)) {
				pp = &r->next;
				continue;
			}
			*pp = r->next;
			repl_free_state(r);
		}
	repl_fetchers_sync(b->repl);
	b->repl->waits_dirty = true;
}

void replica_forget_topic(struct broker *b, const char *topic)
{
	repl_forget(b, topic, -1);
}

void replica_forget_partition(struct broker *b, const char *topic, int32_t partition)
{
	repl_forget(b, topic, partition);
}

static void repl_apply_pending(struct repl *rp, struct replica *r, void *arg)
{
	(void)arg;
	if (r->applied_epoch != r->leader_epoch)
		repl_apply(rp, r);
}

void replica_on_made(struct broker *b)
{
	struct repl *rp = b->repl;

	if (!rp || !rp->unapplied)
		return;
	rp->unapplied = false; /* set again by a role whose log is still not there */
	repl_foreach(rp, repl_apply_pending, NULL);
}

/* ---- acks=all waits ---- */

void replica_wait_add(struct req *rq, struct kstr topic, int32_t partition, int64_t need, int16_t *err, bool coord)
{
	struct repl_wait_set *ws = rq->hold;

	if (!ws) {
		rq->hold = ws = req_alloc(rq, 1, sizeof(*ws));
		ws->rq = rq;
	}
	if (ws->n == ws->cap) {
		int32_t cap = ws->cap ? ws->cap * 2 : 8;
		struct repl_wait_tgt *v = req_alloc(rq, (size_t)cap, sizeof(*v));

		if (ws->n)
			memcpy(v, ws->v, (size_t)ws->n * sizeof(*v));
		ws->v = v;
		ws->cap = cap;
	}
	ws->v[ws->n++] = (struct repl_wait_tgt){ topic, partition, need, err, coord, false };
}

/* A failed wait's answer; a coordinator's as Kafka maps append errors for its clients. */
static void repl_wait_fail(struct repl_wait_tgt *w, int16_t kerr)
{
	if (w->coord)
		kerr = kerr == KERR_NOT_LEADER_OR_FOLLOWER ? KERR_NOT_COORDINATOR : KERR_COORDINATOR_NOT_AVAILABLE;
	*w->err = kerr;
}

int16_t replica_hw_covers(struct broker *b, struct kstr topic, int32_t partition, int64_t need, bool *met)
{
	struct topic *t = registry_find(b->reg, topic);
	struct replica *r = t ? replica_find(b, t->name, partition) : NULL;
	struct part *part = t && r && r->leader == b->node_id ? registry_part(t, partition) : NULL;

	*met = false;
	if (!part)
		return KERR_NOT_LEADER_OR_FOLLOWER;
	/* Kafka's order: a high watermark past the batch with the ISR shrunk below the minimum is a failure too */
	if (r->isr.n < t->cfg.min_insync_replicas)
		return KERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND;
	*met = part_high_watermark(part) >= need;
	return KERR_NONE;
}

/* One partition's wait: met (high watermark), or failed (out's error set).  True once resolved. */
static bool repl_wait_resolve(struct broker *b, struct repl_wait_tgt *w)
{
	bool met;
	int16_t err = replica_hw_covers(b, w->topic, w->partition, w->need, &met);

	if (err)
		repl_wait_fail(w, err);
	return err || met;
}

/* True once every partition of ws is resolved and its sync round is done. */
static bool repl_wait_check(struct broker *b, struct repl_wait_set *ws)
{
	bool all = true;

	for (int32_t i = 0; i < ws->n; i++)
		if (!ws->v[i].done)
			all &= ws->v[i].done = repl_wait_resolve(b, &ws->v[i]);
	return all && (!ws->ticket || syncer_done(b->syncer) >= ws->ticket);
}

static void repl_wait_unpark(struct repl_wait_set *ws)
{
	*ws->pprev = ws->next;
	if (ws->next)
		ws->next->pprev = ws->pprev;
	ws->pprev = NULL;
	ws->rq->b->repl->nwaits--;
	if (loop_timer_armed(&ws->rq->timer))
		loop_timer_cancel(ws->rq->b->loop, &ws->rq->timer);
}

static void repl_wait_answer(struct repl_wait_set *ws)
{
	struct req *rq = ws->rq;

	if (ws->ticket && syncer_failed(rq->b->syncer, ws->ticket) && ws->fail)
		ws->fail(rq);
	if (ws->done)
		ws->done(rq);
	req_reply(rq);
}

void replica_wait_done(struct req *rq, void (*done)(struct req *rq))
{
	((struct repl_wait_set *)rq->hold)->done = done;
}

static void repl_wait_timeout(struct loop_timer *t)
{
	struct req *rq = (struct req *)((char *)t - offsetof(struct req, timer));
	struct repl_wait_set *ws = rq->hold;

	repl_wait_unpark(ws);
	for (int32_t i = 0; i < ws->n; i++)
		if (!ws->v[i].done)
			repl_wait_fail(&ws->v[i], KERR_REQUEST_TIMED_OUT);
	ws->ticket = 0; /* answered as it stands: timed out where replicas lag */
	repl_wait_answer(ws);
}

int replica_park(struct req *rq, uint64_t ticket, int32_t timeout_ms, void (*fail)(struct req *rq))
{
	struct repl *rp = rq->b->repl;
	struct repl_wait_set *ws = rq->hold;

	ws->ticket = ticket;
	ws->fail = fail;
	if (repl_wait_check(rq->b, ws)) {
		if (ticket && syncer_failed(rq->b->syncer, ticket) && fail)
			fail(rq);
		if (ws->done)
			ws->done(rq);
		return H_REPLY;
	}
	ws->next = rp->waits;
	if (ws->next)
		ws->next->pprev = &ws->next;
	ws->pprev = &rp->waits;
	rp->waits = ws;
	rp->nwaits++;
	if (timeout_ms > 0) {
		rq->timer.fn = repl_wait_timeout;
		loop_timer_set(rq->b->loop, &rq->timer, clock_mono_ms() + timeout_ms);
	}
	return H_PARKED;
}

bool replica_after_events(struct broker *b)
{
	struct repl *rp = b->repl;
	static uint64_t seen_round;
	uint64_t done;

	if (!rp)
		return false;
	done = syncer_done(b->syncer);
	if (done != seen_round) {
		seen_round = done;
		rp->waits_dirty = true; /* leaders' own synced ends moved */
		repl_fetchers_on_synced(rp);
	}
	if (!rp->waits_dirty)
		return false;
	rp->waits_dirty = false;
	for (struct repl_wait_set *ws = rp->waits, *next; ws; ws = next) {
		next = ws->next;
		if (!repl_wait_check(b, ws))
			continue;
		repl_wait_unpark(ws);
		repl_wait_answer(ws);
	}
	return true;
}

/* ---- housekeeping ---- */

struct repl_ckpt {
	struct wr w;
	int32_t n;
};

static void repl_tick_one(struct repl *rp, struct replica *r, void *arg)
{
	struct repl_ckpt *ck = arg;
	struct part *part;

	if (r->applied_epoch != r->leader_epoch)
		repl_apply(rp, r);
	if (!ck || !(part = repl_part(rp, r)))
		return;
	char line[320];
	int len =
		snprintf(line, sizeof(line), "%s %d %" PRId64 "\n", r->topic, r->partition, part_high_watermark(part));

	wr_raw(&ck->w, line, (size_t)len);
	ck->n++;
}

/* replication-offset-checkpoint, Kafka's format: "0\n<count>\n<topic> <partition> <high watermark>\n"... */
static void repl_write_hw_ckpt(struct repl *rp)
{
	struct repl_ckpt ck = { .n = 0 };
	struct wr out;
	char head[32];
	int len, err;

	wr_init(&ck.w);
	repl_foreach(rp, repl_tick_one, &ck);
	wr_init(&out);
	len = snprintf(head, sizeof(head), "0\n%d\n", ck.n);
	wr_raw(&out, head, (size_t)len);
	wr_raw(&out, ck.w.buf, ck.w.len);
	err = out.err ? -ENOMEM : 0;
	if (!err) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/%s", registry_log_dir(rp->b->reg), REPLICA_HW_FILE);
		err = durable_replace_path(path, out.buf, out.len);
	}
	if (err)
		log_warn("replica: cannot write %s: %s", REPLICA_HW_FILE, strerror(-err));
	wr_release(&out);
	wr_release(&ck.w);
}

void replica_tick(struct broker *b, int64_t now_ms)
{
	struct repl *rp = b->repl;

	if (!rp)
		return;
	repl_isr_check(rp, now_ms);
	if (now_ms - rp->hw_ckpt_ms < b->cfg.replica_high_watermark_checkpoint_interval_ms ||
	    registry_dir_failed(b->reg)) {
		repl_foreach(rp, repl_tick_one, NULL);
		return;
	}
	rp->hw_ckpt_ms = now_ms;
	repl_write_hw_ckpt(rp);
}

int replica_start(struct broker *b)
{
	struct repl *rp = calloc(1, sizeof(*rp));
	int err;

	if (!rp)
		return -ENOMEM;
	rp->b = b;
	rp->hw_ckpt_ms = rp->isr_check_ms = clock_mono_ms();
	err = ckpt_map_load(registry_log_dir(b->reg), REPLICA_HW_FILE, &rp->hw_start);
	if (err && err != -ENOENT)
		log_warn("replica: %s not used (%s): high watermarks start at the log ends", REPLICA_HW_FILE,
			 strerror(-err));
	b->repl = rp;
	return 0;
}

void replica_stop(struct broker *b)
{
	struct repl *rp = b->repl;

	if (!rp)
		return;
	repl_fetchers_free(rp);
	if (!registry_dir_failed(b->reg))
		repl_write_hw_ckpt(rp);
	while (rp->waits) {
		struct repl_wait_set *ws = rp->waits;

		repl_wait_unpark(ws);
		req_noreply(ws->rq);
	}
	for (int i = 0; i < REPL_BUCKETS; i++)
		while (rp->buckets[i]) {
			struct replica *r = rp->buckets[i];

			rp->buckets[i] = r->next;
			repl_free_state(r);
		}
	free(rp->leaders);
	ckpt_map_free(rp->hw_start);
	free(rp);
	b->repl = NULL;
}
