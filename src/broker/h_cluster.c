/*
 * h_cluster.c - the controller's requests, served by every broker in
 * cluster mode (docs/cluster.md): LeaderAndIsr, UpdateMetadata and
 * StopReplica.  On a single node they are neither advertised nor served.
 *
 * Each carries the controller's epoch: one older than the highest this
 * broker has seen is refused with STALE_CONTROLLER_EPOCH (a deposed
 * controller that has not noticed yet).
 *
 *   LeaderAndIsr    makes the topic here if this broker holds none of it
 *                   (partitions 0 .. the highest given, the request's
 *                   topic id, the overrides in /config/topics/<t>), or
 *                   adds partitions up to the highest given; each
 *                   partition's role (leader or follower, leader epoch,
 *                   ISR) goes to broker/replica.h, which registry_leader()
 *                   asks before the metadata cache, and the followers'
 *                   fetchers follow the leaders named.
 *   UpdateMetadata  replaces the metadata cache (cluster/mcache.h).
 *   StopReplica     with delete: deletes the topic here, unless the metadata cache
 *                   makes this broker a replica of one of its partitions not named
 *                   (a reassignment moved some partitions away: those are emptied).
 *
 * and the one a broker sends the controller:
 *
 *   ControlledShutdown  on the active controller (NOT_CONTROLLER elsewhere, STALE_BROKER_EPOCH for
 *                       an older registration than the live one): the broker counts as not live for
 *                       leadership from now on (cluster_controlled_shutdown()): the controller's pass
 *                       moves each partition it leads to another live ISR member; the answer lists
 *                       those it leads with none (they go offline: leader -1).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "broker/authz.h"
#include "broker/broker.h"
#include "broker/creator.h"
#include "broker/handlers.h"
#include "broker/registry.h"
#include "broker/replica.h"
#include "cluster/cluster.h"
#include "cluster/mcache.h"
#include "log/partition.h"
#include "proto/kerr.h"
#include "util/log.h"

/* False (and STALE_CONTROLLER_EPOCH) for an epoch older than the highest seen; raises it otherwise. */
static bool cluster_epoch_ok(struct req *rq, int32_t controller_id, int32_t epoch, int16_t *err)
{
	struct mcache *mc = rq->b->mcache;

	if ((*err = authz_cluster_kerr(rq, ACL_OP_CLUSTER_ACTION)))
		return false; /* the controller's requests need ClusterAction */
	if (epoch < mc->controller_epoch) {
		log_warn("%s from controller %d refused: controller epoch %d is older than %d",
			 proto_apis[rq->hdr.api_key].name, controller_id, epoch, mc->controller_epoch);
		*err = KERR_STALE_CONTROLLER_EPOCH;
		return false;
	}
	mc->controller_epoch = epoch;
	return true;
}

/* A topic to make once its config overrides are read. */
struct cluster_pending {
	struct broker *b;
	int32_t nparts;
	struct kuuid id;
	char name[];
};

/* cluster_config_fn: makes the topic with the overrides read (none: the broker's defaults). */
static void cluster_on_config(void *arg, int err, const struct znode_config *cfg)
{
	struct cluster_pending *pd = arg;
	struct reg_build *build;
	struct topic_cfg tc;
	char msg[256];

	if (err == -ENOTCONN || err == -ENOENT || registry_find(pd->b->reg, kstr_c(pd->name))) {
		if (err == -ENOENT) /* every topic written as Kafka writes it has one */
			log_info("LeaderAndIsr: topic '%s' has no %s/%s (deleted meanwhile?); not made", pd->name,
				 ZNODE_TOPIC_CONFIGS, pd->name);
		free(pd); /* or shutting down, session lost (the next LeaderAndIsr asks again), made meanwhile */
		return;
	}
	if (err)
		log_warn("topic '%s': its config overrides could not be read (%s); made with the broker's defaults",
			 pd->name, strerror(-err));
	err = topic_cfg_init(&tc, &pd->b->cfg);
	for (int i = 0; !err && cfg && i < cfg->n; i++)
		if (topic_cfg_set(&tc, cfg->names[i], cfg->values[i], msg, sizeof(msg)) < 0)
			log_warn("topic '%s': override %s=%s ignored: %s", pd->name, cfg->names[i], cfg->values[i],
				 msg);
	if (!err)
		err = creator_create(pd->b->creator, kstr_c(pd->name), pd->nparts, &tc, &build);
	topic_cfg_release(&tc);
	if (!err)
		build->t->id = pd->id; /* the worker writes partition.metadata in the next round */
	else if (err != -EEXIST)
		log_error("LeaderAndIsr: cannot make topic '%s': %s", pd->name, strerror(-err));
	free(pd);
}

