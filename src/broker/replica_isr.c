/*
 * replica_isr.c - a leader's ISR changes (Kafka's Partition.maybeShrinkIsr
 * and maybeExpandIsr, ZooKeeper mode): followers that stopped catching up
 * leave the ISR, followers that caught up join it again, each change sent
 * to the controller with AlterPartition (cluster_alter_partition()).
 *
 * Shrink: every replica.lag.time.max.ms / 2 (replica_tick), an ISR member
 * whose last_caught_up_ms is older than replica.lag.time.max.ms is out of
 * sync; all of a partition's are removed in one change.  Expand: a
 * follower's fetch (replica_on_follower_fetch) at or past both the high
 * watermark and the offset where this leader epoch began joins it.
 *
 * One change per partition at a time.  While one is under way the high
 * watermark counts the maximal ISR (Kafka's): the ISR held plus the
 * change's, so a follower being added counts at once and one being
 * removed still counts until the controller confirms.  The answer:
 *
 *   committed --change--> pending --answer ok--> committed (replica_set_isr)
 *                            |--INVALID_UPDATE_VERSION / FENCED_LEADER_EPOCH-->
 *                            |      stays pending until the next LeaderAndIsr
 *                            |--any other error--> committed (as before)
 *   any --LeaderAndIsr (new leader epoch or partition epoch)--> committed
 *
 * An answer is matched to its change by a sequence number, so an answer
 * for a change a LeaderAndIsr has overtaken is ignored.
 *
 * The leader's high watermark is the least durable end among the ISR
 * members counted (repl_update_hw), recomputed on each follower fetch and
 * ISR change (replica_set_isr, also for the ISR a LeaderAndIsr names).
 */
#include "broker/replica_isr.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker.h"
#include "broker/fetch_park.h"
#include "broker/replica_int.h"
#include "broker/stats.h"
#include "cluster/cluster.h"
#include "log/partition.h"
#include "proto/kerr.h"
#include "util/log.h"

/* What an answer needs to find its partition again (the state may be gone by then). */
struct isr_change {
	struct broker *b;
	char *topic;
	int32_t partition;
	int32_t leader_epoch;
	uint32_t seq;
	bool shrink;
};

bool repl_isr_counts(const struct replica *r, int32_t id)
{
	return repl_ids_has(&r->isr, id) || (r->alter_pending && repl_ids_has(&r->pending_isr, id));
}

void repl_isr_reset(struct replica *r)
{
	r->alter_pending = false;
	r->alter_seq++; /* an answer still on its way is for a change this state replaces */
}

static void isr_on_answer(void *arg, int16_t err, int32_t partition_epoch, const int32_t *isr, int n)
{
	struct isr_change *ch = arg;
	struct broker *b = ch->b;
	struct replica *r = b->repl ? replica_find(b, ch->topic, ch->partition) : NULL;
	struct part *part;

	if (!err)                             /* the controller made it, whether or not its LeaderAndIsr came first */
		stats_isr_change(ch->shrink); /* /metrics: kafka_server_replicamanager_isr{shrinks,expands}_total */
	if (!r || !r->alter_pending || r->alter_seq != ch->seq || r->leader != b->node_id ||
	    r->leader_epoch != ch->leader_epoch)
		goto out; /* a LeaderAndIsr came first, or the partition is gone */
	if (err == KERR_INVALID_UPDATE_VERSION || err == KERR_FENCED_LEADER_EPOCH) {
		log_info("replica: '%s-%d': ISR change refused (%s); waiting for the controller's LeaderAndIsr",
			 r->topic, r->partition, kerr_name(err));
		goto out; /* stays pending: the LeaderAndIsr on its way resets it */
	}
	r->alter_pending = false;
	if (err) {
		log_warn("replica: '%s-%d': ISR change not made: %s", r->topic, r->partition, kerr_name(err));
	} else {
		struct int32_array v = { (int32_t *)isr, n };

		log_info("replica: '%s-%d': ISR is now %d of %d replicas (partition epoch %d)", r->topic, r->partition,
			 n, r->replicas.n, partition_epoch);
		if (replica_set_isr(b, r, &v, partition_epoch) == 0)
			goto out;
	}
	if ((part = repl_part(b->repl, r))) /* back to the committed ISR */
		repl_update_hw(b->repl, r, part);
out:
	free(ch->topic);
	free(ch);
}

