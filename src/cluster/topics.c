/*
 * topics.c - the znodes of a topic's creation, growth and deletion mark
 * (topics.h), written as Kafka's CreateTopics, CreatePartitions and
 * DeleteTopics write them in ZooKeeper mode.
 */
#include "cluster/topics.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

#include "cluster/assign.h"
#include "cluster/confchange.h"
#include "cluster/znode.h"
#include "util/log.h"

/* A reply's rc as what the callers are told: 0 or -errno (cluster.h). */
static int topics_zk_err(int rc)
{
	if (rc == ZOK)
		return 0;
	if (rc == ZNODEEXISTS || rc == ZNONODE || rc == ZBADVERSION)
		return rc == ZNODEEXISTS ? -EEXIST : rc == ZNONODE ? -ENOENT : -ESTALE;
	if (rc == ZCLOSING || rc == ZCONNECTIONLOSS || rc == ZSESSIONEXPIRED || rc == ZOPERATIONTIMEOUT)
		return -ENOTCONN;
	return -EIO;
}

struct topics_call {
	cluster_done_fn *done;
	void *arg;
};

static void topics_on_created(void *arg, const struct zk_reply *rep)
{
	struct topics_call *call = arg;
	int err = topics_zk_err(rep->rc);

	if (err && err != -EEXIST)
		log_warn("creating a topic in zookeeper: %s", zerror(rep->rc));
	call->done(call->arg, err);
	free(call);
}
int topics_create(struct zk *zk, const char *name, const char *assignment, const char *config, cluster_done_fn *done,
		  void *arg)
{
	char cfg_path[320], topic_path[320];
	struct zk_op ops[2] = {
		{ .type = ZK_OP_CREATE, .path = cfg_path, .data = config, .len = (int)strlen(config) },
		{ .type = ZK_OP_CREATE, .path = topic_path, .data = assignment, .len = (int)strlen(assignment) },
	};
	struct topics_call *call;
	int rc;

	snprintf(cfg_path, sizeof(cfg_path), "%s/%s", ZNODE_TOPIC_CONFIGS, name);
	snprintf(topic_path, sizeof(topic_path), "%s/%s", ZNODE_TOPICS, name);
	call = malloc(sizeof(*call));
	if (!call)
		return -ENOMEM;
	call->done = done;
	call->arg = arg;
	rc = zk_multi(zk, ops, 2, topics_on_created, call);
	if (rc < 0)
		free(call);
	return rc < 0 ? -ENOTCONN : 0;
}

static void topics_on_marked(void *arg, const struct zk_reply *rep)
{
	char *name = arg;

	if (rep->rc != ZOK && rep->rc != ZNODEEXISTS)
		log_warn("topic '%s': cannot mark it for deletion in zookeeper (%s); its znodes stay", name,
			 zerror(rep->rc));
	free(name);
}

void topics_mark_deleted(struct zk *zk, const char *name)
{
	char path[320], *copy = strdup(name);

	snprintf(path, sizeof(path), "%s/%s", ZNODE_DELETE_TOPICS, name);
	if (!copy || zk_create(zk, path, NULL, -1, false, topics_on_marked, copy)) {
		log_warn("topic '%s': cannot mark it for deletion in zookeeper (not connected); its znodes stay", name);
		free(copy);
	}
}

struct topics_grow {
	struct zk *zk;
	struct cluster_broker *brokers; /* the live brokers when it was asked, sorted by id */
	int nbrokers;
	cluster_done_fn *done;
	void *arg;
	int32_t nparts, total;
	int32_t *manual; /* [total - nparts] or NULL */
	char path[320];
};

static void topics_grow_end(struct topics_grow *g, int err)
{
	g->done(g->arg, err);
	free(g->manual);
	free(g->brokers);
	free(g);
}

static void topics_on_grown(void *arg, const struct zk_reply *rep)
{
	topics_grow_end(arg, topics_zk_err(rep->rc));
}

/* The new partitions' replicas into all[nparts * rf ..]: manual, or Kafka's start at partition 0's leader. */
static int topics_grow_assign(struct topics_grow *g, const struct znode_topic *zt, int32_t rf, int32_t *all)
{
	struct assign_broker *ab = malloc(sizeof(*ab) * (size_t)(g->nbrokers > 0 ? g->nbrokers : 1));
	uint32_t start = 0;
	int err;

	if (!ab)
		return -ENOMEM;
	for (int i = 0; i < g->nbrokers; i++) {
		ab[i] = (struct assign_broker){ g->brokers[i].id, g->brokers[i].has_rack ? g->brokers[i].rack : NULL };
		if (g->brokers[i].id < zt->parts[0].ids[0])
			start = (uint32_t)i + 1; /* brokers are sorted by id */
	}
	if (g->manual) {
		for (int32_t p = 0; p < g->total - g->nparts; p++)
			all[(size_t)(g->nparts + p) * (size_t)rf] = g->manual[p];
		err = rf == 1 ? 0 : -EINVAL;
	} else {
		err = assign_replicas(ab, g->nbrokers, g->nparts, g->total - g->nparts, rf, start, start,
				      all + (size_t)g->nparts * (size_t)rf);
	}
	free(ab);
	return err;
}

