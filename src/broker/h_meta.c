/*
 * h_meta.c - ApiVersions, Metadata and DescribeCluster: what this broker
 * speaks, which brokers make the cluster, and where every topic's
 * partitions live (on a single node: here).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "broker/authz.h"
#include "broker/broker.h"
#include "broker/creator.h"
#include "broker/handlers.h"
#include "broker/registry.h"
#include "broker/topic_zk.h"
#include "cluster/cluster.h"
#include "cluster/mcache.h"
#include "proto/kerr.h"
#include "util/log.h"

/* Kafka's operations on the cluster resource (AclOperation codes): CREATE, ALTER, DESCRIBE,
 * CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE */
#define CLUSTER_OPS_ALL ((1 << 5) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12))

int h_api_versions(struct req *rq, const void *in, void *out)
{
	struct ApiVersionsResponse *resp = out;
	int n = 0;

	(void)in;
	resp->ApiKeys.v = req_alloc(rq, API_COUNT, sizeof(*resp->ApiKeys.v));
	for (int k = 0; k < API_COUNT; k++) {
		if (!api_served(rq->b, (int16_t)k))
			continue;
		resp->ApiKeys.v[n].ApiKey = (int16_t)k;
		resp->ApiKeys.v[n].MinVersion = api_table[k].min;
		resp->ApiKeys.v[n].MaxVersion = api_table[k].max;
		n++;
	}
	resp->ApiKeys.n = n;
	return H_REPLY;
}

static struct int32_array node_list(struct req *rq, int32_t node)
{
	struct int32_array a = { req_alloc(rq, 1, sizeof(int32_t)), 1 };

	a.v[0] = node;
	return a;
}

/* Fills one topic entry of the response from the registry. */
static void metadata_topic(struct req *rq, struct topic *t, struct MetadataResponseTopic *mt)
{
	struct registry *reg = rq->b->reg;

	mt->Name = kstr_c(t->name);
	mt->IsInternal = t->internal;
	if (t->creating) { /* as Kafka while a topic is made: no partitions yet, ask again */
		mt->ErrorCode = KERR_LEADER_NOT_AVAILABLE;
		return;
	}
	mt->Partitions.n = t->nparts;
	mt->Partitions.v = req_alloc(rq, (size_t)t->nparts, sizeof(*mt->Partitions.v));
	for (int32_t p = 0; p < t->nparts; p++) {
		struct MetadataResponsePartition *mp = &mt->Partitions.v[p];
		int32_t leader = registry_leader(reg, t, p);

		MetadataResponsePartition_init(mp);
		mp->PartitionIndex = p;
		mp->LeaderId = leader;
		mp->LeaderEpoch = 0;
		mp->ReplicaNodes = node_list(rq, leader);
		mp->IsrNodes = node_list(rq, leader);
		if (!registry_part(t, p)) { /* offline: its files could not be opened */
			mp->ErrorCode = KERR_LEADER_NOT_AVAILABLE;
			mp->LeaderId = -1;
			mp->IsrNodes.n = 0;
			mp->OfflineReplicas = node_list(rq, leader);
		}
	}
}

/* ---- auto-creation (Metadata, Produce) ---- */

/*
 * A request waiting for the topics it auto-created, then run again from
 * the start: it waits before doing anything, so nothing is done twice.
 * malloc'd, owned by its builds until the last one ends.
 */
struct autocreate {
	struct req *rq;
	api_handler_fn *handler;
	int pending; /* builds not ended yet */
};

/* reg_build.done: after the last of them, rq runs again (creating nothing more). */
static void autocreate_done(void *waiter, int32_t slot, int err)
{
	struct autocreate *w = waiter;
	struct req *rq = w->rq;

	(void)slot;
	(void)err; /* the re-run finds the topic missing: an error for it alone */
	if (--w->pending)
		return;
	free(w);
	rq->autocreated = true;
	req_reset_out(rq);
	req_run_handler(rq, api_table[rq->hdr.api_key].handler);
}

/*
 * Cluster mode: the topic is written to ZooKeeper first (as CreateTopics
 * does, broker/topic_zk.h), and made here only if that succeeded, so a
 * name auto-created on one broker is not made again on another.
 */
struct autocreate_zk {
	struct autocreate *w; /* NULL: nobody waits */
	struct broker *b;
	struct kuuid id;
	char name[];
};