/*
 * Makes or extends topic ts here so that it has every partition ts names;
 * a new topic once /config/topics/<t> is read, as a Kafka broker makes a
 * log with the topic's overrides.  0 or -errno.
 */
static int cluster_make(struct broker *b, const struct LeaderAndIsrTopicState *ts)
{
	struct topic *t = registry_find(b->reg, ts->TopicName);
	struct cluster_pending *pd;
	struct reg_build *build;
	int32_t want = 0;
	int err;

	for (int32_t i = 0; i < ts->PartitionStates.n; i++)
		if (ts->PartitionStates.v[i].PartitionIndex >= want)
			want = ts->PartitionStates.v[i].PartitionIndex + 1;
	if (t && (t->builds || t->nparts_next >= want))
		return 0; /* there, or being made */
	if (t)
		return creator_grow(b->creator, t, want, &build);
	if (!topic_name_valid(ts->TopicName))
		return -EINVAL; /* the internal topics are made like any topic */
	pd = calloc(1, sizeof(*pd) + (size_t)ts->TopicName.len + 1);
	if (!pd)
		return -ENOMEM;
	*pd = (struct cluster_pending){ .b = b, .nparts = want, .id = ts->TopicId };
	memcpy(pd->name, ts->TopicName.p, (size_t)ts->TopicName.len);
	err = cluster_topic_config(b->cluster, pd->name, cluster_on_config, pd);
	if (err)
		free(pd);
	return err;
}

int h_leader_and_isr(struct req *rq, const void *vin, void *vout)
{
	const struct LeaderAndIsrRequest *in = vin;
	struct LeaderAndIsrResponse *out = vout;
	int32_t n = in->TopicStates.n > 0 ? in->TopicStates.n : 0;

	if (!rq->b->cluster)
		return H_CLOSE;
	if (!cluster_epoch_ok(rq, in->ControllerId, in->ControllerEpoch, &out->ErrorCode))
		return H_REPLY;
	out->Topics.v = req_alloc(rq, (size_t)n, sizeof(*out->Topics.v));
	out->Topics.n = n;
	for (int32_t i = 0; i < n; i++) {
		const struct LeaderAndIsrTopicState *ts = &in->TopicStates.v[i];
		struct LeaderAndIsrTopicError *te = &out->Topics.v[i];
		int err = cluster_make(rq->b, ts);
		int32_t np = ts->PartitionStates.n > 0 ? ts->PartitionStates.n : 0;

		if (err)
			log_error("LeaderAndIsr: cannot make topic '%.*s': %s", ts->TopicName.len, ts->TopicName.p,
				  strerror(-err));
		LeaderAndIsrTopicError_init(te);
		te->TopicId = ts->TopicId;
		te->PartitionErrors.v = req_alloc(rq, (size_t)np, sizeof(*te->PartitionErrors.v));
		te->PartitionErrors.n = np;
		for (int32_t p = 0; p < np; p++) {
			te->PartitionErrors.v[p].PartitionIndex = ts->PartitionStates.v[p].PartitionIndex;
			te->PartitionErrors.v[p].ErrorCode =
				err ? KERR_KAFKA_STORAGE_ERROR
				    : replica_leader_and_isr(rq->b, ts->TopicName, &ts->PartitionStates.v[p]);
		}
	}
	replica_set_leaders(rq->b, in->LiveLeaders.v, in->LiveLeaders.n);
	return H_REPLY;
}

