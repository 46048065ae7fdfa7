/*
 * notify.c - the controller's LeaderAndIsr, UpdateMetadata and
 * StopReplica (notify.h).  The requests are built in an arena and
 * encoded by channel_send() at once, so nothing here outlives a call.
 */
#include "cluster/notify.h"

#include <stdlib.h>
#include <string.h>

#include "proto_msgs.h"
#include "util/arena.h"
#include "util/log.h"
#include "util/uuid.h"

static int notify_cmp(const void *a, const void *b)
{
	const struct leaders_state *x = a, *y = b;
	int c = strcmp(x->topic, y->topic);

	return c ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

static void *notify_alloc(struct arena *a, size_t n, size_t size)
{
	void *p = arena_calloc(a, n ? n : 1, size);

	if (!p) {
		log_error("controller: out of memory building a request");
		abort();
	}
	return p;
}

static struct int32_array notify_ids(struct arena *a, const int32_t *ids, int32_t n)
{
	struct int32_array r = { notify_alloc(a, (size_t)n, sizeof(int32_t)), n };

	if (n > 0)
		memcpy(r.v, ids, sizeof(int32_t) * (size_t)n);
	return r;
}

static bool notify_live(const struct notify_ctx *nc, int32_t id)
{
	for (int i = 0; i < nc->nbrokers; i++)
		if (nc->brokers[i].id == id)
			return true;
	return false;
}

static bool notify_replica(const struct leaders_state *s, int32_t id)
{
	for (int32_t i = 0; i < s->replicas.n; i++)
		if (s->replicas.ids[i] == id)
			return true;
	return false;
}

static void notify_um_part(struct arena *a, const struct notify_ctx *nc, const struct leaders_state *s,
			   struct UpdateMetadataPartitionState *ps)
{
	int32_t off[ZNODE_REPLICAS_MAX], noff = 0;

	UpdateMetadataPartitionState_init(ps);
	ps->PartitionIndex = s->partition;
	ps->ControllerEpoch = s->has_state ? s->st.controller_epoch : nc->epoch;
	ps->Leader = s->st.leader;
	ps->LeaderEpoch = s->has_state ? s->st.leader_epoch : -1;
	ps->ZkVersion = s->has_state ? s->version : -1;
	ps->Isr = notify_ids(a, s->st.isr.ids, s->has_state ? s->st.isr.n : 0);
	ps->Replicas = notify_ids(a, s->replicas.ids, s->replicas.n);
	for (int32_t i = 0; i < s->replicas.n; i++)
		if (!notify_live(nc, s->replicas.ids[i]))
			off[noff++] = s->replicas.ids[i];
	ps->OfflineReplicas = notify_ids(a, off, noff);
}

/* Kafka's SecurityProtocol id of a protocol name; -1 for none known. */
static int16_t notify_protocol_id(const char *name)
{
	static const char *const ids[] = { "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL" };

	for (int16_t i = 0; i < 4; i++)
		if (!strcmp(name, ids[i]))
			return i;
	return -1;
}

/* Every endpoint cb registered, with its listener name (v3+) and security protocol. */
static void notify_endpoints(struct arena *a, const struct cluster_broker *cb, struct UpdateMetadataBroker *b)
{
	int n = cb->nendpoints > 0 ? cb->nendpoints : 1;
	struct UpdateMetadataEndpoint *e = notify_alloc(a, (size_t)n, sizeof(*e));

	for (int i = 0; i < n; i++) {
		UpdateMetadataEndpoint_init(&e[i]);
		e[i].Host = kstr_c(cb->nendpoints ? cb->endpoints[i].host : cb->host);
		e[i].Port = cb->nendpoints ? cb->endpoints[i].port : cb->port;
		e[i].Listener = kstr_c(cb->nendpoints ? cb->endpoints[i].listener : "PLAINTEXT");
		e[i].SecurityProtocol = cb->nendpoints ? notify_protocol_id(cb->endpoints[i].protocol) : 0;
	}
	b->Endpoints.v = e;
	b->Endpoints.n = n;
}

static void notify_brokers(struct arena *a, const struct notify_ctx *nc, struct UpdateMetadataRequest *um)
{
	um->LiveBrokers.n = nc->nbrokers;
	um->LiveBrokers.v = notify_alloc(a, (size_t)nc->nbrokers, sizeof(*um->LiveBrokers.v));
	for (int i = 0; i < nc->nbrokers; i++) {
		struct UpdateMetadataBroker *b = &um->LiveBrokers.v[i];

		UpdateMetadataBroker_init(b);
		b->Id = nc->brokers[i].id;
		notify_endpoints(a, &nc->brokers[i], b);
		b->Rack = nc->brokers[i].has_rack ? kstr_c(nc->brokers[i].rack) : (struct kstr){ NULL, -1 };
	}
}

/* The UpdateMetadata of sorted parts[0..n), sent to every live broker. */
static void notify_update_metadata(struct arena *a, const struct notify_ctx *nc, const struct leaders_state *parts,
				   int n)
{
	struct UpdateMetadataRequest um;
	int nt = 0;

	UpdateMetadataRequest_init(&um);
	um.ControllerId = nc->controller_id;
	um.ControllerEpoch = nc->epoch;
	um.TopicStates.v = notify_alloc(a, (size_t)n, sizeof(*um.TopicStates.v));
	for (int i = 0; i < n; i++) {
		struct UpdateMetadataTopicState *ts = &um.TopicStates.v[nt];

		if (!i || strcmp(parts[i].topic, parts[i - 1].topic)) {
			UpdateMetadataTopicState_init(ts);
			ts->TopicName = kstr_c(parts[i].topic);
			uuid_from_b64(parts[i].topic_id, &ts->TopicId);
			ts->PartitionStates.v = notify_alloc(a, (size_t)(n - i), sizeof(*ts->PartitionStates.v));
			nt++;
		} else {
			ts = &um.TopicStates.v[nt - 1];
		}
		notify_um_part(a, nc, &parts[i], &ts->PartitionStates.v[ts->PartitionStates.n++]);
	}
	um.TopicStates.n = nt;
	notify_brokers(a, nc, &um);
	for (int i = 0; i < nc->nbrokers; i++)
		channel_send(nc->ch, nc->brokers[i].id, API_UpdateMetadata, 7, &um);
}

static void notify_lai_part(struct arena *a, const struct leaders_state *s, struct LeaderAndIsrPartitionState *ps)
{
	LeaderAndIsrPartitionState_init(ps);
	ps->PartitionIndex = s->partition;
	ps->ControllerEpoch = s->st.controller_epoch;
	ps->Leader = s->st.leader;
	ps->LeaderEpoch = s->st.leader_epoch;
	ps->ZkVersion = s->version; /* the partition epoch AlterPartition must name */
	ps->IsNew = s->version == 0;
	ps->Isr = notify_ids(a, s->st.isr.ids, s->st.isr.n);
	ps->Replicas = notify_ids(a, s->replicas.ids, s->replicas.n);
	ps->AddingReplicas = notify_ids(a, NULL, 0);
	ps->RemovingReplicas = notify_ids(a, NULL, 0);
}

/* The LeaderAndIsr of broker id: every partition of sorted parts[0..n) it is a replica of and that has a state. */
static void notify_leader_and_isr(struct arena *a, const struct notify_ctx *nc, int32_t id,
				  const struct leaders_state *parts, int n)
{
	struct LeaderAndIsrRequest lai;
	const char *last = NULL;
	int nt = 0;

	LeaderAndIsrRequest_init(&lai);
	lai.ControllerId = nc->controller_id;
	lai.ControllerEpoch = nc->epoch;
	lai.TopicStates.v = notify_alloc(a, (size_t)n, sizeof(*lai.TopicStates.v));
	for (int i = 0; i < n; i++) {
		struct LeaderAndIsrTopicState *ts;

		if (!parts[i].has_state || !notify_replica(&parts[i], id))
			continue;
		if (!last || strcmp(last, parts[i].topic)) {
			ts = &lai.TopicStates.v[nt++];
			LeaderAndIsrTopicState_init(ts);
			ts->TopicName = kstr_c(parts[i].topic);
			uuid_from_b64(parts[i].topic_id, &ts->TopicId);
			ts->PartitionStates.v = notify_alloc(a, (size_t)(n - i), sizeof(*ts->PartitionStates.v));
			last = parts[i].topic;
		}
		ts = &lai.TopicStates.v[nt - 1];
		notify_lai_part(a, &parts[i], &ts->PartitionStates.v[ts->PartitionStates.n++]);
	}
	lai.TopicStates.n = nt;
	lai.LiveLeaders.v = notify_alloc(a, (size_t)nc->nbrokers, sizeof(*lai.LiveLeaders.v));
	for (int i = 0; i < nc->nbrokers; i++) {
		struct LeaderAndIsrLiveLeader *ll = &lai.LiveLeaders.v[lai.LiveLeaders.n++];

		LeaderAndIsrLiveLeader_init(ll);
		ll->BrokerId = nc->brokers[i].id;
		ll->HostName = kstr_c(nc->brokers[i].inter_host); /* the endpoint followers fetch from */
		ll->Port = nc->brokers[i].inter_port;
	}
	channel_send(nc->ch, id, API_LeaderAndIsr, 5, &lai);
}

void notify_pass(const struct notify_ctx *nc, const struct leaders_state *parts, int n)
{
	struct leaders_state *sorted = malloc(sizeof(*sorted) * (size_t)(n ? n : 1));
	struct arena a;

	if (!sorted) {
		log_error("controller: out of memory telling the brokers");
		return;
	}
	if (n > 0)
		memcpy(sorted, parts, sizeof(*sorted) * (size_t)n);
	qsort(sorted, (size_t)n, sizeof(*sorted), notify_cmp);
	arena_init(&a, 0);
	for (int i = 0; i < nc->nbrokers; i++)
		notify_leader_and_isr(&a, nc, nc->brokers[i].id, sorted, n);
	notify_update_metadata(&a, nc, sorted, n);
	arena_release(&a);
	free(sorted);
}

void notify_delete(const struct notify_ctx *nc, const char *topic, int32_t nparts)
{
	struct StopReplicaRequest sr;
	struct StopReplicaTopicState ts;
	struct arena a;

	arena_init(&a, 0);
	StopReplicaRequest_init(&sr);
	StopReplicaTopicState_init(&ts);
	sr.ControllerId = nc->controller_id;
	sr.ControllerEpoch = nc->epoch;
	ts.TopicName = kstr_c(topic);
	ts.PartitionStates.v = notify_alloc(&a, (size_t)nparts, sizeof(*ts.PartitionStates.v));
	for (int32_t p = 0; p < nparts; p++) {
		StopReplicaPartitionState_init(&ts.PartitionStates.v[p]);
		ts.PartitionStates.v[p].PartitionIndex = p;
		ts.PartitionStates.v[p].DeletePartition = true;
	}
	ts.PartitionStates.n = nparts;
	sr.TopicStates.v = &ts;
	sr.TopicStates.n = 1;
	for (int i = 0; i < nc->nbrokers; i++)
		channel_send(nc->ch, nc->brokers[i].id, API_StopReplica, 3, &sr);
	arena_release(&a);
}

void notify_stop(const struct notify_ctx *nc, int32_t id, const struct notify_part *v, int n)
{
	struct StopReplicaRequest sr;
	struct arena a;

	arena_init(&a, 0);
	StopReplicaRequest_init(&sr);
	sr.ControllerId = nc->controller_id;
	sr.ControllerEpoch = nc->epoch;
	sr.TopicStates.v = notify_alloc(&a, (size_t)n, sizeof(*sr.TopicStates.v));
	for (int i = 0; i < n; i++) {
		struct StopReplicaTopicState *ts = &sr.TopicStates.v[sr.TopicStates.n++];

		StopReplicaTopicState_init(ts);
		ts->TopicName = kstr_c(v[i].topic);
		ts->PartitionStates.v = notify_alloc(&a, 1, sizeof(*ts->PartitionStates.v));
		StopReplicaPartitionState_init(&ts->PartitionStates.v[0]);
		ts->PartitionStates.v[0].PartitionIndex = v[i].partition;
		ts->PartitionStates.v[0].DeletePartition = true;
		ts->PartitionStates.n = 1;
	}
	channel_send(nc->ch, id, API_StopReplica, 3, &sr);
	arena_release(&a);
}