/* Sends the change of r's ISR to isr[0..n); the high watermark counts both until the answer. */
static void isr_propose(struct broker *b, struct replica *r, const int32_t *isr, int32_t n, bool shrink)
{
	struct isr_change *ch = calloc(1, sizeof(*ch));
	struct int32_array v = { (int32_t *)isr, n };
	int err = -ENOMEM;

	if (ch && (ch->topic = strdup(r->topic))) {
		ch->b = b;
		ch->partition = r->partition;
		ch->leader_epoch = r->leader_epoch;
		ch->seq = ++r->alter_seq;
		ch->shrink = shrink;
		err = repl_ids_set(&r->pending_isr, &v);
		if (!err)
			err = cluster_alter_partition(b->cluster, r->topic, r->partition, r->leader_epoch,
						      r->partition_epoch, isr, n, isr_on_answer, ch);
	}
	if (err) {
		log_warn("replica: '%s-%d': cannot send ISR change: %s", r->topic, r->partition, strerror(-err));
		if (ch)
			free(ch->topic);
		free(ch);
		return;
	}
	r->alter_pending = true;
	log_info("replica: '%s-%d': asking the controller to %s the ISR to %d of %d replicas", r->topic, r->partition,
		 shrink ? "shrink" : "expand", n, r->replicas.n);
}

void repl_isr_maybe_expand(struct repl *rp, struct replica *r, struct part *part, const struct replica_follower *f)
{
	int32_t *v;

	if (r->alter_pending || repl_ids_has(&r->isr, f->id) || f->fetch_offset < part_high_watermark(part) ||
	    f->fetch_offset < r->epoch_start_offset)
		return;
	v = malloc(sizeof(*v) * (size_t)(r->isr.n + 1));
	if (!v)
		return;
	memcpy(v, r->isr.v, sizeof(*v) * (size_t)r->isr.n);
	v[r->isr.n] = f->id;
	isr_propose(rp->b, r, v, r->isr.n + 1, false);
	free(v);
	repl_update_hw(rp, r, part);
}

/* The periodic check of one partition this broker leads: removes the followers out of sync. */
static void isr_check_one(struct repl *rp, struct replica *r, void *arg)
{
	int64_t now = *(const int64_t *)arg, lag = rp->b->cfg.replica_lag_time_max_ms;
	int32_t *v, n = 0;

	if (r->leader != rp->b->node_id || r->applied_epoch != r->leader_epoch || r->alter_pending || r->isr.n <= 1)
		return;
	v = malloc(sizeof(*v) * (size_t)r->isr.n);
	if (!v)
		return;
	for (int32_t i = 0; i < r->isr.n; i++) {
		const struct replica_follower *f = NULL;

		for (int32_t j = 0; j < r->nfollowers && !f; j++)
			if (r->followers[j].id == r->isr.v[i])
				f = &r->followers[j];
		if (!f || now - f->last_caught_up_ms <= lag)
			v[n++] = r->isr.v[i]; /* the leader itself, or in sync */
	}
	if (n < r->isr.n)
		isr_propose(rp->b, r, v, n, true);
	free(v);
}

void repl_isr_check(struct repl *rp, int64_t now_ms)
{
	if (!rp->b->cluster || now_ms - rp->isr_check_ms < rp->b->cfg.replica_lag_time_max_ms / 2)
		return;
	rp->isr_check_ms = now_ms;
	repl_foreach(rp, isr_check_one, &now_ms);
}

/* ---- the leader's high watermark over the ISR ---- */

void repl_update_hw(struct repl *rp, struct replica *r, struct part *part)
{
	int64_t limit = INT64_MAX, old = part_high_watermark(part);

	for (int32_t i = 0; i < r->nfollowers; i++) {
		const struct replica_follower *f = &r->followers[i];

		if (repl_isr_counts(r, f->id) && (f->fetch_offset > 0 ? f->fetch_offset : 0) < limit)
			limit = f->fetch_offset > 0 ? f->fetch_offset : 0;
	}
	part_set_hw_limit(part, limit);
	if (part_high_watermark(part) != old) {
		fetch_park_notify(part);
		rp->waits_dirty = true;
	}
}

int replica_set_isr(struct broker *b, struct replica *r, const struct int32_array *isr, int32_t partition_epoch)
{
	struct repl *rp = b->repl;
	struct part *part;
	int err = repl_ids_set(&r->isr, isr);

	if (err)
		return err;
	r->partition_epoch = partition_epoch;
	if (r->leader == b->node_id && r->applied_epoch == r->leader_epoch && (part = repl_part(rp, r)))
		repl_update_hw(rp, r, part);
	rp->waits_dirty = true; /* acks=all waits: a smaller ISR may fail them (NOT_ENOUGH_REPLICAS_AFTER_APPEND) */
	return 0;
}
