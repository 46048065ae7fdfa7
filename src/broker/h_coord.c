/*
 * h_coord.c - FindCoordinator (v0-4): where the coordinator of a group
 * (key type 0) or of a transactional id (key type 1) is.  On a single node
 * this broker, once the internal topic it needs is open; in cluster mode
 * the leader of the key's partition of __consumer_offsets or
 * __transaction_state, whose topic the first FindCoordinator that finds it
 * missing writes to ZooKeeper, as Kafka does.
 */
#include <string.h>

#include "broker/authz.h"
#include "broker/broker.h"
#include "broker/handlers.h"
#include "broker/topic_zk.h"
#include "cluster/cluster.h"
#include "cluster/mcache.h"
#include "coord/coord_topic.h"
#include "coord/group_store.h"
#include "coord/txn_store.h"
#include "proto/kerr.h"
#include "util/clock.h"

static int16_t h_coord_find_one(struct req *rq, struct kstr key, int8_t key_type)
{
	int16_t err;

	if (key_type != 0 && key_type != 1)
		return KERR_INVALID_REQUEST;
	if (!key.p)
		return KERR_INVALID_REQUEST;
	if ((err = authz_coordinator_kerr(rq, key, key_type)))
		return err;
	if (key_type == 0 && !groups_coord(rq->b))
		return KERR_COORDINATOR_NOT_AVAILABLE;
	if (key_type == 1 && !txns_coord_ready(rq->b))
		return KERR_COORDINATOR_NOT_AVAILABLE; /* __transaction_state being made */
	return KERR_NONE;
}

/*
 * Cluster mode: the internal topic holding the coordinators of key_type (0
 * groups, 1 transactional ids), as Kafka makes it on the first
 * FindCoordinator that needs it.
 */
static void h_coord_find_create(struct req *rq, int8_t key_type)
{
	const struct broker_cfg *cfg = &rq->b->cfg;

	if (key_type == 0)
		topic_zk_create_internal(rq, GROUP_STORE_TOPIC, cfg->offsets_topic_num_partitions,
					 cfg->offsets_topic_replication_factor, 0, cfg->offsets_topic_segment_bytes);
	else
		topic_zk_create_internal(rq, TXN_STORE_TOPIC, cfg->transaction_state_log_num_partitions,
					 cfg->transaction_state_log_replication_factor,
					 cfg->transaction_state_log_min_isr, cfg->transaction_state_log_segment_bytes);
}

/*
 * Cluster mode: the broker leading the partition of key (a group in
 * __consumer_offsets, a transactional id in __transaction_state), as the
 * metadata cache names it; the topic is written to ZooKeeper by the first
 * FindCoordinator that finds it missing (at most once a second per topic
 * from one broker).  OUT *cb on KERR_NONE.
 */
static int16_t h_coord_find_leader(struct req *rq, struct kstr key, int8_t key_type, const struct cluster_broker **cb)
{
	static int64_t asked_ms[2] = { -1, -1 };
	const char *topic = key_type == 0 ? GROUP_STORE_TOPIC : TXN_STORE_TOPIC;
	const struct mcache_topic *mt = mcache_topic(rq->b->mcache, topic, (int32_t)strlen(topic));
	const struct cluster_broker *v;
	int32_t leader;
	int16_t err;
	int n;

	if ((err = authz_coordinator_kerr(rq, key, key_type)))
		return err;
	if (!mt && (asked_ms[key_type] < 0 || clock_mono_ms() - asked_ms[key_type] >= 1000)) {
		asked_ms[key_type] = clock_mono_ms();
		h_coord_find_create(rq, key_type);
	}
	if (!mt || mt->nparts < 1)
		return KERR_COORDINATOR_NOT_AVAILABLE;
	leader = mt->parts[coord_partition_for(key, mt->nparts)].leader;
	n = cluster_brokers(rq->b->cluster, &v);
	for (int i = 0; leader >= 0 && i < n; i++)
		if (v[i].id == leader) {
			*cb = &v[i];
			return KERR_NONE;
		}
	return KERR_COORDINATOR_NOT_AVAILABLE; /* no leader, or not registered (yet) */
}

/*
 * Where key's coordinator is: this broker, or in cluster mode the leader
 * of the key's partition of __consumer_offsets (a group) or
 * __transaction_state (a transactional id) (docs/cluster.md).
 */
static int16_t h_coord_find(struct req *rq, struct kstr key, int8_t key_type, int32_t *node, struct kstr *host,
			    int32_t *port)
{
	const struct cluster_broker *cb = NULL;
	int16_t err = KERR_NONE;

	if (rq->b->cluster && rq->b->mcache && (key_type == 0 || key_type == 1) && key.p) {
		err = h_coord_find_leader(rq, key, key_type, &cb);
		if (err) {
			*node = -1;
			*host = KSTR("");
			*port = -1;
			return err;
		}
	}
	if (!cb)
		err = h_coord_find_one(rq, key, key_type);
	if (!cb) { /* this broker: the endpoint of the listener the client came through */
		const char *self_host;
		int32_t self_port;

		broker_endpoint(rq->b, rq->c, &self_host, &self_port);
		*host = err ? KSTR("") : kstr_c(self_host);
		*port = err ? -1 : self_port;
	} else {
		const char *cb_host;

		broker_endpoint_of(rq->b, rq->c, cb, &cb_host, port);
		*host = kstr_c(cb_host);
	}
	*node = err ? -1 : cb ? cb->id : rq->b->node_id;
	return err;
}

int h_find_coordinator(struct req *rq, const void *in, void *out)
{
	const struct FindCoordinatorRequest *f = in;
	struct FindCoordinatorResponse *resp = out;

	if (rq->hdr.api_version < 4) {
		resp->ErrorCode = h_coord_find(rq, f->Key, f->KeyType, &resp->NodeId, &resp->Host, &resp->Port);
		return H_REPLY;
	}
	resp->Coordinators.n = f->CoordinatorKeys.n > 0 ? f->CoordinatorKeys.n : 0;
	resp->Coordinators.v = req_alloc(rq, (size_t)resp->Coordinators.n, sizeof(*resp->Coordinators.v));
	for (int32_t i = 0; i < resp->Coordinators.n; i++) {
		struct FindCoordinatorResponseCoordinator *c = &resp->Coordinators.v[i];

		FindCoordinatorResponseCoordinator_init(c);
		c->Key = f->CoordinatorKeys.v[i];
		c->ErrorCode = h_coord_find(rq, c->Key, f->KeyType, &c->NodeId, &c->Host, &c->Port);
	}
	return H_REPLY;
}
