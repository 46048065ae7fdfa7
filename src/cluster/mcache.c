/*
 * mcache.c - the metadata cache (mcache.h).  Built whole from one
 * UpdateMetadata into fresh arrays, then swapped in, so a failed
 * allocation leaves the previous cache in place.
 */
#include "cluster/mcache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void mcache_init(struct mcache *mc)
{
	memset(mc, 0, sizeof(*mc));
	mc->controller_epoch = -1;
}

static void mcache_topics_free(struct mcache_topic *t, int n)
{
	for (int i = 0; i < n; i++) {
		for (int32_t p = 0; p < t[i].nparts; p++) {
			free(t[i].parts[p].replicas.v);
			free(t[i].parts[p].isr.v);
			free(t[i].parts[p].offline.v);
		}
		free(t[i].parts);
		free(t[i].name);
	}
	free(t);
}

void mcache_free(struct mcache *mc)
{
	mcache_topics_free(mc->topics, mc->ntopics);
	free(mc->brokers);
	mcache_init(mc);
}

static int mcache_ids(struct mcache_ids *out, const struct int32_array *in)
{
	int32_t n = in->n > 0 ? in->n : 0;

	out->n = n;
	out->v = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
	if (!out->v)
		return -ENOMEM;
	if (n)
		memcpy(out->v, in->v, sizeof(int32_t) * (size_t)n);
	return 0;
}

/* One topic of the request; partitions missing from it are left leaderless. */
static int mcache_topic_fill(struct mcache_topic *t, const struct UpdateMetadataTopicState *ts)
{
	int32_t n = 0;

	for (int32_t i = 0; i < ts->PartitionStates.n; i++)
		if (ts->PartitionStates.v[i].PartitionIndex >= n)
			n = ts->PartitionStates.v[i].PartitionIndex + 1;
	if (n > 1000000)
		return -EINVAL;
	t->name = strndup(ts->TopicName.p ? ts->TopicName.p : "",
			  (size_t)(ts->TopicName.len > 0 ? ts->TopicName.len : 0));
	t->id = ts->TopicId;
	t->parts = calloc((size_t)(n ? n : 1), sizeof(*t->parts));
	if (!t->name || !t->parts)
		return -ENOMEM;
	t->nparts = n;
	for (int32_t p = 0; p < n; p++)
		t->parts[p].leader = -1;
	for (int32_t i = 0; i < ts->PartitionStates.n; i++) {
		const struct UpdateMetadataPartitionState *ps = &ts->PartitionStates.v[i];
		struct mcache_part *mp = ps->PartitionIndex >= 0 ? &t->parts[ps->PartitionIndex] : NULL;

		if (!mp)
			continue;
		free(mp->replicas.v);
		free(mp->isr.v);
		free(mp->offline.v);
		mp->leader = ps->Leader;
		mp->leader_epoch = ps->LeaderEpoch;
		if (mcache_ids(&mp->replicas, &ps->Replicas) || mcache_ids(&mp->isr, &ps->Isr) ||
		    mcache_ids(&mp->offline, &ps->OfflineReplicas))
			return -ENOMEM;
	}
	for (int32_t p = 0; p < n; p++) /* a hole: no lists at all */
		if (!t->parts[p].replicas.v && (mcache_ids(&t->parts[p].replicas, &(struct int32_array){ 0 }) ||
						mcache_ids(&t->parts[p].isr, &(struct int32_array){ 0 }) ||
						mcache_ids(&t->parts[p].offline, &(struct int32_array){ 0 })))
			return -ENOMEM;
	return 0;
}

static int mcache_topic_cmp(const void *a, const void *b)
{
	return strcmp(((const struct mcache_topic *)a)->name, ((const struct mcache_topic *)b)->name);
}

static int mcache_broker_cmp(const void *a, const void *b)
{
	const struct cluster_broker *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

/* Copies s (a string from the request) into dst when it fits; "" otherwise. */
static void mcache_copy(char *dst, size_t size, struct kstr s)
{
	size_t len = s.p && s.len > 0 ? (size_t)s.len : 0;

	if (len < size) {
		memcpy(dst, s.p, len);
		dst[len] = 0;
	}
}

static void mcache_broker_fill(struct cluster_broker *cb, const struct UpdateMetadataBroker *in)
{
	memset(cb, 0, sizeof(*cb));
	cb->id = in->Id;
	cb->port = -1;
	if (in->Endpoints.n > 0) { /* the first endpoint: the listener clients are told of */
		mcache_copy(cb->host, sizeof(cb->host), in->Endpoints.v[0].Host);
		cb->port = in->Endpoints.v[0].Port;
	}
	for (int32_t i = 0; i < in->Endpoints.n && cb->nendpoints < ZNODE_ENDPOINTS_MAX; i++) { /* all, by listener */
		struct znode_endpoint *ep = &cb->endpoints[cb->nendpoints++];

		mcache_copy(ep->listener, sizeof(ep->listener), in->Endpoints.v[i].Listener);
		mcache_copy(ep->host, sizeof(ep->host), in->Endpoints.v[i].Host);
		ep->port = in->Endpoints.v[i].Port;
	}
	if (in->Rack.p && in->Rack.len >= 0 && (size_t)in->Rack.len < sizeof(cb->rack)) {
		memcpy(cb->rack, in->Rack.p, (size_t)in->Rack.len);
		cb->has_rack = true;
	}
}

int mcache_update(struct mcache *mc, const struct UpdateMetadataRequest *in)
{
	int nt = in->TopicStates.n > 0 ? in->TopicStates.n : 0, nb = in->LiveBrokers.n > 0 ? in->LiveBrokers.n : 0;
	struct mcache_topic *topics = calloc((size_t)(nt ? nt : 1), sizeof(*topics));
	struct cluster_broker *brokers = calloc((size_t)(nb ? nb : 1), sizeof(*brokers));
	int err = topics && brokers ? 0 : -ENOMEM;

	for (int i = 0; !err && i < nt; i++)
		err = mcache_topic_fill(&topics[i], &in->TopicStates.v[i]);
	if (err) {
		mcache_topics_free(topics, topics ? nt : 0);
		free(brokers);
		return err;
	}
	for (int i = 0; i < nb; i++)
		mcache_broker_fill(&brokers[i], &in->LiveBrokers.v[i]);
	qsort(topics, (size_t)nt, sizeof(*topics), mcache_topic_cmp);
	qsort(brokers, (size_t)nb, sizeof(*brokers), mcache_broker_cmp);
	mcache_topics_free(mc->topics, mc->ntopics);
	free(mc->brokers);
	mc->topics = topics;
	mc->ntopics = nt;
	mc->brokers = brokers;
	mc->nbrokers = nb;
	mc->filled = true;
	if (in->ControllerEpoch > mc->controller_epoch)
		mc->controller_epoch = in->ControllerEpoch;
	return 0;
}

const struct mcache_topic *mcache_topic(const struct mcache *mc, const char *name, int32_t len)
{
	int lo = 0, hi = mc->ntopics - 1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2, c = strncmp(mc->topics[mid].name, name, (size_t)(len > 0 ? len : 0));

		if (!c && mc->topics[mid].name[len > 0 ? len : 0])
			c = 1;
		if (!c)
			return &mc->topics[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

const struct mcache_part *mcache_part(const struct mcache *mc, const char *name, int32_t len, int32_t partition)
{
	const struct mcache_topic *t = mcache_topic(mc, name, len);

	return t && partition >= 0 && partition < t->nparts ? &t->parts[partition] : NULL;
}