int h_update_metadata(struct req *rq, const void *vin, void *vout)
{
	const struct UpdateMetadataRequest *in = vin;
	struct UpdateMetadataResponse *out = vout;

	if (!rq->b->cluster)
		return H_CLOSE;
	if (!cluster_epoch_ok(rq, in->ControllerId, in->ControllerEpoch, &out->ErrorCode))
		return H_REPLY;
	if (mcache_update(rq->b->mcache, in)) {
		log_error("UpdateMetadata: out of memory; the metadata cache is unchanged");
		out->ErrorCode = KERR_UNKNOWN_SERVER_ERROR;
	}
	return H_REPLY;
}

/* Deletes topic ts here if a partition of it is to be deleted; the partitions' error. */
/* True if the metadata cache makes this broker a replica of a partition of ts's topic that ts does not delete. */
static bool cluster_keeps_replica(struct broker *b, const struct StopReplicaTopicState *ts)
{
	const struct mcache *mc = b->mcache;

	for (int i = 0; i < mc->ntopics; i++) {
		const struct mcache_topic *mt = &mc->topics[i];

		if ((size_t)ts->TopicName.len != strlen(mt->name) ||
		    memcmp(ts->TopicName.p, mt->name, (size_t)ts->TopicName.len))
			continue;
		for (int32_t p = 0; p < mt->nparts; p++) {
			bool deleted = false;

			for (int32_t k = 0; k < ts->PartitionStates.n && !deleted; k++)
				deleted = ts->PartitionStates.v[k].PartitionIndex == p &&
					  ts->PartitionStates.v[k].DeletePartition;
			for (int32_t r = 0; !deleted && r < mt->parts[p].replicas.n; r++)
				if (mt->parts[p].replicas.v[r] == b->cfg.broker_id)
					return true;
		}
	}
	return false;
}

/*
 * Other partitions of t are replicas here, and a topic is held as one
 * range of partitions: the partitions ts deletes stay as empty logs (their
 * records cut back to the log start) and their roles are forgotten.
 */
static int16_t cluster_empty_parts(struct broker *b, struct topic *t, const struct StopReplicaTopicState *ts)
{
	int16_t err = KERR_NONE;

	for (int32_t i = 0; i < ts->PartitionStates.n; i++) {
		int32_t p = ts->PartitionStates.v[i].PartitionIndex;
		struct part *part = p >= 0 && p < t->nparts ? t->parts[p] : NULL;

		if (!ts->PartitionStates.v[i].DeletePartition)
			continue;
		replica_forget_partition(b, t->name, p);
		if (part && part_truncate_to(part, part_log_start_offset(part)) < 0)
			err = KERR_KAFKA_STORAGE_ERROR;
		log_info("StopReplica: '%s-%d' emptied (other partitions of the topic are replicas here)", t->name, p);
	}
	return err;
}

static int16_t cluster_stop_topic(struct req *rq, const struct StopReplicaTopicState *ts)
{
	struct topic *t = registry_find(rq->b->reg, ts->TopicName);
	bool del = false;

	for (int32_t p = 0; p < ts->PartitionStates.n; p++)
		del |= ts->PartitionStates.v[p].DeletePartition;
	if (!t || !del || t->internal)
		return KERR_NONE; /* not held here, or only stopped: nothing to do without followers */
	if (t->builds)
		return KERR_LEADER_NOT_AVAILABLE;
	if (cluster_keeps_replica(rq->b, ts))
		return cluster_empty_parts(rq->b, t, ts);
	log_info("StopReplica: deleting topic '%s'", t->name);
	return admin_topic_remove(rq->b, t) < 0 ? KERR_KAFKA_STORAGE_ERROR : KERR_NONE;
}

