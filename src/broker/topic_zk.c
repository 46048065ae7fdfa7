/*
 * topic_zk.c - a new topic's znodes in cluster mode (topic_zk.h).
 *
 * Kafka draws the start index and the replica shift of the assignment at
 * random for each topic so that leaders of small topics do not all land
 * on the first broker; so does this.  Manual assignments (CreateTopics
 * Assignments) are written as given, after h_admin.c checked them.
 */
#include "broker/topic_zk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "broker/broker.h"
#include "cluster/assign.h"
#include "broker/registry.h"
#include "cluster/znode.h"
#include "util/log.h"

int topic_zk_live(const struct broker *b)
{
	const struct cluster_broker *cb;

	return b->cluster ? cluster_brokers(b->cluster, &cb) : 1;
}

bool topic_zk_is_live(const struct broker *b, int32_t id)
{
	const struct cluster_broker *cb;
	int n;

	if (!b->cluster)
		return id == b->node_id;
	n = cluster_brokers(b->cluster, &cb);
	for (int i = 0; i < n; i++)
		if (cb[i].id == id)
			return true;
	return false;
}

/* OUT: replicas[nparts * rf], from the request's Assignments or Kafka's algorithm. */
static int topic_zk_assign(struct req *rq, const struct CreateTopicsRequestTopic *in, int32_t nparts, int32_t rf,
			   int32_t *replicas)
{
	const struct cluster_broker *cb;
	struct assign_broker *ab;
	int n = cluster_brokers(rq->b->cluster, &cb);
	uint32_t r[2];

	if (in->Assignments.n > 0) {
		for (int32_t i = 0; i < in->Assignments.n; i++) {
			const struct CreateTopicsRequestAssignment *a = &in->Assignments.v[i];

			for (int32_t j = 0; j < rf && j < a->BrokerIds.n; j++)
				replicas[(size_t)a->PartitionIndex * (size_t)rf + (size_t)j] = a->BrokerIds.v[j];
		}
		return 0;
	}
	ab = req_alloc(rq, (size_t)(n > 0 ? n : 1), sizeof(*ab));
	for (int i = 0; i < n; i++) {
		ab[i].id = cb[i].id;
		ab[i].rack = cb[i].has_rack ? cb[i].rack : NULL;
	}
	if (getrandom(r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		r[0] = (uint32_t)random();
		r[1] = (uint32_t)random();
	}
	return assign_replicas(ab, n, 0, nparts, rf, r[0], r[1], replicas);
}

int topic_zk_create(struct req *rq, const struct CreateTopicsRequestTopic *in, int32_t nparts, int32_t rf,
		    const struct kuuid *id, cluster_done_fn *done, void *arg)
{
	int32_t *replicas;
	const char **names = req_alloc(rq, (size_t)(in->Configs.n > 0 ? in->Configs.n : 1), sizeof(*names));
	const char **values = req_alloc(rq, (size_t)(in->Configs.n > 0 ? in->Configs.n : 1), sizeof(*values));
	char idtext[UUID_B64_LEN + 1], *assignment = NULL, *config = NULL;
	int rc;

	if ((int64_t)nparts * rf > ZNODE_TOPIC_MAX_REPLICAS)
		return -E2BIG;
	replicas = req_alloc(rq, (size_t)nparts * (size_t)rf, sizeof(*replicas));
	if ((rc = topic_zk_assign(rq, in, nparts, rf, replicas)) < 0)
		return rc;
	for (int32_t i = 0; i < in->Configs.n; i++) {
		names[i] = req_cstr(rq, in->Configs.v[i].Name);
		values[i] = req_cstr(rq, in->Configs.v[i].Value);
	}
	uuid_to_b64(id, idtext);
	assignment = znode_topic_encode(replicas, nparts, rf, idtext);
	config = znode_topic_config_encode(names, values, in->Configs.n > 0 ? in->Configs.n : 0);
	rc = assignment && config
		     ? cluster_topic_create(rq->b->cluster, req_cstr(rq, in->Name), assignment, config, done, arg)
		     : -ENOMEM;
	free(assignment);
	free(config);
	return rc;
}

int topic_zk_autocreate(struct req *rq, struct kstr name, int32_t nparts, const struct kuuid *id, cluster_done_fn *done,
			void *arg)
{
	struct CreateTopicsRequestTopic in;

	CreateTopicsRequestTopic_init(&in);
	in.Name = name;
	in.NumPartitions = nparts;
	in.ReplicationFactor = 1;
	return topic_zk_create(rq, &in, nparts, 1, id, done, arg);
}

/* cluster_done_fn of topic_zk_create_internal: arg is the topic's name (malloc'd). */
static void topic_zk_internal_done(void *arg, int err)
{
	if (err && err != -EEXIST)
		log_error("cannot create %s in zookeeper: %s", (char *)arg, strerror(-err));
	else if (!err)
		log_info("%s written to zookeeper", (char *)arg);
	free(arg);
}

int topic_zk_create_internal(struct req *rq, const char *name, int32_t nparts, int32_t rf, int32_t min_isr,
			     int32_t segment_bytes)
{
	struct CreateTopicsRequestConfig cfg[4];
	struct CreateTopicsRequestTopic in;
	int32_t live = topic_zk_live(rq->b), ncfg = 0;
	char *segment = req_alloc(rq, 16, 1), *isr = req_alloc(rq, 16, 1), *arg;
	struct kuuid id;
	int rc;

	if (rf > live) {
		log_warn("%s: replication factor %d is more than the %d live brokers; created with %d", name, rf, live,
			 live);
		rf = live;
	}
	snprintf(segment, 16, "%d", segment_bytes);
	snprintf(isr, 16, "%d", min_isr < rf ? min_isr : rf);
	cfg[ncfg++] = (struct CreateTopicsRequestConfig){ KSTR("cleanup.policy"), KSTR("compact") };
	cfg[ncfg++] = (struct CreateTopicsRequestConfig){ KSTR("retention.ms"), KSTR("-1") };
	cfg[ncfg++] = (struct CreateTopicsRequestConfig){ KSTR("segment.bytes"), kstr_c(segment) };
	if (min_isr > 0)
		cfg[ncfg++] = (struct CreateTopicsRequestConfig){ KSTR("min.insync.replicas"), kstr_c(isr) };
	CreateTopicsRequestTopic_init(&in);
	in.Name = kstr_c(name);
	in.NumPartitions = nparts;
	in.ReplicationFactor = (int16_t)rf;
	in.Configs = (struct CreateTopicsRequestConfig_array){ cfg, ncfg };
	uuid_random(&id);
	if (!(arg = strdup(name)))
		return -ENOMEM;
	rc = topic_zk_create(rq, &in, nparts, rf, &id, topic_zk_internal_done, arg);
	if (rc) {
		log_error("cannot create %s in zookeeper: %s", name, strerror(-rc));
		free(arg);
	} else {
		log_info("creating %s in zookeeper: %d partitions, replication factor %d", name, nparts, rf);
	}
	return rc;
}

int topic_zk_config_write(struct broker *b, const char *name, const struct topic_cfg *cfg, cluster_done_fn *done,
			  void *arg)
{
	const struct conf_table *tab = topic_cfg_table();
	const char **names = calloc(tab->ndefs + 1, sizeof(*names));
	const char **values = calloc(tab->ndefs + 1, sizeof(*values));
	char *text = malloc(tab->ndefs * TOPIC_ZK_VALUE_MAX + 1), *config = NULL;
	int n = 0, rc = -ENOMEM;

	for (size_t i = 0; names && values && text && i < tab->ndefs; i++) {
		const char *key = tab->defs[i].name;
		char *v = text + i * TOPIC_ZK_VALUE_MAX;

		if (!topic_cfg_is_set(cfg, key) || topic_cfg_get(cfg, key, v, TOPIC_ZK_VALUE_MAX, NULL, NULL))
			continue;
		names[n] = key;
		values[n++] = v;
	}
	if (names && values && text)
		config = znode_topic_config_encode(names, values, n);
	if (config)
		rc = cluster_topic_config_write(b->cluster, name, config, done, arg);
	free(config);
	free(text);
	free(values);
	free(names);
	return rc;
}

struct topic_zk_change {
	struct broker *b;
	char name[];
};

/* cluster_config_fn: the topic's overrides as ZooKeeper holds them replace what this broker has. */
static void topic_zk_on_config(void *arg, int err, const struct znode_config *zc)
{
	struct topic_zk_change *ch = arg;
	struct topic *t = registry_find(ch->b->reg, kstr_c(ch->name));
	struct topic_cfg tc, old;
	char msg[256];

	if (!err && t && topic_cfg_init(&tc, &ch->b->cfg) == 0) {
		for (int i = 0; i < zc->n; i++)
			if (topic_cfg_set(&tc, zc->names[i], zc->values[i], msg, sizeof(msg)) < 0)
				log_warn("topic '%s': override %s=%s ignored: %s", ch->name, zc->names[i],
					 zc->values[i], msg);
		old = t->cfg;
		t->cfg = tc;
		topic_cfg_release(&old);
		err = registry_save_cfg(ch->b->reg, t);
		if (err)
			log_error("topic '%s': cannot save configs: %s", ch->name, strerror(-err));
		else
			log_info("topic '%s': configs updated from zookeeper", ch->name);
	} else if (err && err != -ENOTCONN && t) {
		log_warn("topic '%s': its changed config could not be read from zookeeper: %s", ch->name,
			 strerror(-err));
	}
	free(ch);
}

void topic_zk_config_changed(void *arg, const char *topic)
{
	struct broker *b = arg;
	size_t len = strlen(topic);
	struct topic_zk_change *ch;

	if (!registry_find(b->reg, kstr_c(topic)))
		return; /* no replica here: nothing to apply */
	ch = malloc(sizeof(*ch) + len + 1);
	if (!ch)
		return;
	ch->b = b;
	memcpy(ch->name, topic, len + 1);
	if (cluster_topic_config(b->cluster, topic, topic_zk_on_config, ch))
		free(ch);
}