/* Begins making the local topic; build->done and waiter set to w's.  0 or -errno. */
static int autocreate_local(struct broker *b, struct kstr name, const struct kuuid *id, struct autocreate *w)
{
	struct reg_build *build;
	struct topic_cfg tc;
	int err = topic_cfg_init(&tc, &b->cfg);

	if (!err)
		err = creator_create(b->creator, name, b->cfg.num_partitions, &tc, &build);
	topic_cfg_release(&tc);
	if (err) {
		log_error("auto-creating topic '%.*s' failed: %s", name.len, name.p, strerror(-err));
		return err;
	}
	if (id)
		build->t->id = *id; /* the worker writes partition.metadata in the next round */
	if (w) {
		build->done = autocreate_done;
		build->waiter = w;
	}
	return 0;
}

/* cluster_done_fn: ZooKeeper took the topic (err 0): make it here; otherwise it is not made. */
static void autocreate_zk_done(void *arg, int err)
{
	struct autocreate_zk *z = arg;

	if (err == -EEXIST)
		log_info("not auto-creating topic '%s': it exists in the cluster", z->name);
	else if (err)
		log_error("auto-creating topic '%s': not written to zookeeper (%s)", z->name, strerror(-err));
	if (z->w) /* the replicas make it when the controller's LeaderAndIsr comes */
		autocreate_done(z->w, 0, err);
	free(z);
}

bool autocreate_wanted(struct req *rq, struct kstr name)
{
	const struct broker *b = rq->b;

	return b->cfg.auto_create_topics_enable && topic_name_valid(name) && !topic_name_internal(name) &&
	       !registry_find(b->reg, name) && !(b->mcache && mcache_topic(b->mcache, name.p, name.len)) &&
	       authz_create_topic(rq, name);
}

void autocreate_begin(struct req *rq, struct kstr name, struct autocreate **w)
{
	struct autocreate_zk *z = NULL;
	bool fresh = w && !*w;
	struct autocreate *wait;
	int err = -ENOMEM;

	if (rq->autocreated || !autocreate_wanted(rq, name))
		return;
	if (fresh && !(*w = calloc(1, sizeof(**w))))
		abort(); /* as req_alloc: what is begun must be waited for */
	wait = w ? *w : NULL;
	if (!rq->b->cluster) {
		err = autocreate_local(rq->b, name, NULL, wait);
	} else if ((z = calloc(1, sizeof(*z) + (size_t)name.len + 1)) != NULL) {
		z->w = wait;
		z->b = rq->b;
		memcpy(z->name, name.p, (size_t)name.len);
		uuid_random(&z->id);
		err = topic_zk_autocreate(rq, name, rq->b->cfg.num_partitions, &z->id, autocreate_zk_done, z);
		if (err) {
			log_error("auto-creating topic '%s': not written to zookeeper (%s)", z->name, strerror(-err));
			free(z);
		}
	}
	if (err && fresh) { /* nothing begun: nothing to wait for */
		free(*w);
		*w = NULL;
	} else if (!err && wait) {
		wait->rq = rq;
		wait->pending++;
	}
}

/*
 * Looks a requested topic up; h_metadata() had the missing ones made
 * first, if allowed.  A topic still being made (asked for by another
 * request) answers LEADER_NOT_AVAILABLE in metadata_topic(), as Kafka does.
 */
static int16_t metadata_lookup(struct req *rq, const struct MetadataRequest *mreq, struct kstr name, struct topic **out)
{
	*out = NULL;
	if (!authz_topic(rq, name, ACL_OP_DESCRIBE))
		return KERR_TOPIC_AUTHORIZATION_FAILED;
	*out = registry_find(rq->b->reg, name);
	if (*out)
		return KERR_NONE;
	if (!topic_name_valid(name))
		return KERR_INVALID_TOPIC_EXCEPTION;
	if (mreq->AllowAutoTopicCreation && autocreate_wanted(rq, name))
		return rq->b->cluster ? KERR_LEADER_NOT_AVAILABLE /* in ZooKeeper, no leader known here yet */
				      : KERR_KAFKA_STORAGE_ERROR; /* its creation failed (logged) */
	return KERR_UNKNOWN_TOPIC_OR_PARTITION;
}

static struct int32_array metadata_ids(struct req *rq, const struct mcache_ids *ids)
{
	struct int32_array a = { req_alloc(rq, (size_t)ids->n, sizeof(int32_t)), ids->n };

	if (ids->n)
		memcpy(a.v, ids->v, sizeof(int32_t) * (size_t)ids->n);
	return a;
}