/*
 * The assignment with partitions nparts..total-1 from all[p * rf ..]; the
 * others, and any reassignment under way, as they are.  NULL: no memory.
 */
static char *topics_grow_doc(const struct znode_topic *zt, int32_t total, int32_t rf, const int32_t *all)
{
	struct znode_topic next = *zt;
	char *doc = NULL;

	next.nparts = total;
	next.parts = calloc((size_t)total, sizeof(*next.parts));
	next.adding = calloc((size_t)total, sizeof(*next.adding));
	next.removing = calloc((size_t)total, sizeof(*next.removing));
	if (next.parts && next.adding && next.removing) {
		memcpy(next.parts, zt->parts, sizeof(*next.parts) * (size_t)zt->nparts);
		memcpy(next.adding, zt->adding, sizeof(*next.adding) * (size_t)zt->nparts);
		memcpy(next.removing, zt->removing, sizeof(*next.removing) * (size_t)zt->nparts);
		for (int32_t p = zt->nparts; p < total; p++) {
			next.parts[p].n = rf;
			memcpy(next.parts[p].ids, all + (size_t)p * (size_t)rf, sizeof(int32_t) * (size_t)rf);
		}
		doc = znode_topic_doc_encode(&next);
	}
	free(next.parts);
	free(next.adding);
	free(next.removing);
	return doc;
}

static void topics_on_grow_read(void *arg, const struct zk_reply *rep)
{
	struct topics_grow *g = arg;
	struct zk_op op = { .type = ZK_OP_SET, .path = g->path, .version = rep->version };
	struct znode_topic zt;
	int32_t rf, *all = NULL;
	char *doc = NULL;
	int err = topics_zk_err(rep->rc);

	if (!err && (rep->data_len < 0 || znode_topic_decode(rep->data, (size_t)rep->data_len, &zt)))
		err = -EIO;
	else if (!err && zt.nparts != g->nparts)
		err = -ESTALE;
	if (err) {
		if (rep->rc == ZOK && err != -EIO)
			znode_topic_free(&zt);
		topics_grow_end(g, err);
		return;
	}
	rf = zt.parts[0].n - zt.removing[0].n; /* a reassignment of partition 0 under way: its target's */
	if ((int64_t)g->total * rf > ZNODE_TOPIC_MAX_REPLICAS)
		err = -E2BIG;
	else if (!(all = malloc(sizeof(*all) * (size_t)g->total * (size_t)rf)))
		err = -ENOMEM;
	if (!err)
		err = topics_grow_assign(g, &zt, rf, all);
	if (!err && !(doc = topics_grow_doc(&zt, g->total, rf, all)))
		err = -ENOMEM;
	op.data = doc;
	op.len = doc ? (int)strlen(doc) : 0;
	if (!err && zk_multi(g->zk, &op, 1, topics_on_grown, g))
		err = -ENOTCONN;
	free(doc);
	free(all);
	znode_topic_free(&zt);
	if (err)
		topics_grow_end(g, err);
}

int topics_grow(struct zk *zk, const struct cluster_broker *brokers, int nbrokers, const char *name, int32_t nparts,
		int32_t total, const int32_t *manual, cluster_done_fn *done, void *arg)
{
	struct topics_grow *g;
	int rc;

	if (!(g = calloc(1, sizeof(*g))))
		return -ENOMEM;
	*g = (struct topics_grow){
		.zk = zk, .nbrokers = nbrokers, .done = done, .arg = arg, .nparts = nparts, .total = total
	};
	g->brokers = malloc(sizeof(*brokers) * (size_t)(nbrokers > 0 ? nbrokers : 1));
	if (g->brokers)
		memcpy(g->brokers, brokers, sizeof(*brokers) * (size_t)nbrokers);
	snprintf(g->path, sizeof(g->path), "%s/%s", ZNODE_TOPICS, name);
	if (manual && (g->manual = malloc(sizeof(*manual) * (size_t)(total - nparts))))
		memcpy(g->manual, manual, sizeof(*manual) * (size_t)(total - nparts));
	rc = !g->brokers || (manual && !g->manual)                ? -ENOMEM
	     : zk_get(zk, g->path, false, topics_on_grow_read, g) ? -ENOTCONN
								  : 0;
	if (rc) {
		free(g->manual);
		free(g->brokers);
		free(g);
	}
	return rc;
}

int topics_read_config(struct zk *zk, const char *name, cluster_config_fn *done, void *arg)
{
	char entity[CONFCHANGE_ENTITY_MAX];

	snprintf(entity, sizeof(entity), "topics/%s", name);
	return confchange_read(zk, entity, done, arg);
}