int h_stop_replica(struct req *rq, const void *vin, void *vout)
{
	const struct StopReplicaRequest *in = vin;
	struct StopReplicaResponse *out = vout;
	int32_t n = in->TopicStates.n > 0 ? in->TopicStates.n : 0, k = 0;

	if (!rq->b->cluster)
		return H_CLOSE;
	if (!cluster_epoch_ok(rq, in->ControllerId, in->ControllerEpoch, &out->ErrorCode))
		return H_REPLY;
	for (int32_t i = 0; i < n; i++)
		k += in->TopicStates.v[i].PartitionStates.n > 0 ? in->TopicStates.v[i].PartitionStates.n : 0;
	out->PartitionErrors.v = req_alloc(rq, (size_t)k, sizeof(*out->PartitionErrors.v));
	for (int32_t i = 0; i < n; i++) {
		const struct StopReplicaTopicState *ts = &in->TopicStates.v[i];
		int16_t err = cluster_stop_topic(rq, ts);

		for (int32_t p = 0; p < ts->PartitionStates.n; p++) {
			struct StopReplicaPartitionError *pe = &out->PartitionErrors.v[out->PartitionErrors.n++];

			pe->TopicName = ts->TopicName;
			pe->PartitionIndex = ts->PartitionStates.v[p].PartitionIndex;
			pe->ErrorCode = err;
		}
	}
	return H_REPLY;
}

/* True if a member of isr other than id is a live broker (where leadership can move). */
static bool cluster_isr_elsewhere(const struct mcache_ids *isr, int32_t id, const struct cluster_broker *live,
				  int nlive)
{
	for (int32_t i = 0; i < isr->n; i++)
		for (int j = 0; j < nlive && isr->v[i] != id; j++)
			if (live[j].id == isr->v[i])
				return true;
	return false;
}

/*
 * Counts (out NULL) or lists into out the partitions broker id leads per
 * the metadata cache that have no other live ISR member: those the
 * controller's pass cannot move (they go offline); the others move.
 */
static int32_t cluster_led_by(struct broker *b, int32_t id, struct ControlledShutdownRemainingPartition *out)
{
	const struct mcache *mc = b->mcache;
	const struct cluster_broker *live;
	int nlive = cluster_brokers(b->cluster, &live);
	int32_t k = 0;

	for (int t = 0; t < mc->ntopics; t++)
		for (int32_t p = 0; p < mc->topics[t].nparts; p++) {
			const struct mcache_part *mp = &mc->topics[t].parts[p];

			if (mp->leader != id || cluster_isr_elsewhere(&mp->isr, id, live, nlive))
				continue;
			if (out) {
				out[k].TopicName =
					(struct kstr){ mc->topics[t].name, (int32_t)strlen(mc->topics[t].name) };
				out[k].PartitionIndex = p;
			}
			k++;
		}
	return k;
}

int h_controlled_shutdown(struct req *rq, const void *vin, void *vout)
{
	const struct ControlledShutdownRequest *in = vin;
	struct ControlledShutdownResponse *out = vout;
	int32_t n;

	if (!rq->b->cluster)
		return H_CLOSE;
	/* what it leads before the pass with no other live ISR member: the pass moves the rest */
	n = cluster_led_by(rq->b, in->BrokerId, NULL);
	out->ErrorCode = authz_cluster_kerr(rq, ACL_OP_CLUSTER_ACTION)
				 ?: cluster_controlled_shutdown(rq->b->cluster, in->BrokerId, in->BrokerEpoch);
	if (out->ErrorCode) {
		log_warn("ControlledShutdown of broker %d (broker epoch %lld): %s", in->BrokerId,
			 (long long)in->BrokerEpoch, kerr_name(out->ErrorCode));
		return H_REPLY;
	}
	out->RemainingPartitions.v = req_alloc(rq, (size_t)n, sizeof(*out->RemainingPartitions.v));
	out->RemainingPartitions.n = cluster_led_by(rq->b, in->BrokerId, out->RemainingPartitions.v);
	return H_REPLY;
}