/* Cluster mode: one topic entry from the controller's metadata (cluster/mcache.h). */
static void metadata_cached_topic(struct req *rq, const struct mcache_topic *t, struct MetadataResponseTopic *mt)
{
	mt->Name = kstr_c(t->name);
	mt->Partitions.n = t->nparts;
	mt->Partitions.v = req_alloc(rq, (size_t)t->nparts, sizeof(*mt->Partitions.v));
	for (int32_t p = 0; p < t->nparts; p++) {
		struct MetadataResponsePartition *mp = &mt->Partitions.v[p];
		const struct mcache_part *cp = &t->parts[p];

		MetadataResponsePartition_init(mp);
		mp->PartitionIndex = p;
		mp->LeaderId = cp->leader;
		mp->LeaderEpoch = cp->leader_epoch;
		mp->ReplicaNodes = metadata_ids(rq, &cp->replicas);
		mp->IsrNodes = metadata_ids(rq, &cp->isr);
		mp->OfflineReplicas = metadata_ids(rq, &cp->offline);
		mp->ErrorCode = cp->leader < 0 ? KERR_LEADER_NOT_AVAILABLE : KERR_NONE;
	}
}

/*
 * Cluster mode: every topic of the cluster from the metadata cache, and
 * the internal topics this broker holds that the cache does not name (yet).
 */
static void metadata_cached_topics(struct req *rq, const struct MetadataRequest *mreq, struct MetadataResponse *resp)
{
	bool all = mreq->Topics.n < 0 || (rq->hdr.api_version == 0 && mreq->Topics.n == 0);
	const struct mcache *mc = rq->b->mcache;
	int nlocal;
	struct topic **local = registry_topics(rq->b->reg, &nlocal);
	int32_t n = all ? mc->ntopics + nlocal : mreq->Topics.n;

	resp->Topics.v = req_alloc(rq, (size_t)n, sizeof(*resp->Topics.v));
	for (int32_t i = 0; i < (all ? mc->ntopics : 0); i++) {
		if (!authz_topic(rq, kstr_c(mc->topics[i].name), ACL_OP_DESCRIBE))
			continue;
		MetadataResponseTopic_init(&resp->Topics.v[resp->Topics.n]);
		metadata_cached_topic(rq, &mc->topics[i], &resp->Topics.v[resp->Topics.n++]);
	}
	for (int i = 0; all && i < nlocal; i++)
		if (local[i]->internal && !mcache_topic(mc, local[i]->name, (int32_t)strlen(local[i]->name)) &&
		    authz_topic(rq, kstr_c(local[i]->name), ACL_OP_DESCRIBE)) {
			MetadataResponseTopic_init(&resp->Topics.v[resp->Topics.n]);
			metadata_topic(rq, local[i], &resp->Topics.v[resp->Topics.n++]);
		}
	for (int32_t i = 0; !all && i < n; i++) {
		struct MetadataResponseTopic *mt = &resp->Topics.v[resp->Topics.n++];
		const struct mcache_topic *ct = mcache_topic(mc, mreq->Topics.v[i].Name.p, mreq->Topics.v[i].Name.len);
		struct topic *t = NULL;

		MetadataResponseTopic_init(mt);
		mt->Name = mreq->Topics.v[i].Name;
		if (ct && authz_topic(rq, mt->Name, ACL_OP_DESCRIBE)) {
			metadata_cached_topic(rq, ct, mt);
			continue;
		}
		mt->ErrorCode = metadata_lookup(rq, mreq, mt->Name, &t);
		if (t && t->internal)
			metadata_topic(rq, t, mt);
		else if (t)
			mt->ErrorCode = KERR_LEADER_NOT_AVAILABLE; /* held here, not yet in the controller's metadata */
	}
}

static void metadata_topics(struct req *rq, const struct MetadataRequest *mreq, struct MetadataResponse *resp)
{
	bool all = mreq->Topics.n < 0 || (rq->hdr.api_version == 0 && mreq->Topics.n == 0);
	int ntopics;
	struct topic **topics = registry_topics(rq->b->reg, &ntopics);
	int32_t n = all ? ntopics : mreq->Topics.n;

	resp->Topics.v = req_alloc(rq, (size_t)n, sizeof(*resp->Topics.v));
	for (int32_t i = 0; i < n; i++) {
		struct MetadataResponseTopic *mt = &resp->Topics.v[resp->Topics.n];
		struct topic *t = all ? topics[i] : NULL;

		if (all && !authz_topic(rq, kstr_c(t->name), ACL_OP_DESCRIBE))
			continue; /* hidden from a principal that may not describe it */
		resp->Topics.n++;
		MetadataResponseTopic_init(mt);
		if (!all) {
			mt->Name = mreq->Topics.v[i].Name;
			mt->ErrorCode = metadata_lookup(rq, mreq, mt->Name, &t);
		}
		if (t)
			metadata_topic(rq, t, mt);
	}
}

/* One broker as Metadata and DescribeCluster list it: its endpoint for the client's listener. */
struct meta_node {
	int32_t id;
	const char *host;
	int32_t port;
	const char *rack; /* NULL: none */
};

/*
 * OUT *out (request arena): the brokers.  In cluster mode every live
 * broker registered in ZooKeeper (cluster/cluster.h), once the first
 * listing is read; a single node, or a broker not yet in touch with
 * ZooKeeper, lists itself.  This broker leads every partition it lists,
 * so it is always among them.  Returns their count.
 */
static int meta_nodes(struct req *rq, struct meta_node **out)
{
	struct broker *b = rq->b;
	const struct cluster_broker *cb = NULL;
	int n = b->cluster ? cluster_brokers(b->cluster, &cb) : 0;
	bool self_listed = false;
	const char *host;
	int32_t port;
	struct meta_node *v;

	for (int i = 0; i < n; i++)
		self_listed |= cb[i].id == b->node_id;
	broker_endpoint(b, rq->c, &host, &port); /* this broker: the listener the client came through */
	v = req_alloc(rq, (size_t)(n + !self_listed), sizeof(*v));
	for (int i = 0; i < n + !self_listed; i++) {
		v[i].id = i < n ? cb[i].id : b->node_id;
		v[i].host = host;
		v[i].port = port;
		if (i < n)
			broker_endpoint_of(b, rq->c, &cb[i], &v[i].host, &v[i].port);
		v[i].rack = i < n && cb[i].has_rack ? cb[i].rack : NULL;
	}
	*out = v;
	return n + !self_listed;
}

static const char *meta_cluster_id(const struct broker *b)
{
	return b->cluster && *cluster_id(b->cluster) ? cluster_id(b->cluster) : b->cluster_id;
}

static int32_t meta_controller_id(const struct broker *b)
{
	return b->cluster ? cluster_controller_id(b->cluster) : b->node_id;
}

/* Brokers, controller and cluster id. */
static void metadata_brokers(struct req *rq, struct MetadataResponse *resp)
{
	struct meta_node *v;
	int n = meta_nodes(rq, &v);

	resp->ClusterId = kstr_c(meta_cluster_id(rq->b));
	resp->ControllerId = meta_controller_id(rq->b);
	resp->Brokers.n = n;
	resp->Brokers.v = req_alloc(rq, (size_t)n, sizeof(*resp->Brokers.v));
	for (int i = 0; i < n; i++) {
		struct MetadataResponseBroker *mb = &resp->Brokers.v[i];

		MetadataResponseBroker_init(mb);
		mb->NodeId = v[i].id;
		mb->Host = kstr_c(v[i].host);
		mb->Port = v[i].port;
		if (v[i].rack)
			mb->Rack = kstr_c(v[i].rack);
	}
}

/*
 * DescribeCluster v0: the same brokers, controller and cluster id as
 * Metadata.  The cluster's authorized operations are computed only when
 * asked for (every operation without an authorizer).
 */
int h_describe_cluster(struct req *rq, const void *in, void *out)
{
	const struct DescribeClusterRequest *dreq = in;
	struct DescribeClusterResponse *resp = out;
	struct meta_node *v;
	int n;

	if ((resp->ErrorCode = authz_cluster_kerr(rq, ACL_OP_DESCRIBE)))
		return H_REPLY;
	n = meta_nodes(rq, &v);
	resp->ClusterId = kstr_c(meta_cluster_id(rq->b));
	resp->ControllerId = meta_controller_id(rq->b);
	resp->Brokers.n = n;
	resp->Brokers.v = req_alloc(rq, (size_t)n, sizeof(*resp->Brokers.v));
	for (int i = 0; i < n; i++) {
		struct DescribeClusterBroker *db = &resp->Brokers.v[i];

		DescribeClusterBroker_init(db);
		db->BrokerId = v[i].id;
		db->Host = kstr_c(v[i].host);
		db->Port = v[i].port;
		if (v[i].rack)
			db->Rack = kstr_c(v[i].rack);
	}
	if (dreq->IncludeClusterAuthorizedOperations)
		resp->ClusterAuthorizedOperations =
			authz_ops(rq, ACL_RES_CLUSTER, KSTR(ACL_CLUSTER_NAME), CLUSTER_OPS_ALL);
	return H_REPLY;
}

int h_metadata(struct req *rq, const void *in, void *out)
{
	const struct MetadataRequest *mreq = in;
	struct MetadataResponse *resp = out;
	struct autocreate *w = NULL;

	for (int32_t i = 0; mreq->AllowAutoTopicCreation && i < mreq->Topics.n; i++)
		autocreate_begin(rq, mreq->Topics.v[i].Name, &w);
	if (w)
		return H_PARKED; /* run again once they are made, off the loop: answered with them */

	metadata_brokers(rq, resp);
	if (rq->b->mcache)
		metadata_cached_topics(rq, mreq, resp);
	else
		metadata_topics(rq, mreq, resp);
	return H_REPLY;
}
